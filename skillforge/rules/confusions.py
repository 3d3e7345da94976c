"""Confusion pairs of a route eval (pure): two real skills whose queries the ranking mixes up.

A case counts for the pair {a, b} when its expected skill is a and the ranking put b first (the
ranking, not the thresholds' decision: a NONE answer with b ranked first still counts). A case
expected NONE, or one nothing ranked, makes no pair: confusion with NONE is a threshold matter,
not a disambiguation one. A pair that stays confused is the cue for a `not_for` on the skill that
wins the other's queries, so a pair confused often enough carries that hint. Unless the two
descriptions (nearly) match: the hint would put a skill's own job into its not_for, so the pair
is marked a duplicate instead (merge the two skills, or tell them apart).
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

MIN_PAIR = 2
"""A pair gets a hint only when confused at least this many times (both directions together)..."""
MIN_SHARE = 0.2
"""...and one direction takes at least this share of its expected skill's in-scope cases."""
EXAMPLES = 3
"""Example queries kept per pair."""
EXAMPLE_CHARS = 80
"""An example query longer than this is cut (with an ellipsis)."""
HINT_CHARS = 60
"""The not_for phrase a hint suggests: the first sentence of the description, cut to this length."""
SAME_DESCRIPTION = 0.9
"""Two descriptions this similar (difflib ratio over their words, case and punctuation aside) make a
duplicate pair: "a hotel room" against "a hostel bed" in an otherwise equal sentence is not one."""
CONTAINED_EXTRA = 1.0
"""A description whose words all appear, in order, in the other's also makes a duplicate pair when
the other adds at most this many words per word of it: "Cancel an existing recipe" against "Cancel
an existing recipe quickly and reliably" (QA28: 3 filler words on 4-7, a ratio of 0.73-0.83, under
SAME_DESCRIPTION). The not_for hint would name a job the longer one says it does. A 40 % cap
missed most of QA28's twins."""
MIN_CONTAINED_WORDS = 3
"""...when the contained description has at least this many words ("Translate text" in any longer
description is no evidence of a duplicate)."""


@dataclass(frozen=True)
class RankedCase:
    """One labelled query and the skill the ranking put first (None: nothing ranked it)."""

    query: str
    expected: str | None
    ranked: str | None


@dataclass(frozen=True)
class Example:
    query: str
    """Cut to EXAMPLE_CHARS."""
    expected: str
    ranked: str


@dataclass(frozen=True)
class NotForHint:
    """Add `phrase` to `skill`'s not_for: `skill` is ranked first on queries of `other`."""

    skill: str
    other: str
    phrase: str

    def sentence(self) -> str:
        return f"add to {self.skill}'s not_for: {self.phrase}"


