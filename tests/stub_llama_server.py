"""A tiny stand-in for `python -m llama_cpp.server`, for tests. Standard library only.

    python tests/stub_llama_server.py --port N [--model_alias A] [--fail-start]

Serves on 127.0.0.1: `GET /v1/models` (200, a list holding the alias) and `POST /v1/chat/completions`
(an OpenAI-shaped reply whose text is "stub"). Like llama_cpp, both endpoints share one model lock,
so a request with `"stub_delay": SECONDS` in its body keeps /v1/models waiting that long, and one
with `"stub_hold_until": PATH` keeps it waiting until that file exists (a busy server; at most
HOLD_MAX_S). While it holds the lock it logs "stub busy" (tests wait for that line, not a timer).
Exits cleanly on SIGTERM. With `--fail-start` it logs an error and exits 1 at once.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

log = logging.getLogger("stub_llama_server")
FAIL_MESSAGE = "stub_llama_server: refusing to start (--fail-start): model file is unusable"
REPLY_TEXT = "stub"
BUSY_MESSAGE = "stub busy"
HOLD_MAX_S = 60.0
MODEL_LOCK = threading.Lock()


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--model", default="")
    parser.add_argument("--model_alias", default="qwen2.5-coder-1.5b-instruct")
    parser.add_argument("--fail-start", action="store_true")
    args, _unknown = parser.parse_known_args(argv)  # accept llama_cpp flags such as --n_ctx
    return args


def _handler(alias: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        """GET /v1/models and POST /v1/chat/completions, both behind MODEL_LOCK."""

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (stdlib signature)
            log.info("%s %s", self.address_string(), format % args)

        def _send(self, status: int, body: dict[str, object]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 (stdlib name)
            if self.path.rstrip("/") != "/v1/models":
                self._send(404, {"detail": "Not Found"})
                return
            with MODEL_LOCK:
                self._send(200, {"object": "list", "data": [
                    {"id": alias, "object": "model", "owned_by": "me", "permissions": []}]})

        def do_POST(self) -> None:  # noqa: N802 (stdlib name)
            length = int(self.headers.get("Content-Length") or 0)
            try:
                request = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                self._send(400, {"detail": "body is not JSON"})
                return
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._send(404, {"detail": "Not Found"})
                return
            with MODEL_LOCK:
                hold = request.get("stub_hold_until")
                if hold or request.get("stub_delay"):
                    log.info("%s (holding the model lock)", BUSY_MESSAGE)
                time.sleep(float(request.get("stub_delay", 0)))
                deadline = time.monotonic() + HOLD_MAX_S
                while hold and not os.path.exists(hold) and time.monotonic() < deadline:
                    time.sleep(0.01)
                self._send(200, {
                    "id": "chatcmpl-stub", "object": "chat.completion", "created": int(time.time()),
                    "model": request.get("model", alias),
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": REPLY_TEXT},
                                 "logprobs": None, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

    return Handler


def main(argv: list[str] | None = None) -> int:
    """Run the stub until SIGTERM; return the exit code."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
    args = _parse(sys.argv[1:] if argv is None else argv)
    if args.fail_start:
        log.error(FAIL_MESSAGE)
        return 1
    server = ThreadingHTTPServer(("127.0.0.1", args.port), _handler(args.model_alias))
    server.daemon_threads = True

    def _on_term(signum: int, frame: object) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, _on_term)
    log.info("stub listening on 127.0.0.1:%d alias=%s OMP_NUM_THREADS=%s", args.port, args.model_alias,
             os.environ.get("OMP_NUM_THREADS"))
    try:
        server.serve_forever(poll_interval=0.1)
    except SystemExit:
        log.info("stub stopping on SIGTERM")
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
