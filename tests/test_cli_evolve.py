"""`skillforge evolve`, `runs` and `review` as a user runs them: real processes, a real workspace,
and a local OpenAI-compatible server (at random) or the scripted world (in-process) for the models."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import cli_env, flat, run_cli
from evolve_fakes import SKILL, World, eta_patch, new_workspace, seed_failures
from random_server import RandomOpenAIServer
from skillforge.runners.evolve import Runner
from skillforge.library.registry import SkillRegistry

NAMED = {"PUBLISHED", "PENDING_REVIEW", "SUGGESTED", "NO_IMPROVEMENT", "NO_FAILURES", "AUDITED", "BUDGET",
         "FAILED", "REJECTED"}
CANDIDATE_KEYS = {"id", "kind", "claimed_level", "computed_level", "verdict", "rejected_by"}


def env_for(srv: RandomOpenAIServer) -> dict[str, str]:
    return {"SKILLFORGE_LLM_BASE_URL": srv.base_url, "SKILLFORGE_LLM_MODEL": "random",
            "SKILLFORGE_JUDGE_MODEL": "random-judge", "SKILLFORGE_LLM_MAX_RETRIES": "0", "OMP_NUM_THREADS": "1"}


def test_random_model_ends_in_a_named_status_publishes_nothing_and_kill_resume_ends_the_same(tmp_path):
    a, b = new_workspace(tmp_path / "a"), new_workspace(tmp_path / "b")
    for ws in (a, b):
        seed_failures(ws, World(lambda r: []).llm())
    before = {ws.root: SkillRegistry.load(ws).get(SKILL).release.release_id for ws in (a, b)}
    with RandomOpenAIServer(seed=7) as srv:
        env = env_for(srv)
        done = run_cli(["evolve", SKILL, "--json", "--budget-calls", "3000", "-w", str(a.root)], env, ok=None)
        out = json.loads(done.stdout)
        assert out["status"] in NAMED - {"PUBLISHED"}, out
        assert set(out) >= {"run_id", "skill", "status", "rounds", "candidates", "release_id", "llm_calls", "tokens",
                            "holdout"}
        assert all(set(c) >= CANDIDATE_KEYS for c in out["candidates"])
        assert out["release_id"] is None and SkillRegistry.load(a).get(SKILL).release.release_id == before[a.root]

        exe = str(Path(sys.executable).parent / "skillforge")
        base = cli_env()
        hits = srv.hits
        proc = subprocess.Popen([exe, "evolve", SKILL, "--json", "--budget-calls", "3000", "-w", str(b.root)],
                                env={**base, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while srv.hits < hits + 15 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)  # wait for real progress (model requests), then kill mid-run
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        runs = json.loads(run_cli(["runs", "list", "--json", "-w", str(b.root)]).stdout)
        assert len(runs) == 1 and set(runs[0]) == {"run_id", "kind", "skill", "status", "started_at"}
        resumed = run_cli(["evolve", "--resume", runs[0]["run_id"], "--json", "-w", str(b.root)], env, ok=None)
        again = json.loads(resumed.stdout)
    assert again["status"] == out["status"], (again, out)
    assert SkillRegistry.load(b).get(SKILL).release.release_id == before[b.root]


def test_review_approve_from_a_new_process_publishes(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    world = World(lambda r: [eta_patch(claimed=2)])
    seed_failures(ws, world.llm())
    out = Runner(ws, llm_factory=world.llm).start(SKILL)
    assert out["status"] == "PENDING_REVIEW"
    run_id = out["run_id"]
    w = ["-w", str(ws.root)]
    assert [r["run_id"] for r in json.loads(run_cli(["review", "list", "--json", *w]).stdout)] == [run_id]
    shown = run_cli(["review", "show", run_id, *w]).stdout
    assert "QUOTE-ETA" in shown and "holdout" in shown
    show = json.loads(run_cli(["runs", "show", run_id, "--json", *w]).stdout)
    assert show["status"] == "PENDING_REVIEW" and show["candidates"][0]["computed_level"] == 2
    approved = json.loads(run_cli(["review", "approve", run_id, "--comment", "looks right", "--json", *w]).stdout)
    assert approved["status"] == "PUBLISHED" and approved["release_id"]
    live = SkillRegistry.load(ws).get(SKILL).release
    assert live.release_id == approved["release_id"]
    # as `release publish` says it: the version a person reads, then the id (was the id alone)
    assert f"published {SKILL} {live.version} (release {live.release_id})" in approved["message"], approved
    again = run_cli(["review", "approve", run_id, *w], ok=0)  # the same answer again: reported, not redone
    assert "already answered: approved by" in flat(again.stderr) and approved["release_id"] in again.stderr
    assert "already answered: approved by" in flat(run_cli(["review", "reject", run_id, *w], ok=2).stderr)
    assert json.loads(run_cli(["runs", "list", "--json", *w]).stdout)[0]["status"] == "PUBLISHED"


def test_named_errors(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    w = ["-w", str(ws.root)]
    llm_env = {"SKILLFORGE_LLM_BASE_URL": "http://127.0.0.1:9/v1", "SKILLFORGE_LLM_MODEL": "m"}
    missing = run_cli(["evolve", SKILL, *w], ok=2)
    assert "no model for role(s) executor, judge, proposer" in missing.stderr
    assert not (ws.checkpoints_dir / "graphs.sqlite").exists()  # nothing written
    assert "unknown skill" in run_cli(["evolve", "no-such-skill", *w], llm_env, ok=2).stderr.lower()
    assert "--mode must be one of" in run_cli(["evolve", SKILL, "--mode", "bogus", *w], llm_env, ok=2).stderr
    assert "--max-rounds must be 1 to 2" in run_cli(["evolve", SKILL, "--max-rounds", "3", *w], llm_env, ok=2).stderr
    assert "positive" in run_cli(["evolve", SKILL, "--budget-calls", "0", *w], llm_env, ok=2).stderr
    assert "no evolve run" in run_cli(["evolve", "--resume", "nosuchrun", *w], llm_env, ok=2).stderr
    assert "no evolve run" in run_cli(["review", "approve", "nosuchrun", *w], ok=2).stderr


def test_the_whole_loop_through_the_cli_with_the_scripted_world_behind_http(tmp_path):
    """evaluate (to get traces) -> evolve -> PENDING_REVIEW -> review approve, all real processes."""
    from world_server import WorldServer

    ws = new_workspace(tmp_path / "ws")
    w = ["-w", str(ws.root)]
    with WorldServer() as srv:
        env = {"SKILLFORGE_LLM_BASE_URL": srv.base_url, "SKILLFORGE_LLM_MODEL": "world",
               "SKILLFORGE_JUDGE_MODEL": "world-judge", "SKILLFORGE_LLM_MAX_RETRIES": "0"}
        live = SkillRegistry.load(ws).get(SKILL).release.release_id
        seeded = json.loads(run_cli(["evaluate", SKILL, "--candidate", live, "--set", "repair", "--json", *w],
                                    env, ok=None).stdout)
        # the live release against itself on its repair set: no improvement, and below the objective floor
        assert seeded["verdict"] == "DECLINED" and seeded["improvement"] == "INCONCLUSIVE"
        assert any("floor" in r for r in seeded["reasons"])
        out = json.loads(run_cli(["evolve", SKILL, "--json", "--max-rounds", "1", "--budget-calls", "600", *w],
                                 env).stdout)
        assert out["status"] == "PENDING_REVIEW", out
        assert out["selection"]["improvement"] == "WIN" and out["holdout"]["verdict"] in ("PASS", "REVIEW")
        done = json.loads(run_cli(["review", "approve", out["run_id"], "--json", *w], env).stdout)
    assert done["status"] == "PUBLISHED" and SkillRegistry.load(ws).get(SKILL).release.release_id == done["release_id"]
