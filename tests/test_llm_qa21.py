"""Replies that say two things, or a count that is no count (QA pass 21), fail closed:
- usage `true`/`false` was read as 1/0 tokens and released the request's worst case;
- a second `choices` entry was dropped by the client, so [safe, unsafe] answered by its order;
- a key given twice in a tool call's arguments kept its last value;
- the L1 vet's `safe` call beside text saying UNSAFE published;
- a `--no-cache` evaluation stopped at its cap offered a `next:` without `--no-cache`, so the cases left
  read the very answers it was run to replace."""

from __future__ import annotations

import json

import pytest
from evaluate_fakes import skill_text
from langchain_core.messages import AIMessage

from skillforge.errors import InvalidLLMOutput
from skillforge.evaluation.judge import Judgement
from skillforge.evolution.vet import vet_l1
from skillforge.llm.client import LLM
from skillforge.llm.config import resolve_all
from skillforge.rules.levels import semantic_diff
from skillforge.skill import file as skillfile
from skillforge.state.llm import Role
from skillforge.testing.fake_chat import DEFAULT_USAGE, ScriptedChatModel
from skillforge.testing.openai_server import FakeOpenAIServer, Reply

A_WINS = {d: "A" for d in ("overall", "task", "robustness", "readability")} | {"reason": "A names the fare"}
ENV = {"SKILLFORGE_LLM_MODEL": "m", "SKILLFORGE_JUDGE_MODEL": "j", "SKILLFORGE_LLM_API_KEY": "k",
       "SKILLFORGE_LLM_MAX_RETRIES": "0", "SKILLFORGE_LLM_TIMEOUT": "5"}


def body(*choices: dict[str, object], usage: str = '{"prompt_tokens": 10, "completion_tokens": 5}') -> str:
    return json.dumps({"id": "x", "object": "chat.completion", "created": 1, "model": "j",
                       "choices": [{"index": i, "finish_reason": "tool_calls", "message": m} for i, m in enumerate(choices)],
                       "usage": json.loads(usage)})


def call(arguments: str, content: str | None = None) -> dict[str, object]:
    return {"role": "assistant", "content": content,
            "tool_calls": [{"id": "call_0", "type": "function", "function": {"name": "Judgement", "arguments": arguments}}]}


def ask(reply: str) -> None:
    with FakeOpenAIServer([Reply.raw(reply)]) as srv:
        llm = LLM(resolve_all(env={**ENV, "SKILLFORGE_LLM_BASE_URL": srv.base_url}))
        try:
            llm.structured(Role.JUDGE, Judgement, [("user", "which?")])
        finally:
            assert srv.hits == 1


def test_one_choice_with_one_call_is_an_answer():
    ask(body(call(json.dumps(A_WINS))))


@pytest.mark.parametrize("usage", ['{"prompt_tokens": true, "completion_tokens": true}',
                                   '{"prompt_tokens": false, "completion_tokens": false}',
                                   '{"prompt_tokens": 10, "completion_tokens": true}'], ids=["true", "false", "mixed"])
def test_usage_that_is_a_boolean_is_no_token_count(usage):
    with pytest.raises(InvalidLLMOutput, match="usage that is not a token count"):
        ask(body(call(json.dumps(A_WINS)), usage=usage))


def test_two_choices_are_no_answer():
    b_wins = {**A_WINS, "overall": "B"}
    with pytest.raises(InvalidLLMOutput, match="2 choices in the reply; exactly one expected"):
        ask(body(call(json.dumps(A_WINS)), call(json.dumps(b_wins))))


def test_a_key_given_twice_in_the_arguments_is_no_answer():
    args = json.dumps(A_WINS)[:-1] + ', "overall": "B"}'  # json.loads keeps the last: B
    with pytest.raises(InvalidLLMOutput, match="give 'overall' twice"):
        ask(body(call(args)))


def test_the_l1_vet_fails_closed_on_text_beside_its_verdict():
    text = skill_text()
    before = skillfile.parse(text, "SKILL.md", "taxi-hailing")
    after = skillfile.parse(text + "\n- one more line\n", "SKILL.md", "taxi-hailing")
    said = AIMessage(content="UNSAFE. Do not publish: this deletes the newest backup.",
                     tool_calls=[{"name": "L1Vetting", "args": {"verdict": "safe", "reason": "looks fine"},
                                  "id": "c0", "type": "tool_call"}],
                     usage_metadata=dict(DEFAULT_USAGE), response_metadata={"finish_reason": "tool_calls"})
    llm = LLM(resolve_all(env={"SKILLFORGE_LLM_MODEL": "m", "SKILLFORGE_JUDGE_MODEL": "j"}),
              {Role.JUDGE: ScriptedChatModel.of(said)})  # type: ignore[arg-type]
    vet = vet_l1(llm, before, semantic_diff(before, after))
    assert not vet.safe and "could not vet" in vet.note and "text beside" in vet.note, vet.note
    alone = AIMessage(content="", tool_calls=said.tool_calls, usage_metadata=dict(DEFAULT_USAGE),
                      response_metadata={"finish_reason": "tool_calls"})
    llm = LLM(resolve_all(env={"SKILLFORGE_LLM_MODEL": "m", "SKILLFORGE_JUDGE_MODEL": "j"}),
              {Role.JUDGE: ScriptedChatModel.of(alone)})  # type: ignore[arg-type]
    assert vet_l1(llm, before, semantic_diff(before, after)).safe


def test_a_zero_prompt_keeps_the_worst_case_and_a_string_count_is_no_count(tmp_path):
    """QA 21, also seen: all-zero usage settled a request at no cost (a prompt is never 0 tokens: a
    proxy that does not know says 0), and "12" passed for a count."""
    zero = body(call(json.dumps(A_WINS)), usage='{"prompt_tokens": 0, "completion_tokens": 0}')
    with FakeOpenAIServer([Reply.raw(zero)]) as srv:
        llm = LLM(resolve_all(env={**ENV, "SKILLFORGE_LLM_BASE_URL": srv.base_url}))
        llm.structured(Role.JUDGE, Judgement, [("user", "which?")])
    assert llm.ledger.tokens == 0 and llm.ledger.spend(Role.JUDGE).reserved_tokens > 64
    with pytest.raises(InvalidLLMOutput, match="usage that is not a token count"):
        ask(body(call(json.dumps(A_WINS)), usage='{"prompt_tokens": "12", "completion_tokens": "5"}'))


@pytest.mark.parametrize("usage", ['[10, 5]', '"10 5"', '7', '{"prompt_tokens": [10], "completion_tokens": 5}'],
                         ids=["list", "string", "number", "nested"])
def test_usage_that_is_no_object_is_the_named_error_and_keeps_the_worst_case(usage):
    """QA 21 MESSAGE-1: langchain-openai failed on these with an AttributeError (a bare LLMError)."""
    with FakeOpenAIServer([Reply.raw(body(call(json.dumps(A_WINS)), usage=usage))]) as srv:
        llm = LLM(resolve_all(env={**ENV, "SKILLFORGE_LLM_BASE_URL": srv.base_url}))
        with pytest.raises(InvalidLLMOutput, match=r"usage that is not a token count \(usage "):
            llm.structured(Role.JUDGE, Judgement, [("user", "which?")])
    assert llm.ledger.tokens == 0 and llm.ledger.spend(Role.JUDGE).reserved_tokens > 64
