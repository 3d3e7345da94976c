"""Held-out Chinese terms (pure, no I/O): place names and near-copies of holdout and final_audit
queries in a script without capitals (QA 40 F2), where rules/leaknames.py finds no name and the
8-character n-gram rule of rules/leaks.py no shared run.

The unit is the CJK bigram (two ideographs or kana side by side in the scan's fold,
`textnorm.fold`; punctuation, digits and Latin part them). A **held-out-only bigram** is one of a
holdout or final_audit case's query, expected facts or fixture values that no visible case (repair,
dev, p0: the proposer saw those) holds and, at scan time, the parent skill does not hold. Such a
bigram is **strong** unless a common word covers it in the held-out text (a word of 2-4 characters
with a Zipf frequency of COMMON_ZIPF or more in wordfreq's Chinese list, read from the list itself:
no segmenter needed): 码头 (4.45), 图书馆 (4.66), 体育场 (4.06) are common, so 「码头」, 「图书」,
「书馆」 are weak; 新天地 (3.39) is not, so 「新天」 is strong; 田子坊 and 七宝老街 are not in the list.
A bigram next to a visible one in its held-out text is weak too: 「去南」 of 「打车去南京东路」 is the
visible template's edge, not the place.

- **Near-copy of a held-out query.** One added line holding NEAR_SHARE or more of the distinct
  bigrams of a held-out query of NEAR_MIN_BIGRAMS or more, at least NEAR_MIN_ONLY of them
  held-out-only: 「从码头叫辆车去新天地大概要多少钱，车要多久到？」 for 「从码头打车去新天地要多少钱，车多久能到？」.
- **Density.** The added text holding DENSITY_STRONG or more distinct strong held-out-only bigrams
  and DENSITY_ALL or more held-out-only ones in all, from two or more held-out cases or with a run of
  three or more characters whose bigrams are all strong: one line listing every held-out route
  (「码头→新天地、球馆→中山公园、剧院→南京东路…」).

A line of common words the held-out queries share ("体育场、图书馆、剧院" for venues) has no strong
bigram and is no finding; nor is the template the visible cases share (「打车去…要多少钱」).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from skillforge.rules.textnorm import fold

HELD_OUT = frozenset({"holdout", "final_audit"})
COMMON_ZIPF = 4.0
NEAR_SHARE = 0.6
NEAR_MIN_BIGRAMS = 10
NEAR_MIN_ONLY = 2
HIT_SHARE = 0.5
DENSITY_CASES = 3
DENSITY_ALL = 6

_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]{2,}")
_QUOTED = re.compile(r"\"[^\"\n]*\"|“[^”\n]*”|「[^」\n]*」|『[^』\n]*』")


def bigrams(folded: str) -> list[str]:
    """The CJK bigrams of a folded text, in order, repeats kept."""
    return [run[i:i + 2] for run in _RUN.findall(folded) for i in range(len(run) - 1)]


@functools.lru_cache(maxsize=4)
def chinese_words(min_zipf: float) -> frozenset[str]:
    """The words of 2+ characters of wordfreq's Chinese "small" list with a Zipf frequency of
    `min_zipf` or more: the list alone (its Chinese tokenizer needs jieba, which is not installed).
    Here and in rules/leakviews.py (common two-character words, the reversed and unread-CJK tests)."""
    from wordfreq import get_frequency_dict  # here: most commands never ask

    floor = 10 ** (min_zipf - 9)
    return frozenset(w for w, f in get_frequency_dict("zh", "small").items() if f >= floor and len(w) >= 2)


def _common() -> frozenset[str]:
    """The words of wordfreq's Chinese list with a Zipf frequency of COMMON_ZIPF or more."""
    return chinese_words(COMMON_ZIPF)


def _weak(folded: str) -> set[str]:
    """The bigrams of `folded` that a common word of 2-4 characters covers."""
    common = _common()
    weak: set[str] = set()
    for run in _RUN.findall(folded):
        for i in range(len(run) - 1):
            for size in (2, 3, 4):
                if i + size <= len(run) and run[i:i + size] in common:
                    weak.update(run[i + k:i + k + 2] for k in range(size - 1))
    return weak


