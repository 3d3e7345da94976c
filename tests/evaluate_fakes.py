"""Deterministic fake executor and judge for evaluation tests (answers depend only on the messages,
so concurrency and resume cannot change them). Also used by the crash-and-resume child process."""

from __future__ import annotations

import json
from pathlib import Path

from langchain_core.messages import BaseMessage

from skillforge.context import EvalContext
from skillforge.evaluation.datasets import read_set
from skillforge.evaluation.executor import LOADED, Action, SkillUnderTest
from skillforge.evaluation.judge import Judgement
from skillforge.llm.client import LLM
from skillforge.llm.config import resolve_all
from skillforge.state.llm import Role
from skillforge.testing.fake_chat import ScriptedChatModel, offered_tools

BETTER = "BETTER-MARKER"
BROKEN = "BROKEN-MARKER"
FORGE = "FORGE-MARKER"
GARBAGE_JUDGE = "judge-garbage"
TIMEOUT_JUDGE = "judge-timeout"
OUTSIDE_JUDGE = "judge-outside"
STALE = "STALE-MARKER"
NO_SKILL = "NO-SKILL-MARKER"
"""In a query: the fake executor answers at once, loading nothing (an unexercised skill)."""
OLD_NONCE = "sfn-00000000dead"
SKILL = "taxi-hailing"
ENV = {"SKILLFORGE_LLM_MODEL": "fake-exec", "SKILLFORGE_JUDGE_MODEL": "fake-judge"}


def _text(m: BaseMessage) -> str:
    return m.content if isinstance(m.content, str) else str(m.content)


def executor_reply(messages: list[BaseMessage], tools: list[object]) -> object:
    system, last = _text(messages[0]), _text(messages[-1])
    names = offered_tools(tools)
    history = "\n".join(_text(m) for m in messages)
    if len(messages) == 2 and NO_SKILL in last:
        return Action(kind="answer", text="我不知道。")
    if len(messages) == 2 and LOADED not in system:  # disclosure: load the skill first
        return Action(kind="use_skill", name=SKILL, text="the user wants a taxi")
    if len(messages) == 2 and names:  # behaviour: the skill is in the system prompt already
        return Action(kind="call_tool", name=names[0], arguments={})
    if last.startswith("use_skill") and names:
        return Action(kind="call_tool", name=names[0], arguments={})
    if last.startswith("tool result"):
        data = json.loads(last.split(": ", 1)[1])
        facts = ", ".join(str(v) for k, v in data.items() if k != "_nonce")
        if BROKEN in history:
            facts = "好的"
        if FORGE in history:
            facts += ", 预计 777 元"
        if STALE in history:
            facts += f" (ref {OLD_NONCE})"
        return Action(kind="answer", text=f"结果：{facts}" + (" (better)" if BETTER in history else ""))
    return Action(kind="answer", text="抱歉，暂时无法完成。")


def judge_reply(messages: list[BaseMessage]) -> object:
    prompt = _text(messages[-1])
    if GARBAGE_JUDGE in prompt:
        return "A is better, probably"  # no tool call: unparseable -> INVALID
    if TIMEOUT_JUDGE in prompt:
        return TimeoutError("judge did not answer in time")
    if OUTSIDE_JUDGE in prompt:
        return {"name": "Judgement", "args": {"overall": "C", "task": "A", "robustness": "tie",
                                              "readability": "B", "reason": "C is best"}}
    a = prompt.split("[Answer A]\n", 1)[1].split("\n\n[Answer B]\n", 1)[0]
    b = prompt.split("[Answer B]\n", 1)[1]
    label = "A" if "(better)" in a and "(better)" not in b else "B" if "(better)" in b and "(better)" not in a else "tie"
    return Judgement(overall=label, task=label, robustness="tie", readability=label, reason="fake")


def fake_llm() -> tuple[LLM, ScriptedChatModel, ScriptedChatModel]:
    executor = ScriptedChatModel.responding(executor_reply)
    judge = ScriptedChatModel.responding(judge_reply)
    return LLM(resolve_all(env=ENV), {Role.EXECUTOR: executor, Role.JUDGE: judge}), executor, judge


def make_set(folder: Path, n: int = 5, *, p0: int = 0, garbage: int = 0, fault: str = GARBAGE_JUDGE) -> Path:
    """A small set for taxi-hailing: n cases, the first `p0` are P0, the last `garbage` make the
    fake judge answer garbage."""
    cases = []
    for i in range(n):
        query = f"叫车从公司到机场大概多少钱，第{i}次" + (f" {fault}" if i >= n - garbage else "")
        cases.append({"id": f"t-{i:02d}", "skill": SKILL, "query": query,
                      "fixtures": {"ride.estimate_fare": {"fare": 120 + i, "eta": f"14:{20 + i}"}},
                      "expect": {"must_include": [str(120 + i)], "must_not_include": []}, "p0": i < p0, "tags": ["zh"]})
    path = folder / "t.json"
    path.write_text(json.dumps({"meta": {"name": "t", "partition": "dev", "skills": [SKILL], "auto_case_ids": []},
                                "cases": cases}, ensure_ascii=False), encoding="utf-8")
    return path


def skill_text(marker: str = "") -> str:
    base = (Path(__file__).resolve().parents[1] / "skills" / SKILL / "SKILL.md").read_text(encoding="utf-8")
    return base + (f"\n- {marker}\n" if marker else "")


def context(llm: LLM, set_path: Path, logs: Path | None = None) -> EvalContext:
    s = read_set(set_path)
    others = {}
    return EvalContext(llm=llm, sets={s.meta.name: s}, others=others,
                       evaluations_log=logs / "evaluations.jsonl" if logs else None,
                       traces_dir=logs / "traces" if logs else None)


__all__ = ["SkillUnderTest"]
