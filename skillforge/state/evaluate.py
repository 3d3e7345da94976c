"""Evaluation sets and cases: what a candidate release is measured on."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from skillforge.state.cliopts import ExecutionMode  # noqa: F401  (defined without pydantic, for the CLI)


class Partition(StrEnum):
    """dev, repair and p0 are visible to the proposer; holdout and final_audit never are."""

    DEV = "dev"
    P0 = "p0"
    REPAIR = "repair"
    HOLDOUT = "holdout"
    FINAL_AUDIT = "final_audit"


VISIBLE_TO_PROPOSER = frozenset({Partition.DEV, Partition.P0, Partition.REPAIR})


class Expectation(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    must_include: list[str] = Field(default_factory=list)
    """Facts that must appear in the answer (case-insensitive substring)."""
    must_not_include: list[str] = Field(default_factory=list)
    """Statements that must not appear (invented data, wrong tool output, unsafe advice)."""

    @property
    def checks(self) -> bool:
        """Whether it checks an answer at all: without a fact either way, every answer passes it, so
        the case never counts towards the objective pass rate (QA 34 F1)."""
        return bool(self.must_include or self.must_not_include)


class Case(BaseModel):
    """One task for one skill, with the tool responses the executor will see."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    skill: str
    query: str
    fixtures: dict[str, JsonValue] = Field(default_factory=dict)
    """Tool name -> the response that tool returns (a fresh nonce is injected per run)."""
    expect: Expectation = Field(default_factory=Expectation)
    p0: bool = False
    """A must-never-regress case: one pass -> fail flip declines the candidate."""
    tags: list[str] = Field(default_factory=list)
    split_from: str | None = Field(default=None, exclude=True)
    """The skill its set file names, when a split relabelled it to a child at load time
    (rules/splitcases.py); never written to a file or a trace."""


