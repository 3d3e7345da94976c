"""An execution that fails: whose fault it is, and what it makes of the case (rules/execution.py).

A one-sided agent failure (turn limit, empty answer, unusable step) forfeits the case for that side:
a loss on every dimension, evidence in the paired statistics. Infrastructure failures and failures
on both sides stay INVALID. The executor's failure kinds are checked against a real HTTP server."""

from __future__ import annotations

import pytest
from evaluate_fakes import ENV, SKILL, context, executor_reply, judge_reply, make_set, skill_text

from skillforge.evaluation.compare import case_scores, conclude, judge_case, paired_deltas
from skillforge.evaluation.executor import Executor, SkillUnderTest
from skillforge.graphs.evaluate import build_evaluate_graph
from skillforge.llm.client import LLM
from skillforge.llm.config import resolve_all
from skillforge.rules.execution import (AGENT_FAULTS, CaseCall, case_call, failure_kind, forfeit_verdicts,
                                        side_failure)
from skillforge.state.evaluate import Case, CaseResult, Execution, ExecutionFailure, PairVerdict, SkillSide
from skillforge.state.evaluate_graph import EvalState
from skillforge.state.llm import Role
from skillforge.testing.fake_chat import ScriptedChatModel, offered_tools
from skillforge.testing.openai_server import FakeOpenAIServer, Reply

LOOP = "LOOP-MARKER"
"""In a skill's body: the fake agent calls the fare tool forever on cases whose query says LOOP_HERE."""
LOOP_HERE = "loop-here"
NONCE = "sfn-0123456789ab"
EMPTY = "EMPTY-MARKER"
"""In a skill's body: the fake agent answers with no text on LOOP_HERE cases."""
TL, NA, BO, INFRA = (ExecutionFailure.TURN_LIMIT, ExecutionFailure.NO_ANSWER, ExecutionFailure.BAD_OUTPUT,
                     ExecutionFailure.INFRASTRUCTURE)


# ---- the rule ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("old", "new", "loaded", "call"), [
    (None, None, (True, True), CaseCall.JUDGE),
    (None, TL, (True, True), CaseCall.CANDIDATE_FORFEITS),
    (None, NA, (True, True), CaseCall.CANDIDATE_FORFEITS),
    (BO, None, (True, True), CaseCall.BASELINE_FORFEITS),
    (None, TL, (True, False), CaseCall.CANDIDATE_FORFEITS),  # one side loaded the skill: still evidence
    (TL, TL, (True, True), CaseCall.INVALID),                # both agents failed: nothing to compare
    (TL, BO, (True, True), CaseCall.INVALID),
    (None, INFRA, (True, True), CaseCall.INVALID),           # the endpoint's fault: never evidence
    (INFRA, TL, (True, True), CaseCall.INVALID),             # infrastructure wins over an agent failure
    (INFRA, None, (False, False), CaseCall.INVALID),
    (None, TL, (False, False), CaseCall.NO_EVIDENCE),        # the skill under test played no part
    (None, None, (False, False), CaseCall.NO_EVIDENCE),
])
def test_case_call_on_its_edges(old, new, loaded, call):
    assert case_call(old, new, loaded=loaded) is call


def test_only_agent_failures_are_evidence():
    assert AGENT_FAULTS == {TL, NA, BO} and INFRA not in AGENT_FAULTS


@pytest.mark.parametrize(("invalid_output", "cause", "kind"), [
    (True, None, BO), (True, "OutputParserException", BO), (True, "ValidationError", BO),
    (True, "JSONDecodeError", INFRA), (True, "APIResponseValidationError", INFRA), (True, "TypeError", INFRA),
    (False, None, INFRA), (False, "OutputParserException", INFRA),
])
def test_failure_kind(invalid_output, cause, kind):
    assert failure_kind(invalid_output, cause) is kind


