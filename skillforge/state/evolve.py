"""State of the evolve graph: one run that turns a skill's failures into a gated release."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, model_serializer

from skillforge.state.evaluate import Case, EvalSet
from skillforge.state.ids import EvolveRunId, SkillName
from skillforge.state.llm import BudgetLedger
from skillforge.state.result import EvalVerdict, Outcome
from skillforge.state.inputs import GraphInput


MAX_ROUNDS = 2
"""Reflection rounds of one run, at most (DESIGN: Limits)."""


class EvolveMode(StrEnum):
    AUTONOMOUS = "autonomous"
    """Publish L1, ask a person for L2, suggest L3."""
    FIX_ONLY = "fix_only"
    """Only FIX candidates may be released; DERIVED and CAPTURED become suggestions."""
    AUDIT_ONLY = "audit_only"
    """Stop after analyze and write the findings; change nothing."""


class EvolveStatus(StrEnum):
    RUNNING = "RUNNING"
    PUBLISHED = "PUBLISHED"
    PENDING_REVIEW = "PENDING_REVIEW"
    SUGGESTED = "SUGGESTED"
    NO_IMPROVEMENT = "NO_IMPROVEMENT"
    NO_FAILURES = "NO_FAILURES"
    AUDITED = "AUDITED"
    BUDGET = "BUDGET"
    REJECTED = "REJECTED"
    """A person rejected the L2 candidate in review."""
    CANCELLED = "CANCELLED"
    """A person closed the run before it finished (`skillforge runs cancel`)."""
    FAILED = "FAILED"


TERMINAL = frozenset(s for s in EvolveStatus if s not in (EvolveStatus.RUNNING, EvolveStatus.PENDING_REVIEW,
                                                          EvolveStatus.BUDGET))


class FailureKind(StrEnum):
    """The effective failures evolution learns from. Infrastructure noise is never one."""

    TASK = "task"
    PROVENANCE = "provenance"
    P0 = "p0"
    SESSION = "session"
    """A person accepted a case harvested from an agent session (a tool error, a correction, bad
    feedback) while the release it happened on is still live."""


class RootCause(StrEnum):
    ROUTING_TRIGGER = "routing_trigger"
    INSTRUCTION_BEHAVIOUR = "instruction_behaviour"
    DEPENDENCY = "dependency"
    BOUNDARY = "boundary"


class CandidateKind(StrEnum):
    FIX = "FIX"
    """Same skill, new version."""
    DERIVED = "DERIVED"
    """A new skill from one or more parents."""
    CAPTURED = "CAPTURED"
    """A new root skill."""


class PatchFormatName(StrEnum):
    FULL = "full"
    SEARCH_REPLACE = "search_replace"
    OPS = "ops"
    """A list of edit operations on anchors of the current file (`rules/edits.py`)."""


class ProposerFormat(StrEnum):
    """The `proposer.format` setting: which format the proposer is asked for."""

    OPS = "ops"
    SEARCH_REPLACE = "search_replace"
    """SEARCH/REPLACE blocks, or a full file (as before the setting existed)."""
    FULL = "full"
    AUTO = "auto"
    """ops for the embedded model and for a model whose last proposals failed to apply, else search_replace."""


class CandidateVerdict(StrEnum):
    PENDING = "PENDING"
    REFUSED = "REFUSED"
    """The patch could not be applied, or its output is not a skill."""
    LEAK = "LEAK"
    NOOP = "NOOP"
    DUPLICATE = "DUPLICATE"
    FAILED_VALIDATION = "FAILED_VALIDATION"
    UNJUDGED = "UNJUDGED"
    """Its validation was INVALID because an endpoint failed (the judge's or the agent's): no verdict
    on the edit. Never remembered as rejected: a later round or run may propose it again."""
    NOT_SELECTED = "NOT_SELECTED"
    HOLDOUT_LOSS = "HOLDOUT_LOSS"
    PASSED = "PASSED"
    BUDGET = "BUDGET"


class ReviewAction(StrEnum):
    APPROVE = "approve"
    REJECT = "reject"
    REBASE = "rebase"
    """Re-apply the candidate on the release that is live now, then check and validate it again."""


class EvolveDecision(StrEnum):
    """Where the run goes after decide (or after a review or publish that sends it back)."""

    PUBLISH = "publish"
    """L1: release the selected candidate."""
    REVIEW = "review"
    """L2 (or a refused publish): wait for a person."""
    SUGGEST = "suggest"
    """L3, or fix_only with a new skill: write a suggestion only."""
    RETRY = "retry"
    """No candidate passed and rounds are left: propose again with feedback."""
    STOP = "stop"
    """No candidate passed in the last round: NO_IMPROVEMENT."""
    REBASE = "rebase"
    """A person asked for the candidate on the release that is live now: check it again."""


class Failure(BaseModel):
    """One effective failure of the live release, with the case it happened on."""

    case: Case
    kind: FailureKind
    reason: str
    run_id: str
    skill_loaded: bool = True
    """False when the agent never loaded the skill (a routing-trigger symptom)."""


class RootCauseFinding(BaseModel):
    category: RootCause
    summary: str
    evidence: list[str] = Field(default_factory=list)
    """Case ids of the failures that show it."""


_PRIMARY_DEFAULTS: dict[str, object] = {"primary": "effect", "primary_reason": "", "primary_wins": None,
                                         "primary_losses": None, "primary_ties": None, "primary_mean": None,
                                         "unreachable": []}


class SetScore(BaseModel):
    """One validation of one candidate on one set: the gate's verdict and evidence in short."""

    name: str
    cases: int
    verdict: EvalVerdict
    improvement: Outcome = Outcome.INCONCLUSIVE
    losses: list[str] = Field(default_factory=list)
    """Dimensions with evidence of loss."""
    p0_flips: list[str] = Field(default_factory=list)
    score: float | None = None
    """Candidate effect score (selection or holdout), for the report."""
    baseline_score: float | None = None
    effect_wins: int | None = None
    """Cases the candidate won / lost / tied on the effect score; None: not recorded."""
    effect_losses: int | None = None
    effect_ties: int | None = None
    primary: str = "effect"
    """The run's primary endpoint (rules/endpoint.py): "effect", or "objective" when its judge was noise."""
    primary_reason: str = ""
    """Why, in one line (empty: a score from before the rule, whose primary was the effect score)."""
    primary_wins: int | None = None
    """Cases won / lost / tied on `primary`; None: not recorded (then the effect_* counts are the primary's)."""
    primary_losses: int | None = None
    primary_ties: int | None = None
    primary_mean: float | None = None
    """The mean per-case delta on `primary` (candidate - live)."""

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        """The primary_* fields (and `unreachable`) are left out while they hold their defaults, so a
        score of an older checkpoint (or an evaluation from before the rule) dumps exactly as it was stored."""
        out = handler(self)
        for key, default in _PRIMARY_DEFAULTS.items():
            if key in out and out[key] == default:
                del out[key]
        return out
    reasons: list[str] = Field(default_factory=list)
    run_id: str = ""
    unreachable: list[str] = Field(default_factory=list)
    """The roles ("executor", "judge") whose endpoint failed in this set's INVALID cases
    (rules/outage.unreachable): an INVALID verdict that says nothing about the candidate."""


