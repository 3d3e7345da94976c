"""The answer of an evaluation: both sides' dimension scores, the paired evidence per dimension, the
ratchet's verdict and the evaluation's. rules/paired.py, rules/ratchet.py and evaluation/compare.py
compute them; the evaluate graph keeps them in its state and the evolve graph reads them."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

from pydantic import BaseModel, ConfigDict, Field

from skillforge.state.calibration import HUMAN_DIMENSIONS, DimensionStatus
from skillforge.state.cliopts import EvalVerdict  # noqa: F401  (defined without pydantic, for the CLI)
from skillforge.state.evaluate import ExecutionMode, Unexercised

if TYPE_CHECKING:
    from skillforge.rules.ratchet import RatchetResult

SCORED_DIMENSIONS = ("task", "robustness", "readability", "efficiency")
"""The four dimensions each side is scored on in [0, 1] (`DimensionScores`), in report order."""
PAIRED_DIMENSIONS = (*SCORED_DIMENSIONS, "effect", "objective")
"""Every dimension that gets paired evidence (`EvalResult.evidence`), in report order: the four
scored ones, the effect score (their mean) and the objective pass rate."""


class Outcome(StrEnum):
    """What the paired evidence of one dimension shows."""

    WIN = "WIN"
    LOSS = "LOSS"
    INCONCLUSIVE = "INCONCLUSIVE"


class Evidence(BaseModel):
    """The paired evidence of one dimension (the `evidence` entries of `evaluate --json`)."""

    model_config = ConfigDict(frozen=True)

    wins: int
    losses: int
    ties: int
    p_value: float
    """One-sided sign-test p-value in the direction the cases lean (wins >= losses: WIN side)."""
    p_adjusted: float
    """The same after the family-wise adjustment; the outcome is decided on this."""
    ci: tuple[float, float]
    """Bootstrap CI (CI_LEVEL) of the mean per-case delta, new - old."""
    mean: float
    """The mean per-case delta: the change of the dimension's score."""
    outcome: Outcome
    mde: float
    """Minimum detectable mean delta for this n (POWER, one-sided ALPHA)."""


class RatchetVerdict(StrEnum):
    """What the ratchet decides. Ordered from best to worst; the result carries the worst verdict any
    rule gave."""

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


class EvalKind(StrEnum):
    """An A/B evaluation (candidate against baseline) or an A/A self-check (the live release twice)."""

    AB = "ab"
    AA = "aa"


class Measured(BaseModel):
    """Dimension scores of both sides and the run's objective metrics."""

    old: DimensionScores
    new: DimensionScores
    valid_cases: int
    invalid_cases: int
    invalid_rate: float
    flip_rate: float
    flips: int = 0
    """Valid cases whose two judge orders disagreed on `overall`."""
    judged_cases: int = 0
    """Valid cases the judge was asked on in both orders (not forfeits, not no-evidence ties): the
    denominator of the judge's flip rate that picks the primary endpoint (rules/endpoint.py)."""
    objective_passes: dict[str, int] = Field(default_factory=dict)
    """"baseline" / "candidate" -> valid cases with an expectation passing every objective check."""
    objective_cases: int | None = None
    """Valid cases with an expectation (must_include / must_not_include), the objective pass rate's
    denominator: a case without one passes every check by construction (QA 34 F1). None: a result
    stored before this field, where it was valid_cases."""
    no_evidence: int = 0
    """Valid cases where neither side loaded the skill under test (a tie, no evidence either way)."""
    forfeits: dict[str, list[str]] = Field(default_factory=dict)
    """"baseline" / "candidate" -> ids of the valid cases that side forfeited (its agent alone failed)."""
    p0_flips: list[str] = Field(default_factory=list)
    p0_pass: dict[str, bool] = Field(default_factory=dict)
    tokens: dict[str, int] = Field(default_factory=dict)
    latency_ms: dict[str, float] = Field(default_factory=dict)
    mean_length_diff: float = 0.0


