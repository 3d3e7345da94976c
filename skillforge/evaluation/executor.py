"""Runs a skill on a case: the `executor` model as a small agent.

Two modes (ExecutionMode): in `disclosure` the system prompt holds the skill index and the body of
the release under test comes back from `use_skill(name, reason)`; in `behaviour` that body is in the
system prompt from the start, recorded as loaded, as if use_skill had been called. Either way the
tools are one per fixture of the case, whose response carries this run's fresh nonce. The loop is a
JSON-action loop through structured output: one step per turn, an enum of what is possible now
(`step_options`: load a skill, call one of the case's tools, or answer), so a server that turns
the schema into a grammar can only name a real skill or tool. Forced function calling is what
llama.cpp's server does reliably, and the scripted fake model speaks it too.

The system prompt is built stable-prefix first (fixed rules, then the index or the skill body; the
case's tools are only in the step enum, which the server renders after it; the query is the next
message), so a llama.cpp server reuses its KV cache across turns and cases. Context is capped: a
tool result beyond TOOL_RESULT_CHARS is cut with a marker, at most MAX_TURNS turns run, and before
every call the prompt is estimated (rules/budget.py); when the
turns after the query pass HISTORY_CHARS or the prompt would not fit the executor's context window
(minus its reply cap), older results are left out, oldest tool result first. A prompt that still
does not fit raises ContextOverflow, which ends the execution with that error (the case is INVALID).
An execution that fails records why (`Execution.failure`): the agent's doing (the turn cap, an empty
answer, an unusable step) or the infrastructure's; rules/execution.py decides what each makes of a case.
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, create_model, model_validator

from skillforge.errors import BudgetExceeded, ContextOverflow, InvalidLLMOutput, LLMError
from skillforge.llm.client import LLM, schema_json
from skillforge.library.registry import index_text
from skillforge.rules.budget import estimate_prompt_tokens
from skillforge.rules.execution import failure_kind
from skillforge.skill.file import split_frontmatter
from skillforge.state.evaluate import Case, Execution, ExecutionFailure, ExecutionMode, ToolCall
from skillforge.state.llm import Role
from skillforge.state.skill import SkillFile

MAX_TURNS = 6
TOOL_RESULT_CHARS = 4000
"""A tool result longer than this reaches the model cut, with TRUNCATED after it."""
HISTORY_CHARS = 12000
"""Characters of turns after the query sent verbatim; beyond it older results are left out."""
KEEP_LAST = 2
"""The last action and its result are always sent whole."""
NONCE_FIELD = "_nonce"
Messages = list[tuple[str, str]]
TRUNCATED = "…[truncated: {shown} of {total} characters shown]"
ELIDED = "[earlier result left out to fit the context: {chars} characters]"
LOADED = "is loaded; follow its instructions"
"""In behaviour mode the system prompt says `The skill NAME {LOADED}:` before the body."""
RULES = ("You are a helpful assistant. Each turn, reply with exactly one step: {actions}. Never state live "
         "data (prices, times, statuses, numbers) that did not come from a tool result in this conversation.")


class Action(BaseModel):
    """One executor step as the loop reads it: load a skill, call a tool, or answer."""

    kind: Literal["use_skill", "call_tool", "answer"] = Field(description="what to do now")
    name: str = Field(default="", description="the skill name for use_skill, the tool name for call_tool")
    arguments: dict[str, str] = Field(default_factory=dict, description="tool arguments (call_tool only)")
    text: str = Field(default="", description="why, for use_skill; the complete answer to the user, for answer")


def _all_required(schema: dict[str, Any]) -> None:
    schema["required"] = list(schema.get("properties", {}))


class Step(BaseModel):
    """Your next step: load a skill's instructions, call a tool, or give the final answer."""

    model_config = ConfigDict(json_schema_extra=_all_required)
    step: str
    text: str = Field(default="", description="answer: your complete reply to the user; otherwise empty")
    arguments: dict[str, str] = Field(default_factory=dict, description="tool arguments (call_tool only)")

    @model_validator(mode="before")
    @classmethod
    def _from_action(cls, data: object) -> object:
        """Also read the flat Action shape ({kind, name, ...}), which the scripted fakes speak."""
        if isinstance(data, dict) and "step" not in data and "kind" in data:
            a = _lenient(Action.model_validate(data))
            return {"step": a.kind if a.kind == "answer" else f"{a.kind} {a.name}", "arguments": a.arguments,
                    "text": a.text}
        return data

    def action(self) -> Action:
        """The step as the loop reads it. An answer whose text came inside `arguments` (one string
        value there, `text` empty: the embedded model did this on 2 of 2 answers when `arguments`
        came first) is read from there."""
        kind, _, name = self.step.partition(" ")
        text, values = self.text, [v for v in self.arguments.values() if v.strip()]
        if kind == "answer" and not text.strip() and len(values) == 1:
            text = values[0]
        return Action(kind=kind, name=name, arguments=self.arguments, text=text)  # type: ignore[arg-type]


