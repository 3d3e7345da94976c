"""The request ledger under the real ChatOpenAI path, against a local OpenAI-compatible server that
counts what it receives: every HTTP request (retries included) is counted before it is sent, the cap
holds across threads and processes, unknown usage keeps its worst case, a reply whose usage is not a
count is a named error, and an interruption is never turned into a model failure."""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from pydantic import BaseModel

from skillforge.cli.interrupt import CtrlC
from skillforge.errors import BudgetExceeded, InvalidLLMOutput, LLMTimeout, LLMUnavailable
from skillforge.llm.client import LLM
from skillforge.llm.config import resolve_all
from skillforge.llm.ledger import RequestLedger, RunBudget
from skillforge.state.llm import BudgetCaps, Role
from skillforge.testing.fake_chat import ScriptedChatModel
from skillforge.testing.openai_server import FakeOpenAIServer, Reply

ASK = [("system", "Pick a skill."), ("user", "北京今天天气怎么样")]


class Choice(BaseModel):
    skill: str | None
    reason: str


def env_for(url: str, retries: int = 0, timeout: float = 5.0) -> dict[str, str]:
    return {"SKILLFORGE_LLM_BASE_URL": url, "SKILLFORGE_LLM_MODEL": "m", "SKILLFORGE_JUDGE_MODEL": "j",
            "SKILLFORGE_LLM_API_KEY": "k", "SKILLFORGE_LLM_MAX_RETRIES": str(retries),
            "SKILLFORGE_LLM_TIMEOUT": str(timeout), "SKILLFORGE_LLM_MAX_TOKENS": "64"}


def make_llm(url: str, caps: BudgetCaps | None = None, *, retries: int = 0, timeout: float = 5.0,
             ledger: RunBudget | None = None) -> LLM:
    return LLM(resolve_all(env=env_for(url, retries, timeout)), ledger=ledger or RunBudget.adhoc(caps=caps))


def failing(n: int) -> list[Reply]:
    return [Reply.error(500, retry_after=0.01) for _ in range(n)]


def test_every_http_request_is_counted_retries_included():
    with FakeOpenAIServer([*failing(2), Reply.echo_tool()], default=Reply.echo_tool()) as srv:
        llm = make_llm(srv.base_url, retries=2)
        llm.structured(Role.ROUTER, Choice, ASK)
        assert srv.hits == 3 and llm.ledger.calls == 3  # one call, three requests
        spend = llm.ledger.spend(Role.ROUTER)
        assert (spend.prompt_tokens, spend.completion_tokens, spend.reserved_tokens) == (10, 5, 0)  # 500s cost nothing


def test_the_cap_refuses_a_retry_before_it_is_sent():
    with FakeOpenAIServer([*failing(2), Reply.echo_tool()]) as srv:
        llm = make_llm(srv.base_url, BudgetCaps(max_calls=2), retries=2)
        with pytest.raises(BudgetExceeded, match="call cap reached: 2 of 2"):
            llm.structured(Role.ROUTER, Choice, ASK)
        assert srv.hits == 2 and llm.ledger.calls == 2 and llm.ledger.refused == 1


def test_threads_never_pass_the_cap():
    with FakeOpenAIServer(default=Reply.echo_tool(), latency_s=0.005) as srv:
        llm = make_llm(srv.base_url, BudgetCaps(max_calls=25))

        def one(_: int) -> str:
            try:
                llm.structured(Role.ROUTER, Choice, ASK)
                return "ok"
            except BudgetExceeded:
                return "refused"
        with ThreadPoolExecutor(8) as pool:
            outcomes = list(pool.map(one, range(60)))
        assert outcomes.count("ok") == 25 == srv.hits == llm.ledger.calls
        assert outcomes.count("refused") == 35 == llm.ledger.refused


