"""kill -9 during a canary promote or rollback (issue 28): a real process runs the CLI and SIGKILLs
itself right after one step of the transition; the next `canary tick` finishes it. Afterwards
exactly one release is live, the canary is closed the way it was decided, the evaluations line is
written once, and a rolled-back canary's folder holds the live bytes."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from canary_world import CANARY_LINE, SKILL, canary_workspace
from conftest import cli_env, run_cli

from skillforge.journal import read_jsonl
from skillforge.library.canaries import Canaries
from skillforge.library.canary import TRANSITION_KIND
from skillforge.library.store import Store
from skillforge.state.canary import CanaryState
from skillforge.state.release import ReleaseStatus

CHILD = Path(__file__).resolve().parent / "canary_kill_child.py"


@pytest.mark.parametrize(("action", "point"), [("promote", "decided"), ("promote", "logged"),
                                               ("rollback", "decided"), ("rollback", "logged"),
                                               ("rollback", "restored")])
def test_a_transition_killed_midway_is_finished_by_the_next_tick(tmp_path: Path, action: str, point: str) -> None:
    ws, live, canary = canary_workspace(tmp_path / "ws")
    proc = subprocess.run([sys.executable, str(CHILD), str(ws.root), SKILL, action, point], capture_output=True,
                          text=True, env=cli_env(), timeout=120, check=False)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    store = Store(ws.db_path)
    half = Canaries(store).get(canary)
    assert half is not None and half.state is (CanaryState.PROMOTING if action == "promote" else CanaryState.ROLLING_BACK)
    assert store.current(SKILL).release_id == live  # type: ignore[union-attr]  # nothing changed what is live yet
    store.close()
    run_cli(["canary", "tick", "-w", str(ws.root)])
    run_cli(["canary", "tick", "-w", str(ws.root)])  # and again: nothing more happens
    store = Store(ws.db_path)
    done = Canaries(store).get(canary)
    winner = canary if action == "promote" else live
    assert done is not None and done.state is (CanaryState.PROMOTED if action == "promote" else CanaryState.ROLLED_BACK)
    assert done.reason is not None and "by hand" in done.reason
    assert store.current(SKILL).release_id == winner  # type: ignore[union-attr]
    published_current = store.conn.execute("SELECT count(*) FROM skills WHERE current_release_id IS NOT NULL").fetchone()[0]
    assert published_current == 1
    assert store.release(canary).status is (ReleaseStatus.PUBLISHED if action == "promote" else ReleaseStatus.DECLINED)
    assert Canaries(store).unfinished() == []
    lines = [x for x in read_jsonl(ws.evaluations_log) if x.get("kind") == TRANSITION_KIND]
    assert [x["transition"] for x in lines] == [action]
    assert (CANARY_LINE in (ws.skills_dir / SKILL / "SKILL.md").read_text()) == (action == "promote")
    status = subprocess.run(["git", "-C", str(ws.root), "status", "--porcelain", "--", "skills"], capture_output=True,
                            text=True, check=True).stdout
    assert status == ""
