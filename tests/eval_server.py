"""A local OpenAI-compatible server that plays executor and judge for `skillforge evaluate` run as a
real process: a FakeOpenAIServer whose answers depend on the request (so concurrency cannot change
them), with a judge that can answer by content, at random (seeded), or prefer the candidate on half
the cases. It also counts executor and judge calls and can hold requests to let a test kill the CLI."""

from __future__ import annotations

import hashlib
import json
import threading
from collections import Counter
from collections.abc import Callable
from enum import StrEnum

from evaluate_fakes import BETTER, BROKEN, SKILL

from skillforge.evaluation.executor import LOADED
from skillforge.testing.fake_chat import offered_tools
from skillforge.testing.openai_server import FakeOpenAIServer, Reply
from skillforge.testing.schema_values import JSONDict, pick_tool

LABELS = ("A", "B", "tie")
JUDGED = ("overall", "task", "robustness", "readability")


class JudgeMode(StrEnum):
    """How the fake judge decides."""

    CONTENT = "content"
    """The answer marked "(better)" wins every dimension in both orders; otherwise a tie."""
    RANDOM = "random"
    """Each call, each dimension: A, B or tie, uniformly, from a hash of (seed, prompt, dimension)."""
    PREFER_HALF = "prefer-half"
    """On a seeded half of the cases the "(better)" answer wins in both orders (a real effect);
    every other judgement is a tie."""


def _hash(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()[:8], "big")


class FakeJudge:
    """The judge's decisions, shared by the server and by in-process replays of the same seed.

    RANDOM hashes (seed, prompt, dimension, k), where k counts how often this prompt was judged
    before under this seed: the two orders of a no-op pair have the same prompt (identical answers),
    and a random judge still answers them independently."""

    def __init__(self, mode: JudgeMode, seed: int) -> None:
        self.mode, self.seed = mode, seed
        self._seen: Counter[str] = Counter()
        self._lock = threading.Lock()

    def reseed(self, seed: int, mode: JudgeMode | None = None) -> None:
        """A new seed (and mode): a fresh judge."""
        with self._lock:
            self.seed, self.mode = seed, mode or self.mode
            self._seen.clear()

    def __call__(self, prompt: str) -> dict[str, object]:
        """{overall, task, robustness, readability: A | B | tie, reason} for one judge prompt."""
        with self._lock:
            k = self._seen[prompt]
            self._seen[prompt] += 1
        a = prompt.split("[Answer A]\n", 1)[1].split("\n\n[Answer B]\n", 1)[0]
        b = prompt.split("[Answer B]\n", 1)[1]
        better = "A" if "(better)" in a and "(better)" not in b else "B" if "(better)" in b and "(better)" not in a else None
        if self.mode is JudgeMode.RANDOM:
            labels = {dim: LABELS[_hash(self.seed, prompt, dim, k) % 3] for dim in JUDGED}
        elif self.mode is JudgeMode.PREFER_HALF:
            request = prompt.split("\n", 1)[0]   # "Request: <query>": the same in both orders
            wins = better is not None and _hash(self.seed, request) % 2 == 0
            labels = dict.fromkeys(JUDGED, better if wins else "tie")
        else:
            labels = dict.fromkeys(JUDGED, better or "tie")
        return {**labels, "reason": f"fake judge ({self.mode.value})"}


class EvalServer(FakeOpenAIServer):
    """Answers the executor's `Action` and the judge's `Judgement` tool calls by their content."""

    def __init__(self, judge: JudgeMode = JudgeMode.CONTENT, seed: int = 0) -> None:
        super().__init__(default=Reply.auto())
        self.judge = FakeJudge(judge, seed)
        self.calls: Counter[str] = Counter()
        self.hold: Callable[[str], bool] | None = None
        """Requests whose message text this accepts wait until `release` is set."""
        self.release = threading.Event()
        self._count_lock = threading.Lock()

    def _answer(self, reply: Reply, body: JSONDict) -> object:  # type: ignore[override]
        fn = pick_tool(body)
        if fn is None:
            return super()._answer(reply, body)
        name = str(fn.get("name"))
        messages = [str(m.get("content") or "") for m in body.get("messages", []) if isinstance(m, dict)]
        with self._count_lock:
            self.calls[name] += 1     # counted on arrival, held or not
        if self.hold is not None and self.hold("\n".join(messages)):
            self.release.wait(60)
        tools = body.get("tools") if isinstance(body.get("tools"), list) else []
        args = self.judge(messages[-1]) if name == "Judgement" else self._execute(messages, offered_tools(tools))
        return super()._answer(Reply.tool_call(name, args), body)

    @staticmethod
    def _execute(messages: list[str], names: list[str]) -> dict[str, object]:
        system, last, history = messages[0], messages[-1], "\n".join(messages)
        if len(messages) == 2 and LOADED in system and names:  # behaviour: the skill is loaded already
            return {"kind": "call_tool", "name": names[0], "arguments": {}}
        if len(messages) == 2:
            return {"kind": "use_skill", "name": SKILL, "text": "the user wants a taxi"}
        if last.startswith("use_skill") and names:
            return {"kind": "call_tool", "name": names[0], "arguments": {}}
        if last.startswith("tool result"):
            data = json.loads(last.split(": ", 1)[1])
            facts = ", ".join(str(v) for k, v in data.items() if k != "_nonce")
            if BROKEN in history:
                facts = "好的"
            return {"kind": "answer", "text": f"结果：{facts}" + (" (better)" if BETTER in history else "")}
        return {"kind": "answer", "text": "抱歉，暂时无法完成。"}
