"""The real ChatOpenAI path against a local OpenAI-compatible server: cache, retries, timeouts,
bad replies and budget caps. No network beyond 127.0.0.1, no key."""

from __future__ import annotations

import socket

import pytest
from pydantic import BaseModel

from skillforge.errors import BudgetExceeded, InvalidLLMOutput, LLMTimeout, LLMUnavailable
from skillforge.llm.client import LLM, build_llm
from skillforge.llm.cache import LLMCache
from skillforge.llm.config import resolve_all
from skillforge.llm.ledger import RequestLedger, RunBudget
from skillforge.state.llm import BudgetCaps, Role
from skillforge.testing.fake_chat import ScriptedChatModel
from skillforge.testing.openai_server import FakeOpenAIServer, Reply


class Choice(BaseModel):
    skill: str | None
    reason: str


CHOICES = {"skill": {"weather-query", "air-quality", None}}
ASK = [("system", "Pick a skill."), ("user", "北京今天天气怎么样")]


def make_llm(url: str, tmp_path=None, *, retries: int = 0, timeout: float = 5.0, max_tokens: int = 64,
             caps: BudgetCaps | None = None, prices: tuple[float, float] = (0.0, 0.0),
             ledger: RunBudget | None = None) -> LLM:
    env = {"SKILLFORGE_LLM_BASE_URL": url, "SKILLFORGE_LLM_MODEL": "fake-model", "SKILLFORGE_LLM_API_KEY": "k",
           "SKILLFORGE_LLM_MAX_RETRIES": str(retries), "SKILLFORGE_LLM_TIMEOUT": str(timeout),
           "SKILLFORGE_LLM_MAX_TOKENS": str(max_tokens), "SKILLFORGE_LLM_PRICE_IN": str(prices[0]),
           "SKILLFORGE_LLM_PRICE_OUT": str(prices[1]), "SKILLFORGE_JUDGE_MODEL": "judge-model"}
    cache = LLMCache(tmp_path / "cache.db") if tmp_path is not None else None
    return LLM(resolve_all(env=env), cache=cache, ledger=ledger or RunBudget.adhoc(caps=caps))


def tool(skill: str | None, **kw) -> Reply:
    return Reply.tool_call("Choice", {"skill": skill, "reason": "r"}, **kw)


def test_structured_call_and_request_shape():
    with FakeOpenAIServer([tool("weather-query", prompt_tokens=40, completion_tokens=7)]) as srv:
        llm = make_llm(srv.base_url, prices=(1.0, 2.0))
        answer = llm.structured(Role.ROUTER, Choice, ASK, choices=CHOICES)
        body = srv.requests[0]
    assert answer.value == Choice(skill="weather-query", reason="r") and not answer.cached
    assert (answer.prompt_tokens, answer.completion_tokens) == (40, 7)
    assert body["max_tokens"] == 64 and "max_completion_tokens" not in body
    assert body["tools"][0]["function"]["name"] == "Choice"
    assert body["tool_choice"]["function"]["name"] == "Choice"
    assert body["messages"][1]["content"] == "北京今天天气怎么样"
    spend = llm.ledger.spend(Role.ROUTER)
    assert (spend.calls, spend.prompt_tokens, spend.completion_tokens) == (1, 40, 7)
    assert spend.cost_usd == pytest.approx((40 * 1.0 + 7 * 2.0) / 1e6)


def test_rerun_is_served_from_cache_with_zero_calls(tmp_path):
    with FakeOpenAIServer([tool("air-quality")]) as srv:
        first = make_llm(srv.base_url, tmp_path).structured(Role.ROUTER, Choice, ASK, choices=CHOICES)
        again_llm = make_llm(srv.base_url, tmp_path)  # a new run, same workspace cache
        again = again_llm.structured(Role.ROUTER, Choice, ASK, choices=CHOICES)
        assert srv.hits == 1
    assert again.cached and again.value == first.value
    assert again_llm.ledger.calls == 0 and again_llm.ledger.cache_hits == 1


