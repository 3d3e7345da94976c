"""Routing gate of a metadata edit (pure): the router must be no worse, its negatives must stay
rejected, and the edited skill must not capture another skill's queries (interference)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class RoutedPair:
    """One labelled query routed with the live card and with the candidate's."""

    query: str
    expected: str | None
    baseline: str | None
    candidate: str | None


@dataclass(frozen=True)
class RoutingVerdict:
    passed: bool
    reasons: tuple[str, ...]
    baseline_correct: int
    candidate_correct: int
    captured: tuple[str, ...]
    """Queries of other skills (or negatives) the candidate now takes."""


def routing_verdict(skill: str, pairs: Sequence[RoutedPair]) -> RoutingVerdict:
    """Fail when accuracy drops, a negative that was rejected is now taken, or a query expected
    for another skill (or routed to another skill before) is now routed to `skill`."""
    base_ok = sum(p.baseline == p.expected for p in pairs)
    cand_ok = sum(p.candidate == p.expected for p in pairs)
    reasons: list[str] = []
    if cand_ok < base_ok:
        reasons.append(f"route eval is worse: {cand_ok} of {len(pairs)} right, was {base_ok}")
    negatives = [p.query for p in pairs if p.expected is None and p.baseline is None and p.candidate is not None]
    if negatives:
        reasons.append(f"{len(negatives)} router negative(s) no longer rejected, e.g. {negatives[0]!r}")
    captured = tuple(p.query for p in pairs if p.candidate == skill and p.baseline != skill
                     and p.expected != skill)
    if captured:
        reasons.append(f"interference: captures {len(captured)} quer(ies) of other skills or NONE, "
                       f"e.g. {captured[0]!r}")
    return RoutingVerdict(not reasons, tuple(reasons), base_ok, cand_ok, captured)
