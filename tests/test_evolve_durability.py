"""kill -9 at each node of the evolve graph, then resume from another process: the run completes,
with exactly one release, no half-written skill file, and no LLM call paid twice."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evolve_fakes import SKILL, World, examples_patch, new_workspace, seed_failures
from forkserve import ForkServer
from skillforge.skill import file as skillfile
from skillforge.runners.evolve import Runner
from skillforge.llm.cache import CACHE_FILE, LLMCache
from skillforge.library.registry import SkillRegistry
from skillforge.library.store import Store

CHILD = Path(__file__).with_name("evolve_child.py")
NODES_L1 = ["collect", "analyze", "propose", "check", "validate", "decide", "publish"]


class EvolveForks:
    """An `evolve_child.py --serve` process (tests/forkserve.py). Each `run` is a fresh fork of it (a
    real process that has imported the modules and run nothing, like a newly started
    evolve_child.py, without paying its ~2.5 s of imports again), armed with its own KILL_AT:
    returncode -9 when it fired."""

    def __init__(self) -> None:
        self.server = ForkServer([sys.executable, str(CHILD), "--serve"],
                                 {**os.environ, "KILL_AT": "", "OMP_NUM_THREADS": "1"})

    def run(self, *argv: str, kill_at: str = "") -> subprocess.CompletedProcess[str]:
        r = self.server.run({"argv": list(argv), "kill_at": kill_at})
        return subprocess.CompletedProcess([str(CHILD), *argv], r["code"], r["stdout"], r["stderr"])  # type: ignore[arg-type]

    def close(self) -> None:
        self.server.close()


@pytest.fixture(scope="module")
def forks():
    server = EvolveForks()
    yield server
    server.close()


def child(forks: EvolveForks, ws, *args: str, kill_at: str = "") -> subprocess.CompletedProcess[str]:
    return forks.run(str(ws.root), *args, kill_at=kill_at)


@pytest.fixture(scope="module")
def reference_calls(tmp_path_factory) -> int:
    """Model requests of an uninterrupted run of the same world (with a cache, like the children)."""
    ws = new_workspace(tmp_path_factory.mktemp("ref") / "ws")
    world = World(lambda r: [examples_patch()])
    seed_failures(ws, world.llm())
    cache = LLMCache(ws.runs_dir / CACHE_FILE)
    out = Runner(ws, llm_factory=lambda ledger: world.llm(ledger, cache)).start(SKILL)
    assert out["status"] == "PUBLISHED", out
    return int(out["llm_calls"])


def test_kill_at_each_node_in_turn_then_resume_completes_once(tmp_path, reference_calls, forks):
    """One run, killed after each node in turn: every resume is a new process that gets one node
    further and is killed again, until the last resume completes."""
    ws = new_workspace(tmp_path / "ws")
    seed_failures(ws, World(lambda r: []).llm())
    killed = child(forks, ws, "start", "evolve-kill", "l1", kill_at=NODES_L1[0])
    assert killed.returncode == -9, killed.stdout + killed.stderr
    for node in NODES_L1[1:]:
        killed = child(forks, ws, "resume", "evolve-kill", "l1", kill_at=node)
        assert killed.returncode == -9, (node, killed.stdout + killed.stderr)
        assert not Store(ws.db_path).preparing() or node == "publish"
    resumed = child(forks, ws, "resume", "evolve-kill", "l1")
    assert resumed.returncode == 0, resumed.stderr
    out = json.loads(resumed.stdout.strip().splitlines()[-1])
    assert out["status"] == "PUBLISHED", out
    releases = [r for r in Store(ws.db_path).releases(SKILL) if r.triggered_by == "evolve:evolve-kill"]
    assert [r.status.value for r in releases] == ["PUBLISHED"]
    assert not Store(ws.db_path).preparing()
    live = SkillRegistry.load(ws).get(SKILL)
    assert live.release.release_id == out["release_id"]
    on_disk = (ws.skills_dir / SKILL / "SKILL.md").read_text(encoding="utf-8")
    skillfile.parse(on_disk, "SKILL.md", SKILL)  # whole, parseable
    stored = SkillRegistry.load(ws).repo.read(live.release.commit_hash, f"{live.release.skill_path}/SKILL.md")
    assert on_disk.encode() == stored
    assert not list(ws.skills_dir.glob(".sf-swap*/*"))
    sent = (ws.root / "model-calls.log").read_text(encoding="utf-8").count("\n")
    assert sent == reference_calls  # over all processes: what a killed node had paid came from the cache
    assert out["llm_calls"] <= reference_calls


def test_kill_after_review_answer_then_resume_publishes_once(tmp_path, forks):
    ws = new_workspace(tmp_path / "ws")
    seed_failures(ws, World(lambda r: []).llm())
    started = child(forks, ws, "start", "evolve-rev", "l2")
    assert started.returncode == 0, started.stderr
    assert json.loads(started.stdout.strip().splitlines()[-1])["status"] == "PENDING_REVIEW"
    killed = child(forks, ws, "approve", "evolve-rev", "l2", kill_at="review")
    assert killed.returncode == -9
    resumed = child(forks, ws, "resume", "evolve-rev", "l2")
    assert resumed.returncode == 0, resumed.stderr
    out = json.loads(resumed.stdout.strip().splitlines()[-1])
    assert out["status"] == "PUBLISHED", out
    assert len([r for r in Store(ws.db_path).releases(SKILL) if r.triggered_by == "evolve:evolve-rev"]) == 1
