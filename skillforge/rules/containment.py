"""Review's leak-direction containment rule (pure): a text the proposer would read that holds a
held-out query, or most of its words in order, with more text added (QA 27 T3). Used by
sessions/review.cross_twin next to rules/failures.near_duplicate and the embedder's cosine."""

from __future__ import annotations

import difflib
import functools
import re
from collections import Counter
from collections.abc import Sequence

from skillforge.rules.textnorm import fold

CONTAINED_SHARE = 0.8
"""A held-out query counts as copied into a longer text when this share of its words appears there in
order, in runs of two or more words, packed (see `held_within`)."""
CONTAINED_MIN_WORDS = 4
"""A held-out query shorter than this many words (a CJK, kana or Hangul character counts half a word:
「帮我订个位子」 is 3) is judged by the other rules only: three words inside a longer request are a
common phrase ("book a table"), not a copy."""
_CJK_CHARS = "\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\uac00-\ud7af"
_CJK = re.compile(f"[{_CJK_CHARS}]")
WORD = re.compile(f"[{_CJK_CHARS}]|[^\\W{_CJK_CHARS}]+")
"""A word of the folded text: a run of letters and digits, or one CJK / kana / Hangul character."""


@functools.lru_cache(maxsize=4096)
def _words(text: str) -> tuple[str, tuple[str, ...]]:
    norm = fold(text)
    return norm, tuple(WORD.findall(norm))


@functools.lru_cache(maxsize=4096)
def _size(text: str) -> float:  # words, a CJK / kana / Hangul character counting half
    return sum(0.5 if len(w) == 1 and _CJK.match(w) else 1 for w in _words(text)[1])


@functools.lru_cache(maxsize=4096)
def _counts(text: str) -> Counter[str]:  # read only
    return Counter(_words(text)[1])


def held_within(held: str, seen: str) -> bool:
    """The leak direction of review's cross-partition check: `seen` (a text the proposer reads) holds
    the held-out query `held`, or most of it, with more text round it. Both in the leak scan's normal
    form: the held-out text inside the other whole, or at least CONTAINED_SHARE of its words (at
    least CONTAINED_MIN_WORDS) in order, in runs of two or more words, spread over no more than half
    as many words again as the held-out query has (a suffix or a greeting added, a word changed or
    dropped here and there). The embedder's cosine misses such a copy once the added text is long;
    near_duplicate's ratio misses it once the lengths differ."""
    (h, hw), (s, sw) = _words(held), _words(seen)
    if _size(held) < CONTAINED_MIN_WORDS or len(sw) < len(hw) * CONTAINED_SHARE:
        return False
    if h.strip() and h.strip() in s:
        return True
    have = _counts(seen)  # the matched blocks hold at most the words both share: too few, no copy
    if sum(min(n, have[w]) for w, n in _counts(held).items()) < CONTAINED_SHARE * len(hw):
        return False
    blocks = [b for b in difflib.SequenceMatcher(a=hw, b=sw, autojunk=False).get_matching_blocks() if b.size >= 2]
    if not blocks or sum(b.size for b in blocks) < CONTAINED_SHARE * len(hw):
        return False
    return blocks[-1].b + blocks[-1].size - blocks[0].b <= 1.5 * len(hw)


def copies_held_out(seen: str, held: str, cosine: float | None = None, threshold: float = 0.97) -> bool:
    """Whether `seen`, a text a model would be shown as a user's request, nearly copies the held-out
    query `held`: the same up to the leak scan's normal form or a few characters
    (rules/failures.near_duplicate), `held` inside it with more text round it (`held_within`), one of
    its identifiers (`shares_identifier`: a tracking number kept through a translation), or, with
    the embedder's `cosine` of the two, at or above `threshold` (harvest's DEDUPE_COSINE). The
    judgement `sessions harvest` and `cases review` make (sessions/review.cross_twin), for requests
    that reach a model another way (`skills suggest`, `skills new --from-queries/--from-sessions`)."""
    from skillforge.rules.failures import near_duplicate

    return (near_duplicate(seen, held) or held_within(held, seen) or shares_identifier(seen, held)
            or (cosine is not None and cosine >= threshold))


_IDENT = re.compile(r"[0-9A-Za-z][0-9A-Za-z_-]{8,}[0-9A-Za-z]")
IDENT_MIN_DIGITS = 6
"""A token of 10+ letters and digits with at least this many digits is an identifier (a tracking number,
an order id): a request holding a held-out query's one is a copy in any words or language (QA 35 T2)."""


@functools.lru_cache(maxsize=4096)
def _identifiers(text: str) -> frozenset[str]:
    return frozenset(t.casefold() for t in _IDENT.findall(fold(text))
                     if sum(ch.isdigit() for ch in t) >= IDENT_MIN_DIGITS)


def shares_identifier(seen: str, held: str) -> bool:
    """Whether `seen` holds an identifier (IDENT_MIN_DIGITS digits in a 10+ character token) of `held`."""
    return bool(_identifiers(held) & _identifiers(seen))


def first_copies(seen: Sequence[str], held: Sequence[str], cosines: Sequence[Sequence[float]] | None = None,
                 threshold: float = 0.97) -> list[int | None]:
    """For each text of `seen`, the index of the first held-out query of `held` it nearly copies
    (`copies_held_out`), or None: the same answers as asking every pair, with each rule asked only
    of the pairs its own necessary condition lets through (near_duplicate: lengths within its ratio;
    held_within: the held-out text inside, or enough of its words shared; shares_identifier: a
    common identifier; the cosine: at or above `threshold`), so 3 000 requests against 80 held-out
    queries take a fraction of a second, not ~8 s."""
    from skillforge.rules.failures import NEAR_DUPLICATE_RATIO, near_duplicate

    hn = [_words(h)[0] for h in held]
    postings: dict[str, list[tuple[int, int]]] = {}
    for j, h in enumerate(held):
        for w, n in _counts(h).items():
            postings.setdefault(w, []).append((j, n))
    by_ident: dict[str, list[int]] = {}
    for j, h in enumerate(held):
        for t in _identifiers(h):
            by_ident.setdefault(t, []).append(j)
    out: list[int | None] = []
    for i, text in enumerate(seen):
        norm, words = _words(text)
        shared = [0] * len(held)
        for w, n in _counts(text).items():
            for j, m in postings.get(w, ()):
                shared[j] += min(n, m)
        hits = {j for t in _identifiers(text) for j in by_ident.get(t, ())}
        if cosines is not None:
            hits |= {j for j, c in enumerate(cosines[i]) if c >= threshold}
        found = None
        for j, h in enumerate(held):
            size = len(_words(h)[1])
            if j in hits or (2 * min(len(norm), len(hn[j])) >= NEAR_DUPLICATE_RATIO * (len(norm) + len(hn[j]))
                             and near_duplicate(text, h)) \
                    or ((hn[j].strip() and hn[j].strip() in norm) or shared[j] >= CONTAINED_SHARE * size) \
                    and held_within(h, text):
                found = j
                break
        out.append(found)
    return out