def test_cache_key_covers_role_messages_schema_and_params(tmp_path):
    with FakeOpenAIServer(default=Reply.echo_tool()) as srv:
        llm = make_llm(srv.base_url, tmp_path)
        llm.structured(Role.ROUTER, Choice, ASK)
        llm.structured(Role.EXECUTOR, Choice, ASK)                       # other role
        llm.structured(Role.ROUTER, Choice, [*ASK[:1], ("user", "上海")])  # other messages
        srv.script(tool("weather-query"))
        llm.structured(Role.ROUTER, Choice, ASK, choices=CHOICES)         # other allowed set
        make_llm(srv.base_url, tmp_path, max_tokens=65).structured(Role.ROUTER, Choice, ASK)  # other params
        llm.structured(Role.ROUTER, Choice, ASK)                       # same as the first
        assert srv.hits == 5


def test_no_cache_bypasses(tmp_path):
    with FakeOpenAIServer(default=Reply.echo_tool()) as srv:
        llm = make_llm(srv.base_url, tmp_path)
        llm.structured(Role.ROUTER, Choice, ASK)
        llm.structured(Role.ROUTER, Choice, ASK, use_cache=False)
        assert srv.hits == 2


def test_errors_are_never_cached(tmp_path):
    with FakeOpenAIServer([Reply.error(500), tool("zzz"), Reply.raw(b"{not json"), tool("weather-query")]) as srv:
        llm = make_llm(srv.base_url, tmp_path)
        with pytest.raises(LLMUnavailable, match="500"):
            llm.structured(Role.ROUTER, Choice, ASK, choices=CHOICES)
        with pytest.raises(InvalidLLMOutput, match="zzz"):
            llm.structured(Role.ROUTER, Choice, ASK, choices=CHOICES)
        with pytest.raises(InvalidLLMOutput):
            llm.structured(Role.ROUTER, Choice, ASK, choices=CHOICES)
        assert llm.structured(Role.ROUTER, Choice, ASK, choices=CHOICES).value.skill == "weather-query"
        assert srv.hits == 4 and len(llm.cache) == 1
    assert llm.ledger.calls == 4


def test_retries_with_backoff_then_success():
    with FakeOpenAIServer([Reply.error(500), Reply.error(429, retry_after=0.01), tool(None)]) as srv:
        answer = make_llm(srv.base_url, retries=2).structured(Role.ROUTER, Choice, ASK, choices=CHOICES)
        assert srv.hits == 3
    assert answer.value.skill is None


def test_429_after_retries_is_unavailable():
    with FakeOpenAIServer(default=Reply.error(429, retry_after=0.01)) as srv:
        with pytest.raises(LLMUnavailable, match="429"):
            make_llm(srv.base_url, retries=1).structured(Role.ROUTER, Choice, ASK)
        assert srv.hits == 2


def test_timeout():
    with FakeOpenAIServer([Reply.hang(3)]) as srv:
        with pytest.raises(LLMTimeout, match="0.3 s"):
            make_llm(srv.base_url, timeout=0.3).structured(Role.ROUTER, Choice, ASK)


def test_endpoint_down():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(LLMUnavailable, match="cannot connect"):
        make_llm(f"http://127.0.0.1:{port}/v1").structured(Role.ROUTER, Choice, ASK)


@pytest.mark.parametrize("reply", [
    Reply.raw(b"<html>502 bad gateway</html>", content_type="text/html"),
    Reply.raw(b"{}"),
    Reply.raw(b""),
    Reply.tool_call("Choice", '{"skill": "weather-query", "reason": '),     # arguments not JSON
    Reply.tool_call("Choice", {"skill": 42}),                                # not the schema
    Reply.tool_call("Other", {"x": 1}),                                     # another tool
    Reply.text("I think weather-query"),                                      # no tool call
], ids=["html", "empty-object", "empty-body", "bad-args", "schema", "other-tool", "text"])
def test_unusable_replies_are_invalid(reply):
    with FakeOpenAIServer([reply]) as srv:
        with pytest.raises(InvalidLLMOutput):
            make_llm(srv.base_url).structured(Role.ROUTER, Choice, ASK, choices=CHOICES)