class Candidate(BaseModel):
    """One proposed patch, and everything the checks found about it."""

    id: str
    kind: CandidateKind = CandidateKind.FIX
    target: str
    """The skill name the candidate releases as (new for DERIVED / CAPTURED)."""
    patch: str
    patch_format: PatchFormatName
    rationale: str = ""
    claimed_level: int | None = None
    computed_level: int | None = None
    level: int | None = None
    """The level it is released at: computed, or the claim when that is higher."""
    text: str | None = None
    """The SKILL.md after the patch; None when it could not be applied."""
    applied_diff: str = ""
    changed_parts: list[str] = Field(default_factory=list)
    metadata_only: bool = False
    leaks: list[str] = Field(default_factory=list)
    fingerprint: str = ""
    validation: dict[str, SetScore] = Field(default_factory=dict)
    """Set name (routing, selection, holdout) -> its score."""
    verdict: CandidateVerdict = CandidateVerdict.PENDING
    rejected_by: str | None = None
    """The check that stopped it: apply, leak_scan, fingerprint, routing, selection, holdout."""
    notes: list[str] = Field(default_factory=list)


class Attempt(BaseModel):
    """Feedback for the next round: what an earlier candidate tried and why it failed."""

    round: int
    candidate_id: str
    rationale: str
    rejected_by: str
    why: str


class RejectedEdit(BaseModel):
    """One line of the rejected-edit buffer (`runs/rejected/<skill>.jsonl`): an edit a run refused or
    lost on validation, remembered for the skill's later runs. It never holds holdout or
    final_audit text: a leak is kept by its kinds only, a holdout loss without its numbers."""

    ts: str = ""
    run_id: str
    candidate_id: str
    round: int = 0
    fingerprint: str
    patch_format: str = ""
    verdict: str
    rejected_by: str
    reason: str = ""
    change: str = ""
    """What the edit added and removed, in short; empty for a leak."""


