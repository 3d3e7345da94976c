"""Whose fault is a failed execution, and what it makes of a case. Pure, no I/O.

An execution fails either through its **agent** (the executor model, given this side's skill): it
did not answer within the turn cap (looping, or calling tools forever), answered with no text, or
replied with a step the loop cannot use (not the schema, a name outside the offered steps, cut at its
token cap). Or through the **infrastructure**: the endpoint is down, timed out, returned a body that
is not an OpenAI reply, the budget's hard cap stopped the call, or the prompt would not fit.

Both sides run the same case with the same model and fixtures; only the skill differs. So an agent
failure on one side only is evidence against that side: it FORFEITS the case (a loss on every
dimension, a fail on its objective checks). An infrastructure failure says nothing about either
skill, and two failing agents leave nothing to compare: the case is INVALID (fail closed).
"""

from __future__ import annotations

from enum import StrEnum

from skillforge.state.evaluate import JUDGED_DIMENSIONS, ExecutionFailure, PairVerdict

AGENT_FAULTS = frozenset({ExecutionFailure.TURN_LIMIT, ExecutionFailure.NO_ANSWER, ExecutionFailure.BAD_OUTPUT})
"""Failures that are evidence against the side whose agent had them."""
MODEL_OUTPUT_CAUSES = frozenset({"OutputParserException", "ValidationError"})
"""Exceptions an unusable-output error may be made from when the *model's reply* was the problem
(its tool-call arguments are not the schema). Any other cause (openai's APIResponseValidationError:
the server's body is not an OpenAI reply) is the infrastructure's."""
SIDES = ("baseline", "candidate")


class CaseCall(StrEnum):
    """What a case's two executions allow."""

    JUDGE = "judge"
    """Both answered: the judge compares them."""
    INVALID = "invalid"
    """An infrastructure failure on either side, or both agents failed: the case cannot tell."""
    NO_EVIDENCE = "no_evidence"
    """Neither side loaded the skill under test: a tie everywhere, no evidence."""
    BASELINE_FORFEITS = "baseline_forfeits"
    CANDIDATE_FORFEITS = "candidate_forfeits"


def failure_kind(invalid_output: bool, cause: str | None, *, refused: bool = False) -> ExecutionFailure:
    """The failure an LLM error ends an execution with: BUDGET for a request the budget `refused`;
    BAD_OUTPUT for an unusable-output error (`invalid_output`) raised on the reply itself (`cause`
    None) or made from a parse of the model's tool call (`cause` in MODEL_OUTPUT_CAUSES);
    INFRASTRUCTURE for everything else (connection, timeout, HTTP status, context overflow, a body
    that is not an OpenAI reply)."""
    if refused:
        return ExecutionFailure.BUDGET
    if invalid_output and (cause is None or cause in MODEL_OUTPUT_CAUSES):
        return ExecutionFailure.BAD_OUTPUT
    return ExecutionFailure.INFRASTRUCTURE


def side_failure(error: str | None, failure: ExecutionFailure | None) -> ExecutionFailure | None:
    """A side's failure: None when it answered (no error), its recorded kind, and INFRASTRUCTURE for
    an error without a kind (a trace from before kinds were recorded: never evidence)."""
    if not error:
        return None
    return failure or ExecutionFailure.INFRASTRUCTURE


def case_call(baseline: ExecutionFailure | None, candidate: ExecutionFailure | None, *,
              loaded: tuple[bool, bool] = (True, True)) -> CaseCall:
    """What to make of one case from its sides' failures (None: that side answered) and whether
    each side `loaded` the skill under test. In order: an infrastructure failure on either side, or
    failures on both, is INVALID; neither side loading the skill is NO_EVIDENCE (whatever one agent
    did, the skill under test played no part); an agent failure on one side forfeits it; else JUDGE."""
    failures = [f for f in (baseline, candidate) if f is not None]
    if any(f not in AGENT_FAULTS for f in failures) or len(failures) == 2:
        return CaseCall.INVALID
    if not any(loaded):
        return CaseCall.NO_EVIDENCE
    if baseline is not None:
        return CaseCall.BASELINE_FORFEITS
    if candidate is not None:
        return CaseCall.CANDIDATE_FORFEITS
    return CaseCall.JUDGE


def forfeiting_side(call: CaseCall) -> str | None:
    """"baseline" / "candidate" for a forfeit, None otherwise."""
    return {CaseCall.BASELINE_FORFEITS: "baseline", CaseCall.CANDIDATE_FORFEITS: "candidate"}.get(call)


def forfeit_verdicts(loser: str) -> dict[str, PairVerdict]:
    """Every judged dimension to the side that answered, as if the judge had preferred it in both
    orders (so no flip): the verdicts of a case `loser` forfeits."""
    if loser not in SIDES:
        raise ValueError(f"loser must be one of {SIDES}, got {loser!r}")
    winner = PairVerdict.CANDIDATE if loser == "baseline" else PairVerdict.BASELINE
    return dict.fromkeys(JUDGED_DIMENSIONS, winner)
