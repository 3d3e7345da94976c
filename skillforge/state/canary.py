"""Canary records: the rows of `canaries`, the online comparison and the rules' verdict, typed."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, JsonValue


class CanaryState(StrEnum):
    """OPEN -> PROMOTING -> PROMOTED, or OPEN -> ROLLING_BACK -> ROLLED_BACK (triggers in SQLite).
    PROMOTING and ROLLING_BACK are the decided-but-unfinished steps a crash can leave; the next
    `canary tick` finishes them."""

    OPEN = "OPEN"
    PROMOTING = "PROMOTING"
    ROLLING_BACK = "ROLLING_BACK"
    PROMOTED = "PROMOTED"
    ROLLED_BACK = "ROLLED_BACK"


OPEN_STATES = (CanaryState.OPEN, CanaryState.PROMOTING, CanaryState.ROLLING_BACK)
"""A canary in one of these holds its skill: at most one per skill (a partial unique index)."""


class CanaryAction(StrEnum):
    HOLD = "hold"
    PROMOTE = "promote"
    ROLLBACK = "rollback"


class Canary(BaseModel):
    """One row of `canaries`: release `release_id` (PREPARING while the canary is open) is served to
    the sessions whose bucket falls under `share`; everyone else gets `live_release_id`."""

    model_config = ConfigDict(frozen=True)

    release_id: str
    skill_name: str
    live_release_id: str
    share: float
    """Fraction of sessions in the canary, 0 < share < 1."""
    min_sessions: int
    """Sessions each arm needs before the canary may be promoted."""
    max_age_hours: float
    """Older than this and still short of `min_sessions`: reaped (rolled back)."""
    state: CanaryState
    triggered_by: str
    started_at: str
    closed_at: str | None = None
    reason: str | None = None
    """Why it was promoted or rolled back (set when the decision is taken)."""
    decision: dict[str, JsonValue] | None = None
    """The evidence of that decision (the comparison and the rules' reasons)."""


class RateStat(BaseModel):
    """One per-session rate, canary against live: counts, rates, the difference with its CI, and
    the rollback test (H0: canary - live <= threshold, one-sided)."""

    name: str
    canary_events: int
    canary_n: int
    live_events: int
    live_n: int
    canary_rate: float | None
    live_rate: float | None
    diff: float | None
    """canary rate - live rate (None until both arms have a session)."""
    ci: tuple[float, float] | None
    """Time-uniform CI of `diff` at 1 - 2 * alpha (rules/canary.py: a normal-mixture confidence sequence
    around the Agresti-Caffo estimate), valid however often `canary tick` looks."""
    threshold: float
    """How much worse the canary may be before it is rolled back (absolute; tokens: relative)."""
    p_value: float | None
    """Anytime-valid one-sided p of "canary worse than live by more than threshold" (rules/canary.py);
    None below MIN_ARM_N per arm."""
    p_adjusted: float | None = None
    """Holm-adjusted over the rates tested together."""
    mde: float | None = None
    """The smallest true worsening this window detects with the rules' power (threshold included)."""
    needed: int = 0
    """More canary observations until `mde` is at most DETECT_FACTOR * threshold (0: enough)."""


class ArmCounts(BaseModel):
    """What one arm's sessions did in the window (a session counts once per signal)."""

    sessions: int = 0
    """Sessions served this arm's release (skill_used events in the window)."""
    with_verdict: int = 0
    bad: int = 0
    corrected: int = 0
    tool_error_sessions: int = 0
    tokens: list[int] = Field(default_factory=list)
    """Tokens a session reported (its latest feedback that carries them), one entry per session."""


class Regression(BaseModel):
    """A P0 or holdout case that passed on the live release and fails on the canary in a re-run."""

    case_id: str
    run_id: str
    why: str
    """"p0" or "holdout"."""


class Comparison(BaseModel):
    """`canary status`: both arms and every rate."""

    canary: ArmCounts
    live: ArmCounts
    rates: list[RateStat]
    no_session_loads: int = 0
    """use_skill loads of the skill in the window without a session id: all served the live release."""


class CanaryVerdict(BaseModel):
    """What the rules say to do with an open canary, and why."""

    action: CanaryAction
    reasons: list[str]
    reaped: bool = False
    sessions_needed: int = 0
    """Sessions the smaller arm still needs before promotion may be considered."""


SHARE_MAX = 0.5
"""A canary serves at most half the sessions: above that it is the live release in all but name."""
SHARE_MIN = 0.0001
"""A canary serves at least 0.01 % of the sessions: a smaller share would store as 0 (shares keep
six decimals) or never see a session before it is reaped (QA 26 N6)."""


class CanaryPlan(BaseModel):
    """How a new canary runs: the share of sessions it gets and its limits."""

    model_config = ConfigDict(frozen=True)

    share: float = Field(ge=SHARE_MIN, le=SHARE_MAX)
    """Checked here too, so a plan built through the library API never reaches the store's CHECK."""
    min_sessions: int
    max_age_hours: float
