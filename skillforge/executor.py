"""Runs a skill on a case: the `executor` model as a small agent with progressive disclosure.

Its system prompt holds the skill index; its tools are `use_skill(name, reason)`, which returns
the body of the release under test, and one tool per fixture of the case, whose response carries
this run's fresh nonce. The loop is a JSON-action loop through structured output (one `Action`
per turn: load a skill, call a tool, or answer). Forced function calling is what llama.cpp's
server does reliably, and the scripted fake model speaks it too.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field, JsonValue

from skillforge.errors import LLMError
from skillforge.llm.client import LLM
from skillforge.registry import index_text
from skillforge.skillfile import split_frontmatter
from skillforge.state.evaluate import Case, Execution, ToolCall
from skillforge.state.llm import Role
from skillforge.state.skill import SkillFile

MAX_TURNS = 6
TOOL_RESULT_CHARS = 4000
NONCE_FIELD = "_nonce"


class Action(BaseModel):
    """Your next step: load a skill's instructions, call a tool, or give the final answer."""

    kind: Literal["use_skill", "call_tool", "answer"] = Field(description="what to do now")
    name: str = Field(default="", description="the skill name for use_skill, the tool name for call_tool")
    arguments: dict[str, str] = Field(default_factory=dict, description="tool arguments (call_tool only)")
    text: str = Field(default="", description="why, for use_skill; the complete answer to the user, for answer")


@dataclass(frozen=True)
class SkillUnderTest:
    """What the executor may load: the skill file (for the index) and the body use_skill returns."""

    skill: SkillFile
    body: str
    release_id: str | None

    @classmethod
    def from_text(cls, text: str, release_id: str | None) -> SkillUnderTest:
        from skillforge.skillfile import parse

        skill = parse(text)
        return cls(skill, split_frontmatter(text)[1], release_id)


def stamp(response: JsonValue, nonce: str) -> JsonValue:
    """The fixture response as this run's tool returns it: with the run's nonce."""
    if isinstance(response, dict):
        return {**response, NONCE_FIELD: nonce}
    return {"result": response, NONCE_FIELD: nonce}


def _lenient(action: Action) -> Action:
    """Small local models put the name inside the arguments ({"name": "restaurant.search",
    "arguments": "..."}) instead of the `name` field (measured with the embedded 1.5B model: 19 of
    20 tool calls). Read it from there rather than failing the call."""
    if action.name or "name" not in action.arguments:
        return action
    args = dict(action.arguments)
    name = args.pop("name")
    if set(args) == {"arguments"}:
        args = {"input": args["arguments"]}
    return action.model_copy(update={"name": name, "arguments": args})


def _system(index: str, tools: list[str]) -> str:
    return ("You are a helpful assistant. Skills you can load (their full instructions are returned "
            "by use_skill):\n" + (index or "(none)\n") +
            "Tools you can call: " + (", ".join(tools) or "(none)") + ".\n"
            "Each turn, reply with exactly one action: use_skill (name, text=why), call_tool (name, "
            "arguments), or answer (text = your complete reply to the user, in the user's language). "
            "Load the matching skill first and follow it. Never state live data (prices, times, "
            "statuses, numbers) that did not come from a tool result in this conversation.")


@dataclass
class Executor:
    """Runs cases with an LLM (its `executor` role)."""

    llm: LLM
    max_turns: int = MAX_TURNS
    _names: dict[str, str] = field(default_factory=dict)

    def run(self, case: Case, skills: Mapping[str, SkillUnderTest], nonce: str, release_id: str | None) -> Execution:
        """Run `case` with `skills` visible (the skill under test at the release being measured).
        Never raises for a model failure: the Execution carries the error."""
        t0 = time.perf_counter()
        out = Execution(nonce=nonce, release_id=release_id)
        tools = sorted(case.fixtures)
        messages: list[tuple[str, str]] = [("system", _system(index_text(s.skill for s in skills.values()), tools)),
                                           ("user", case.query)]
        try:
            for _ in range(self.max_turns):
                answer = self.llm.structured(Role.EXECUTOR, Action, messages,
                                             choices={"kind": {"use_skill", "call_tool", "answer"}})
                out.turns += 1
                out.prompt_tokens += answer.prompt_tokens
                out.completion_tokens += answer.completion_tokens
                action = answer.value
                messages.append(("assistant", action.model_dump_json()))
                if action.kind == "answer":
                    out.answer = action.text
                    break
                messages.append(("user", self._step(action, case, skills, nonce, out)))
            else:
                out.error = f"no answer after {self.max_turns} turns"
        except LLMError as e:
            out.error = f"{type(e).__name__}: {e}"[:500]
        out.latency_ms = round((time.perf_counter() - t0) * 1000, 3)
        return out

    @staticmethod
    def _step(action: Action, case: Case, skills: Mapping[str, SkillUnderTest], nonce: str, out: Execution) -> str:
        """Carry out a use_skill or call_tool action; the result goes back as the next user turn."""
        action = _lenient(action)
        if action.kind == "use_skill":
            if action.name not in skills:
                return f"use_skill error: no skill named '{action.name}'. Skills: {', '.join(sorted(skills))}."
            if action.name in out.skills_loaded:  # a body appended again only eats the context window
                return f"use_skill {action.name}: already loaded above; follow it, call a tool or answer."
            out.skills_loaded.append(action.name)
            return f"use_skill {action.name}:\n{skills[action.name].body}"
        if action.name not in case.fixtures:
            out.tool_calls.append(ToolCall(name=action.name, arguments=action.arguments, ok=False))
            return f"tool error: no tool named '{action.name}'. Tools: {', '.join(sorted(case.fixtures)) or 'none'}."
        response = json.dumps(stamp(case.fixtures[action.name], nonce), ensure_ascii=False)
        out.tool_calls.append(ToolCall(name=action.name, arguments=action.arguments))
        out.tool_responses.append(response)
        return f"tool result {action.name}: {response[:TOOL_RESULT_CHARS]}"
