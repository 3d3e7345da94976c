"""The fake OpenAI server speaks enough of the Chat Completions API for the real `openai` client and
langchain-openai's `ChatOpenAI`, and injects the failures (HTTP errors, garbage, hangs) other tests need.

Only 127.0.0.1 is ever contacted. The exception classes asserted here are what the installed clients
actually raise; code that maps client failures to named errors relies on them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from enum import Enum

import openai
import pytest
from langchain_openai import ChatOpenAI
from pydantic import BaseModel

from skillforge.testing.openai_server import FakeOpenAIServer, Reply, minimal_value

HI = [{"role": "user", "content": "hi"}]


class Route(BaseModel):
    """The structured output used by the routing tests."""

    skill: str
    confidence: float


class Color(str, Enum):
    RED = "red"
    BLUE = "blue"


class Inner(BaseModel):
    label: str


class Everything(BaseModel):
    """One required field of every JSON type, to check echo_tool's arguments validate."""

    name: str
    count: int
    score: float
    ok: bool
    tags: list[str]
    color: Color
    inner: Inner
    extra: dict[str, int]
    note: str | None = None


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make sure nothing routes 127.0.0.1 through a proxy."""
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def client(server: FakeOpenAIServer, **kw: float) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0, **kw)


def chat(server: FakeOpenAIServer, **kw: float) -> ChatOpenAI:
    return ChatOpenAI(base_url=server.base_url, api_key="k", model="fake-model", max_retries=0, **kw)


def http(method: str, url: str, body: bytes | None = None) -> tuple[int, dict[str, object]]:
    """A bare urllib request (no proxies); returns status and decoded JSON body."""
    req = urllib.request.Request(url, data=body, method=method, headers={"Content-Type": "application/json"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(req, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_text_reply_has_the_full_openai_shape(srv: FakeOpenAIServer) -> None:
    srv.script(Reply.text("hello", prompt_tokens=7, completion_tokens=3))
    out = client(srv).chat.completions.create(model="gpt-x", messages=HI)
    assert out.object == "chat.completion" and out.id.startswith("chatcmpl-") and out.created > 0
    assert out.model == "gpt-x"
    assert out.choices[0].message.role == "assistant" and out.choices[0].message.content == "hello"
    assert out.choices[0].finish_reason == "stop"
    assert out.usage is not None and (out.usage.prompt_tokens, out.usage.total_tokens) == (7, 10)
    assert srv.hits == 1 and srv.requests[0]["messages"] == HI


def test_structured_output_parses_a_tool_call_and_the_request_is_recorded(srv: FakeOpenAIServer) -> None:
    srv.script(Reply.tool_call("Route", {"skill": "pdf", "confidence": 0.9}))
    out = chat(srv).with_structured_output(Route, method="function_calling").invoke("hi")
    assert out == Route(skill="pdf", confidence=0.9)
    (body,) = srv.requests
    assert body["model"] == "fake-model" and body["messages"] == HI
    assert body["tool_choice"] == {"type": "function", "function": {"name": "Route"}}
    tools = body["tools"]
    assert isinstance(tools, list) and tools[0]["function"]["name"] == "Route"
    assert set(tools[0]["function"]["parameters"]["required"]) == {"skill", "confidence"}


def test_tool_call_message_shape_and_verbatim_string_arguments(srv: FakeOpenAIServer) -> None:
    srv.script(Reply.tool_call("Route", "{not json"))
    out = client(srv).chat.completions.create(model="m", messages=HI)
    msg = out.choices[0].message
    assert msg.content is None and out.choices[0].finish_reason == "tool_calls"
    assert msg.tool_calls is not None and len(msg.tool_calls) == 1
    call = msg.tool_calls[0]
    assert call.id.startswith("call_") and call.type == "function"
    assert (call.function.name, call.function.arguments) == ("Route", "{not json")


def test_invalid_tool_arguments_make_structured_output_return_none(srv: FakeOpenAIServer) -> None:
    """Surprising but true: langchain files invalid JSON under invalid_tool_calls and parses to None."""
    srv.script(Reply.tool_call("Route", "{not json"), Reply.tool_call("Route", "{not json"))
    assert chat(srv).with_structured_output(Route, method="function_calling").invoke("hi") is None
    raw = chat(srv).with_structured_output(Route, method="function_calling", include_raw=True).invoke("hi")
    assert raw["parsed"] is None and raw["parsing_error"] is None and raw["raw"].invalid_tool_calls


def test_schema_invalid_tool_arguments_raise_a_validation_error(srv: FakeOpenAIServer) -> None:
    from pydantic import ValidationError

    srv.script(Reply.tool_call("Route", {"skill": "pdf"}))
    with pytest.raises(ValidationError):
        chat(srv).with_structured_output(Route, method="function_calling").invoke("hi")


def test_http_errors_map_to_openai_exceptions(srv: FakeOpenAIServer) -> None:
    srv.script(Reply.error(500), Reply.error(429, "slow down", retry_after=2), Reply.error(400), Reply.error(404))
    c = client(srv)
    with pytest.raises(openai.InternalServerError) as e500:
        c.chat.completions.create(model="m", messages=HI)
    assert e500.value.status_code == 500 and "injected failure" in str(e500.value)
    with pytest.raises(openai.RateLimitError) as e429:
        c.chat.completions.create(model="m", messages=HI)
    assert e429.value.response.headers["retry-after"] == "2"
    assert isinstance(e429.value.body, dict) and e429.value.body["type"] == "rate_limit_error"
    with pytest.raises(openai.BadRequestError):
        c.chat.completions.create(model="m", messages=HI)
    with pytest.raises(openai.NotFoundError):
        c.chat.completions.create(model="m", messages=HI)


def test_langchain_wraps_http_errors_in_subclasses_of_the_openai_ones(srv: FakeOpenAIServer) -> None:
    srv.script(Reply.error(429), Reply.error(503))
    with pytest.raises(openai.RateLimitError) as e429:
        chat(srv).invoke("hi")
    assert type(e429.value).__name__ == "OpenAIRateLimitError"
    with pytest.raises(openai.InternalServerError) as e503:
        chat(srv).invoke("hi")
    assert type(e503.value).__name__ == "OpenAIAPIError" and e503.value.status_code == 503


@pytest.mark.parametrize("body", ["this is not json", '{"id": "chatcmpl-1", "choi', ""])
def test_garbage_json_body_raises_a_plain_json_decode_error(srv: FakeOpenAIServer, body: str) -> None:
    """Not an openai.APIError: the client lets json.JSONDecodeError (a ValueError) escape, langchain too."""
    srv.script(Reply.raw(body), Reply.raw(body))
    with pytest.raises(json.JSONDecodeError) as raised:
        client(srv).chat.completions.create(model="m", messages=HI)
    assert not isinstance(raised.value, openai.APIError)
    with pytest.raises(json.JSONDecodeError):
        chat(srv).invoke("hi")


def test_html_body_is_returned_as_str_by_openai_and_rejected_by_langchain(srv: FakeOpenAIServer) -> None:
    srv.script(Reply.raw("<html>oops</html>", content_type="text/html"),
               Reply.raw("<html>oops</html>", content_type="text/html"))
    assert client(srv).chat.completions.create(model="m", messages=HI) == "<html>oops</html>"
    with pytest.raises(ValueError, match="Unexpected response type"):
        chat(srv).invoke("hi")


def test_empty_json_object_passes_openai_unvalidated_but_langchain_raises_type_error(srv: FakeOpenAIServer) -> None:
    srv.script(Reply.raw("{}"), Reply.raw("{}"))
    assert client(srv).chat.completions.create(model="m", messages=HI).choices is None
    with pytest.raises(TypeError, match="null value for 'choices'"):
        chat(srv).invoke("hi")


def test_html_error_page_with_5xx_is_an_internal_server_error(srv: FakeOpenAIServer) -> None:
    srv.script(Reply.raw("<html>bad gateway</html>", status=502, content_type="text/html"))
    with pytest.raises(openai.InternalServerError) as raised:
        client(srv).chat.completions.create(model="m", messages=HI)
    assert raised.value.status_code == 502


def test_hang_trips_the_client_timeout(srv: FakeOpenAIServer) -> None:
    # a hang of 60 s against a 0.3 s client timeout: an answer ("late") instead of the error fails
    srv.script(Reply.hang(60), Reply.hang(60))
    with pytest.raises(openai.APITimeoutError):
        client(srv, timeout=0.3).chat.completions.create(model="m", messages=HI)
    with pytest.raises(openai.APITimeoutError):
        chat(srv, timeout=0.3).invoke("hi")
    assert srv.hits == 2


def test_empty_queue_without_default_is_a_loud_500(srv: FakeOpenAIServer) -> None:
    with pytest.raises(openai.InternalServerError, match="no scripted reply left"):
        client(srv).chat.completions.create(model="m", messages=HI)
    assert srv.hits == 1


def test_default_reply_is_used_once_the_queue_is_empty() -> None:
    with FakeOpenAIServer(replies=[Reply.text("first")], default=Reply.text("fallback")) as server:
        c = client(server)
        got = [c.chat.completions.create(model="m", messages=HI).choices[0].message.content for _ in range(3)]
    assert got == ["first", "fallback", "fallback"]


def test_echo_tool_default_builds_schema_valid_arguments() -> None:
    with FakeOpenAIServer(default=Reply.echo_tool()) as server:
        out = chat(server).with_structured_output(Everything, method="function_calling").invoke("hi")
        assert isinstance(out, Everything)
        assert (out.name, out.count, out.ok, out.tags, out.color, out.inner.label) == ("x", 0, False, [], Color.RED, "x")
        tools = [{"type": "function", "function": {"name": "first", "parameters": {"type": "object"}}},
                 {"type": "function", "function": {"name": "second", "parameters": {
                     "type": "object", "required": ["c"],
                     "properties": {"c": {"$ref": "#/$defs/C"}}, "$defs": {"C": {"enum": ["p", "q"]}}}}}]
        c = client(server)
        first = c.chat.completions.create(model="m", messages=HI, tools=tools)
        assert first.choices[0].message.tool_calls[0].function.name == "first"
        assert json.loads(first.choices[0].message.tool_calls[0].function.arguments) == {}
        picked = c.chat.completions.create(model="m", messages=HI, tools=tools,
                                           tool_choice={"type": "function", "function": {"name": "second"}})
        assert json.loads(picked.choices[0].message.tool_calls[0].function.arguments) == {"c": "p"}


def test_minimal_value_per_type() -> None:
    schema = {"type": "object", "required": ["s", "i", "n", "b", "a", "o", "e", "u", "t"], "properties": {
        "s": {"type": "string"}, "i": {"type": "integer"}, "n": {"type": "number"}, "b": {"type": "boolean"},
        "a": {"type": "array"}, "o": {"type": "object"}, "e": {"type": "string", "enum": ["z", "y"]},
        "u": {"anyOf": [{"type": "null"}, {"type": "integer"}]}, "t": {"type": ["null", "string"]},
        "optional": {"type": "string"}}}
    assert minimal_value(schema, schema) == {"s": "x", "i": 0, "n": 0, "b": False, "a": [], "o": {}, "e": "z",
                                             "u": 0, "t": "x"}


def test_api_key_is_enforced() -> None:
    with FakeOpenAIServer(default=Reply.text("ok"), api_key="secret") as server:
        with pytest.raises(openai.AuthenticationError):
            client(server).chat.completions.create(model="m", messages=HI)
        with pytest.raises(openai.AuthenticationError):
            client(server).models.list()
        good = openai.OpenAI(base_url=server.base_url, api_key="secret", max_retries=0)
        assert good.chat.completions.create(model="m", messages=HI).choices[0].message.content == "ok"
        assert server.hits == 2


def test_models_endpoint_and_rejections(srv: FakeOpenAIServer) -> None:
    models = client(srv).models.list()
    assert [(m.id, m.owned_by) for m in models.data] == [("fake-model", "skillforge-test")]
    srv.script(Reply.text("never sent"))
    with pytest.raises(openai.BadRequestError, match="streaming not supported"):
        client(srv).chat.completions.create(model="m", messages=HI, stream=True)
    root = srv.base_url.removesuffix("/v1")
    assert http("GET", root + "/v1/nope")[0] == 404
    assert http("POST", root + "/v1/embeddings", b"{}")[0] == 404
    status, body = http("POST", srv.base_url + "/chat/completions", b"{broken")
    assert status == 400 and "error" in body
    # the scripted reply was not consumed by the rejected requests
    assert client(srv).chat.completions.create(model="m", messages=HI).choices[0].message.content == "never sent"


def test_concurrent_requests_overlap_their_latency() -> None:
    """All 8 requests are inside their (60 s) latency at the same time: the server took every one
    before it answered any. Stopping it then wakes them all (503), so nothing waits 60 s."""
    server = FakeOpenAIServer(default=Reply.text("ok"), latency_s=60.0).start()
    c = client(server, timeout=120)
    outcomes: list[object] = []

    def call() -> None:
        try:
            outcomes.append(c.chat.completions.create(model="m", messages=HI).choices[0].message.content)
        except openai.APIStatusError as e:
            outcomes.append(e.status_code)

    threads = [threading.Thread(target=call) for _ in range(8)]
    try:
        for t in threads:
            t.start()
        deadline = time.monotonic() + 60  # a bound on waiting, not on speed
        while server.hits < 8 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.hits == 8 and outcomes == []  # 8 received, none answered: 8 in flight at once
    finally:
        server.stop()
        for t in threads:
            t.join(timeout=30)
    assert outcomes == [503] * 8


def test_server_latency_delays_every_answer() -> None:
    with FakeOpenAIServer(default=Reply.text("ok"), latency_s=0.2) as server:
        start = time.monotonic()
        assert client(server).chat.completions.create(model="m", messages=HI).choices[0].message.content == "ok"
        assert time.monotonic() - start >= 0.2  # a lower bound: a sleep never ends early


def test_latency_can_change_while_running_and_per_reply_latency_wins(srv: FakeOpenAIServer) -> None:
    srv.latency_s = 0.3
    srv.script(Reply.text("slow"))
    start = time.monotonic()
    assert client(srv).chat.completions.create(model="m", messages=HI).choices[0].message.content == "slow"
    assert time.monotonic() - start >= 0.3  # the new server latency applies (a lower bound)
    # a per-reply latency of 0 wins over a server latency of 60 s: with the server's, the 20 s
    # client timeout would trip
    srv.latency_s = 60.0
    srv.script(Reply.text("fast", latency_s=0.0))
    assert client(srv, timeout=20).chat.completions.create(model="m", messages=HI).choices[0].message.content == "fast"


def test_start_stop_without_context_manager_and_loopback_only() -> None:
    server = FakeOpenAIServer(default=Reply.text("ok")).start()
    try:
        assert server.base_url.startswith("http://127.0.0.1:") and server.port > 0
        assert client(server).chat.completions.create(model="m", messages=HI).choices[0].message.content == "ok"
    finally:
        server.stop()
    server.stop()  # idempotent
    with pytest.raises(openai.APIConnectionError):
        client(server).chat.completions.create(model="m", messages=HI)
    with pytest.raises(ValueError):
        FakeOpenAIServer(host="0.0.0.0")


def test_cli_serves_until_sigterm() -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "skillforge.testing.openai_server", "--model", "cli-model"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("listening http://127.0.0.1:") and line.endswith("/v1")
        base_url = line.removeprefix("listening ")
        c = openai.OpenAI(base_url=base_url, api_key="k", max_retries=0, timeout=5)
        assert c.chat.completions.create(model="m", messages=HI).choices[0].message.content == "ok"
        out = chat_at(base_url).with_structured_output(Route, method="function_calling").invoke("hi")
        assert out == Route(skill="x", confidence=0)
        assert [m.id for m in c.models.list().data] == ["cli-model"]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=5) == 0
        assert proc.stdout.read() == ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def chat_at(base_url: str) -> ChatOpenAI:
    return ChatOpenAI(base_url=base_url, api_key="k", model="fake-model", max_retries=0, timeout=5)
