"""Rule layer: keyword scores per skill, CJK-aware. Pure functions, no I/O.

A keyword with CJK characters matches as a substring (Chinese has no spaces); any other keyword
matches on word boundaries, with an optional plural `s`/`es`. A keyword shared by several skills
weighs less (1 / number of skills that list it). `not_for` phrases become negative terms: each
phrase is split on "or", commas and the like, and a hit subtracts NEGATIVE_WEIGHT.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

NEGATIVE_WEIGHT = 1.0
MIN_TERM_CHARS = 2
_SPLIT = re.compile(r"\s+or\s+|\s+and\s+|[,;/|，、；]|或者|或|以及|和")
_CJK_RANGES = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_CJK = re.compile(f"[{_CJK_RANGES}]")
_LATIN_WORD = f"[^\\W{_CJK_RANGES}]"
EPSILON = 1e-9


def normalise(text: str) -> str:
    """NFKC + casefold + single spaces: full-width letters and digits match their ASCII forms."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def has_cjk(text: str) -> bool:
    return bool(_CJK.search(text))


def negative_terms(not_for: Sequence[str]) -> list[str]:
    """'air quality or PM2.5' -> ['air quality', 'pm2.5']."""
    terms = []
    for phrase in not_for:
        for part in _SPLIT.split(normalise(phrase)):
            part = part.strip(" .。!?！？")
            if len(part) >= MIN_TERM_CHARS and part not in terms:
                terms.append(part)
    return terms


def _pattern(term: str) -> re.Pattern[str]:
    if has_cjk(term):
        return re.compile(re.escape(term))
    # word boundaries against letters and digits, but not against CJK characters: "PM2.5多少" has a
    # Latin keyword right next to Chinese, and Python counts CJK characters as \w
    return re.compile(rf"(?<!{_LATIN_WORD}){re.escape(term)}(?:e?s)?(?!{_LATIN_WORD})")


@dataclass(frozen=True)
class KeywordIndex:
    """Compiled positive and negative terms of every skill."""

    positive: dict[str, list[tuple[re.Pattern[str], float]]]
    negative: dict[str, list[re.Pattern[str]]]


def build_keyword_index(keywords: Mapping[str, Sequence[str]], not_for: Mapping[str, Sequence[str]]) -> KeywordIndex:
    norm = {skill: sorted({normalise(k) for k in kws if len(normalise(k)) >= 1}) for skill, kws in keywords.items()}
    owners: dict[str, int] = {}
    for kws in norm.values():
        for k in kws:
            owners[k] = owners.get(k, 0) + 1
    positive = {skill: [(_pattern(k), 1.0 / owners[k]) for k in kws] for skill, kws in norm.items()}
    negative = {skill: [_pattern(t) for t in negative_terms(nf)] for skill, nf in not_for.items()}
    return KeywordIndex(positive, negative)


def rule_scores(query: str, index: KeywordIndex, candidates: Sequence[str] | None = None) -> dict[str, float]:
    """Score of every skill with at least one keyword hit (negatives included), best first."""
    q = normalise(query)
    scores: dict[str, float] = {}
    for skill, terms in index.positive.items():
        if candidates is not None and skill not in candidates:
            continue
        hit = sum(w for p, w in terms if p.search(q))
        if hit <= 0:
            continue
        miss = sum(NEGATIVE_WEIGHT for p in index.negative.get(skill, []) if p.search(q))
        scores[skill] = hit - miss
    return dict(sorted(scores.items(), key=lambda kv: (-kv[1], kv[0])))


def rule_decision(scores: Mapping[str, float], margin: float, min_score: float) -> str | None:
    """The top skill if it scores at least `min_score` and leads the runner-up by `margin`."""
    ranked = sorted(scores.values(), reverse=True)
    if not ranked or ranked[0] < min_score - EPSILON:
        return None
    second = ranked[1] if len(ranked) > 1 else 0.0
    if ranked[0] - max(second, 0.0) < margin - EPSILON:  # 1/6 + 1 - 1/6 is not exactly 1
        return None
    return max(scores, key=lambda s: scores[s])  # unique: it leads the runner-up by margin > 0