CHILD = """
import json, sys
from pydantic import BaseModel
from skillforge.errors import BudgetExceeded
from skillforge.llm.client import LLM
from skillforge.llm.config import resolve_all
from skillforge.llm.ledger import RequestLedger, RunBudget
from skillforge.state.llm import BudgetCaps, Role

class Choice(BaseModel):
    skill: str | None
    reason: str

url, path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
env = {"SKILLFORGE_LLM_BASE_URL": url, "SKILLFORGE_LLM_MODEL": "m", "SKILLFORGE_JUDGE_MODEL": "j",
       "SKILLFORGE_LLM_MAX_RETRIES": "0"}
llm = LLM(resolve_all(env=env), ledger=RunBudget(RequestLedger(path), "shared-run", BudgetCaps(max_calls=30)))
ok = refused = 0
for _ in range(n):
    try:
        llm.structured(Role.ROUTER, Choice, [("user", "q")])
        ok += 1
    except BudgetExceeded:
        refused += 1
print(json.dumps([ok, refused]))
"""


def test_processes_sharing_a_run_never_pass_its_cap(tmp_path):
    path = tmp_path / "runs" / "llm_ledger.db"
    with FakeOpenAIServer(default=Reply.echo_tool(), latency_s=0.002) as srv:
        procs = [subprocess.Popen([sys.executable, "-c", CHILD, srv.base_url, str(path), "25"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
        outs = [p.communicate(timeout=120) for p in procs]
        assert all(p.returncode == 0 for p in procs), outs
        counts = [json.loads(out.strip().splitlines()[-1]) for out, _ in outs]
        assert sum(ok for ok, _ in counts) == 30 == srv.hits
    spend = RequestLedger(path).spend("shared-run")
    assert (spend.calls, spend.refused) == (30, 20)


def test_a_request_without_an_answer_keeps_its_worst_case_an_error_status_does_not(tmp_path):
    with FakeOpenAIServer([Reply.hang(2), Reply.error(500), Reply.echo_tool()]) as srv:
        llm = make_llm(srv.base_url, timeout=0.3)
        with pytest.raises(LLMTimeout):
            llm.structured(Role.ROUTER, Choice, ASK)
        held = llm.ledger.spend(Role.ROUTER).reserved_tokens
        assert held > 64  # estimated prompt + the reply cap: the server may have generated it all
        with pytest.raises(LLMUnavailable):
            llm.structured(Role.ROUTER, Choice, ASK)
        assert llm.ledger.spend(Role.ROUTER).reserved_tokens == held  # the 500 generated nothing
        # the token cap counts the reservation: without it this request (worst case `held`) would fit
        tight = make_llm(srv.base_url, ledger=llm.ledger.bind(llm.ledger.run_id, BudgetCaps(max_tokens=2 * held - 1)))
        with pytest.raises(BudgetExceeded, match="token cap"):
            tight.structured(Role.ROUTER, Choice, ASK)
        assert srv.hits == 2


@pytest.mark.parametrize(("prompt", "completion"), [("NaN", "5"), ("10", "Infinity"), ("-5", "5"), ("10", '"x"')])
def test_usage_that_is_not_a_token_count_is_a_named_error(prompt, completion, tmp_path):
    from skillforge.llm.cache import LLMCache

    body = ('{"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": [{"index": 0, '
            '"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}], '
            f'"usage": {{"prompt_tokens": {prompt}, "completion_tokens": {completion}, "total_tokens": 1}}}}')
    with FakeOpenAIServer([Reply.raw(body)]) as srv:
        llm = LLM(resolve_all(env=env_for(srv.base_url)), cache=LLMCache(tmp_path / "c.db"))
        with pytest.raises(InvalidLLMOutput, match="usage that is not a token count"):
            llm.text(Role.JUDGE, ASK)
    assert len(llm.cache) == 0 and llm.ledger.calls == 1
    assert llm.ledger.spend(Role.JUDGE).reserved_tokens > 0 and llm.ledger.tokens == 0  # its cost stays unknown


@pytest.mark.parametrize("usage", [', "usage": {"prompt_tokens": null, "completion_tokens": null, "total_tokens": null}',
                                   ', "usage": {"prompt_tokens": 12, "completion_tokens": null, "total_tokens": 12}',
                                   ', "usage": {"total_tokens": 30}', ""],
                         ids=["null", "null-completion", "total-only", "no-usage"])
def test_a_reply_without_token_counts_keeps_its_worst_case(usage, tmp_path):
    """Null counts are no usage (langchain-openai reads them as 0): the answer is used, and its
    request stays counted at its worst case, like a reply with no usage object (QA19 TRUST-1)."""
    body = ('{"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": [{"index": 0, '
            f'"message": {{"role": "assistant", "content": "hi"}}, "finish_reason": "stop"}}]{usage}}}')
    with FakeOpenAIServer([Reply.raw(body), Reply.raw(body)]) as srv:
        llm = make_llm(srv.base_url)
        assert llm.text(Role.JUDGE, ASK).value == "hi"
        held = llm.ledger.spend(Role.JUDGE).reserved_tokens
        assert held > 64 and llm.ledger.tokens == 0
        tight = make_llm(srv.base_url, ledger=llm.ledger.bind(llm.ledger.run_id, BudgetCaps(max_tokens=2 * held - 1)))
        with pytest.raises(BudgetExceeded, match="token cap"):  # the cap counts it: the next request is refused
            tight.text(Role.JUDGE, ASK)
        assert srv.hits == 1


@pytest.mark.parametrize("interruption", [CtrlC, KeyboardInterrupt, SystemExit], ids=lambda t: t.__name__)
def test_an_interruption_during_a_call_propagates_unchanged(interruption):
    fake = ScriptedChatModel.of(interruption())
    llm = LLM(resolve_all(env={"SKILLFORGE_LLM_MODEL": "m", "SKILLFORGE_JUDGE_MODEL": "j"}), {Role.PROPOSER: fake})
    with pytest.raises(interruption):
        llm.structured(Role.PROPOSER, Choice, ASK)
    assert llm.ledger.calls == 1  # the request was sent (admitted) before it was interrupted


def test_a_real_sigint_during_a_slow_http_call_raises_ctrlc_not_a_model_error():
    from skillforge.cli import interrupt

    before = signal.getsignal(signal.SIGINT)
    with FakeOpenAIServer([Reply.hang(5)]) as srv:
        llm = make_llm(srv.base_url, timeout=30)
        main = threading.main_thread().ident

        def ctrl_c_once_sent() -> None:  # the user presses Ctrl-C while the server holds the request
            deadline = time.monotonic() + 30
            while srv.hits == 0 and time.monotonic() < deadline:
                time.sleep(0.01)
            signal.pthread_kill(main, signal.SIGINT)
        timer = threading.Thread(target=ctrl_c_once_sent, daemon=True)
        interrupt.install()
        try:
            timer.start()
            t0 = time.monotonic()
            with pytest.raises(CtrlC):
                llm.structured(Role.ROUTER, Choice, ASK)
            assert time.monotonic() - t0 < 4  # raised while the server still held the request
        finally:
            timer.join(30)
            signal.signal(signal.SIGINT, before)
    assert llm.ledger.calls == 1 and llm.ledger.spend(Role.ROUTER).reserved_tokens > 0


def test_cached_answers_are_counted_apart_and_totals_match_the_rows(tmp_path):
    from skillforge.llm.cache import LLMCache

    store = RequestLedger(tmp_path / "ledger.db")
    with FakeOpenAIServer(default=Reply.echo_tool()) as srv:
        for _ in range(3):
            llm = LLM(resolve_all(env=env_for(srv.base_url)), cache=LLMCache(tmp_path / "c.db"),
                      ledger=RunBudget(store, "r", BudgetCaps(max_calls=1)))
            llm.structured(Role.ROUTER, Choice, ASK)  # paid once, then cached: the cap of 1 is never in the way
        assert srv.hits == 1
    spend = store.spend("r")
    assert (spend.calls, spend.cache_hits, spend.refused) == (1, 2, 0)
    import sqlite3

    rows = dict(sqlite3.connect(tmp_path / "ledger.db").execute(
        "SELECT outcome, count(*) FROM requests WHERE run_id = 'r' GROUP BY outcome").fetchall())
    assert rows == {"paid": 1, "cached": 2}
    assert math.isclose(spend.cost_usd, 0.0)
