"""The both-order merge (rules/pairwise.py) with judges whose two orders disagree, and the score
formulas asserted exactly on fakes whose token counts differ (issue 9 §9 a and e)."""

from __future__ import annotations

import pytest
from evaluate_fakes import BETTER, ENV, context, executor_reply, judge_reply, make_set, skill_text
from langchain_core.messages import AIMessage, BaseMessage

from skillforge.evaluation.executor import Action
from skillforge.graphs.evaluate import build_evaluate_graph
from skillforge.evaluation.judge import Judgement
from skillforge.llm.client import LLM
from skillforge.llm.config import resolve_all
from skillforge.rules.pairwise import candidate_share, combine_orders
from skillforge.state.evaluate import JUDGED_DIMENSIONS, PairVerdict, SkillSide
from skillforge.state.evaluate import ExecutionMode
from skillforge.state.evaluate_graph import EvalState
from skillforge.state.llm import Role
from skillforge.testing.fake_chat import ScriptedChatModel


def labels(overall: str, task: str | None = None, robustness: str | None = None,
           readability: str | None = None) -> dict[str, str]:
    return {"overall": overall, "task": task or overall, "robustness": robustness or overall,
            "readability": readability or overall}


def test_orders_that_agree_give_the_winner_and_no_flip():
    # order 1 shows the candidate as B, order 2 as A: "B" then "A" is the candidate both times
    verdicts, flipped = combine_orders(labels("B"), labels("A"))
    assert verdicts == dict.fromkeys(JUDGED_DIMENSIONS, PairVerdict.CANDIDATE) and not flipped
    verdicts, flipped = combine_orders(labels("A"), labels("B"))
    assert verdicts == dict.fromkeys(JUDGED_DIMENSIONS, PairVerdict.BASELINE) and not flipped
    verdicts, flipped = combine_orders(labels("tie"), labels("tie"))
    assert verdicts == dict.fromkeys(JUDGED_DIMENSIONS, PairVerdict.TIE) and not flipped


def test_a_judge_that_prefers_whatever_it_reads_first_makes_ties_and_flips():
    verdicts, flipped = combine_orders(labels("A"), labels("A"))
    assert verdicts == dict.fromkeys(JUDGED_DIMENSIONS, PairVerdict.TIE) and flipped
    verdicts, flipped = combine_orders(labels("B"), labels("B"))     # or second
    assert verdicts == dict.fromkeys(JUDGED_DIMENSIONS, PairVerdict.TIE) and flipped
    verdicts, flipped = combine_orders(labels("B"), labels("tie"))   # one order has a winner, the other not
    assert verdicts["overall"] is PairVerdict.TIE and flipped


def test_a_flip_is_counted_on_overall_only_each_dimension_still_ties():
    verdicts, flipped = combine_orders(labels("B", task="A"), labels("A", task="A"))
    assert verdicts["task"] is PairVerdict.TIE and verdicts["overall"] is PairVerdict.CANDIDATE and not flipped


@pytest.mark.parametrize("bad", [None, "C", "a", ""])
def test_a_missing_or_unknown_label_is_invalid_never_a_tie(bad):
    first = labels("B")
    if bad is None:
        del first["robustness"]
    else:
        first["robustness"] = bad
    verdicts, _ = combine_orders(first, labels("A"))
    assert verdicts["robustness"] is PairVerdict.INVALID and verdicts["overall"] is PairVerdict.CANDIDATE
    assert candidate_share(PairVerdict.INVALID) == 0.5 and candidate_share(PairVerdict.CANDIDATE) == 1.0


def run_graph(tmp_path, judge, executor=executor_reply, n: int = 6, marker: str = BETTER) -> EvalState:  # noqa: ANN001
    llm = LLM(resolve_all(env=ENV), {Role.EXECUTOR: ScriptedChatModel.responding(executor),
                                     Role.JUDGE: ScriptedChatModel.responding(judge)})
    state = EvalState(run_id="r", skill="taxi-hailing", eval_set="t", baseline=SkillSide(text=skill_text()),
                      candidate=SkillSide(text=skill_text(marker)), mode=ExecutionMode.DISCLOSURE)  # 3 turns a side
    out = build_evaluate_graph().invoke(state, {"max_concurrency": 3}, context=context(llm, make_set(tmp_path, n)))
    return EvalState.model_validate(out)


