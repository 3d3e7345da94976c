"""A structured reply must hold exactly one tool call (QA19 TRUST-2): the parser took the first of
several, so a vet reply of [safe, unsafe] published at L1 and the order of two contradicting
judgements decided the verdict. More than one call, identical ones too, is InvalidLLMOutput: the
judge's case is INVALID and the L1 vet fails closed to a person. Through the real HTTP path too."""

from __future__ import annotations

import json

import pytest
from evaluate_fakes import ENV, skill_text
from langchain_core.messages import AIMessage

from skillforge.errors import InvalidLLMOutput
from skillforge.evaluation.compare import judge_case
from skillforge.evaluation.judge import Judgement
from skillforge.evolution.vet import L1Vetting, vet_l1
from skillforge.llm.client import LLM
from skillforge.llm.config import resolve_all
from skillforge.skill import file as skillfile
from skillforge.rules.levels import semantic_diff
from skillforge.state.evaluate import Case, Execution
from skillforge.state.llm import Role
from skillforge.testing.fake_chat import DEFAULT_USAGE, ScriptedChatModel
from skillforge.testing.openai_server import FakeOpenAIServer, Reply

SKILL = "taxi-hailing"
CASE = Case(id="c-1", skill=SKILL, query="叫车去机场", fixtures={"ride.estimate_fare": {"fare": 120}},
            expect={"must_include": ["120"]})
A_WINS = {d: "A" for d in ("overall", "task", "robustness", "readability")} | {"reason": "A names the fare"}
B_WINS = {d: "B" for d in ("overall", "task", "robustness", "readability")} | {"reason": "B is shorter"}
SAFE = {"verdict": "safe", "reason": "an example"}
UNSAFE = {"verdict": "unsafe", "line": "x", "reason": "qa: this deletes the newest backup"}


def calls(name: str, *args: dict[str, object]) -> AIMessage:
    """One reply holding one tool call per `args`, as a parallel-tool-calling endpoint sends it."""
    return AIMessage(content="", tool_calls=[{"name": name, "args": a, "id": f"call_{i}", "type": "tool_call"}
                                             for i, a in enumerate(args)],
                     usage_metadata=dict(DEFAULT_USAGE), response_metadata={"finish_reason": "tool_calls"})


def judge_llm(*replies: object) -> LLM:
    return LLM(resolve_all(env=ENV), {Role.JUDGE: ScriptedChatModel.of(*replies)})  # type: ignore[arg-type]


@pytest.mark.parametrize("args", [(A_WINS, B_WINS), (B_WINS, A_WINS), (A_WINS, A_WINS)],
                         ids=["A-then-B", "B-then-A", "identical"])
def test_two_judgements_in_one_reply_are_invalid(args):
    with pytest.raises(InvalidLLMOutput, match="2 tool calls in the reply .*exactly one expected"):
        judge_llm(calls("Judgement", *args)).structured(Role.JUDGE, Judgement, [("user", "which?")])


def test_a_case_whose_judge_sends_two_judgements_is_invalid():
    old = Execution(answer="车费 120 元", skills_loaded=[SKILL], nonce="sfn-0123456789ab")
    new = Execution(answer="结果：120", skills_loaded=[SKILL], nonce="sfn-0123456789ac")
    one = calls("Judgement", A_WINS)
    result = judge_case(CASE, old, new, judge_llm(calls("Judgement", A_WINS, B_WINS), one, one))
    assert result.invalid and "2 tool calls in the reply" in result.error, result.error
    ok = judge_case(CASE, old, new, judge_llm(one, calls("Judgement", B_WINS)))  # one call each: judged
    assert not ok.invalid


@pytest.mark.parametrize("args", [(SAFE, UNSAFE), (UNSAFE, SAFE), (SAFE, SAFE)],
                         ids=["safe-then-unsafe", "unsafe-then-safe", "identical"])
def test_an_l1_vet_reply_with_two_calls_waits_for_a_person(args):
    text = skill_text()
    before = skillfile.parse(text, "SKILL.md", SKILL)
    after = skillfile.parse(text + "\n- one more line\n", "SKILL.md", SKILL)
    vet = vet_l1(judge_llm(calls("L1Vetting", *args)), before, semantic_diff(before, after))
    assert not vet.safe and "could not vet" in vet.note and "2 tool calls" in vet.note, vet.note
    one = vet_l1(judge_llm(L1Vetting(verdict="safe", reason="an example")), before, semantic_diff(before, after))
    assert one.safe


def test_two_tool_calls_over_http_are_invalid_and_not_cached(tmp_path):
    from skillforge.llm.cache import LLMCache

    tool_calls = [{"id": f"call_{i}", "type": "function",
                   "function": {"name": "Judgement", "arguments": json.dumps(a)}} for i, a in enumerate((A_WINS, B_WINS))]
    body = json.dumps({"id": "x", "object": "chat.completion", "created": 1, "model": "j",
                       "choices": [{"index": 0, "finish_reason": "tool_calls",
                                    "message": {"role": "assistant", "content": None, "tool_calls": tool_calls}}],
                       "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
    env = {"SKILLFORGE_LLM_MODEL": "m", "SKILLFORGE_JUDGE_MODEL": "j", "SKILLFORGE_LLM_API_KEY": "k",
           "SKILLFORGE_LLM_MAX_RETRIES": "0", "SKILLFORGE_LLM_TIMEOUT": "5"}
    with FakeOpenAIServer([Reply.raw(body)]) as srv:
        llm = LLM(resolve_all(env={**env, "SKILLFORGE_LLM_BASE_URL": srv.base_url}), cache=LLMCache(tmp_path / "c.db"))
        with pytest.raises(InvalidLLMOutput, match="2 tool calls in the reply"):
            llm.structured(Role.JUDGE, Judgement, [("user", "which?")])
    assert len(llm.cache) == 0 and llm.ledger.calls == 1
