"""The ratchet: may a candidate release replace the current one? Pure, no I/O.

Both releases are scored on the same eval set, on four dimensions in [0, 1]. From them:

- the **effect** score is the plain mean of task, robustness, readability and efficiency;
- the **total** score is ``EFFECT_WEIGHT * effect + STRUCTURE_WEIGHT * structure``, where structure
  is the static score of the SKILL.md itself.

Rules (every reason is collected; the verdict is the worst one):

- **DECLINED** when the effect score regresses, task or robustness drops by ``DROP_LIMIT`` or more,
  any P0 case flips from pass to fail (whatever the averages say), or the total score regresses
  *while the effect part regresses too*.
- **REVIEW** when any of task, robustness, readability, efficiency, effect or structure moves by
  ``MOVE_LIMIT`` or more, up or down.
- **PASS** otherwise.

Why the total rule is tied to the effect part: the design says the structure score "is reported
and never blocks". With ``total = 0.8 * effect + 0.2 * structure`` a structure-only drop lowers the
total, so a bare "total regressed" rule would let structure block on its own. A total regression is
therefore a decline only when ``EFFECT_WEIGHT * effect`` regresses as well; when the drop comes from
structure alone it is reported as a note (a reason that does not change the verdict), and a move of
``MOVE_LIMIT`` or more still asks for REVIEW like any other dimension. (Given that rule, a blocking
total regression always comes with an effect regression; both reasons are listed.)

All comparisons allow ``EPSILON`` of float noise: a drop of exactly ``DROP_LIMIT`` declines and a
move of exactly ``MOVE_LIMIT`` asks for review, even when the subtraction lands a hair below it.
The thresholds are code constants on purpose: nothing the evolution loop writes can change them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

DROP_LIMIT = 0.05
"""Task or robustness falling by this much (0-1 scale, old - new) declines the candidate."""
MOVE_LIMIT = 0.10
"""Any dimension moving by this much, up or down, asks a human to review."""
EPSILON = 1e-9
"""Float noise: smaller differences are equality."""
EFFECT_WEIGHT = 0.8
STRUCTURE_WEIGHT = 0.2

DIMENSIONS = ("task", "robustness", "readability", "efficiency")
"""The four scored dimensions, in report order."""
BLOCKING_DROPS = ("task", "robustness")
"""Dimensions whose drop of DROP_LIMIT or more declines on its own."""


class RatchetVerdict(StrEnum):
    """Ordered from best to worst; the result carries the worst verdict any rule gave."""

    PASS = "PASS"
    REVIEW = "REVIEW"
    DECLINED = "DECLINED"


Score = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
"""A score in [0, 1]; NaN and infinities are refused."""


class DimensionScores(BaseModel):
    """One release's scores on one eval set, each in [0, 1] (NaN and values outside are refused)."""

    model_config = ConfigDict(frozen=True)

    task: Score
    """Task completion: the judge's share and the objective checks (expectations, provenance)."""
    robustness: Score
    """Behaviour on edge cases, bad input and missing data."""
    readability: Score
    """How clear and well organised the answers are."""
    efficiency: Score
    """Cost of the answers (tokens); higher is cheaper."""


@dataclass(frozen=True)
class RatchetInput:
    """Scores of the current (old) and candidate (new) release on the same eval set."""

    old: DimensionScores
    new: DimensionScores
    old_structure: float
    """Static structure score of the current SKILL.md, in [0, 1]. Reported, never blocks alone."""
    new_structure: float
    """Static structure score of the candidate SKILL.md, in [0, 1]."""
    p0_flips: tuple[str, ...] = ()
    """Ids of P0 cases that passed on the current release and fail on the candidate."""

    def __post_init__(self) -> None:
        for name in ("old_structure", "new_structure"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or math.isnan(value) or not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
        object.__setattr__(self, "p0_flips", tuple(self.p0_flips))


@dataclass(frozen=True)
class RatchetResult:
    """The verdict, every reason behind it (plus notes), and the scores it was computed from."""

    verdict: RatchetVerdict
    reasons: tuple[str, ...]
    """One short sentence per rule that fired, with its numbers; DECLINED reasons come first."""
    old_effect: float
    new_effect: float
    old_total: float
    new_total: float


def effect_score(s: DimensionScores) -> float:
    """The mean of the four dimensions."""
    return (s.task + s.robustness + s.readability + s.efficiency) / len(DIMENSIONS)


def total_score(s: DimensionScores, structure: float) -> float:
    """``EFFECT_WEIGHT * effect + STRUCTURE_WEIGHT * structure``."""
    return EFFECT_WEIGHT * effect_score(s) + STRUCTURE_WEIGHT * structure


def _digits(delta: float) -> int:
    """Decimals enough to show `delta` as non-zero (3 at least, 12 at most)."""
    size = abs(delta)
    if size >= 1e-3 or size == 0.0:
        return 3
    return min(12, math.ceil(-math.log10(size)) + 1)


def _change(name: str, verb: str, old: float, new: float, limit: float | None = None) -> str:
    """E.g. 'task dropped 0.062 (0.900 -> 0.838) >= 0.05'."""
    delta = new - old
    d = _digits(delta)
    text = f"{name} {verb} {abs(delta):.{d}f} ({old:.{d}f} -> {new:.{d}f})"
    return f"{text} >= {limit:.2f}" if limit is not None else text


def ratchet(inp: RatchetInput) -> RatchetResult:
    """Apply the rules of the module docstring to one old/new pair of scores."""
    old_effect, new_effect = effect_score(inp.old), effect_score(inp.new)
    old_total = total_score(inp.old, inp.old_structure)
    new_total = total_score(inp.new, inp.new_structure)
    declined: list[str] = []
    review: list[str] = []
    notes: list[str] = []

    effect_regressed = new_effect < old_effect - EPSILON
    if new_total < old_total - EPSILON:
        if effect_regressed:
            declined.append(_change("total score", "regressed", old_total, new_total))
        else:
            notes.append(_change("total score", "fell", old_total, new_total)
                         + " from structure alone; structure never blocks")
    if effect_regressed:
        declined.append(_change("effect score", "regressed", old_effect, new_effect))
    for dim in BLOCKING_DROPS:
        old, new = getattr(inp.old, dim), getattr(inp.new, dim)
        if old - new >= DROP_LIMIT - EPSILON:
            declined.append(_change(dim, "dropped", old, new, DROP_LIMIT))
    if inp.p0_flips:
        shown = ", ".join(inp.p0_flips[:5]) + (f" (+{len(inp.p0_flips) - 5} more)" if len(inp.p0_flips) > 5 else "")
        declined.append(f"{len(inp.p0_flips)} P0 case(s) went from pass to fail: {shown}")

    moves = [(dim, getattr(inp.old, dim), getattr(inp.new, dim)) for dim in DIMENSIONS]
    moves += [("effect score", old_effect, new_effect), ("structure score", inp.old_structure, inp.new_structure)]
    for name, old, new in moves:
        if abs(new - old) >= MOVE_LIMIT - EPSILON:
            review.append(_change(name, "rose" if new > old else "fell", old, new, MOVE_LIMIT))

    verdict = RatchetVerdict.PASS
    if review:
        verdict = RatchetVerdict.REVIEW
    if declined:
        verdict = RatchetVerdict.DECLINED
    return RatchetResult(verdict=verdict, reasons=tuple(declined + review + notes),
                         old_effect=old_effect, new_effect=new_effect, old_total=old_total, new_total=new_total)
