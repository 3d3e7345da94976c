"""`skillforge evaluate` as a user runs it: a real process against a local OpenAI-compatible server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import EXAMPLE_SKILLS, run_cli
from evaluate_fakes import make_set

from skillforge.testing.openai_server import FakeOpenAIServer, Reply

@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    run_cli(["init", str(root)], {}, ok=0)
    run_cli(["skills", "import", "--from", str(EXAMPLE_SKILLS), "-w", str(root)], {}, ok=0)
    make_set(root / "evaluation_sets", 4)
    return root


def test_invalid_run_exits_5_with_report_traces_and_rejudge(ws, tmp_path):
    # echo_tool answers every Action with its first enum value ("use_skill" forever): no answer in
    # 6 turns, so every case is INVALID and the run cannot tell
    with FakeOpenAIServer(default=Reply.echo_tool()) as srv:
        env = {"SKILLFORGE_LLM_BASE_URL": srv.base_url, "SKILLFORGE_LLM_MODEL": "m", "SKILLFORGE_JUDGE_MODEL": "j",
               "SKILLFORGE_LLM_MAX_RETRIES": "0"}
        report = tmp_path / "report.html"
        proc = run_cli(["evaluate", "taxi-hailing", "--candidate", str(ws / "skills" / "taxi-hailing"), "--set", "t",
                   "--json", "--report", str(report), "-w", str(ws)], env, ok=5)
        result = json.loads(proc.stdout)
        assert result["verdict"] == "INVALID" and "cannot tell" in result["reasons"][0]
        html = report.read_text()
        assert "INVALID" in html and "t-00" in html and 'data-k="flip"' in html
        run = result["run_id"]
        traces = (ws / "runs" / "traces" / f"{run}.jsonl").read_text().splitlines()
        assert len(traces) == 4 and all(json.loads(t)["invalid"] for t in traces)
        [line] = (ws / "runs" / "evaluations.jsonl").read_text().splitlines()
        assert json.loads(line)["invalid_rate"] == 1.0
        hits = srv.hits
        again = run_cli(["evaluate", "--rejudge", run, "--json", "-w", str(ws)], env, ok=5)
        assert json.loads(again.stdout)["verdict"] == "INVALID" and srv.hits == hits  # nothing re-executed


def test_bad_requests_are_named_errors(ws):
    env = {"SKILLFORGE_LLM_BASE_URL": "http://127.0.0.1:9/v1", "SKILLFORGE_LLM_MODEL": "m"}
    assert "no evaluation set" in run_cli(["evaluate", "taxi-hailing", "--candidate", str(ws / "skills" / "taxi-hailing"),
                                      "--set", "nope", "-w", str(ws)], env, ok=2).stderr
    assert "unknown skill" in run_cli(["evaluate", "taxi-haling", "--candidate", "1.0.0", "-w", str(ws)], env, ok=2).stderr
    assert "no stored run" in run_cli(["evaluate", "--rejudge", "nope", "-w", str(ws)], env, ok=2).stderr
