"""A scripted fake chat model for tests: no network, no key, deterministic.

`GenericFakeChatModel` lacks `bind_tools`, so `with_structured_output(method="function_calling")`
cannot use it. This subclass binds tools to itself and replies from a script of AIMessages, so the
same structured-output code path runs as against a real endpoint:

    judge = ScriptedChatModel.of(Verdict(winner="A"), "plain text", {"name": "Route", "args": {...}},
                                 TimeoutError("injected"))
    LLM(configs, models={Role.JUDGE: judge})
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Iterator, Sequence

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, Field, PrivateAttr

DEFAULT_USAGE = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
ScriptItem = BaseModel | dict[str, object] | str | AIMessage | BaseException


def offered_tools(tools: Sequence[object]) -> list[str]:
    """The tool names an executor step offers (`call_tool <name>` in its `step` enum), from a call's
    tools in the OpenAI shape: what a fake executor may call."""
    names: list[str] = []
    for tool in tools:
        fn = tool.get("function") if isinstance(tool, dict) else None
        params = (fn.get("parameters") if isinstance(fn, dict) else None) or {}
        step = (params.get("properties") or {}).get("step") or {}
        names += [str(o).split(" ", 1)[1] for o in step.get("enum", []) if str(o).startswith("call_tool ")]
    return names


def to_message(item: BaseModel | dict[str, object] | str | AIMessage, n: int) -> AIMessage:
    """A pydantic instance becomes a tool call named after its class; a dict {name, args} a tool
    call; a str a text reply; an AIMessage is used as it is."""
    if isinstance(item, AIMessage):
        return item
    if isinstance(item, BaseModel):
        item = {"name": type(item).__name__, "args": item.model_dump(mode="json")}
    if isinstance(item, dict):
        call = {"name": str(item["name"]), "args": item.get("args", {}), "id": f"call_{n}", "type": "tool_call"}
        return AIMessage(content="", tool_calls=[call], usage_metadata=dict(DEFAULT_USAGE),  # type: ignore[arg-type]
                         response_metadata={"finish_reason": "tool_calls"})
    return AIMessage(content=item, usage_metadata=dict(DEFAULT_USAGE),  # type: ignore[arg-type]
                     response_metadata={"finish_reason": "stop"})


class ScriptedChatModel(GenericFakeChatModel):
    """Answers each call with the next script item; an exception item is raised instead."""

    _script: list[ScriptItem] = PrivateAttr(default_factory=list)
    _responder: Callable[..., ScriptItem] | None = PrivateAttr(default=None)
    _wants_tools: bool = PrivateAttr(default=False)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    received: list[list[BaseMessage]] = Field(default_factory=list)
    """The messages of every call, in order."""
    position: int = 0

    @classmethod
    def responding(cls, responder: Callable[..., ScriptItem]) -> ScriptedChatModel:
        """A fake whose reply is computed from the messages: deterministic under concurrency. A
        responder with a `tools` parameter also gets the call's tools, in the OpenAI shape that a
        real endpoint receives."""
        model = cls(messages=iter(()))
        model._responder = responder
        model._wants_tools = "tools" in inspect.signature(responder).parameters
        return model

    @classmethod
    def of(cls, *items: ScriptItem) -> ScriptedChatModel:
        model = cls(messages=iter(()))
        model._script = list(items)  # private: pydantic would try to coerce exceptions into messages
        return model

    def bind_tools(self, tools: Sequence[object], **kwargs: object) -> Runnable:  # noqa: ARG002
        """Replies are whatever the script says they are; the tools go with each call (as a real
        chat model's bind_tools does), for responders that read them."""
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools])

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: object) -> ChatResult:
        with self._lock:
            self.received.append(list(messages))
            if self._responder is None and self.position >= len(self._script):
                raise RuntimeError(f"ScriptedChatModel: script exhausted after {len(self._script)} replies")
            self.position += 1
            n = self.position
            item = None if self._responder else self._script[n - 1]
        if self._responder is not None:  # outside the lock: a responder may block or sleep
            item = (self._responder(list(messages), tools=kwargs.get("tools") or []) if self._wants_tools
                    else self._responder(list(messages)))
        if isinstance(item, BaseException):
            raise item
        return ChatResult(generations=[ChatGeneration(message=to_message(item, n))])

    def _stream(self, *args: object, **kwargs: object) -> Iterator[object]:  # pragma: no cover
        raise NotImplementedError("ScriptedChatModel does not stream")

    @property
    def _llm_type(self) -> str:
        return "scripted-fake-chat"