def step_options(mode: ExecutionMode, skills: Mapping[str, object], tools: list[str],
                 loaded: Collection[str] = ()) -> tuple[str, ...]:
    """Every step the executor may take now, each a valid (kind, name) pair: `use_skill <skill>` for
    each visible skill (disclosure mode, until one is `loaded`: an execution picks one skill), then
    `call_tool <tool>` for each of the case's tools, then `answer`. Measured on the embedded 1.5B
    model: with use_skill offered in behaviour mode, 10 of 20 executions spent their first turn
    loading the loaded skill again; in disclosure mode with the loaded skill still offered, 4 of 6
    loaded it again, and with only the others offered, 18 of 20 went on to load unrelated skills
    (invoice-ocr, recipe-suggest...) until the turn cap."""
    loads = [f"use_skill {s}" for s in sorted(skills)] if mode is ExecutionMode.DISCLOSURE and not loaded else []
    return (*loads, *(f"call_tool {t}" for t in tools), "answer")


@lru_cache(maxsize=256)
def step_schema(options: tuple[str, ...]) -> type[Step]:
    """The tool schema sent for one case: `step` is an enum of `options`, so a server that turns the
    schema into a grammar (llama.cpp does) can only produce a step that names a real skill or tool.
    With a free `name` field the embedded model called a tool with an empty name on 13 of 20 first
    turns in disclosure mode. Named `Action`: the tool name the servers and fakes answer."""
    return create_model("Action", __base__=Step, __doc__=Step.__doc__,
                        step=(Literal[options], Field(description="what to do now: one of the listed steps")))  # type: ignore[valid-type]


@dataclass(frozen=True)
class SkillUnderTest:
    """What the executor may load: the skill file (for the index) and the body use_skill returns."""

    skill: SkillFile
    body: str
    release_id: str | None

    @classmethod
    def from_text(cls, text: str, release_id: str | None) -> SkillUnderTest:
        from skillforge.skill.file import parse

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


def step_text(step: BaseModel) -> str:
    """A step as the history shows it: JSON the way the model writes it under llama.cpp's grammar
    (`", "` and `": "`, non-ASCII as is), so the next turn's prompt repeats the tokens the server
    just generated and its KV cache covers them (compact JSON matched 2 of ~49 per turn)."""
    return json.dumps(step.model_dump(), ensure_ascii=False)


def cap_tool_result(text: str, limit: int = TOOL_RESULT_CHARS) -> tuple[str, bool]:
    """(what the model sees of a tool result, whether it was cut): at most `limit` characters, then
    a TRUNCATED marker saying how much was shown."""
    if len(text) <= limit:
        return text, False
    return text[:limit] + TRUNCATED.format(shown=limit, total=len(text)), True


def system_prompt(mode: ExecutionMode, skills: Mapping[str, SkillUnderTest], skill: str) -> str:
    """The executor's system prompt: fixed rules, then (behaviour) the body of `skill`, or
    (disclosure) the index of `skills`, bodies through use_skill. The case's tools are not listed:
    the step enum names them, and a server renders that enum after the system prompt, so a system
    prompt without them is the same for every case of a skill and the server's KV cache reuses it
    and the schema's head (a listed tool set moved the first difference to before the tools block:
    337 tokens to evaluate for the next case's first turn, 190 without)."""
    if mode is ExecutionMode.BEHAVIOUR:
        head = RULES.format(actions="call_tool <tool> (with its arguments), or answer (text = your complete reply "
                                    "to the user, in the user's language)") + "\n"
        if skill in skills:
            return head + f"The skill {skill} {LOADED}:\n{skills[skill].body.strip()}\n"
        return head + "No skill is loaded.\n"
    head = RULES.format(actions="use_skill <skill>, call_tool <tool> (with its arguments), or answer (text = "
                                "your complete reply to the user, in the user's language)") + "\n"
    index = index_text(s.skill for s in skills.values()) or "(none)\n"
    return (head + "Skills you can load (use_skill returns their full instructions):\n" + index +
            "Load the matching skill first and follow it.\n")


def fit_prompt(messages: Messages, budget_tokens: int, extra_tokens: int = 0) -> tuple[Messages, int]:
    """(the prompt to send for `messages`, how many results were left out of it). `messages` is
    system, query, then (action, result) pairs. While the turns after the query pass HISTORY_CHARS
    or the estimated prompt (+ `extra_tokens`) passes `budget_tokens`, the oldest result not among the
    last KEEP_LAST messages is replaced by an ELIDED marker (tool results before skill bodies).
    ContextOverflow if the prompt still does not fit."""
    out = list(messages)

    def over() -> bool:
        turns = sum(len(text) for _, text in out[2:])
        return turns > HISTORY_CHARS or estimate_prompt_tokens([t for _, t in out]) + extra_tokens > budget_tokens

    candidates = sorted((i for i in range(3, len(out) - KEEP_LAST, 2)),
                        key=lambda i: (out[i][1].startswith("use_skill"), i))
    elided = 0
    for i in candidates:
        if not over():
            break
        out[i] = (out[i][0], ELIDED.format(chars=len(out[i][1])))
        elided += 1
    est = estimate_prompt_tokens([t for _, t in out]) + extra_tokens
    if est > budget_tokens:
        raise ContextOverflow(f"the prompt is ~{est} tokens (estimated, {elided} older result(s) left out), over "
                              f"the {budget_tokens} the executor's context leaves beside its reply cap")
    return out, elided