class SetMeta(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    partition: Partition
    skills: list[str]
    auto_case_ids: list[str] = Field(default_factory=list)
    """Ids of cases generated from captured failures (`*_auto_*`); must match them exactly."""


class EvalSet(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    meta: SetMeta
    cases: list[Case]


class ToolCall(BaseModel):
    name: str
    arguments: dict[str, str] = Field(default_factory=dict)
    ok: bool = True


class ExecutionFailure(StrEnum):
    """Why an execution ended without a usable answer (rules/execution.py says whose fault it is)."""

    TURN_LIMIT = "turn_limit"
    """The agent did not answer within the executor's turn cap (it looped, or kept calling tools)."""
    NO_ANSWER = "no_answer"
    """The agent answered with no text."""
    BAD_OUTPUT = "bad_output"
    """The agent's reply was not a usable step: not the schema, a name outside the offered steps, or
    cut at its token cap."""
    INFRASTRUCTURE = "infrastructure"
    """The endpoint failed: unreachable, timed out, a body that is not an OpenAI reply, a prompt over
    the context window."""
    BUDGET = "budget"
    """A request was refused by the run's budget (BudgetExceeded; nothing was sent): no evidence, the
    case stays unfinished and the run stops at its budget."""


class Execution(BaseModel):
    """One run of one side (baseline or candidate) on one case."""

    answer: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    skills_loaded: list[str] = Field(default_factory=list)
    turns: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    nonce: str = ""
    release_id: str | None = None
    tool_responses: list[str] = Field(default_factory=list)
    """The JSON text each tool returned in this run (the provenance check's sources)."""
    mode: ExecutionMode | None = None
    """The execution mode it ran in (None: a trace from before modes existed)."""
    truncated_tool_results: int = 0
    """Tool results cut to the executor's cap before the model saw them."""
    elided_turns: int = 0
    """Older turns whose content was left out of a prompt to keep it inside the context window."""
    error: str | None = None
    failure: ExecutionFailure | None = None
    """Set with `error`: why the execution failed (None with an error: a trace from before failure
    kinds existed, read as INFRASTRUCTURE)."""

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class PairVerdict(StrEnum):
    """Who won one dimension of one case, after both orders."""

    BASELINE = "baseline"
    CANDIDATE = "candidate"
    TIE = "tie"
    INVALID = "INVALID"


JUDGED_DIMENSIONS = ("overall", "task", "robustness", "readability")
"""The dimensions the judge compares the two answers on (`CaseResult.verdicts`), in report order."""


class SideCheck(BaseModel):
    """Objective checks of one side's answer (no LLM opinion)."""

    expect_pass: bool
    provenance_ok: bool
    reason: str = ""

    @property
    def passed(self) -> bool:
        return self.expect_pass and self.provenance_ok


class CaseResult(BaseModel):
    """Everything measured on one case: both executions, both judge orders, the verdicts."""

    case: Case
    baseline: Execution
    candidate: Execution
    checks: dict[str, SideCheck] = Field(default_factory=dict)
    """"baseline" / "candidate" -> objective checks."""
    orders: list[dict[str, str]] = Field(default_factory=list)
    """The raw judgements: [baseline shown as A, candidate shown as A]."""
    verdicts: dict[str, PairVerdict] = Field(default_factory=dict)
    """Dimension (overall, task, robustness, readability) -> verdict after both orders."""
    flipped: bool = False
    invalid: bool = False
    error: str | None = None
    length_diff: int = 0
    """len(candidate answer) - len(baseline answer): length bias shows up here."""
    unexercised: list[str] = Field(default_factory=list)
    """The sides ("baseline", "candidate") whose execution never loaded the skill under test."""
    no_evidence: bool = False
    """Neither side loaded the skill under test: every verdict is a tie and the judge is not asked.
    Such a case says nothing about the skill; statistics must count it as no evidence (objective
    checks included)."""
    forfeit: str | None = None
    """The side ("baseline" / "candidate") whose agent failed (turn limit, no answer, unusable step)
    while the other side answered: it loses every dimension and fails its objective checks, and the
    judge is not asked (rules/execution.py)."""
    injection: dict[str, list[str]] = Field(default_factory=dict)
    """Side ("baseline" / "candidate") -> what its answer said to the judge (rules/injection.py:
    addressing it, dictating a verdict or score, overriding its instructions). A flagged side loses
    every judged dimension (both flagged: ties) and the judge is not asked; empty when neither was."""
    judge_failure: ExecutionFailure | None = None
    """Why the judge gave no verdict (rules/execution.failure_kind): INFRASTRUCTURE when its endpoint
    failed (down, timed out, not an OpenAI reply), BAD_OUTPUT for an unusable reply; None when it
    answered or was not asked."""
    budget_refused: bool = Field(default=False, exclude=True)
    """A request of this case (an execution or the judge) was refused by the run's budget: the case
    is no evidence and is never recorded (run_case stops the run instead), so it is not dumped."""


class Unexercised(BaseModel):
    """How often the skill under test went unused in a run."""

    executions: dict[str, int] = Field(default_factory=dict)
    """Side -> executions that never loaded the skill under test."""
    cases: int = 0
    """Cases where neither side loaded it (ties, no evidence)."""
    case_ids: list[str] = Field(default_factory=list)

    @classmethod
    def of(cls, results: list[CaseResult]) -> Unexercised:
        """Count the unexercised executions and the no-evidence cases of `results`."""
        return cls(executions={side: sum(side in r.unexercised for r in results) for side in ("baseline", "candidate")},
                   cases=sum(r.no_evidence for r in results), case_ids=[r.case.id for r in results if r.no_evidence])


class SkillSide(BaseModel):
    """One side of the comparison: the SKILL.md text measured (None: no skill at all)."""

    text: str | None
    release_id: str | None = None
    label: str = ""


class CaseTask(BaseModel):
    """What one fanned-out `run_case` receives (a Send payload)."""

    case: Case
    baseline: SkillSide
    candidate: SkillSide
    mode: ExecutionMode = ExecutionMode.BEHAVIOUR