def test_an_error_without_a_kind_is_infrastructure_and_no_error_is_no_failure():
    assert side_failure("no answer after 6 turns", None) is INFRA  # a trace from before kinds
    assert side_failure("x", TL) is TL and side_failure(None, None) is None and side_failure("", TL) is None


def test_forfeit_verdicts_give_every_dimension_to_the_side_that_answered():
    assert set(forfeit_verdicts("candidate").values()) == {PairVerdict.BASELINE}
    assert set(forfeit_verdicts("baseline").values()) == {PairVerdict.CANDIDATE}
    assert set(forfeit_verdicts("candidate")) == {"overall", "task", "robustness", "readability"}
    with pytest.raises(ValueError, match="loser"):
        forfeit_verdicts("judge")


# ---- the executor's failure kinds -------------------------------------------------------------
CASE = Case(id="c", skill=SKILL, query="叫车去机场", fixtures={"ride.estimate_fare": {"fare": 120}},
            expect={"must_include": ["120"]})


def _skills(marker: str = "") -> dict[str, SkillUnderTest]:
    return {SKILL: SkillUnderTest.from_text(skill_text(marker), None)}


@pytest.mark.parametrize(("reply", "kind"), [
    (Reply.raw(b"<html>502 bad gateway</html>", content_type="text/html"), INFRA),
    (Reply.raw(b"{}"), INFRA),
    (Reply.raw(b""), INFRA),
    (Reply.error(500), INFRA),
    (Reply.tool_call("Action", '{"step": "answer", "text": '), BO),       # arguments not JSON
    (Reply.tool_call("Action", {"step": "fly away"}), BO),                 # a step that is not offered
    (Reply.tool_call("Other", {"x": 1}), BO),                              # another tool
    (Reply.text("I would book it"), BO),                                   # no tool call
    (Reply.tool_call("Action", {"step": "answer", "text": "x"}, completion_tokens=5000), BO),  # cut at its cap
    (Reply.tool_call("Action", {"step": "answer", "text": "  "}), NA),     # an answer with no text
], ids=["html", "empty-object", "empty-body", "http-500", "bad-args", "not-offered", "other-tool", "text", "cut",
        "blank"])
def test_the_executor_records_whose_fault_a_failure_is(reply, kind):
    with FakeOpenAIServer([reply]) as srv:
        env = {"SKILLFORGE_LLM_BASE_URL": srv.base_url, "SKILLFORGE_LLM_MODEL": "m", "SKILLFORGE_LLM_API_KEY": "k",
               "SKILLFORGE_LLM_MAX_RETRIES": "0", "SKILLFORGE_JUDGE_MODEL": "j"}
        out = Executor(LLM(resolve_all(env=env))).run(CASE, _skills(), "sfn-1", None)
    assert out.error and out.failure is kind


def looping_executor(messages, tools):
    """The evaluate fakes' agent, except that a LOOP skill keeps calling the tool (and an EMPTY one
    answers with no text) on LOOP_HERE cases."""
    system, query = str(messages[0].content), str(messages[1].content)
    if LOOP_HERE in query and LOOP in system:
        return {"name": "Action", "args": {"step": f"call_tool {offered_tools(tools)[0]}", "text": "", "arguments": {}}}
    if LOOP_HERE in query and EMPTY in system and len(messages) > 2:
        return {"name": "Action", "args": {"step": "answer", "text": "", "arguments": {}}}
    return executor_reply(messages, tools)


def loop_llm() -> LLM:
    return LLM(resolve_all(env=ENV), {Role.EXECUTOR: ScriptedChatModel.responding(looping_executor),
                                      Role.JUDGE: ScriptedChatModel.responding(judge_reply)})


def test_a_looping_agent_ends_at_the_turn_limit_and_the_error_shows_its_steps():
    out = Executor(loop_llm()).run(CASE.model_copy(update={"query": f"叫车 {LOOP_HERE}"}), _skills(LOOP), "sfn-1", None)
    assert out.failure is TL and out.turns == 6 and not out.answer
    assert out.error.startswith("no answer after 6 turns (looping): call_tool ride.estimate_fare → ")