@pytest.mark.parametrize(("reply", "shown"), [
    (Reply.text("I think weather-query"), "text 'I think weather-query'"),
    (Reply.tool_call("Choice", '{"skill": "weather-query", "reason": '), "unparsed call 'Choice'"),
], ids=["text", "bad-args"])
def test_a_reply_without_a_valid_tool_call_says_what_came_back_instead(reply, shown):
    with FakeOpenAIServer([reply]) as srv:
        with pytest.raises(InvalidLLMOutput, match="no valid Choice tool call") as e:
            make_llm(srv.base_url).structured(Role.ROUTER, Choice, ASK, choices=CHOICES)
    assert shown in str(e.value) and len(str(e.value)) <= 500


def test_reply_over_the_token_cap_is_invalid(tmp_path):
    # the third as llama-cpp-python sends a forced tool call that ran out of tokens: finish_reason
    # "tool_calls" whatever happened, every allowed token used, the arguments cut mid-string
    looping = Reply.tool_call("Choice", '{"skill": "weather-query", "reason": "again and again and', completion_tokens=64)
    with FakeOpenAIServer([tool("weather-query", finish_reason="length"),
                           tool("weather-query", completion_tokens=500), looping]) as srv:
        llm = make_llm(srv.base_url, tmp_path, max_tokens=64)
        for _ in range(3):
            with pytest.raises(InvalidLLMOutput, match="token cap"):
                llm.structured(Role.ROUTER, Choice, ASK)
        assert len(llm.cache) == 0


def test_budget_caps_stop_before_the_call():
    with FakeOpenAIServer(default=Reply.echo_tool()) as srv:
        llm = make_llm(srv.base_url, caps=BudgetCaps(max_calls=2))
        llm.structured(Role.ROUTER, Choice, ASK)
        llm.structured(Role.JUDGE, Choice, ASK)
        with pytest.raises(BudgetExceeded, match="call cap"):
            llm.structured(Role.ROUTER, Choice, ASK)
        assert srv.hits == 2
        tight = make_llm(srv.base_url, caps=BudgetCaps(max_tokens=50), max_tokens=64)
        with pytest.raises(BudgetExceeded, match="token cap"):
            tight.structured(Role.ROUTER, Choice, ASK)
        assert srv.hits == 2


def test_resumed_run_keeps_its_spend(tmp_path):
    """A new process resuming the run opens the same ledger file and continues the run's rows."""
    run = RunBudget(RequestLedger(tmp_path / "ledger.db"), "run-1", BudgetCaps(max_calls=3))
    with FakeOpenAIServer(default=Reply.echo_tool()) as srv:
        first = make_llm(srv.base_url, ledger=run)
        first.structured(Role.ROUTER, Choice, ASK)
        first.structured(Role.ROUTER, Choice, ASK)
        again = RunBudget(RequestLedger(tmp_path / "ledger.db"), "run-1", BudgetCaps(max_calls=3))
        resumed = make_llm(srv.base_url, ledger=again)
        resumed.structured(Role.ROUTER, Choice, ASK)
        with pytest.raises(BudgetExceeded):
            resumed.structured(Role.ROUTER, Choice, ASK)
        assert resumed.ledger.calls == 3 and srv.hits == 3 and resumed.ledger.refused == 1