class FormatOutcome(BaseModel):
    """One line of `runs/proposer_formats.jsonl`: how many of a proposer round's candidates applied."""

    ts: str = ""
    model: str
    """The proposer's endpoint and model."""
    run_id: str
    round: int
    format: PatchFormatName
    proposed: int
    applied: int


class ReviewDecision(BaseModel):
    action: ReviewAction
    comment: str = ""
    reviewer: str = ""
    answered_at: str = ""
    """UTC time of the answer, as the answering process recorded it."""
    force: bool = False
    """approve only: save unpublished edits in the skill folder under runs/backups/ and publish."""


class Baseline(BaseModel):
    """The SKILL.md of the release a run works on, as read from git once."""

    release_id: str
    """The release it is the SKILL.md of (the run's base_release_id when it was read)."""
    text: str


class EvolveState(GraphInput):
    """Read and written by collect -> analyze -> propose -> check -> validate -> decide -> review/publish."""

    run_id: EvolveRunId
    """Also the checkpoint thread id, and the name of its files under runs/ (validated: never a path)."""
    skill: SkillName
    started_at: str = ""
    base_release_id: str | None = None
    """The live release when the run began (collect): candidates are patches of it and are validated
    against it, and publish refuses when it is no longer live. None in runs from before it was kept."""
    base_version: str = ""
    need: str = ""
    """A capture run (`skills new`): the need, in plain words, that the new skill `skill` serves. Its
    graph path is capture -> review -> publish; empty for an evolve run."""
    need_queries: list[str] = Field(default_factory=list)
    """The users' requests (redacted) the need came from, shown to the proposer."""
    registration: dict[str, str] = Field(default_factory=dict)
    """A capture run's starter sets and router lines (path under evaluation_sets/ -> text), written
    when the new skill is published."""
    mode: EvolveMode = EvolveMode.AUTONOMOUS
    round: int = 0
    max_rounds: int = MAX_ROUNDS
    status: EvolveStatus = EvolveStatus.RUNNING
    budget: BudgetLedger = Field(default_factory=BudgetLedger)
    failures: list[Failure] = Field(default_factory=list)
    harvested: list[str] = Field(default_factory=list)
    """Ids of the repair cases written by collect (`<skill>_auto_NN`)."""
    neighbours: list[Case] = Field(default_factory=list)
    """Rewordings of the failures (same intent, fixtures and expectations), made once per run."""
    root_cause: RootCauseFinding | None = None
    candidates: list[Candidate] = Field(default_factory=list)
    """This round's candidates."""
    history: list[Candidate] = Field(default_factory=list)
    """Earlier rounds' candidates, kept for the report."""
    feedback: list[Attempt] = Field(default_factory=list)
    fingerprints: list[str] = Field(default_factory=list)
    selected: str | None = None
    """Id of the candidate chosen on the visible sets."""
    decision: EvolveDecision | None = None
    """publish / review / suggest / retry / stop / rebase; None until decide ran."""
    review: ReviewDecision | None = None
    release_id: str | None = None
    suggestion_path: str | None = None
    failure_report: str | None = None
    message: str = ""
    proposer_notes: list[str] = Field(default_factory=list)
    proposer_down: list[int] = Field(default_factory=list)
    """The rounds whose proposer was unavailable (its endpoint down or timed out): no candidate."""
    """Run-level notes about the proposer's answers ("round 1: the proposer gave 2 candidate(s), fewer
    than 3"): kept here, not with each candidate, so no candidate's failure reason (what the
    rejected-edit buffer tells the next proposer) is about the round instead of the edit."""

    # ---- read once per round: by collect, or by the first node that needs them and finds them missing ----
    baseline: Baseline | None = None
    """The base release's SKILL.md: what analyze, propose, check, validate and decide work on. None
    before collect, after a rebase (the new base's is read by check), and in runs checkpointed before
    it was kept; a node that finds none, or one of another release than base_release_id, reads it."""
    sets: dict[str, EvalSet] | None = None
    """The workspace's evaluation sets by name, as collect left them (with its harvested repair cases):
    the cases validate and decide run, the leak scan's context, the proposer's bundle (built from
    dev / repair / p0 only). None before collect, after a rebase, and in runs checkpointed before they
    were kept (then the next node that needs them reads them)."""