class JudgeCalibration(BaseModel):
    """What the configured judge's calibration against a person (state/calibration.py) let the gate
    do on one evaluation: per judged dimension GATED / REPORTED / UNCALIBRATED, each one's numbers,
    and one line for people. calibration/records.statuses_for looks it up; rules/endpoint.py acts on
    the REPORTED dimensions."""

    fingerprint: str | None = None
    """The judge fingerprint it was looked up for (None: not looked up, e.g. no workspace)."""
    calibrated_at: str | None = None
    """The applying record's created_at; None when uncalibrated."""
    statuses: dict[str, DimensionStatus] = Field(default_factory=dict)
    """One per HUMAN_DIMENSIONS key."""
    notes: dict[str, str] = Field(default_factory=dict)
    """Dimension -> its numbers, e.g. 'κ 0.81' or 'κ 0.12 < 0.40' (only the measured dimensions)."""
    line: str
    """E.g. 'judge: uncalibrated (no calibration record for fingerprint 1a2b...; run `skillforge judge calibrate`)'."""

    @classmethod
    def unknown(cls, line: str, fingerprint: str | None = None) -> JudgeCalibration:
        """Every judged dimension UNCALIBRATED (gated as before), with the line saying why."""
        return cls(fingerprint=fingerprint, statuses=dict.fromkeys(HUMAN_DIMENSIONS, DimensionStatus.UNCALIBRATED),
                   line=line)


NOT_LOOKED_UP = "judge: uncalibrated (no calibration record was looked up for this run)"
"""The calibration line of a run decided without a lookup (pure API use, no workspace)."""


class EvalResult(BaseModel):
    """The answer of one evaluation: PASS / REVIEW / DECLINED, or INVALID when it cannot tell."""

    run_id: str
    skill: str
    eval_set: str
    verdict: EvalVerdict
    kind: EvalKind = EvalKind.AB
    improvement: Outcome | None = None
    """The primary endpoint's outcome; None when INVALID."""
    primary: str | None = None
    """The primary endpoint `improvement` is the outcome of: "effect", or "objective" when the run's
    judge was noise (rules/endpoint.py); None when INVALID (or a result from before the rule)."""
    primary_reason: str | None = None
    """One line saying why, e.g. 'primary: objective (judge flip rate 0.45 ≥ 0.30, 9 of 20 judged cases flipped); ...'."""
    false_alarm: bool | None = None
    """A/A only: did any dimension come out WIN or LOSS (it must not: both sides are the same)."""
    reasons: list[str] = Field(default_factory=list)
    baseline_release: str | None = None
    candidate_release: str | None = None
    structure: dict[str, float] = Field(default_factory=dict)
    measured: Measured | None = None
    evidence: dict[str, Evidence] = Field(default_factory=dict)
    ratchet: dict[str, float] = Field(default_factory=dict)
    mode: ExecutionMode | None = None
    """The execution mode of the run (None: a run from before modes existed)."""
    unexercised: Unexercised | None = None
    """Executions that never loaded the skill under test, and the no-evidence cases (ties)."""
    judge_calibration: JudgeCalibration | None = None
    """The judge's calibration status per judged dimension, as the gate used it (None: a result from
    before calibration)."""
    not_evaluated: list[str] = Field(default_factory=list)
    """The files outside SKILL.md that differ from the baseline's ("scripts/rotate.py changed"): the
    run never exercised them, so a PASS became REVIEW (rules/skillfiles.py)."""

    @classmethod
    def from_ratchet(cls, base: dict[str, object], rr: RatchetResult, evidence: dict[str, Evidence]) -> EvalResult:
        """The result of a run the ratchet decided."""
        kind = EvalKind(base.get("kind", EvalKind.AB))
        alarm = any(e.outcome is not Outcome.INCONCLUSIVE for e in evidence.values()) if kind is EvalKind.AA else None
        return cls(**base, verdict=EvalVerdict(rr.verdict), reasons=list(rr.reasons),  # type: ignore[arg-type]
                   improvement=rr.improvement, primary=rr.primary, primary_reason=rr.primary_reason or None,
                   evidence=evidence, false_alarm=alarm,
                   ratchet={"old_effect": rr.old_effect, "new_effect": rr.new_effect,
                            "old_total": rr.old_total, "new_total": rr.new_total})


def aa_outcome(false_alarm: bool, alarms: list[str] | None = None) -> str:
    """What an A/A run (the live release against itself) found, said as an A/A and not as a ratchet
    verdict: its DECLINED or PASS decides no release (QA qa10a F16: a DECLINED headline alarmed a
    reader of a run that found nothing). `alarms`: the dimensions that came out WIN or LOSS."""
    if false_alarm:
        return (f"A/A: FALSE ALARM ({', '.join(alarms or []) or 'a dimension came out WIN or LOSS'}): the run found a "
                "difference between a release and itself")
    return "A/A: no false alarm (both sides are the same release and none came out different)"
