"""A tiny OpenAI-compatible Chat Completions server for tests (stdlib only, 127.0.0.1 only).

`FakeOpenAIServer` answers `POST /v1/chat/completions` from a queue of scripted `Reply` objects (text, tool
calls, HTTP errors, raw garbage, hangs, schema-echoing tool calls) and `GET /v1/models`, enough for `openai`
and langchain-openai's `ChatOpenAI` (non-streaming, incl. `with_structured_output(method="function_calling")`).
`python -m skillforge.testing.openai_server` serves `Reply.auto()` forever (tool call if tools, else "ok").
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import logging
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType

from skillforge.testing.schema_values import JSONDict, minimal_value, pick_tool

log = logging.getLogger(__name__)


class ReplyKind(str, Enum):
    """What a scripted `Reply` makes the server answer."""

    TEXT = "text"
    TOOL_CALL = "tool_call"
    ERROR = "error"
    RAW = "raw"
    HANG = "hang"
    ECHO_TOOL = "echo_tool"
    AUTO = "auto"  # echo_tool if the request has tools, else text "ok" (the CLI default)


@dataclass(frozen=True)
class Reply:
    """One scripted answer. Build it with the constructors (`Reply.text(...)` etc.), not directly."""

    kind: ReplyKind
    content: str | None = None
    tool_name: str | None = None
    arguments: str | None = None  # already JSON-encoded (or deliberately invalid) tool arguments
    prompt_tokens: int = 10
    completion_tokens: int = 5
    finish_reason: str = "stop"
    status: int = 200
    message: str = ""
    retry_after: float | str | None = None
    body: bytes = b""
    content_type: str = "application/json"
    latency_s: float | None = None  # overrides the server's latency for this reply

    @classmethod
    def text(cls, content: str, *, prompt_tokens: int = 10, completion_tokens: int = 5,
             finish_reason: str = "stop", latency_s: float | None = None) -> Reply:
        """A plain assistant message with `content`."""
        return cls(ReplyKind.TEXT, content=content, prompt_tokens=prompt_tokens,
                   completion_tokens=completion_tokens, finish_reason=finish_reason, latency_s=latency_s)

    @classmethod
    def tool_call(cls, name: str, arguments: Mapping[str, object] | str, *, prompt_tokens: int = 10,
                  completion_tokens: int = 5, finish_reason: str = "tool_calls",
                  latency_s: float | None = None) -> Reply:
        """One tool call to `name`; a mapping is JSON-encoded, a str is sent verbatim (may be invalid)."""
        args = arguments if isinstance(arguments, str) else json.dumps(dict(arguments))
        return cls(ReplyKind.TOOL_CALL, tool_name=name, arguments=args, prompt_tokens=prompt_tokens,
                   completion_tokens=completion_tokens, finish_reason=finish_reason, latency_s=latency_s)

    @classmethod
    def error(cls, status: int, message: str = "injected failure", *, retry_after: float | str | None = None,
              latency_s: float | None = None) -> Reply:
        """An OpenAI-style error body with HTTP `status` (and `Retry-After` if given)."""
        return cls(ReplyKind.ERROR, status=status, message=message, retry_after=retry_after, latency_s=latency_s)

    @classmethod
    def raw(cls, body: bytes | str, *, status: int = 200, content_type: str = "application/json",
            latency_s: float | None = None) -> Reply:
        """`body` sent verbatim with `status` and `content_type` (garbage, truncated JSON, HTML...)."""
        data = body.encode() if isinstance(body, str) else body
        return cls(ReplyKind.RAW, body=data, status=status, content_type=content_type, latency_s=latency_s)

    @classmethod
    def hang(cls, seconds: float) -> Reply:
        """Sleep `seconds`, then answer 200 with text "late" (to exercise client timeouts)."""
        return cls(ReplyKind.HANG, content="late", latency_s=seconds)

    @classmethod
    def echo_tool(cls) -> Reply:
        """A tool call to the requested tool (named `tool_choice`, else the first of `tools`) with
        minimal schema-valid arguments: one value of the right type per required property."""
        return cls(ReplyKind.ECHO_TOOL, finish_reason="tool_calls")

    @classmethod
    def auto(cls) -> Reply:
        """`echo_tool()` if the request carries tools, else `text("ok")`."""
        return cls(ReplyKind.AUTO)


@dataclass(frozen=True)
class _Outgoing:
    """A fully decided HTTP answer."""

    status: int
    body: bytes
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()


_ERROR_KINDS: dict[int, tuple[str, str | None]] = {
    401: ("invalid_request_error", "invalid_api_key"), 403: ("permission_error", None),
    404: ("invalid_request_error", "not_found"), 429: ("rate_limit_error", "rate_limit_exceeded"),
}
"""OpenAI's error `type` and `code` per HTTP status; other 4xx are invalid_request_error, 5xx server_error."""