def test_a_position_biased_judge_on_half_the_cases_gives_ties_and_that_many_flips(tmp_path):
    # cases 0, 2, 4: the judge says "A" whatever it reads (position bias); the others judge by content
    def judge(messages: list[BaseMessage]) -> object:
        prompt = str(messages[-1].content)
        if any(f"第{i}次" in prompt for i in (0, 2, 4)):
            return Judgement(overall="A", task="A", robustness="A", readability="A", reason="first is best")
        return judge_reply(messages)

    out = run_graph(tmp_path, judge)
    by_id = {r.case.id: r for r in out.results}
    for i in range(6):
        r = by_id[f"t-{i:02d}"]
        # order 1 shows the candidate as B, order 2 as A: a fair judge says B then A, the biased one A, A
        assert r.orders[0]["overall"] == ("A" if i % 2 == 0 else "B") and r.orders[1]["overall"] == "A"
        expected = PairVerdict.TIE if i % 2 == 0 else PairVerdict.CANDIDATE
        assert r.verdicts["overall"] is expected and r.flipped is (i % 2 == 0)
    m = out.result.measured
    assert m.flips == 3 and m.flip_rate == 0.5
    assert out.result.evidence["readability"].wins == 3 and out.result.evidence["readability"].ties == 3


def tokens(action: Action, prompt: int, completion: int) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": "Action", "args": action.model_dump(mode="json"),
                                              "id": "call_1", "type": "tool_call"}],
                     usage_metadata={"input_tokens": prompt, "output_tokens": completion,
                                     "total_tokens": prompt + completion},
                     response_metadata={"finish_reason": "tool_calls"})


def test_score_formulas_exact_with_different_token_counts(tmp_path):
    """Baseline: 3 calls of 100 + 10 tokens. Candidate: the first call the same (the skill is not
    loaded yet), then 2 calls of 50 + 5, and it drops the fare on case 0 (fails its objective check)."""
    def executor(messages: list[BaseMessage], tools: list[object]) -> object:
        history = "\n".join(str(m.content) for m in messages)
        action = executor_reply(messages, tools)
        assert isinstance(action, Action)
        if BETTER in history and "第0次" in history and action.kind == "answer":
            action = action.model_copy(update={"text": "结果：稍后告知 (better)"})
        return tokens(action, 50, 5) if BETTER in history else tokens(action, 100, 10)

    out = run_graph(tmp_path, judge_reply, executor, n=5)
    m, ev = out.result.measured, out.result.evidence
    assert m.tokens == {"baseline": 5 * 330, "candidate": 5 * 220}
    assert [r.baseline.tokens for r in out.results] == [330] * 5 and [r.candidate.tokens for r in out.results] == [220] * 5
    assert m.objective_passes == {"baseline": 5, "candidate": 4}
    # efficiency = the token ratio: the candidate gets 330 / (330 + 220) = 0.6 on every case
    assert (m.old.efficiency, m.new.efficiency) == (pytest.approx(0.4), pytest.approx(0.6))
    # task = half the judge's share (the candidate wins task everywhere) + half the objective pass
    assert m.new.task == pytest.approx(0.5 * 1.0 + 0.5 * 4 / 5) and m.old.task == pytest.approx(0.5 * 0.0 + 0.5 * 1.0)
    assert (m.old.robustness, m.new.robustness) == (0.5, 0.5)        # the fake judge ties robustness
    assert (m.old.readability, m.new.readability) == (0.0, 1.0)
    assert out.result.ratchet["new_effect"] == pytest.approx((0.9 + 0.5 + 1.0 + 0.6) / 4)
    assert out.result.ratchet["old_effect"] == pytest.approx((0.5 + 0.5 + 0.0 + 0.4) / 4)
    # the paired deltas behind the evidence: their means are exactly the score changes
    assert ev["efficiency"].mean == pytest.approx(0.2) and (ev["efficiency"].wins, ev["efficiency"].ties) == (5, 0)
    assert ev["task"].mean == pytest.approx(0.9 - 0.5) and (ev["task"].wins, ev["task"].ties) == (4, 1)
    assert (ev["objective"].wins, ev["objective"].losses, ev["objective"].ties) == (0, 1, 4)