# ---- what it makes of a case, a run and the statistics ----------------------------------------
def run(tmp_path, baseline: str = "", candidate: str = "", *, n: int = 6, looping: int = 2, p0: int = 0) -> EvalState:
    """n cases; the last `looping` say LOOP_HERE (a LOOP side never answers them)."""
    ctx = context(loop_llm(), make_set(tmp_path, n, p0=p0, garbage=looping, fault=LOOP_HERE))
    state = EvalState(run_id="r", skill=SKILL, eval_set="t", baseline=SkillSide(text=skill_text(baseline)),
                      candidate=SkillSide(text=skill_text(candidate)))
    return EvalState.model_validate(build_evaluate_graph().invoke(state, {"max_concurrency": 3}, context=ctx))


def test_a_candidate_that_loops_on_2_of_6_cases_forfeits_them_instead_of_making_the_run_invalid(tmp_path):
    out = run(tmp_path, candidate=LOOP)
    res, m = out.result, out.result.measured
    lost = [r for r in out.results if r.forfeit]
    assert res.verdict != "INVALID" and m.invalid_cases == 0 and m.valid_cases == 6
    assert [r.case.id for r in lost] == ["t-04", "t-05"] and all(r.forfeit == "candidate" for r in lost)
    for r in lost:
        assert not r.invalid and not r.orders and not r.flipped  # the judge was not asked
        assert set(r.verdicts.values()) == {PairVerdict.BASELINE}
        assert r.checks["baseline"].passed and not r.checks["candidate"].passed
        assert "no answer after 6 turns" in r.checks["candidate"].reason and r.candidate.failure is TL
    assert m.forfeits == {"candidate": ["t-04", "t-05"]} and m.objective_passes == {"baseline": 6, "candidate": 4}
    for dim in ("task", "robustness", "readability", "efficiency", "effect", "objective"):
        assert res.evidence[dim].losses == 2 and res.evidence[dim].wins == 0, dim
    assert res.evidence["effect"].ci[0] < 0
    assert any(x.startswith("candidate forfeited 2 of 6 case(s)") and "t-04, t-05" in x and "looping" in x
               for x in res.reasons)


def test_a_candidate_that_never_answers_is_declined(tmp_path):
    out = run(tmp_path, candidate=LOOP, n=6, looping=6)
    assert out.result.verdict == "DECLINED" and out.result.measured.forfeits == {"candidate": [f"t-0{i}" for i in range(6)]}
    assert out.result.evidence["effect"].losses == 6
    assert any("objective pass rate 0/6" in x for x in out.result.reasons)


def test_a_candidate_whose_agent_answers_with_no_text_forfeits_a_p0_case_and_is_declined(tmp_path):
    out = run(tmp_path, candidate=EMPTY, n=6, looping=1, p0=6)
    [lost] = [r for r in out.results if r.forfeit]
    assert lost.candidate.failure is NA and out.result.measured.p0_flips == [lost.case.id]
    assert out.result.verdict == "DECLINED" and any("P0 case(s) went from pass to fail" in x for x in out.result.reasons)


def test_a_baseline_that_loops_is_a_win_for_the_candidate(tmp_path):
    out = run(tmp_path, baseline=LOOP, n=6, looping=6)
    assert out.result.measured.forfeits == {"baseline": [f"t-0{i}" for i in range(6)]}
    assert out.result.improvement.value == "WIN" and out.result.evidence["objective"].wins == 6


def test_both_sides_looping_is_invalid_and_so_is_the_run(tmp_path):
    out = run(tmp_path, baseline=LOOP, candidate=LOOP, n=6, looping=2)
    bad = [r for r in out.results if r.invalid]
    assert [r.case.id for r in bad] == ["t-04", "t-05"] and not any(r.forfeit for r in out.results)
    assert out.result.verdict == "INVALID" and "no answer after 6 turns" in out.result.reasons[1]


