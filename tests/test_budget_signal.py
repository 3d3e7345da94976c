"""A request the budget refused is a typed signal, not text to search: the executor records the
failure BUDGET, judge_case marks the case `budget_refused`, and run_case / --rejudge / validate read
the mark (they stop the run at its budget); the mark is never dumped, so traces keep their shape."""

from __future__ import annotations

import pytest
from evaluate_fakes import ENV, executor_reply, judge_reply, skill_text

from skillforge.errors import BudgetExceeded
from skillforge.evaluation.compare import judge_case, run_case
from skillforge.evaluation.executor import Executor, SkillUnderTest
from skillforge.llm.client import LLM
from skillforge.llm.config import resolve_all
from skillforge.nodes.evaluate import budget_refusal
from skillforge.rules.execution import AGENT_FAULTS, CaseCall, case_call, failure_kind
from skillforge.state.evaluate import Case, Execution, ExecutionFailure
from skillforge.state.llm import Role
from skillforge.testing.fake_chat import ScriptedChatModel

SKILL = "taxi-hailing"
CASE = Case(id="c-1", skill=SKILL, query="叫车去机场", fixtures={"ride.estimate_fare": {"fare": 120}},
            expect={"must_include": ["120"]})
REFUSED = "role 'executor': call cap reached: 4 of 4"


def llm(executor_after: int = 99, judge_after: int = 99) -> LLM:
    """The evaluate fakes, except that each role's calls after its first `*_after` are refused by the
    budget (BudgetExceeded, as the ledger's hook raises it)."""
    calls = {"executor": 0, "judge": 0}

    def executor(messages, tools):  # noqa: ANN001, ANN202
        calls["executor"] += 1
        return BudgetExceeded(REFUSED) if calls["executor"] > executor_after else executor_reply(messages, tools)

    def judge(messages):  # noqa: ANN001, ANN202
        calls["judge"] += 1
        return BudgetExceeded(REFUSED) if calls["judge"] > judge_after else judge_reply(messages)

    return LLM(resolve_all(env=ENV), {Role.EXECUTOR: ScriptedChatModel.responding(executor),
                                      Role.JUDGE: ScriptedChatModel.responding(judge)})


def skills() -> dict[str, SkillUnderTest]:
    return {SKILL: SkillUnderTest.from_text(skill_text(), None)}


def test_the_rule_names_a_refusal_budget_and_it_is_never_evidence():
    assert failure_kind(False, None, refused=True) is ExecutionFailure.BUDGET
    assert failure_kind(True, None, refused=True) is ExecutionFailure.BUDGET
    assert failure_kind(False, None) is ExecutionFailure.INFRASTRUCTURE
    assert ExecutionFailure.BUDGET not in AGENT_FAULTS
    assert case_call(None, ExecutionFailure.BUDGET, loaded=(True, True)) is CaseCall.INVALID
    assert case_call(ExecutionFailure.TURN_LIMIT, ExecutionFailure.BUDGET, loaded=(False, False)) is CaseCall.INVALID


def test_an_execution_refused_by_the_budget_records_budget():
    out = Executor(llm(executor_after=1)).run(CASE, skills(), "sfn-1", None)
    assert out.failure is ExecutionFailure.BUDGET and out.error == f"BudgetExceeded: {REFUSED}"


@pytest.mark.parametrize(("executor_after", "judge_after", "says"), [
    (1, 99, f"BudgetExceeded: {REFUSED}"),      # the baseline's second turn is refused (and the candidate's first)
    (3, 99, f"BudgetExceeded: {REFUSED}"),      # the candidate's second turn
    (99, 1, f"BudgetExceeded: {REFUSED}"),      # the judge's second order
])
def test_a_refused_case_is_marked_and_says_why(executor_after, judge_after, says):
    result = run_case(CASE, skills(), skills(), None, None, llm(executor_after, judge_after))
    assert result.budget_refused and result.invalid
    assert budget_refusal(result) == says


def test_a_case_without_a_refusal_is_not_marked():
    result = run_case(CASE, skills(), skills(), None, None, llm())
    assert not result.budget_refused and budget_refusal(result) is None and not result.invalid


def test_the_mark_is_read_not_the_error_text():
    """An infrastructure error that merely mentions the budget (a trace from before BUDGET existed)
    is an INVALID case, not a refusal of this run."""
    old = Execution(answer="", error=f"BudgetExceeded: {REFUSED}", failure=ExecutionFailure.INFRASTRUCTURE)
    new = Execution(answer="结果：120", skills_loaded=[SKILL], nonce="sfn-0123456789ab")
    result = judge_case(CASE, old, new, llm())
    assert result.invalid and not result.budget_refused and budget_refusal(result) is None


def test_the_mark_is_never_dumped():
    result = run_case(CASE, skills(), skills(), None, None, llm(executor_after=1))
    assert result.budget_refused
    assert "budget_refused" not in result.model_dump() and "budget_refused" not in result.model_dump_json()
    assert result.model_dump(mode="json")["candidate"]["failure"] == "budget"
