"""The ratchet: may a candidate release replace the current one? Pure, no I/O.

Both releases run on the same eval set and are scored on four dimensions in [0, 1] (task,
robustness, readability, efficiency); the **effect** score is their plain mean and the **total**
is ``EFFECT_WEIGHT * effect + STRUCTURE_WEIGHT * structure`` (structure: the static score of the
SKILL.md). Besides the scores, the ratchet reads the paired evidence of every dimension
(``rules/paired.py``: WIN / LOSS / INCONCLUSIVE from a sign test on the per-case outcomes,
family-wise controlled) and the candidate's objective pass count.

"Regresses" means *evidence of loss*, never a point estimate a hair below the old one. Rules (every
reason is collected; the verdict is the worst one):

- **DECLINED** when
  - the evidence shows a LOSS on any of ``GATED`` (task, robustness, effect, objective pass rate);
  - any P0 case goes from pass to fail: a hard veto, no statistics;
  - the candidate's objective pass rate is below ``PASS_FLOOR`` at its Wilson lower bound (one-
    sided 95 %): two sides that both fail every objective check can never PASS. The rate is over
    the cases with an expectation (``objective_passes``' n); a case without one passes by construction.
- **REVIEW** when any dimension's point estimate (the four, effect, structure, objective pass rate)
  moves by ``MOVE_LIMIT`` or more, up or down; when the candidate drops or rewords a line of the
  current release's Constraints (or safety, permissions) sections, whatever the scores (QA 40: a
  candidate without its Constraints section won on the judge; a person decides whether a guard
  may go); and when no case has an expectation (n = 0), or so
  few that even n of n would stay under the floor (n <= 2) while one passes: the floor cannot apply,
  and a judge alone never publishes (none of them passing still declines).
- **PASS** otherwise.

The result also carries ``improvement``: the outcome of the primary endpoint (effect). A no-op is
INCONCLUSIVE.

When the run's judge is noise (``rules/endpoint.py``: its flip rate at or above
``JUDGE_NOISE_FLIP_RATE``), the input's ``endpoint`` says so: the judged dimensions (task,
robustness, readability, effect) are reported but do not decide: their LOSS does not decline, their
moves do not ask for REVIEW, and ``improvement`` is the objective checks' outcome. The P0 veto, the
objective LOSS, the pass-rate floor and the REVIEW moves of efficiency, structure and the objective
pass rate are unchanged. The same holds for the dimensions a judge calibration put below a floor
(and the effect score, their mean): ``endpoint.undecided`` names them. The structure score is
reported and never blocks. ``MOVE_EPSILON`` only absorbs float noise in the REVIEW comparison
(0.6 - 0.5 is 0.0999...); it decides nothing else.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from skillforge.rules.endpoint import RELIABLE, Endpoint
from skillforge.rules.paired import PRIMARY, wilson_lower
from skillforge.state.result import SCORED_DIMENSIONS, DimensionScores, Evidence, Outcome, RatchetVerdict

MOVE_LIMIT = 0.10
"""Any dimension moving by this much, up or down, asks a human to review."""
MOVE_EPSILON = 1e-9
"""Float noise in the REVIEW comparison only."""
PASS_FLOOR = 0.5
"""The candidate's objective pass rate must be at least this at its Wilson lower bound."""
EFFECT_WEIGHT = 0.8
STRUCTURE_WEIGHT = 0.2

GATED = ("task", "robustness", "effect", "objective")
"""Dimensions whose LOSS declines the candidate."""