@dataclass
class HeldOutTerms:
    """The held-out cases' bigrams (bigram -> sources), their queries' bigram sets, the visible cases'
    bigrams and the weak ones."""

    held: dict[str, list[str]] = field(default_factory=dict)
    queries: list[tuple[str, frozenset[str]]] = field(default_factory=list)
    visible_grams: set[str] = field(default_factory=set)
    weak: set[str] = field(default_factory=set)
    _runs: list[list[str]] = field(default_factory=list)
    _edges: set[str] | None = None
    _strong: dict[str, set[str]] | None = None

    def strong_of(self) -> dict[str, set[str]]:
        """Each held-out case's strong held-out-only bigrams (see the module docstring), made once."""
        if self._strong is None:
            self._strong = {}
            drop = self.visible_grams | self.weak | self.edges()
            for g, sources in self.held.items():
                if g not in drop:
                    for source in sources:
                        self._strong.setdefault(source, set()).add(g)
        return self._strong

    def edges(self) -> set[str]:
        """The held-out bigrams next to a visible one in a held-out text (「去南」 of 「打车去南京东路」: the
        template's edge, not the place), made once all cases are in."""
        if self._edges is None:
            vis = self.visible_grams
            self._edges = {g for run in self._runs for i, g in enumerate(run)
                           if (i and run[i - 1] in vis) or (i + 1 < len(run) and run[i + 1] in vis)}
        return self._edges

    def add(self, partition: str, source: str, query: str, texts: Iterable[str]) -> None:
        """Take in one case: its query and its other texts (expected facts, fixture values)."""
        folded = [fold(t, chinese_numerals=False) for t in (query, *texts)]
        if partition not in HELD_OUT:
            self.visible_grams.update(g for f in folded for g in bigrams(f))
            return
        for f in folded:
            grams = bigrams(f)
            if grams:
                self.weak |= _weak(f)
                self._runs += [[run[i:i + 2] for i in range(len(run) - 1)] for run in _RUN.findall(f)]
            for g in grams:
                sources = self.held.setdefault(g, [])
                if source not in sources:
                    sources.append(source)
        query_grams = frozenset(bigrams(folded[0]))
        if len(query_grams) >= NEAR_MIN_BIGRAMS:
            self.queries.append((source, query_grams))

    def _quoted(self, text: str) -> str:
        """The quoted inputs of `text` that hold a held-out-only bigram, joined in order ("" unless two):
        a held-out query cut into quoted pieces between ordinary example lines reads whole again."""
        keep = [q.group(0)[1:-1] for q in _QUOTED.finditer(text)
                if (set(bigrams(fold(q.group(0), chinese_numerals=False))) - self.visible_grams) & self.held.keys()]
        return "".join(keep) if len(keep) >= 2 else ""

    def scan(self, text: str, parent: str = "", folded: str | None = None) -> list[tuple[str, str, str]]:
        """(kind, evidence, source): "near_copy" for a line near a held-out query, "held_out_name" for
        the density rule (see the module docstring)."""
        if not self.held:
            return []
        norm = fold(text, chinese_numerals=False) if folded is None else folded
        joined = self._quoted(text)
        present = set(bigrams(norm + "\n" + fold(joined, chinese_numerals=False))) & self.held.keys()
        if not present:
            return []
        only = present - self.visible_grams
        parent_grams = set(bigrams(fold(parent, chinese_numerals=False))) if only and parent else set()
        only -= parent_grams
        if not only:
            return []
        out: list[tuple[str, str, str]] = []
        near: set[str] = set()
        strong = only - self.weak - self.edges()
        for line, grams in _lines(text, strong, joined) if len(strong) >= NEAR_MIN_ONLY else ():
            if len(grams & strong) < NEAR_MIN_ONLY:
                continue
            for source, query in self.queries:
                shared = grams & query
                if source not in near and len(shared) >= NEAR_SHARE * len(query) and len(shared & strong) >= NEAR_MIN_ONLY:
                    near.add(source)
                    out.append(("near_copy", f"{len(shared)} of {len(query)} bigrams: {line[:80]}", source))
        hit = {}  # held-out case -> its strong bigrams the text holds, when they are HIT_SHARE of those it has
        for source, grams in self.strong_of().items():
            mine = grams - parent_grams
            have = mine & only
            if have and len(have) >= HIT_SHARE * len(mine):
                hit[source] = have
        if len(hit) >= DENSITY_CASES and len(only) >= DENSITY_ALL:
            first = max(sorted(hit), key=lambda k: len(hit[k]))
            if first not in near:
                out.append(("held_out_name", f"held-out terms of {len(hit)} cases: " + " ".join(_runs(norm, only))[:120], first))
        return out


def _lines(text: str, strong: set[str], joined: str = "") -> Iterable[tuple[str, set[str]]]:
    """Each line of `text` with CJK in it, and each two such lines side by side (a query split over a
    line break), as written (stripped) with the bigrams of its fold; none without a `strong` bigram."""
    lines = [line.strip() for line in text.splitlines() if _RUN.search(line)]
    folded = [set(bigrams(fold(line, chinese_numerals=False))) for line in lines]
    keep = [not strong.isdisjoint(grams) for grams in folded]
    for i, line in enumerate(lines):
        if not keep[i] and not (i + 1 < len(lines) and keep[i + 1]):
            continue
        yield line, folded[i]
        if i + 1 < len(lines):
            yield f"{line} {lines[i + 1]}", folded[i] | folded[i + 1] | set(bigrams(fold(line[-1:] + lines[i + 1][:1])))
    if joined:  # a query cut into quoted example inputs with other lines between (QA 44 F4)
        yield f"quoted inputs joined: {joined}", set(bigrams(fold(joined, chinese_numerals=False)))


def _runs(folded: str, only: set[str]) -> list[str]:
    """The runs of `folded` made of held-out-only bigrams, in order, each once (the evidence)."""
    out: list[str] = []
    for run in _RUN.findall(folded):
        cur = ""
        for i in range(len(run) - 1):
            if run[i:i + 2] in only:
                cur = cur + run[i + 1] if cur else run[i:i + 2]
            else:
                if cur and cur not in out:
                    out.append(cur)
                cur = ""
        if cur and cur not in out:
            out.append(cur)
    return out
