"""Judge calibration against a person: the golden labels a person gives blind (judge label), and the
calibration record `judge calibrate` writes for one judge fingerprint. rules/calibration.py computes
and decides on them; calibration/ reads and writes them.

A golden file is `evaluation_sets/golden/<skill>.jsonl`, append-only: one `GoldenLabel` a line. It
holds what the person saw (the query, the fixtures' summary, the two answers in the order shown,
their content hashes) and their choice per dimension, so calibration needs nothing else: no run
traces, no executor.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, Field

HUMAN_DIMENSIONS = ("task", "robustness", "readability")
"""The judged dimensions a person labels (the judge's `overall` is not asked of them)."""
HumanChoice = Literal["A", "B", "tie"]
"""A person's choice on one dimension, as shown on the page: A is the answer shown first (left/top)."""


class GoldenPair(BaseModel):
    """One output pair as a person is shown it. `answer_a` is shown first; which side of the run it
    came from (`a_is`) is drawn at random when the pair is made and never shown."""

    pair_id: str
    """Stable id: rules.calibration.pair_id(skill, case_id, sha_a, sha_b); a pair already labelled
    is never appended again (reloading the page cannot duplicate a label)."""
    skill: str
    run: str | None = None
    """The evaluation run the outputs were read from (None for a hand-written fixture)."""
    case_id: str
    query: str
    must_include: list[str] = Field(default_factory=list)
    must_not_include: list[str] = Field(default_factory=list)
    fixtures_summary: str = ""
    answer_a: str
    answer_b: str
    sha_a: str
    """sha256 hex of answer_a's UTF-8 bytes."""
    sha_b: str
    a_is: Literal["baseline", "candidate", "unknown"] = "unknown"


class GoldenLabel(GoldenPair):
    """A person's verdict on one pair: one line of a golden file, never edited once appended."""

    labels: dict[str, HumanChoice]
    """One choice per HUMAN_DIMENSIONS key."""
    note: str = ""
    source: Literal["web", "tty", "fixture"]
    labeller: str = ""
    labelled_at: str
    """ISO-8601 UTC."""


class DimensionStatus(StrEnum):
    """What the gate may do with one judged dimension on the configured judge."""

    GATED = "gated"
    """Calibrated, at or above the floors: it may WIN and veto as before."""
    REPORTED = "reported"
    """Calibrated below a floor: reported, never a WIN, never a veto."""
    UNCALIBRATED = "uncalibrated"
    """No calibration record for this judge fingerprint: gated as before, and the result says so."""


class DimensionCalibration(BaseModel):
    """The judge against the person on one dimension, over the golden pairs and repeats."""

    dimension: str
    pairs: int
    """Golden pairs with a label on this dimension."""
    judgements: int
    """pairs x repeats combined (both-orders) verdicts compared with the person."""
    agreement: float
    agreement_ci: tuple[float, float]
    kappa: float
    kappa_ci: tuple[float, float]
    position_bias: float | None
    """Share of single-order non-tie judgements that chose the answer shown first (0.5 is unbiased);
    None when every judgement was a tie."""
    position_bias_ci: tuple[float, float] | None = None
    """Its 95 % interval (None with position_bias)."""
    flip_rate_orders: float
    """Share of (pair, repeat) where the two orders disagree on which side wins."""
    flip_rate_repeats: float
    """Share of (pair, order) whose label changed across repeats (0 with one repeat)."""
    invalid: int = 0
    """(pair, repeat) whose judgement failed in either order: counted here, never as agreement."""
    status: DimensionStatus


class CalibrationRecord(BaseModel):
    """One `judge calibrate` result, bound to the judge fingerprint it measured."""

    fingerprint: str
    """rules.calibration.judge_fingerprint(model, endpoint, prompt, rubric)."""
    model: str | None
    endpoint: str | None
    prompt_sha: str
    rubric_sha: str
    created_at: str
    golden: dict[str, str] = Field(default_factory=dict)
    """Golden file name -> sha256 of its bytes at calibration time."""
    repeats: int
    pairs: int
    dimensions: dict[str, DimensionCalibration]
    self_preference: dict[str, bool] = Field(default_factory=dict)
    """Role ('executor', 'proposer') -> the judge is the same model (self-preference risk)."""
    requests: int = 0
    """Judge requests made (cache hits included)."""