def turn_limit_error(max_turns: int, steps: list[str]) -> str:
    """The error of an execution that never answered, with the steps it took instead (a step taken
    again is what a looping agent does), e.g. 'no answer after 6 turns (looping): call_tool a → ...'."""
    looping = " (looping)" if len(set(steps)) < len(steps) else ""
    return f"no answer after {max_turns} turns{looping}: {' → '.join(steps)}"[:500]


@dataclass
class Executor:
    """Runs cases with an LLM (its `executor` role), in one ExecutionMode."""

    llm: LLM
    max_turns: int = MAX_TURNS
    mode: ExecutionMode = ExecutionMode.BEHAVIOUR
    _names: dict[str, str] = field(default_factory=dict)

    def run(self, case: Case, skills: Mapping[str, SkillUnderTest], nonce: str, release_id: str | None) -> Execution:
        """Run `case` with `skills` visible (the skill under test, `case.skill`, at the release being
        measured; in behaviour mode it is loaded up front). Never raises for a model failure or a
        context overflow: the Execution carries the error."""
        t0 = time.perf_counter()
        out = Execution(nonce=nonce, release_id=release_id, mode=self.mode)
        if self.mode is ExecutionMode.BEHAVIOUR and case.skill in skills:
            out.skills_loaded.append(case.skill)
        cfg = self.llm.configs[Role.EXECUTOR]
        budget = cfg.context_tokens - cfg.max_tokens
        tools = sorted(case.fixtures)
        system = system_prompt(self.mode, skills, case.skill)
        messages: Messages = [("system", system), ("user", case.query)]
        steps: list[str] = []
        try:
            for _ in range(self.max_turns):
                # the options change only when the skill is loaded (disclosure), so the tools block
                # a server renders after the system prompt stays a reusable prefix on the other turns
                schema = step_schema(step_options(self.mode, skills, tools, out.skills_loaded))
                schema_tokens = estimate_prompt_tokens([schema_json(schema)])
                prompt, elided = fit_prompt(messages, budget, schema_tokens)
                out.elided_turns = max(out.elided_turns, elided)
                answer = self.llm.structured(Role.EXECUTOR, schema, prompt)
                out.turns += 1
                out.prompt_tokens += answer.prompt_tokens
                out.completion_tokens += answer.completion_tokens
                messages.append(("assistant", step_text(answer.value)))
                action = answer.value.action()
                if action.kind == "answer":
                    out.answer = action.text
                    if not action.text.strip():
                        out.error, out.failure = "the agent answered with no text", ExecutionFailure.NO_ANSWER
                    break
                steps.append(f"{action.kind} {action.name}".strip())
                messages.append(("user", self._step(action, case, skills, nonce, out)))
            else:
                out.error = turn_limit_error(self.max_turns, steps)
                out.failure = ExecutionFailure.TURN_LIMIT
        except LLMError as e:  # the agent's unusable reply, or the infrastructure (rules/execution.py)
            out.error = f"{type(e).__name__}: {e}"[:500]
            cause = e.__context__
            out.failure = failure_kind(isinstance(e, InvalidLLMOutput), type(cause).__name__ if cause else None,
                                       refused=isinstance(e, BudgetExceeded))
        out.latency_ms = round((time.perf_counter() - t0) * 1000, 3)
        return out

    @staticmethod
    def _step(action: Action, case: Case, skills: Mapping[str, SkillUnderTest], nonce: str, out: Execution) -> str:
        """Carry out a use_skill or call_tool action; the result goes back as the next user turn. The
        step enum offers only names that exist; the checks below keep a hand-built Action honest."""
        if action.kind == "use_skill":
            if action.name not in skills:
                return f"use_skill error: no skill named '{action.name}'. Skills: {', '.join(sorted(skills))}."
            out.skills_loaded.append(action.name)
            return f"use_skill {action.name}:\n{skills[action.name].body}"
        if action.name not in case.fixtures:
            out.tool_calls.append(ToolCall(name=action.name, arguments=action.arguments, ok=False))
            return f"tool error: no tool named '{action.name}'. Tools: {', '.join(sorted(case.fixtures)) or 'none'}."
        response = json.dumps(stamp(case.fixtures[action.name], nonce), ensure_ascii=False)
        out.tool_calls.append(ToolCall(name=action.name, arguments=action.arguments))
        out.tool_responses.append(response)
        shown, cut = cap_tool_result(response)
        out.truncated_tool_results += cut
        return f"tool result {action.name}: {shown}"