def _forfeit(side: str, i: int) -> object:
    """A stored case whose `side` agent hit the turn limit (never judged: the llm is not needed)."""
    case = CASE.model_copy(update={"id": f"c{i}"})
    ok = Execution(answer="车费 120 元", skills_loaded=[SKILL], prompt_tokens=100, nonce=NONCE,
                   tool_responses=[f'{{"fare": 120, "_nonce": "{NONCE}"}}'])
    bad = Execution(skills_loaded=[SKILL], prompt_tokens=10, nonce=NONCE, error="no answer after 6 turns: ", failure=TL)
    old, new = (bad, ok) if side == "baseline" else (ok, bad)
    return judge_case(case, old, new, llm=None)  # type: ignore[arg-type]


def test_a_forfeit_is_a_loss_on_every_dimension_even_when_the_failed_side_spent_fewer_tokens():
    r = _forfeit("candidate", 0)
    old, new = case_scores(r)
    assert r.forfeit == "candidate" and new["efficiency"] == 0.0 and old["efficiency"] == 1.0
    assert all(d < 0 for d in (v[0] for v in paired_deltas([r]).values()))


def test_aa_with_forfeits_on_both_sides_in_turn_raises_no_false_alarm():
    results = [_forfeit("baseline" if i % 2 else "candidate", i) for i in range(10)]
    res = conclude({"run_id": "aa", "skill": SKILL, "eval_set": "t", "kind": "aa"}, skill_text(), skill_text(), results)
    assert res.verdict != "INVALID" and res.false_alarm is False
    assert all(e.wins == 5 and e.losses == 5 and e.outcome.value == "INCONCLUSIVE" for k, e in res.evidence.items()
               if k != "objective")
    assert res.measured.forfeits == {"baseline": [f"c{i}" for i in range(1, 10, 2)],
                                     "candidate": [f"c{i}" for i in range(0, 10, 2)]}


def test_aa_where_one_side_keeps_forfeiting_is_a_false_alarm_the_sign_test_sees():
    res = conclude({"run_id": "aa", "skill": SKILL, "eval_set": "t", "kind": "aa"}, skill_text(), skill_text(),
                   [_forfeit("candidate", i) for i in range(10)])
    assert res.false_alarm is True and res.evidence["effect"].outcome.value == "LOSS"
    assert res.evidence["effect"].p_value == pytest.approx(2 ** -10, rel=1e-3)


def test_an_invalid_cause_from_a_validation_error_names_the_field_and_the_problem():
    """QA qa10a F16: the cause was cut at "ValidationError: 1 validation error for Judgement"."""
    from pydantic import ValidationError

    from skillforge.evaluation.compare import invalid_cause
    from skillforge.evaluation.judge import Judgement
    from skillforge.llm.client import map_error

    with pytest.raises(ValidationError) as e:
        Judgement.model_validate({"overall": "a", "task": "A", "robustness": "A", "readability": "A", "reason": "x"})
    cfg = resolve_all(env=ENV)[Role.JUDGE]
    error = str(map_error(e.value, cfg))
    assert "\n" not in error and "does not fit Judgement: overall:" in error  # map_error names the field
    case = Case(id="c1", skill=SKILL, query="q")
    side = Execution(answer="", error=None)
    results = [CaseResult(case=case, baseline=side, candidate=side, invalid=True, error=error)]
    said = invalid_cause(results)
    assert said is not None and "Judgement: overall: Input should be 'A', 'B' or 'tie'" in said, said
    raw = str(e.value)  # pydantic's own multi-line text, as an error from elsewhere may carry it
    results = [CaseResult(case=case, baseline=side, candidate=side, invalid=True, error=raw)]
    said = invalid_cause(results)
    assert said is not None and "1 validation error for Judgement: overall: Input should be 'A', 'B' or 'tie'" in said, said
    assert "For further information" not in said
