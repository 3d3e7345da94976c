"""QA 24 finding 10: a calibration in which every judgement failed (a judge answering garbage) says
plainly that the judge answered nothing usable (N of N invalid, not measured), keeps every dimension
REPORTED (fail closed) and exits 1 (docs/cli.md: the command ran and found problems)."""

from __future__ import annotations

import json

from conftest import run_cli
from test_judge_calibrate import SKILL, JudgeServer, golden_lines, llm_env, records, write_golden


def test_a_judge_with_no_usable_answer_is_not_measured_and_exits_1(workspace):
    ws = workspace.root
    golden = golden_lines(4)
    write_golden(ws / "evaluation_sets" / "golden" / f"{SKILL}.jsonl", golden)
    with JudgeServer("fail", golden) as srv:
        srv.failing = {str(g["pair_id"]) for g in golden}
        env = {**llm_env(srv), "COLUMNS": "400"}
        proc = run_cli(["judge", "calibrate", "--repeats", "1", "-w", str(ws)], env, ok=1)
        text = " ".join(proc.stdout.split())
        assert "the judge answered nothing usable on every dimension: 4 of 4 judgements invalid" in text
        assert "not measured" in text and "0.00 [" not in text and "stays REPORTED" in text
        [record] = records(ws)
        assert {d.status.value for d in record.dimensions.values()} == {"reported"}
        proc = run_cli(["judge", "calibrate", "--repeats", "1", "--json", "-w", str(ws)], env, ok=1)
        assert {d["invalid"] for d in json.loads(proc.stdout)["dimensions"].values()} == {4}
        status = run_cli(["judge", "status", "-w", str(ws)], env)
        assert "answered nothing usable" in " ".join(status.stdout.split())


def test_a_judge_failing_on_some_pairs_gets_no_such_warning(workspace):
    ws = workspace.root
    golden = golden_lines(6)
    write_golden(ws / "evaluation_sets" / "golden" / f"{SKILL}.jsonl", golden)
    with JudgeServer("fail", golden) as srv:
        srv.failing = {str(golden[0]["pair_id"])}
        proc = run_cli(["judge", "calibrate", "--repeats", "1", "-w", str(ws)], {**llm_env(srv), "COLUMNS": "400"})
        assert "nothing usable" not in proc.stdout and "not measured" not in proc.stdout