def _error(status: int, message: str, retry_after: float | str | None = None) -> _Outgoing:
    """An OpenAI-style `{"error": {...}}` answer."""
    fallback = ("server_error", None) if status >= 500 else ("invalid_request_error", None)
    kind, code = _ERROR_KINDS.get(status, fallback)
    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    after = retry_after if isinstance(retry_after, str) or retry_after is None else f"{retry_after:g}"
    headers = (("Retry-After", after),) if after is not None else ()  # a str: an HTTP date
    return _Outgoing(status, json.dumps(body).encode(), headers=headers)


class _HTTPServer(ThreadingHTTPServer):
    """The stdlib server, pointing back at its `FakeOpenAIServer` and quiet about client hang-ups."""

    daemon_threads = True
    request_queue_size = 128
    fake: FakeOpenAIServer

    def handle_error(self, request: object, client_address: object) -> None:
        """Log handler exceptions (usually a client that timed out and closed) at debug level."""
        log.debug("fake openai server: error while handling %s", client_address, exc_info=True)


class _Handler(BaseHTTPRequestHandler):
    """Routes HTTP requests to the owning `FakeOpenAIServer`."""

    server: _HTTPServer
    server_version = "FakeOpenAI/1.0"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        """Send the default per-request stderr line to `logging.debug` instead."""
        log.debug("fake openai server: " + format, *args)

    def _path(self) -> str:
        """The request path without query string or trailing slash."""
        return self.path.split("?", 1)[0].rstrip("/")

    def do_GET(self) -> None:
        """`GET /v1/models`; anything else is 404."""
        if self._path() != "/v1/models":
            return self._send(_error(404, f"unknown path {self.path}"))
        fake = self.server.fake
        self._send(fake._check_auth(self.headers.get("Authorization")) or fake._models())

    def do_POST(self) -> None:
        """`POST /v1/chat/completions`; anything else is 404."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        if self._path() != "/v1/chat/completions":
            return self._send(_error(404, f"unknown path {self.path}"))
        self._send(self.server.fake._chat(raw, self.headers.get("Authorization")))

    def _send(self, out: _Outgoing) -> None:
        """Write `out`; a client that already went away is only logged."""
        try:
            self.send_response(out.status)
            self.send_header("Content-Type", out.content_type)
            self.send_header("Content-Length", str(len(out.body)))
            for key, value in out.headers:
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(out.body)
        except OSError:
            log.debug("fake openai server: client closed the connection before the answer")


class FakeOpenAIServer:
    """A scripted OpenAI-compatible chat server on 127.0.0.1, served from a background thread.

    Each chat request pops the next scripted reply; an empty queue falls back to `default`, and
    without one answers 500 "no scripted reply left". `latency_s` (changeable while running) is
    slept in the handler thread, so concurrent requests overlap.
    """

    def __init__(self, replies: Iterable[Reply] = (), latency_s: float = 0.0, default: Reply | None = None,
                 model: str = "fake-model", api_key: str | None = None, host: str = "127.0.0.1",
                 port: int = 0) -> None:
        """Prepare (not start) a server; `host` must be a loopback address."""
        host = "127.0.0.1" if host == "localhost" else host
        if not (ipaddress.ip_address(host).is_loopback and ipaddress.ip_address(host).version == 4):
            raise ValueError(f"the fake OpenAI server only binds IPv4 loopback, not {host!r}")
        self.latency_s, self.default, self.model, self.api_key = latency_s, default, model, api_key
        self._host, self._port = host, port
        self._queue: deque[Reply] = deque(replies)
        self._requests: list[JSONDict] = []
        self._hits = self._counter = 0
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> FakeOpenAIServer:
        """Bind the port and serve in a daemon thread; returns self."""
        if self._httpd is not None:
            return self
        self._closing.clear()
        httpd = _HTTPServer((self._host, self._port), _Handler)
        httpd.fake = self
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"fake-openai-{self.port}", daemon=True)
        self._thread.start()
        log.debug("fake openai server listening on %s", self.base_url)
        return self

    def stop(self) -> None:
        """Stop serving, wake any sleeping handlers, and close the socket. Idempotent."""
        httpd, thread = self._httpd, self._thread
        if httpd is None:
            return
        self._closing.set()
        httpd.shutdown()
        httpd.server_close()
        if thread is not None:
            thread.join(timeout=5)
        self._httpd = self._thread = None

    def __enter__(self) -> FakeOpenAIServer:
        """Start the server."""
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        """Stop the server."""
        self.stop()

    @property
    def port(self) -> int:
        """The bound port (the requested one before `start()`)."""
        return self._httpd.server_address[1] if self._httpd is not None else self._port

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT/v1`, ready for `openai.OpenAI(base_url=...)`."""
        return f"http://{self._host}:{self.port}/v1"

    @property
    def requests(self) -> list[JSONDict]:
        """A snapshot of every JSON body received on /v1/chat/completions, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def hits(self) -> int:
        """How many /v1/chat/completions requests arrived (including rejected ones)."""
        with self._lock:
            return self._hits

    def script(self, *replies: Reply) -> None:
        """Append replies to the queue."""
        with self._lock:
            self._queue.extend(replies)

    def _next_id(self) -> int:
        """A fresh number for completion and tool-call ids."""
        with self._lock:
            self._counter += 1
            return self._counter

    def _check_auth(self, header: str | None) -> _Outgoing | None:
        """A 401 answer if an api_key is configured and `header` does not carry it, else None."""
        if self.api_key is None or header == f"Bearer {self.api_key}":
            return None
        return _error(401, "Incorrect API key provided.")

    def _models(self) -> _Outgoing:
        """The `GET /v1/models` listing: just this server's model."""
        body = {"object": "list", "data": [{"id": self.model, "object": "model", "owned_by": "skillforge-test"}]}
        return _Outgoing(200, json.dumps(body).encode())

    def _chat(self, raw: bytes, auth: str | None) -> _Outgoing:
        """Record the request, validate it, pop a reply, sleep the latency, and build the answer."""
        body: JSONDict | None = None
        try:
            decoded = json.loads(raw)
            body = decoded if isinstance(decoded, dict) else None
        except (ValueError, UnicodeDecodeError):
            pass
        with self._lock:
            self._hits += 1
            if body is not None:
                self._requests.append(body)
        denied = self._check_auth(auth)
        if denied is not None:
            return denied
        if body is None:
            return _error(400, "request body is not a JSON object")
        if body.get("stream"):
            return _error(400, "streaming not supported by the fake server")
        with self._lock:
            reply = self._queue.popleft() if self._queue else self.default
        if reply is None:
            return _error(500, "no scripted reply left")
        delay = reply.latency_s if reply.latency_s is not None else self.latency_s
        if delay > 0 and self._closing.wait(delay):
            return _error(503, "fake server shutting down")
        return self._answer(reply, body)

    def _answer(self, reply: Reply, body: JSONDict) -> _Outgoing:
        """Turn `reply` into an HTTP answer for request `body`."""
        kind = reply.kind
        if kind is ReplyKind.AUTO:
            reply = Reply.echo_tool() if pick_tool(body) is not None else Reply.text("ok")
            kind = reply.kind
        if kind is ReplyKind.ERROR:
            return _error(reply.status, reply.message, reply.retry_after)
        if kind is ReplyKind.RAW:
            return _Outgoing(reply.status, reply.body, reply.content_type)
        message: JSONDict = {"role": "assistant", "content": reply.content}
        name, arguments = reply.tool_name, reply.arguments
        if kind is ReplyKind.ECHO_TOOL:
            fn = pick_tool(body)
            if fn is None:
                return _error(400, "echo_tool reply needs a request with tools")
            params = fn.get("parameters")
            schema: Mapping[str, object] = params if isinstance(params, dict) else {}
            name, arguments = str(fn.get("name")), json.dumps(minimal_value(schema, schema) or {})
        if name is not None:
            call = {"id": f"call_{self._next_id()}", "type": "function",
                    "function": {"name": name, "arguments": arguments or ""}}
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
        model = body.get("model")
        completion = {
            "id": f"chatcmpl-{self._next_id()}", "object": "chat.completion", "created": int(time.time()),
            "model": model if isinstance(model, str) and model else self.model,
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": reply.finish_reason}],
            "usage": {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
                      "total_tokens": reply.prompt_tokens + reply.completion_tokens},
        }
        return _Outgoing(200, json.dumps(completion).encode())


def main(argv: list[str] | None = None) -> int:
    """Serve `Reply.auto()` forever; print `listening http://HOST:PORT/v1` once ready; stop on SIGTERM."""
    parser = argparse.ArgumentParser(prog="python -m skillforge.testing.openai_server",
                                     description="Serve a fake OpenAI chat API on loopback.")
    parser.add_argument("--host", default="127.0.0.1", help="loopback address to bind")
    parser.add_argument("--port", type=int, default=0, help="port (0 = any free port)")
    parser.add_argument("--model", default="fake-model", help="model name reported by the server")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds to sleep before each answer")
    args = parser.parse_args(argv)
    stop = threading.Event()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, frame: stop.set())
    srv = FakeOpenAIServer(latency_s=args.latency, default=Reply.auto(), model=args.model, host=args.host,
                           port=args.port).start()
    sys.stdout.write(f"listening {srv.base_url}\n")
    sys.stdout.flush()
    try:
        while not stop.wait(0.2):
            pass
    finally:
        srv.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
