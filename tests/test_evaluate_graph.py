"""The evaluate graph end to end with deterministic fakes: verdicts, INVALID, P0, provenance,
cache, logs, and kill -9 + resume."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from evaluate_fakes import (BETTER, BROKEN, FORGE, GARBAGE_JUDGE, OLD_NONCE, OUTSIDE_JUDGE, STALE, TIMEOUT_JUDGE,
                            context, fake_llm, make_set, skill_text)

from skillforge.runners.checkpoint import sqlite_saver
from skillforge.graphs.evaluate import build_evaluate_graph
from skillforge.llm.client import LLM
from skillforge.llm.cache import LLMCache
from skillforge.state.evaluate import SkillSide
from skillforge.state.evaluate_graph import EvalState

CHILD = Path(__file__).with_name("evaluate_child.py")


def run(tmp_path: Path, candidate_marker: str = "", *, n: int = 5, p0: int = 0, garbage: int = 0,
        llm: LLM | None = None, logs: bool = False, run_id: str = "run-1", fault: str = GARBAGE_JUDGE) -> EvalState:
    llm = llm or fake_llm()[0]
    ctx = context(llm, make_set(tmp_path, n, p0=p0, garbage=garbage, fault=fault), tmp_path if logs else None)
    state = EvalState(run_id=run_id, skill="taxi-hailing", eval_set="t",
                      baseline=SkillSide(text=skill_text(), release_id="r-old"),
                      candidate=SkillSide(text=skill_text(candidate_marker), release_id="r-new"))
    out = build_evaluate_graph().invoke(state, {"max_concurrency": 3}, context=ctx)
    return EvalState.model_validate(out)


def test_same_skill_passes_with_ties(tmp_path):
    out = run(tmp_path)
    assert out.result.verdict == "PASS" and len(out.results) == 5 and out.result.improvement.value == "INCONCLUSIVE"
    assert all(r.verdicts and all(v.value == "tie" for v in r.verdicts.values()) for r in out.results)
    m = out.result.measured
    assert m.old == m.new and m.invalid_rate == 0 and m.flip_rate == 0


def test_better_candidate_wins_every_dimension_it_can(tmp_path):
    out = run(tmp_path, BETTER)
    m = out.result.measured
    assert m.new.task > m.old.task and m.new.readability > m.old.readability
    assert out.result.verdict == "REVIEW"  # moves >= 10 points ask for a human
    assert out.result.improvement.value == "WIN" and out.result.evidence["effect"].wins == 5
    assert len(out.results) == 5 and all(r.verdicts["overall"].value == "candidate" for r in out.results)


def test_judge_garbage_makes_cases_invalid_and_21_percent_makes_the_run_invalid(tmp_path):
    out = run(tmp_path, BETTER, n=10, garbage=2)   # 20 %: still decides
    assert out.result.verdict != "INVALID" and out.result.measured.invalid_cases == 2
    invalid = [r for r in out.results if r.invalid]
    assert invalid and "judge" in invalid[0].error and not invalid[0].verdicts
    out = run(tmp_path, BETTER, n=14, garbage=3, run_id="run-2")   # 21.4 %
    assert out.result.verdict == "INVALID" and out.result.ratchet == {}


def test_fewer_valid_cases_than_the_sign_test_needs_is_invalid_and_says_how_many_are_missing(tmp_path):
    out = run(tmp_path, BETTER, n=4)   # 4 valid cases, all wins: 2^-4 = 0.0625 can never reach 5 %
    assert out.result.verdict == "INVALID" and out.result.improvement is None and out.result.evidence == {}
    assert out.result.reasons == ["only 4 valid case(s) of 4: the sign test needs at least 5 to decide anything, "
                                  "1 missing: the run cannot tell"]
    out = run(tmp_path, BETTER, n=5, run_id="run-2")   # 5 of 5 wins: 2^-5 = 0.031 decides
    assert out.result.verdict != "INVALID" and out.result.improvement.value == "WIN"


def test_one_p0_flip_declines_whatever_the_averages(tmp_path):
    out = run(tmp_path, BROKEN, n=5, p0=1)
    assert out.result.verdict == "DECLINED"
    assert out.result.measured.p0_flips == ["t-00"]
    assert "1 P0 case(s) went from pass to fail: t-00" in out.result.reasons


def test_forged_live_value_fails_the_candidates_task(tmp_path):
    out = run(tmp_path, FORGE)
    assert len(out.results) == 5
    for r in out.results:
        assert r.checks["baseline"].passed and not r.checks["candidate"].provenance_ok
        assert "777" in r.checks["candidate"].reason
    assert out.result.measured.new.task < out.result.measured.old.task
    assert out.result.verdict == "DECLINED"


def test_second_identical_evaluation_makes_zero_calls(tmp_path):
    llm, executor, judge = fake_llm()
    llm.cache = LLMCache(tmp_path / "cache.db")
    first = run(tmp_path, BETTER, llm=llm)
    calls = (executor.position, judge.position)
    again_llm, ex2, ju2 = fake_llm()
    again_llm.cache = LLMCache(tmp_path / "cache.db")
    second = run(tmp_path, BETTER, llm=again_llm, run_id="run-2")
    assert (ex2.position, ju2.position) == (0, 0) and calls[0] > 0
    assert second.result.measured.new == first.result.measured.new and second.result.verdict == first.result.verdict
    assert again_llm.ledger.calls == 0 and again_llm.ledger.cache_hits > 0


def test_logs_one_evaluation_line_and_one_trace_per_case(tmp_path):
    out = run(tmp_path, BETTER, logs=True)
    [line] = [json.loads(x) for x in (tmp_path / "evaluations.jsonl").read_text().splitlines()]
    for key in ("release_id", "eval_set", "structure_score", "effect_score", "objective_metrics",
                "judge_verdicts", "p0_pass", "flip_rate", "invalid_rate"):
        assert key in line
    assert (line["kind"], line["improvement"], line["false_alarm"]) == ("ab", "WIN", None)
    assert line["evidence"]["effect"]["wins"] == 5 and line["evidence"]["effect"]["ci"] == [0.375, 0.375]  # (0.5 + 0 + 1 + 0) / 4
    traces = [json.loads(x) for x in (tmp_path / "traces" / "run-1.jsonl").read_text().splitlines()]
    assert len(traces) == 5
    t = traces[0]
    assert t["case"]["id"] and t["baseline"]["answer"] and t["candidate"]["nonce"].startswith("sfn-")
    assert len(t["orders"]) == 2 and t["verdicts"] and "latency_ms" in t["candidate"] and t["candidate_release"] == "r-new"
    assert out.result.structure["candidate"] > 0


def test_unknown_set_and_undeclared_tool_are_named_errors(tmp_path):
    from skillforge.evaluation.datasets import DatasetError

    llm = fake_llm()[0]
    path = make_set(tmp_path)
    ctx = context(llm, path)
    state = EvalState(run_id="x", skill="taxi-hailing", eval_set="nope", baseline=SkillSide(text=None),
                      candidate=SkillSide(text=skill_text()))
    with pytest.raises(DatasetError, match="no evaluation set"):
        build_evaluate_graph().invoke(state, context=ctx)
    data = json.loads(path.read_text())
    data["cases"][0]["fixtures"] = {"weather.get_forecast": {"t": 1}}
    path.write_text(json.dumps(data, ensure_ascii=False))
    with pytest.raises(DatasetError, match="does not declare"):
        build_evaluate_graph().invoke(state.model_copy(update={"eval_set": "t"}), context=context(llm, path))


def test_kill_9_mid_evaluation_then_resume_runs_only_unfinished_cases(tmp_path):
    db = tmp_path / "ckpt.sqlite"
    proc = subprocess.run([sys.executable, str(CHILD), str(tmp_path), str(db), "kill-at-judge-5"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    llm, executor, judge = fake_llm()
    graph = build_evaluate_graph(checkpointer=sqlite_saver(db))
    cfg = {"configurable": {"thread_id": "crash-run"}, "max_concurrency": 1}
    # finished cases of the interrupted fan-out are saved as pending writes of their tasks
    done_before = sum(1 for t in graph.get_state(cfg).tasks if t.name == "run_case" and t.result is not None)
    assert 2 <= done_before < 6  # the child waited for two saved cases before it died
    out = EvalState.model_validate(graph.invoke(None, cfg, context=context(llm, tmp_path / "t.json")))
    executed = {json.loads(m[-1].content.split(": ", 1)[1]).get("fare") for m in executor.received
                if m[-1].content.startswith("tool result")}
    assert len(out.results) == 6 and len(executed) == 6 - done_before
    uninterrupted = run(tmp_path / "u", BETTER, n=6) if (tmp_path / "u").mkdir() is None else None
    assert out.result.verdict == uninterrupted.result.verdict
    assert out.result.measured.new == uninterrupted.result.measured.new


@pytest.mark.parametrize("fault", [TIMEOUT_JUDGE, OUTSIDE_JUDGE])
def test_judge_timeout_or_answer_outside_the_enum_is_invalid_never_tie(tmp_path, fault):
    out = run(tmp_path, BETTER, n=4, garbage=1, fault=fault)
    [bad] = [r for r in out.results if r.invalid]
    assert fault in bad.case.query and "judge" in bad.error and not bad.verdicts
    assert out.result.measured.invalid_cases == 1 and out.result.verdict == "INVALID"  # 25 % > 20 %


def test_stale_nonce_in_an_answer_fails_task(tmp_path):
    out = run(tmp_path, STALE)
    assert len(out.results) == 5
    for r in out.results:
        assert r.checks["baseline"].passed and not r.checks["candidate"].provenance_ok
        assert OLD_NONCE in r.checks["candidate"].reason
    assert out.result.verdict == "DECLINED"


def test_executor_reads_a_tool_name_given_inside_the_arguments():
    """The embedded 1.5B model writes {"kind": "call_tool", "name": "", "arguments": {"name": tool, ...}}."""
    from skillforge.evaluation.executor import Action, Executor, SkillUnderTest
    from skillforge.llm.config import resolve_all
    from skillforge.state.evaluate import Case
    from skillforge.state.llm import Role
    from skillforge.testing.fake_chat import ScriptedChatModel

    fake = ScriptedChatModel.of(Action(kind="call_tool", name="", arguments={"name": "ride.estimate_fare",
                                                                              "arguments": "to the airport"}),
                                Action(kind="answer", text="约 128 元"))
    llm = LLM(resolve_all(env={"SKILLFORGE_LLM_MODEL": "m", "SKILLFORGE_JUDGE_MODEL": "j"}), {Role.EXECUTOR: fake})
    case = Case(id="c", skill="taxi-hailing", query="去机场多少钱", fixtures={"ride.estimate_fare": {"fare": 128}})
    out = Executor(llm).run(case, {"taxi-hailing": SkillUnderTest.from_text(skill_text(), None)}, "sfn-0123456789ab", None)
    assert [c.name for c in out.tool_calls] == ["ride.estimate_fare"] and out.tool_calls[0].ok
    assert out.tool_calls[0].arguments == {"input": "to the airport"} and '"fare": 128' in out.tool_responses[0]
