"""Which recorded outcomes are effective failures that evolution may learn from (pure).

The allowlist: a side that ran the live release, on a valid case, whose answer failed the
objective checks. Its kind is P0 (a must-never-regress case), PROVENANCE (it stated data that did
not come from this run's tools) or TASK (expectations not met). Everything else is noise and is
never a failure: INVALID cases, execution errors, timeouts, judge errors, infrastructure.
"""

from __future__ import annotations

import difflib
import functools
from collections import Counter

from skillforge.rules.textnorm import fold
from skillforge.state.evolve import FailureKind

NEAR_DUPLICATE_RATIO = 0.9
"""Two failure queries this similar (difflib ratio, normalised) are one failure."""

NOISE_MARKERS = ("timeout", "timed out", "unavailable", "connection", "http 5", "http 429", "budget",
                 "execution failed", "invalid", "overflow", "not configured")


def classify(*, invalid: bool, error: str | None, execution_error: str | None, expect_pass: bool,
             provenance_ok: bool, p0: bool, reason: str = "") -> FailureKind | None:
    """The failure kind of one side of one recorded case, or None when it is not an effective failure."""
    if invalid or error or execution_error:
        return None
    if any(m in reason.lower() for m in NOISE_MARKERS if m != "invalid"):
        return None
    if expect_pass and provenance_ok:
        return None
    if p0:
        return FailureKind.P0
    if not provenance_ok:
        return FailureKind.PROVENANCE
    return FailureKind.TASK


@functools.lru_cache(maxsize=4096)
def _norm(query: str) -> str:
    """The leak scan's normal form (textnorm.fold: width, case, spacing, Traditional as Simplified,
    homoglyphs, numbers, HTML references...), so a copy the leak scan would call one is one here."""
    return fold(query)


def near_duplicate(a: str, b: str) -> bool:
    """True when two queries say the same thing up to the leak scan's normal form (case, width,
    spacing, Traditional or Simplified characters...) or a few characters."""
    x, y = _norm(a), _norm(b)
    if x == y:
        return True
    if 2 * min(len(x), len(y)) < NEAR_DUPLICATE_RATIO * (len(x) + len(y)):  # ratio() can reach at most this
        return False
    cx, cy = _chars(x), _chars(y)  # difflib's quick_ratio, an upper bound of ratio(), from cached counts
    if 2 * sum(min(n, cy[c]) for c, n in cx.items()) < NEAR_DUPLICATE_RATIO * (len(x) + len(y)):
        return False
    return difflib.SequenceMatcher(a=x, b=y, autojunk=False).ratio() >= NEAR_DUPLICATE_RATIO


@functools.lru_cache(maxsize=8192)
def _chars(norm: str) -> Counter[str]:  # read only
    return Counter(norm)


def dedupe(queries: list[str]) -> list[int]:
    """Indexes of the queries to keep: the first of each group of near-duplicates."""
    kept: list[int] = []
    for i, q in enumerate(queries):
        if not any(near_duplicate(q, queries[k]) for k in kept):
            kept.append(i)
    return kept