@dataclass(frozen=True)
class ConfusionPair:
    """Skills a < b (by name); `a_to_b`: cases expected a ranked b first; shares are of in-scope cases."""

    a: str
    b: str
    a_to_b: int
    b_to_a: int
    a_cases: int
    b_cases: int
    examples: tuple[Example, ...]
    hints: tuple[NotForHint, ...]
    duplicate: bool = False
    """The two descriptions (nearly) match and the pair is confused enough for a hint: no not_for
    hint (it would name the skill's own job), the duplicate sentence instead."""

    @property
    def total(self) -> int:
        return self.a_to_b + self.b_to_a

    def as_json(self) -> dict[str, object]:
        return {"a": self.a, "b": self.b, "a_to_b": self.a_to_b, "b_to_a": self.b_to_a, "total": self.total,
                "a_cases": self.a_cases, "b_cases": self.b_cases,
                "share": _share(self.total, self.a_cases + self.b_cases),
                "a_share": _share(self.a_to_b, self.a_cases), "b_share": _share(self.b_to_a, self.b_cases),
                "examples": [{"query": e.query, "expected": e.expected, "ranked": e.ranked} for e in self.examples],
                "hint": self.duplicate_sentence() if self.duplicate else "; ".join(h.sentence() for h in self.hints) or None,
                "not_for": [{"skill": h.skill, "add": h.phrase, "other": h.other} for h in self.hints],
                "duplicate": self.duplicate}

    def duplicate_sentence(self) -> str:
        return (f"{self.a} and {self.b} duplicate each other (their descriptions are nearly the same): merge them, "
                "or tell them apart in their descriptions")


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def cut(text: str, limit: int) -> str:
    """`text` on one line, at most `limit` characters (an ellipsis marks a cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 1].rstrip() + "…"


def not_for_phrase(skill: str, description: str | None) -> str:
    """What a neighbour's not_for should name: the first sentence of `skill`'s description, cut
    to HINT_CHARS on a word boundary (the skill's name in words when it has no description)."""
    text = " ".join((description or "").split())
    first = re.split(r"(?<=[.!?。！？])\s*", text, maxsplit=1)[0].rstrip(".。") if text else ""
    if not first:
        return skill.replace("-", " ")
    if len(first) <= HINT_CHARS:
        return first
    head = first[:HINT_CHARS - 1]
    return (head.rsplit(" ", 1)[0] if " " in head else head).rstrip(" ,;:") + "…"


NEGATIONS = frozenset({"not", "no", "never", "dont", "doesnt", "didnt", "cannot", "cant", "wont", "isnt", "arent",
                       "shouldnt", "mustnt", "without", "except", "nor", "neither", "不", "别", "勿", "非", "没", "未"})
"""Words that turn a description around: when the words one description adds (or the differing
words, for the ratio) include one, the two are not a duplicate ("Cancel an existing unpaid
invoice" / "Do not cancel ..."). Apostrophes are dropped first (don't -> dont)."""
MAX_MOVE_WORDS = 40
"""Longer descriptions are not searched for a moved clause (the search is cubic in the words)."""
_CJK = "\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(f"[{_CJK}]|[^\\W{_CJK}]+")


def words(text: str | None) -> list[str]:
    """A description's words: casefolded, punctuation aside, apostrophes dropped (don't -> dont);
    each CJK character a word of its own (so 不 is seen)."""
    return _TOKEN.findall(re.sub(r"['\u2019]", "", (text or "").casefold()))


def same_description(a: str | None, b: str | None) -> bool:
    """Whether two descriptions (nearly) match: case, spacing and punctuation aside, the same words
    with at most one clause moved (`moved_clause`), a difflib ratio of SAME_DESCRIPTION or more over
    their words, or one contained in the other with a few words added (`contained`); never when
    the words that differ include a negation (NEGATIONS). An absent or empty one matches nothing."""
    words_a, words_b = words(a), words(b)
    if not words_a or not words_b:
        return False
    if words_a == words_b or moved_clause(words_a, words_b):
        return True
    matcher = difflib.SequenceMatcher(None, words_a, words_b, autojunk=False)
    if matcher.ratio() >= SAME_DESCRIPTION:
        differing = [w for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"
                     for w in [*words_a[i1:i2], *words_b[j1:j2]]]
        if not NEGATIONS.intersection(differing):
            return True
    return contained(words_a, words_b)


def moved_clause(words_a: Sequence[str], words_b: Sequence[str]) -> bool:
    """Whether b is a with one run of words moved elsewhere ("Into French, translate a report" /
    "Translate a report into French"). The same words with roles swapped ("French into English" /
    "English into French") is no such move, so not a duplicate."""
    a, b = list(words_a), list(words_b)
    n = len(a)
    if n != len(b) or sorted(a) != sorted(b) or n > MAX_MOVE_WORDS:
        return False
    return any(a[:i] + a[j:k] + a[i:j] + a[k:] == b
               for i in range(n) for j in range(i + 1, n) for k in range(j + 1, n + 1))


def contained(words_a: Sequence[str], words_b: Sequence[str]) -> bool:
    """Whether the shorter word list appears in order (gaps allowed) in the longer one, has at least
    MIN_CONTAINED_WORDS words, the longer adds at most CONTAINED_EXTRA words per word of it, and
    none of the added words is a negation."""
    short, long_ = sorted((list(words_a), list(words_b)), key=len)
    if len(short) < MIN_CONTAINED_WORDS or len(long_) - len(short) > CONTAINED_EXTRA * len(short):
        return False
    added = Counter(long_) - Counter(short)
    if NEGATIONS.intersection(added):
        return False
    rest = iter(long_)
    return all(word in rest for word in short)  # `in` consumes the iterator: an in-order subsequence


def _hints(pair: ConfusionPair, descriptions: Mapping[str, str]) -> tuple[NotForHint, ...]:
    """The dominant direction's hint (both on a tie) when the pair clears MIN_PAIR and that
    direction takes at least MIN_SHARE of its expected skill's cases."""
    if pair.total < MIN_PAIR:
        return ()
    # (expected, ranked, count, share of expected's cases)
    directions = [(pair.a, pair.b, pair.a_to_b, pair.a_to_b / pair.a_cases if pair.a_cases else 0.0),
                  (pair.b, pair.a, pair.b_to_a, pair.b_to_a / pair.b_cases if pair.b_cases else 0.0)]
    top = max(count for _, _, count, _ in directions)
    return tuple(NotForHint(ranked, expected, not_for_phrase(expected, descriptions.get(expected)))
                 for expected, ranked, count, share in directions
                 if count == top and count > 0 and share >= MIN_SHARE)


def confusion_pairs(cases: Sequence[RankedCase], descriptions: Mapping[str, str] | None = None) -> list[ConfusionPair]:
    """Every pair of real skills the ranking confused, most confused first (ties by name), each
    with up to EXAMPLES example queries and its not_for hints. `descriptions`: skill -> description,
    for the hints' wording (a missing one: the skill's name)."""
    in_scope: dict[str, int] = {}
    for c in cases:
        if c.expected is not None:
            in_scope[c.expected] = in_scope.get(c.expected, 0) + 1
    counts: dict[tuple[str, str], list[int]] = {}
    examples: dict[tuple[str, str], list[Example]] = {}
    for c in cases:
        if c.expected is None or c.ranked is None or c.ranked == c.expected:
            continue
        key = (min(c.expected, c.ranked), max(c.expected, c.ranked))
        counts.setdefault(key, [0, 0])[0 if c.expected == key[0] else 1] += 1
        if len(examples.setdefault(key, [])) < EXAMPLES:
            examples[key].append(Example(cut(c.query, EXAMPLE_CHARS), c.expected, c.ranked))
    pairs = []
    for (a, b), (a_to_b, b_to_a) in counts.items():
        bare = ConfusionPair(a, b, a_to_b, b_to_a, in_scope.get(a, 0), in_scope.get(b, 0), tuple(examples[(a, b)]), ())
        hints = _hints(bare, descriptions or {})
        if hints and same_description((descriptions or {}).get(a), (descriptions or {}).get(b)):
            pairs.append(replace(bare, duplicate=True))
        else:
            pairs.append(replace(bare, hints=hints))
    return sorted(pairs, key=lambda p: (-p.total, p.a, p.b))
