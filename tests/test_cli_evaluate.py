"""`skillforge evaluate` as a user runs it: a real process against a local OpenAI-compatible server
that plays executor and judge (tests/eval_server.py). Exit codes, --json evidence, --resume, --rejudge,
--aa, and the named errors that must come before the run."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import cli_env, closed_stdout_run, flat, run_cli
from eval_server import EvalServer, JudgeMode
from evaluate_fakes import BETTER, BROKEN, make_set, skill_text

from skillforge.testing.openai_server import FakeOpenAIServer, Reply

N_CASES = 8


def sf(args: list[str], env: dict[str, str], ok: int | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli(args, env, ok=ok)


def llm_env(srv: FakeOpenAIServer) -> dict[str, str]:
    return {"SKILLFORGE_LLM_BASE_URL": srv.base_url, "SKILLFORGE_LLM_MODEL": "m", "SKILLFORGE_JUDGE_MODEL": "j",
            "SKILLFORGE_LLM_MAX_RETRIES": "0"}


@pytest.fixture
def ws(workspace, machine) -> Path:  # noqa: ANN001 - conftest fixtures: the example skills imported
    make_set(workspace.root / "evaluation_sets", N_CASES)
    return workspace.root


def candidate(tmp_path: Path, marker: str = "", name: str = "cand") -> str:
    path = tmp_path / name / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(skill_text(marker), encoding="utf-8")
    return str(path)


def evaluate(ws: Path, env: dict[str, str], cand: str, *extra: str, ok: int | None = None) -> dict[str, object]:
    proc = sf(["evaluate", "taxi-hailing", "--candidate", cand, "--set", "t", "--json", "--no-cache",
               "-w", str(ws), *extra], env, ok=ok)
    return json.loads(proc.stdout)


def test_invalid_run_exits_5_with_report_traces_and_rejudge(ws, tmp_path):
    # echo_tool answers every Action with its first enum value ("use_skill" forever): no answer in
    # 6 turns, so every case is INVALID and the run cannot tell
    with FakeOpenAIServer(default=Reply.echo_tool()) as srv:
        env = llm_env(srv)
        report = tmp_path / "report.html"
        proc = run_cli(["evaluate", "taxi-hailing", "--candidate", str(ws / "skills" / "taxi-hailing"), "--set", "t",
                   "--json", "--report", str(report), "-w", str(ws)], env, ok=5)
        result = json.loads(proc.stdout)
        assert result["verdict"] == "INVALID" and "cannot tell" in result["reasons"][0]
        assert result["improvement"] is None and result["evidence"] == {}
        html = report.read_text()
        assert "INVALID" in html and "t-00" in html and 'data-k="flip"' in html
        run = result["run_id"]
        traces = (ws / "runs" / "traces" / f"{run}.jsonl").read_text().splitlines()
        assert len(traces) == N_CASES and all(json.loads(t)["invalid"] for t in traces)
        [line] = (ws / "runs" / "evaluations.jsonl").read_text().splitlines()
        assert json.loads(line)["invalid_rate"] == 1.0
        hits = srv.hits
        again = run_cli(["evaluate", "--rejudge", run, "--json", "-w", str(ws)], env, ok=5)
        assert json.loads(again.stdout)["verdict"] == "INVALID" and srv.hits == hits  # nothing re-executed


def test_exit_codes_0_pass_3_review_4_declined_end_to_end(ws, tmp_path):
    with EvalServer(JudgeMode.CONTENT) as srv:
        env = llm_env(srv)
        same = evaluate(ws, env, candidate(tmp_path), ok=0)     # the same text: all ties
        assert same["verdict"] == "PASS" and same["reasons"] == [] and same["improvement"] == "INCONCLUSIVE"
        ev = same["evidence"]["effect"]
        assert set(ev) >= {"wins", "losses", "ties", "p_value", "ci", "outcome", "mde"}
        assert (ev["wins"], ev["losses"], ev["ties"], ev["p_value"], ev["ci"]) == (0, 0, N_CASES, 1.0, [0.0, 0.0])
        better = evaluate(ws, env, candidate(tmp_path, BETTER, "better"), ok=3)   # wins every case: big moves
        assert better["verdict"] == "REVIEW" and better["improvement"] == "WIN"
        assert better["evidence"]["effect"]["wins"] == N_CASES and better["evidence"]["effect"]["p_value"] == pytest.approx(2 ** -N_CASES, abs=1e-6)
        assert any(r.startswith("readability rose") for r in better["reasons"])
        broken = evaluate(ws, env, candidate(tmp_path, BROKEN, "broken"), ok=4)   # drops the fare: fails every check
        assert broken["verdict"] == "DECLINED" and broken["evidence"]["objective"]["outcome"] == "LOSS"
        assert any("evidence of loss on objective" in r for r in broken["reasons"])
        assert any("below the floor" in r for r in broken["reasons"])
        lines = [json.loads(x) for x in (ws / "runs" / "evaluations.jsonl").read_text().splitlines()]
        assert [(x["verdict"], x["improvement"], x["kind"]) for x in lines] == [
            ("PASS", "INCONCLUSIVE", "ab"), ("REVIEW", "WIN", "ab"), ("DECLINED", "LOSS", "ab")]
        assert lines[1]["evidence"]["effect"]["outcome"] == "WIN"


def test_rejudge_calls_the_judge_on_stored_outputs_and_never_the_executor(ws, tmp_path):
    with EvalServer(JudgeMode.CONTENT) as srv:
        env = llm_env(srv)
        first = evaluate(ws, env, candidate(tmp_path, BETTER), ok=3)
        assert srv.calls["Judgement"] == 2 * N_CASES and srv.calls["Action"] > 0
        before = dict(srv.calls)
        srv.judge.reseed(0, JudgeMode.RANDOM)     # a different judge now: the verdicts must come from it
        again = json.loads(sf(["evaluate", "--rejudge", first["run_id"], "--json", "--no-cache", "-w", str(ws)],
                              env).stdout)
        assert srv.calls["Action"] == before["Action"]                        # no executor call
        assert srv.calls["Judgement"] == before["Judgement"] + 2 * N_CASES    # both orders of every case
        assert again["run_id"].startswith(first["run_id"] + "-rejudge-")
        assert again["evidence"]["effect"] != first["evidence"]["effect"]
        assert again["measured"]["tokens"] == first["measured"]["tokens"]     # the stored executions
        traces = ws / "runs" / "traces"
        lines = [json.loads(x) for x in (ws / "runs" / "evaluations.jsonl").read_text().splitlines()]
        assert [x["run_id"] for x in lines] == [first["run_id"], again["run_id"]]   # the rejudge is recorded
        assert len((traces / f"{again['run_id']}.jsonl").read_text().splitlines()) == N_CASES
        third = json.loads(sf(["evaluate", "taxi-hailing", "--rejudge", again["run_id"], "--json", "--no-cache",
                               "-w", str(ws)], env).stdout)                   # and can itself be rejudged
        assert third["run_id"].startswith(again["run_id"] + "-rejudge-")      # (SKILL may be repeated)
        other = sf(["evaluate", "hotel-booking", "--rejudge", again["run_id"], "-w", str(ws)], env, ok=2)
        assert f"run '{again['run_id']}' evaluated 'taxi-hailing', not 'hotel-booking'" in flat(other.stderr)


def test_rejudge_of_damaged_stored_files_is_a_named_error_or_skips_the_bad_line(ws, tmp_path):
    with EvalServer(JudgeMode.CONTENT) as srv:
        env = llm_env(srv)
        run = evaluate(ws, env, candidate(tmp_path, BETTER), ok=3)["run_id"]
        traces, meta = ws / "runs" / "traces" / f"{run}.jsonl", ws / "runs" / "traces" / f"{run}.meta.json"
        with traces.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"case": 5}) + "\n")                           # JSON, but not a case's outputs
        skipped = sf(["evaluate", "--rejudge", run, "--json", "--no-cache", "-w", str(ws)], env, ok=3)
        assert "trace line 9 is not a case's outputs" in " ".join(skipped.stderr.split())
        assert json.loads(skipped.stdout)["verdict"] == "REVIEW"                # the 8 good lines rejudged
        # `... | head -1` whose reader has gone: the verdict's exit code survives the closed pipe
        closed = closed_stdout_run(["evaluate", "--rejudge", run, "--no-cache", "-w", str(ws)], env)
        assert closed.returncode == 3 and "Traceback" not in closed.stderr and "BrokenPipe" not in closed.stderr
        good_meta = meta.read_text()
        for text in ("{", "{}", "[1]"):
            meta.write_text(text)
            assert "cannot rejudge" in sf(["evaluate", "--rejudge", run, "-w", str(ws)], env, ok=2).stderr
        # a meta edited to name another skill: its cases are not that skill's; nothing is judged (QA 38 F8)
        meta.write_text(json.dumps({**json.loads(good_meta), "skill": "hotel-booking"}))
        hits = srv.hits
        strays = sf(["evaluate", "--rejudge", run, "--no-cache", "-w", str(ws)], env, ok=2).stderr
        assert "names skill 'hotel-booking' but its case outputs are cases of 'taxi-hailing'" in flat(strays)
        assert srv.hits == hits
        meta.write_text(good_meta)
        traces.write_text(json.dumps({"case": 5}) + "\n")
        assert "no usable case outputs" in sf(["evaluate", "--rejudge", run, "-w", str(ws)], env, ok=2).stderr
        traces.unlink()
        assert "has no case outputs" in sf(["evaluate", "--rejudge", run, "-w", str(ws)], env, ok=2).stderr


def test_a_candidate_named_as_another_skill_is_refused_before_the_run(ws, tmp_path):
    with EvalServer(JudgeMode.CONTENT) as srv:
        env = llm_env(srv)
        other = Path(candidate(tmp_path, name="taxi-hailing"))
        other.write_text(other.read_text().replace("name: taxi-hailing", "name: something-else", 1))
        proc = sf(["evaluate", "taxi-hailing", "--candidate", str(other.parent), "--set", "t", "-w", str(ws)], env, ok=2)
        assert "its name is 'something-else', not 'taxi-hailing'" in proc.stderr
        assert "no such file or folder" in sf(["evaluate", "taxi-hailing", "--candidate", str(tmp_path / "nope" / "SKILL.md"),
                                               "--set", "t", "-w", str(ws)], env, ok=2).stderr
        assert "an empty skill reference" in sf(["evaluate", "taxi-hailing", "--candidate", "", "--set", "t",
                                                 "-w", str(ws)], env, ok=2).stderr
        assert srv.hits == 0 and not (ws / "runs" / "evaluations.jsonl").exists()


def test_resume_from_the_command_line_runs_only_the_unfinished_cases(ws, tmp_path):
    with EvalServer(JudgeMode.CONTENT) as srv:
        env = llm_env(srv)
        held = ("第5次", "第6次", "第7次")   # the last 3 cases wait; the other 5 finish and are checkpointed
        srv.hold = lambda text: any(h in text for h in held)
        base = cli_env()
        exe = str(Path(sys.executable).parent / "skillforge")
        proc = subprocess.Popen([exe, "evaluate", "taxi-hailing", "--candidate", candidate(tmp_path, BETTER),
                                 "--set", "t", "--no-cache", "--concurrency", "8", "-w", str(ws)],
                                env={**base, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        db = ws / "checkpoints" / "evaluate.sqlite"
        assert not db.exists()
        deadline = time.monotonic() + 120
        done = 0
        while time.monotonic() < deadline and done < N_CASES - len(held):   # wait for the 5 to be checkpointed
            time.sleep(0.2)
            if not db.exists():
                continue
            try:
                with sqlite3.connect(db) as conn:
                    done = conn.execute("SELECT COUNT(*) FROM writes WHERE channel = 'results' AND "
                                        "task_path LIKE '~__pregel_push%'").fetchone()[0]   # finished run_case
            except sqlite3.OperationalError:   # not created yet
                continue
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert done == N_CASES - len(held), "the free cases did not finish before the kill"
        with sqlite3.connect(db) as conn:
            [run] = [r[0] for r in conn.execute("SELECT DISTINCT thread_id FROM checkpoints")]
        assert f"run {run} (if it stops: skillforge evaluate --resume {run} -w " in proc.stderr.read().decode()
        before = dict(srv.calls)
        # the free cases made all their calls; each held case its first executor call, still waiting
        assert before["Action"] == 4 * (N_CASES - len(held)) + len(held)   # behaviour: call_tool, answer per side
        assert before["Judgement"] == 2 * (N_CASES - len(held))
        srv.hold = None
        srv.release.set()
        out = json.loads(sf(["evaluate", "--resume", run, "--json", "--no-cache", "-w", str(ws)], env, ok=3).stdout)
        assert out["run_id"] == run and out["measured"]["valid_cases"] == N_CASES
        assert out["improvement"] == "WIN"
        traces = (ws / "runs" / "traces" / f"{run}.jsonl").read_text().splitlines()
        assert len(traces) == N_CASES
        # 2 executor calls per side and 2 judge calls per case: the resume ran only the 3 held cases
        assert srv.calls["Action"] - before["Action"] == 4 * len(held)
        assert srv.calls["Judgement"] - before["Judgement"] == 2 * len(held)


def test_aa_self_check_reports_flip_rate_and_false_alarm_and_the_report_shows_it(ws, tmp_path):
    with EvalServer(JudgeMode.RANDOM, seed=1) as srv:
        env = llm_env(srv)
        proc = sf(["evaluate", "taxi-hailing", "--aa", "--set", "t", "-w", str(ws)], env)
        assert proc.returncode in (0, 4), proc.stderr
        assert "A/A self-check: judge flip rate" in proc.stdout
        [line] = [json.loads(x) for x in (ws / "runs" / "evaluations.jsonl").read_text().splitlines()]
        assert line["kind"] == "aa" and line["release_id"] == line["baseline_release_id"] is not None
        assert line["flip_rate"] > 0                      # a random judge disagrees with itself across orders
        assert proc.returncode == (4 if line["false_alarm"] else 0)
        srv.judge.reseed(0, JudgeMode.CONTENT)
        report = tmp_path / "r.html"
        aa = json.loads(sf(["evaluate", "taxi-hailing", "--aa", "--set", "t", "--json", "-w", str(ws)], env, ok=0).stdout)
        assert aa["kind"] == "aa" and aa["false_alarm"] is False and aa["measured"]["flip_rate"] == 0
        evaluate(ws, env, candidate(tmp_path), "--report", str(report), ok=0)
        html = report.read_text()
        assert f"A/A run {aa['run_id']} on t: judge flip rate 0.0%, false alarm: none" in html
        assert "Paired evidence" in html and "INCONCLUSIVE" in html


def test_no_llm_configured_is_a_named_error_before_anything_is_written(ws, tmp_path):
    proc = sf(["evaluate", "taxi-hailing", "--candidate", candidate(tmp_path), "--set", "t", "-w", str(ws)], {}, ok=2)
    assert "no model for role(s) executor, judge" in proc.stderr and "nothing was run or written" in proc.stderr
    assert not (ws / "runs" / "evaluations.jsonl").exists()
    assert not (ws / "runs" / "traces").exists() or not list((ws / "runs" / "traces").iterdir())
    assert not (ws / "checkpoints" / "evaluate.sqlite").exists()
    only_exec = {"SKILLFORGE_LLM_BASE_URL": "http://127.0.0.1:9/v1", "SKILLFORGE_EXECUTOR_MODEL": "m"}
    proc = sf(["evaluate", "taxi-hailing", "--aa", "-w", str(ws)], only_exec, ok=2)
    assert "no model for role(s) judge" in proc.stderr


def test_bad_requests_are_named_errors_before_the_run(ws, tmp_path):
    with EvalServer(JudgeMode.CONTENT) as srv:
        env = llm_env(srv)
        cand = candidate(tmp_path)
        assert "no evaluation set" in sf(["evaluate", "taxi-hailing", "--candidate", cand, "--set", "nope",
                                          "-w", str(ws)], env, ok=2).stderr
        assert "unknown skill" in sf(["evaluate", "taxi-haling", "--candidate", "1.0.0", "-w", str(ws)], env, ok=2).stderr
        assert "no stored run 'nope'" in sf(["evaluate", "--rejudge", "nope", "-w", str(ws)], env, ok=2).stderr
        assert "no evaluation run 'nosuchrun' to resume" in sf(["evaluate", "--resume", "nosuchrun", "-w", str(ws)],
                                                               env, ok=2).stderr
        ignored = sf(["evaluate", "--resume", "nosuchrun", "--set", "t", "--mode", "disclosure", "-w", str(ws)], env, ok=2)
        assert "--resume RUN takes its skill, sides, set and mode from the stored run: drop --set, --mode" in flat(ignored.stderr)
        ignored = sf(["evaluate", "--rejudge", "nope", "--candidate", cand, "--concurrency", "2", "-w", str(ws)], env, ok=2)
        assert "drop --candidate, --concurrency" in flat(ignored.stderr)
        assert "--aa runs the live release against itself" in sf(["evaluate", "taxi-hailing", "--aa", "--candidate",
                                                                  cand, "-w", str(ws)], env, ok=2).stderr
        folder = sf(["evaluate", "taxi-hailing", "--candidate", cand, "--set", "t", "--report", str(tmp_path),
                     "-w", str(ws)], env, ok=2)
        assert "is a folder" in folder.stderr
        blocker = tmp_path / "a-file"
        blocker.write_text("x")
        bad = sf(["evaluate", "taxi-hailing", "--candidate", cand, "--set", "t", "--report",
                  str(blocker / "report.html"), "-w", str(ws)], env, ok=2)
        assert "cannot be written" in bad.stderr
        assert srv.hits == 0 and not (ws / "runs" / "evaluations.jsonl").exists()   # nothing ran
        db = ws / "checkpoints" / "evaluate.sqlite"
        if db.exists():   # a named error before the run leaves no checkpoint thread behind
            with sqlite3.connect(db) as conn:
                tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
                assert "checkpoints" not in tables or not conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0]


def test_an_unreachable_endpoint_is_named_in_the_invalid_verdict(ws, tmp_path):
    env = {"SKILLFORGE_LLM_BASE_URL": "http://127.0.0.1:9/v1", "SKILLFORGE_LLM_MODEL": "m",
           "SKILLFORGE_JUDGE_MODEL": "j", "SKILLFORGE_LLM_MAX_RETRIES": "0"}
    out = evaluate(ws, env, candidate(tmp_path), ok=5)
    assert out["verdict"] == "INVALID" and len(out["reasons"]) == 2
    assert out["reasons"][1].startswith(f"most common cause ({N_CASES} of {N_CASES} INVALID cases): ")
    assert "127.0.0.1:9" in out["reasons"][1] or "connect" in out["reasons"][1].lower()


def test_rejudge_of_a_run_with_lost_trace_lines_says_how_many_cases_it_has_and_refuses_too_few(ws, tmp_path):
    """QA qa10a F11: a line `[]`, a deleted line or a torn one made a rejudge judge a subset in
    silence (and a warning named the line before the bad one)."""
    with EvalServer(JudgeMode.CONTENT) as srv:
        env = llm_env(srv)
        run = evaluate(ws, env, candidate(tmp_path, BETTER), ok=3)["run_id"]
        traces = ws / "runs" / "traces" / f"{run}.jsonl"
        good = traces.read_text(encoding="utf-8").splitlines()
        ids = [json.loads(x)["case"]["id"] for x in good]
        assert json.loads((traces.parent / f"{run}.meta.json").read_text())["cases"] == ids
        traces.write_text("\n".join(["{\"torn", "{\"case\": 5}", "[]", *good[3:7]]) + "\n", encoding="utf-8")
        proc = sf(["evaluate", "--rejudge", run, "--json", "--no-cache", "-w", str(ws)], env, ok=None)
        said = " ".join(proc.stderr.split())
        assert f"{run}.jsonl:1: skipped a line that is not JSON" in said, said
        assert "trace line 2 is not a case's outputs" in said and "trace line 3 is not a case's outputs (a JSON list" in said
        assert f"warning: partial: 4 of {N_CASES} stored cases usable (missing or unreadable: {ids[0]}, {ids[1]}," in said
        out = json.loads(proc.stdout)
        assert out["reasons"][0].startswith(f"partial: 4 of {N_CASES} stored cases usable") and ids[7] in out["reasons"][0]
        traces.write_text("\n".join(good[:3]) + "\n", encoding="utf-8")  # 3 of 8: below half
        refused = sf(["evaluate", "--rejudge", run, "-w", str(ws)], env, ok=2)
        assert f"only 3 of {N_CASES} stored cases usable" in flat(refused.stderr)
        assert "at least 50% of the run's cases" in flat(refused.stderr)
