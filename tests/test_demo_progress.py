"""scripts/demo.py's live progress and its one line on a round that improved nothing.

- The CLI's stderr reaches the screen line by line while the command still runs (its stdout JSON is
  still captured and parsed): a fake `skillforge` prints a progress line, then waits for the test to
  have seen it before it prints its JSON and exits.
- `skillforge evolve SKILL` where stderr is not a terminal prints one line per case of the
  evaluations inside the run (the candidates' selection runs), not only one per stage.
- `why_no_improvement` builds its line from run summaries (`runs show --json`)."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import run_cli
from evolve_fakes import SKILL, new_workspace
from skillforge.library.registry import SkillRegistry

DEMO = Path(__file__).resolve().parents[1] / "scripts" / "demo.py"


@pytest.fixture(scope="module")
def demo():
    spec = importlib.util.spec_from_file_location("skillforge_demo_progress", DEMO)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FAKE = """#!{python}
import os, sys, time
sys.stderr.write("case 1 of 2 done, 0 s elapsed\\n")
sys.stderr.flush()
deadline = time.monotonic() + 20
while not os.path.exists({flag!r}) and time.monotonic() < deadline:
    time.sleep(0.02)
if not os.path.exists({flag!r}):
    sys.exit(9)  # nobody saw the progress line while this ran