@dataclass(frozen=True)
class RatchetInput:
    """Scores and paired evidence of the current (old) and candidate (new) release on one eval set."""

    old: DimensionScores
    new: DimensionScores
    old_structure: float
    """Static structure score of the current SKILL.md, in [0, 1]. Reported, never blocks."""
    new_structure: float
    """Static structure score of the candidate SKILL.md, in [0, 1]."""
    evidence: Mapping[str, Evidence]
    """Paired evidence per dimension (rules/paired.py); must cover GATED."""
    objective_passes: tuple[int, int]
    """(cases the candidate passes the objective checks on, valid cases)."""
    old_objective_passes: int = 0
    """Cases the current release passes (for the REVIEW move of the pass rate)."""
    p0_flips: tuple[str, ...] = ()
    """Ids of P0 cases that passed on the current release and fail on the candidate."""
    endpoint: Endpoint = RELIABLE
    """The run's primary endpoint (rules/endpoint.py): which dimension is `improvement`, and whether
    the judged dimensions may decide."""
    dropped_constraints: tuple[str, ...] = ()
    """Lines of the current release's Constraints (safety, permissions) the candidate no longer has."""

    def __post_init__(self) -> None:
        for name in ("old_structure", "new_structure"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or math.isnan(value) or not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
        missing = [k for k in (*GATED, PRIMARY, self.endpoint.primary) if k not in self.evidence]
        if missing:
            raise ValueError(f"evidence is missing for {missing}")
        passes, n = self.objective_passes
        if not (0 <= passes <= n and 0 <= self.old_objective_passes <= n):
            raise ValueError(f"objective passes must be in [0, {n}], got {passes} and {self.old_objective_passes}")
        object.__setattr__(self, "p0_flips", tuple(self.p0_flips))


@dataclass(frozen=True)
class RatchetResult:
    """The verdict, every reason behind it, the improvement outcome and the scores it came from."""

    verdict: RatchetVerdict
    reasons: tuple[str, ...]
    """One short sentence per rule that fired, with its numbers; DECLINED reasons come first."""
    improvement: Outcome
    """The primary endpoint's outcome (effect, or objective under a noisy judge): WIN is what evolution requires."""
    old_effect: float
    new_effect: float
    old_total: float
    new_total: float
    primary: str = PRIMARY
    """The dimension `improvement` is the outcome of."""
    primary_reason: str = ""
    """Why (rules/endpoint.py), e.g. 'primary: objective (judge flip rate 0.45 ≥ 0.30, ...)'."""


def effect_score(s: DimensionScores) -> float:
    """The mean of the four dimensions."""
    return (s.task + s.robustness + s.readability + s.efficiency) / len(SCORED_DIMENSIONS)


def total_score(s: DimensionScores, structure: float) -> float:
    """``EFFECT_WEIGHT * effect + STRUCTURE_WEIGHT * structure``."""
    return EFFECT_WEIGHT * effect_score(s) + STRUCTURE_WEIGHT * structure


def _change(name: str, old: float, new: float) -> str:
    """E.g. 'task rose 0.125 (0.500 -> 0.625) >= 0.10'."""
    verb = "rose" if new > old else "fell"
    return f"{name} {verb} {abs(new - old):.3f} ({old:.3f} -> {new:.3f}) >= {MOVE_LIMIT:.2f}"


def describe(name: str, ev: Evidence) -> str:
    """E.g. 'task: LOSS, 1 win / 9 losses / 14 ties, p 0.011 (adjusted 0.043), CI [-0.31, -0.06]'."""
    return (f"{name}: {ev.outcome.value}, {ev.wins} win(s) / {ev.losses} loss(es) / {ev.ties} tie(s), "
            f"p {ev.p_value:.3g} (adjusted {ev.p_adjusted:.3g}), mean {ev.mean:+.3f}, "
            f"CI [{ev.ci[0]:+.3f}, {ev.ci[1]:+.3f}]")


def ratchet(inp: RatchetInput) -> RatchetResult:
    """Apply the rules of the module docstring to one old/new pair of scores and evidence."""
    old_effect, new_effect = effect_score(inp.old), effect_score(inp.new)
    declined: list[str] = []
    review: list[str] = []

    if inp.p0_flips:
        shown = ", ".join(inp.p0_flips[:5]) + (f" (+{len(inp.p0_flips) - 5} more)" if len(inp.p0_flips) > 5 else "")
        declined.append(f"{len(inp.p0_flips)} P0 case(s) went from pass to fail: {shown}")
    for dim in GATED:
        if dim in inp.endpoint.undecided:  # a noisy judge's, or below its calibration floor: reported, never a veto
            continue
        if inp.evidence[dim].outcome is Outcome.LOSS:
            declined.append("evidence of loss on " + describe(dim, inp.evidence[dim]))
    passes, n = inp.objective_passes
    lower = wilson_lower(passes, n)
    if not n:  # QA 34 F1: nothing checks an answer, so the judge alone decided: never an automatic PASS
        review.append("no case has an objective check (expect.must_include / must_not_include): the floor cannot "
                      "be applied and the judge alone decided; a person must look")
    elif wilson_lower(n, n) < PASS_FLOOR and passes:  # QA 35: too few checked cases for even n/n to clear it
        review.append(f"only {n} case(s) have an objective check ({passes} pass): too few for the pass-rate floor "
                      f"({n}/{n} would have a Wilson lower bound {wilson_lower(n, n):.2f} < {PASS_FLOOR:.2f}); "
                      "a person must look")
    elif lower < PASS_FLOOR:
        declined.append(f"objective pass rate {passes}/{n}: its Wilson lower bound {lower:.2f} is below "
                        f"the floor {PASS_FLOOR:.2f}")

    if dropped := inp.dropped_constraints:
        review.append(f"the candidate drops or rewords {len(dropped)} line(s) of the current release's Constraints "
                      f"(first: {dropped[0].strip()[:80]!r}): a person must look")
    old_rate = inp.old_objective_passes / n if n else 0.0
    new_rate = passes / n if n else 0.0
    moves = [(dim, getattr(inp.old, dim), getattr(inp.new, dim)) for dim in SCORED_DIMENSIONS]
    moves += [("effect score", old_effect, new_effect), ("structure score", inp.old_structure, inp.new_structure),
              ("objective pass rate", old_rate, new_rate)]
    judged_only = {"effect score" if d == PRIMARY else d for d in inp.endpoint.undecided}
    for name, old, new in moves:
        if name in judged_only:  # a noisy judge's point estimate moves by chance: it asks no one
            continue
        if abs(new - old) >= MOVE_LIMIT - MOVE_EPSILON:
            review.append(_change(name, old, new))

    verdict = RatchetVerdict.PASS
    if review:
        verdict = RatchetVerdict.REVIEW
    if declined:
        verdict = RatchetVerdict.DECLINED
    return RatchetResult(verdict=verdict, reasons=tuple(declined + review),
                         improvement=inp.evidence[inp.endpoint.primary].outcome,
                         old_effect=old_effect, new_effect=new_effect,
                         old_total=total_score(inp.old, inp.old_structure),
                         new_total=total_score(inp.new, inp.new_structure),
                         primary=inp.endpoint.primary, primary_reason=inp.endpoint.reason)
