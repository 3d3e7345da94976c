"""The scripted evolve world behind a real OpenAI-compatible HTTP server, with failures and a hold:
what the budget and Ctrl-C tests need from an endpoint (tests/test_budget_http.py,
tests/test_budget_preflight.py)."""

from __future__ import annotations

import hashlib
import json
import threading
import time

from evolve_fakes import World
from skillforge.testing.openai_server import FakeOpenAIServer, Reply
from world_server import WorldServer


class MeteredWorld(WorldServer):
    """The scripted world behind HTTP. Every `fail_every`-th request is answered 500 (Retry-After
    10 ms: the client retries it; a request body fails at most once). Requests whose system prompt starts with `hold` are held until
    `release` is set (`held` is set at the first; `waiting` counts those held), so a test can act
    while exactly those requests are in flight."""

    def __init__(self, world: World, *, fail_every: int = 0, hold: str | None = None) -> None:
        super().__init__(world)
        self.fail_every, self.hold = fail_every, hold
        self.held, self.release = threading.Event(), threading.Event()
        self.answered = self.failed = self.waiting = 0
        self._failed_bodies: set[str] = set()
        self.bodies: list[str] = []
        """The sha256 of each request body answered with a reply (not an injected 500), in order."""

    def _answer(self, reply: Reply, body):  # noqa: ANN001, ANN202 - the base class's private hook
        messages = body.get("messages") if isinstance(body.get("messages"), list) else []
        system = str(messages[0].get("content") or "") if messages and isinstance(messages[0], dict) else ""
        if self.hold and system.startswith(self.hold) and not self.release.is_set():
            with self._lock:
                self.waiting += 1
            self.held.set()
            self.release.wait(60)
            with self._lock:
                self.waiting -= 1
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        with self._lock:
            self.answered += 1
            # a request fails at most once: its retry succeeds (concurrent requests could otherwise
            # land every retry of one request on a multiple of fail_every and exhaust its retries)
            fail = bool(self.fail_every) and self.answered % self.fail_every == 0 and digest not in self._failed_bodies
            self.failed += fail
            if fail:
                self._failed_bodies.add(digest)
            else:
                self.bodies.append(digest)
        if fail:
            return FakeOpenAIServer._answer(self, Reply.error(500, "injected", retry_after=0.01), body)
        return super()._answer(reply, body)


def env_for(srv: FakeOpenAIServer, retries: int) -> dict[str, str]:
    return {"SKILLFORGE_LLM_BASE_URL": srv.base_url, "SKILLFORGE_LLM_MODEL": "world",
            "SKILLFORGE_JUDGE_MODEL": "world-judge", "SKILLFORGE_LLM_MAX_RETRIES": str(retries),
            "OMP_NUM_THREADS": "1"}


def wait_until(check, timeout_s: float = 60.0) -> bool:  # noqa: ANN001
    """Poll `check()` every 10 ms until it is true (True) or `timeout_s` has passed (False)."""
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True