sys.stderr.write("case 2 of 2 done, 1 s elapsed\\n")
print('{{"verdict": "PASS"}}')
"""


def test_the_clis_progress_reaches_the_screen_while_it_runs(demo, tmp_path, monkeypatch, capfd):
    flag = tmp_path / "seen"
    fake = tmp_path / "skillforge"
    fake.write_text(FAKE.format(python=sys.executable, flag=str(flag)))
    fake.chmod(0o755)
    monkeypatch.setattr(demo, "exe", lambda: fake)
    result: dict[str, object] = {}
    worker = threading.Thread(target=lambda: result.update(out=demo.sf("evaluate", "x", "--json", json_out=True)))
    worker.start()
    seen, deadline = "", time.monotonic() + 15
    while "case 1 of 2 done" not in seen and time.monotonic() < deadline:
        time.sleep(0.05)
        seen += capfd.readouterr().err
    flag.write_text("")  # only now may the command finish
    worker.join(timeout=30)
    seen += capfd.readouterr().err
    assert "case 1 of 2 done, 0 s elapsed" in seen, "the progress line did not reach the screen while it ran"
    assert "case 2 of 2 done" in seen
    assert result["out"] == (0, {"verdict": "PASS"})  # stdout still read as JSON


def test_evolve_prints_each_case_of_the_validation_where_stderr_is_not_a_terminal(tmp_path):
    from world_server import WorldServer

    ws = new_workspace(tmp_path / "ws")
    w = ["-w", str(ws.root)]
    with WorldServer() as srv:
        env = {"SKILLFORGE_LLM_BASE_URL": srv.base_url, "SKILLFORGE_LLM_MODEL": "world",
               "SKILLFORGE_JUDGE_MODEL": "world-judge", "SKILLFORGE_LLM_MAX_RETRIES": "0"}
        live = SkillRegistry.load(ws).get(SKILL).release.release_id
        run_cli(["evaluate", SKILL, "--candidate", live, "--set", "repair", "--json", *w], env, ok=None)
        done = run_cli(["evolve", SKILL, "--json", "--max-rounds", "1", "--budget-calls", "600", *w], env)
    out = json.loads(done.stdout)
    assert out["status"] == "PENDING_REVIEW", out
    lines = re.findall(rf"^evolve {SKILL}: validate (r1c\d) on selection: case (\d+) of (\d+) done, \d+ s elapsed$",
                       done.stderr, re.M)
    assert lines, done.stderr[-2000:]
    total = int(lines[0][2])
    assert total >= 1 and [int(n) for c, n, _ in lines if c == lines[0][0]] == list(range(1, total + 1))
    assert re.search(rf"^evolve {SKILL}: validate \S+ on holdout: case 1 of \d+ done", done.stderr, re.M)
    assert re.search(rf"^evolve {SKILL}: validate done, \d+ s elapsed$", done.stderr, re.M)  # the stages too
    # the best candidate's diff is in the summary, for the demo to show
    assert any(c["diff"].startswith("---") or "@@" in c["diff"] for c in out["candidates"]), out["candidates"]


def cand(cid: str, verdict: str, rejected_by: str | None = None, notes: list[str] | None = None,
         diff: str = "", leaks: list[str] | None = None) -> dict[str, object]:
    return {"id": cid, "kind": "FIX", "verdict": verdict, "rejected_by": rejected_by, "notes": notes or [],
            "diff": diff, "leaks": leaks or [], "claimed_level": 1, "computed_level": None}


NO_BLOCKS = [f"apply attempt {i}: no_blocks: the patch has no SEARCH/REPLACE block and is not a full file"
             for i in (1, 2, 3, 4)]


def test_why_no_improvement_names_the_gate_in_one_line(demo):
    why = demo.why_no_improvement
    assert why({"status": "PENDING_REVIEW", "candidates": [cand("r1c1", "PASSED")]}) is None
    assert why({"status": "PUBLISHED", "candidates": []}) is None
    refused = {"run_id": "e", "status": "NO_IMPROVEMENT",
               "candidates": [cand("r1c1", "REFUSED", "apply", NO_BLOCKS), cand("r1c2", "REFUSED", "apply", NO_BLOCKS)]}
    assert why(refused) == "no candidate applied: 2 refused at apply (no_blocks)"
    few = "the proposer gave 2 candidate(s), fewer than 3"
    measured = {"run_id": "e", "status": "NO_IMPROVEMENT", "candidates": [  # the demo's round on the embedded model
        cand("r1c1", "REFUSED", "apply", [*NO_BLOCKS, few]),
        cand("r1c2", "REFUSED", "apply", ["apply attempt 1: not_a_skill: the result is not a SKILL.md", few])]}
    assert why(measured) == ("no candidate applied: 2 refused at apply (1 no_blocks, 1 not_a_skill); "
                             "the proposer gave 2 candidate(s), fewer than 3")
    run_level = {"run_id": "e", "status": "NO_IMPROVEMENT", "proposer_notes": [f"round 1: {few}"], "candidates": [
        cand("r1c1", "REFUSED", "apply", NO_BLOCKS),  # the note is the run's now, not each candidate's
        cand("r1c2", "REFUSED", "apply", ["apply attempt 1: not_a_skill: the result is not a SKILL.md"])]}
    assert why(run_level) == why(measured)
    mixed = {"run_id": "e", "status": "NO_IMPROVEMENT", "candidates": [
        cand("r1c1", "REFUSED", "apply", NO_BLOCKS),
        cand("r1c2", "REFUSED", "apply", ["apply attempt 1: no_match: SEARCH text not found"]),
        cand("r1c3", "LEAK", "leak_scan", leaks=["holdout phrase"]),
        cand("r1c4", "FAILED_VALIDATION", "selection",
             ["improvement INCONCLUSIVE on the targeted failures (a WIN is required)"]),
        cand("r1c5", "FAILED_VALIDATION", "selection",
             ["improvement INCONCLUSIVE on the targeted failures (a WIN is required)"])]}
    line = why(mixed, {"e-r1c4-selection": 0.45, "e-r1c5-selection": 0.125, "other-r1c4-selection": 0.9})
    assert line == ("3 of 5 candidate(s) applied, none improved: 2 refused at apply (1 no_blocks, 1 no_match); "
                    "1 stopped by the checks (1 leak scan); 2 declined on validation (improvement INCONCLUSIVE on "
                    "the targeted failures ×2); judge noise: flip rate up to 45% (≥ 30%) in 1 of 2 selection run(s)")
    assert "\n" not in line
    quiet = why(mixed, {"e-r1c4-selection": 0.1})
    assert "judge noise" not in quiet
    holdout = {"status": "NO_IMPROVEMENT", "candidates": [
        cand("r1c1", "HOLDOUT_LOSS", "holdout", ["holdout has 3 case(s): at least 5 are needed to confirm anything"]),
        cand("r1c2", "FAILED_VALIDATION", "selection", ["selection verdict INVALID: only 4 valid case(s) of 6"])]}
    assert why(holdout) == ("2 of 2 candidate(s) applied, none improved: 1 declined on validation (selection verdict "
                            "INVALID); 1 failed holdout (holdout has 3 case(s): at least 5 are needed to confirm "
                            "anything)")
    assert why({"status": "NO_FAILURES", "message": "no effective failures", "candidates": []}) == (
        "nothing to fix: no effective failures")
    assert why({"status": "NO_IMPROVEMENT", "message": "the proposer's answer was not JSON", "candidates": []}) == (
        "no candidate was proposed: the proposer's answer was not JSON")


def test_the_best_candidate_and_what_each_gate_said(demo):
    cands = [cand("r1c1", "REFUSED", "apply", NO_BLOCKS),
             cand("r1c2", "FAILED_VALIDATION", "selection", ["LOSS on task"], diff="--- a\n+++ b\n+x\n"),
             cand("r1c3", "NOT_SELECTED", diff="--- a\n+++ b\n+y\n"), cand("r1c4", "NOOP", "fingerprint")]
    assert demo.best_candidate({"candidates": cands})["id"] == "r1c3"
    assert demo.best_candidate({"candidates": cands[:1]}) is None
    assert demo.gate_said(cands[0]) == "refused at apply (no_blocks)"
    assert demo.gate_said(cands[1]) == "selection: LOSS on task"
    assert demo.gate_said(cands[3]) == "noop: fingerprint"


def test_the_applied_count_excludes_only_refusals_at_apply(demo):
    cands = [cand("r1c1", "REFUSED", "apply", NO_BLOCKS), cand("r1c2", "REFUSED", "learning_rate"),
             cand("r1c3", "NOOP", "fingerprint"), cand("r1c4", "FAILED_VALIDATION", "selection", ["LOSS on task"])]
    assert demo.applied_count({"candidates": cands}) == (4, 3)
    assert demo.applied_count({"candidates": []}) == (0, 0)
    assert demo.APPLY_BAR == 3
