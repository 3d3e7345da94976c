"""The scripted evolve world (evolve_fakes.World) behind a real OpenAI-compatible HTTP server on
127.0.0.1, so that the CLI, the demo and Studio can run the whole loop with no key and no model:
every request is answered by the World's executor, judge or proposer, chosen by the request's
system prompt, as a tool call of the tool the request asks for."""

from __future__ import annotations

import json
from collections.abc import Callable

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel

from evolve_fakes import World, eta_patch
from skillforge.testing.openai_server import FakeOpenAIServer, Reply
from skillforge.testing.schema_values import JSONDict, pick_tool

_ROLE_MESSAGES: dict[str, Callable[[str], BaseMessage]] = {
    "system": lambda c: SystemMessage(content=c), "user": lambda c: HumanMessage(content=c),
    "assistant": lambda c: AIMessage(content=c)}


LOOP_MARKER = "LOOP-MARKER"
"""With fault="loop": an executor whose instructions contain this calls the fare tool forever."""
GARBAGE_MARKER = "GARBAGE-MARKER"
"""With fault="garbage": the judge answers a label outside its enum when an answer under judgement
came from instructions containing this (the executor repeats it in its answer)."""
FAULTS = ("loop", "garbage")


class WorldServer(FakeOpenAIServer):
    """Answers like the World's scripted models (default scenario: one L2 instruction patch). A
    `fault` (FAULTS; None by default) makes marked skills fail: "loop" an agent that never answers
    (its side forfeits the case), "garbage" a judge whose answers are unusable (the case is INVALID)."""

    def __init__(self, world: World | None = None, fault: str | None = None, **kw: object) -> None:
        if fault is not None and fault not in FAULTS:
            raise ValueError(f"fault must be one of {FAULTS}, got {fault!r}")
        super().__init__(default=Reply.auto(), **kw)  # type: ignore[arg-type]
        self.world = world or World(lambda r: [eta_patch(claimed=2)])
        self.fault = fault

    def _reply(self, messages: list[BaseMessage]) -> object:
        system = str(messages[0].content) if messages else ""
        if system.startswith("You are a helpful assistant"):
            if self.fault == "loop" and LOOP_MARKER in system:
                return {"step": "call_tool ride.estimate_fare", "text": "", "arguments": {}}
            out = self.world.executor._responder(messages)  # type: ignore[misc]
            if self.fault == "garbage" and GARBAGE_MARKER in system and getattr(out, "kind", "") == "answer":
                out = out.model_copy(update={"text": f"{out.text} {GARBAGE_MARKER}"})  # type: ignore[union-attr]
            return out
        if "judge" in system.lower().split(".")[0]:
            if self.fault == "garbage" and GARBAGE_MARKER in str(messages[-1].content):
                return {"overall": "maybe", "task": "A", "robustness": "tie", "readability": "B", "reason": "unsure"}
            return self.world.judge._responder(messages)  # type: ignore[misc]
        return self.world.proposer._responder(messages)  # type: ignore[misc]

    def _answer(self, reply: Reply, body: JSONDict):  # noqa: ANN202 - the base class's private hook
        fn = pick_tool(body)
        raw = body.get("messages") if isinstance(body.get("messages"), list) else []
        messages = [_ROLE_MESSAGES.get(str(m.get("role")), _ROLE_MESSAGES["user"])(str(m.get("content") or ""))
                    for m in raw if isinstance(m, dict)]  # type: ignore[union-attr]
        if fn is None:
            return super()._answer(Reply.text("ok"), body)
        out = self._reply(messages)
        args = out.model_dump(mode="json") if isinstance(out, BaseModel) else out
        return super()._answer(Reply.tool_call(str(fn.get("name")), json.dumps(args, ensure_ascii=False)), body)