def test_scripted_fake_model_takes_the_same_path(tmp_path):
    fake = ScriptedChatModel.of(Choice(skill="air-quality", reason="pm2.5"), Choice(skill="nope", reason="x"),
                                TimeoutError("injected"))
    llm = LLM(resolve_all(env={"SKILLFORGE_LLM_MODEL": "m", "SKILLFORGE_JUDGE_MODEL": "j"}), {Role.ROUTER: fake},
              cache=LLMCache(tmp_path / "c.db"))
    assert llm.structured(Role.ROUTER, Choice, ASK, choices=CHOICES).value.skill == "air-quality"
    with pytest.raises(InvalidLLMOutput):
        llm.structured(Role.ROUTER, Choice, [("user", "other")], choices=CHOICES)
    with pytest.raises(LLMTimeout, match="role 'router'.*no answer in time: TimeoutError: injected"):
        llm.structured(Role.ROUTER, Choice, [("user", "third")], choices=CHOICES)
    assert len(fake.received) == 3 and len(llm.cache) == 1  # only the good answer is cached


def test_build_llm_uses_the_workspace_cache(workspace, monkeypatch):
    with FakeOpenAIServer(default=Reply.echo_tool()) as srv:
        for k, v in {"SKILLFORGE_LLM_BASE_URL": srv.base_url, "SKILLFORGE_LLM_MODEL": "m",
                     "SKILLFORGE_JUDGE_MODEL": "j", "SKILLFORGE_LLM_MAX_RETRIES": "0"}.items():
            monkeypatch.setenv(k, v)
        build_llm(workspace).structured(Role.ROUTER, Choice, ASK)
        assert build_llm(workspace).structured(Role.ROUTER, Choice, ASK).cached
        assert not build_llm(workspace, no_cache=True).structured(Role.ROUTER, Choice, ASK).cached
        monkeypatch.setenv("SKILLFORGE_NO_CACHE", "1")
        assert not build_llm(workspace).structured(Role.ROUTER, Choice, ASK).cached
        assert srv.hits == 3
    assert (workspace.runs_dir / "llm_cache.db").exists()



def test_no_cache_replaces_a_bad_endpoints_answers(workspace, monkeypatch):
    """QA19 DOC-1: a well-formed but wrong answer stayed cached, and a --no-cache run with the fixed
    endpoint wrote nothing, so the next cached run replayed the bad answer. --no-cache reads nothing
    and stores each fresh answer over the old one; evaluate --aa (store=False) leaves the cache alone."""
    with FakeOpenAIServer([tool("zzz-wrong"), tool("weather-query"), tool("aa-answer")]) as srv:
        for k, v in {"SKILLFORGE_LLM_BASE_URL": srv.base_url, "SKILLFORGE_LLM_MODEL": "m",
                     "SKILLFORGE_JUDGE_MODEL": "j", "SKILLFORGE_LLM_MAX_RETRIES": "0"}.items():
            monkeypatch.setenv(k, v)
        assert build_llm(workspace).structured(Role.ROUTER, Choice, ASK).value.skill == "zzz-wrong"
        fresh = build_llm(workspace, no_cache=True).structured(Role.ROUTER, Choice, ASK)
        assert not fresh.cached and fresh.value.skill == "weather-query" and srv.hits == 2
        aa = build_llm(workspace, no_cache=True, store=False)
        assert aa.cache is None and aa.structured(Role.ROUTER, Choice, ASK).value.skill == "aa-answer"
        again = build_llm(workspace).structured(Role.ROUTER, Choice, ASK)
        assert again.cached and again.value.skill == "weather-query" and srv.hits == 3

def test_a_reply_that_does_not_fit_the_schema_names_the_field_in_one_line():
    """QA: an INVALID cause read "ValidationError: 1 validation error for Judgement" and was cut there;
    "no usable draft" dumped pydantic's report with its URLs."""
    with FakeOpenAIServer([Reply.tool_call("Choice", {"skill": 42})]) as srv:
        with pytest.raises(InvalidLLMOutput) as e:
            make_llm(srv.base_url).structured(Role.ROUTER, Choice, ASK, choices=CHOICES)
    said = str(e.value)
    assert "does not fit Choice" in said and "skill: " in said, said
    assert "\n" not in said and "errors.pydantic.dev" not in said and "input_value" not in said
