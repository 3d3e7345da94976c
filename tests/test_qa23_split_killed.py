"""QA 23 F15: after a split killed half-way (a real SIGKILL, at a point the test controls: both
children written and committed, before the one transaction), `skills list` does not offer the
children for import, and `skills import` abandons them without committing their removed folders."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from skillforge.library.services import Services
from skillforge.state.release import ReleaseStatus
from tests import test_qa23_split_files as base
from tests.conftest import FIXTURES, REPO, run_cli

PLAIN = (FIXTURES / "split" / "skills" / "convert-anything" / "SKILL.md").read_text(encoding="utf-8")
CHILD = """
import sys, time
from pathlib import Path
from skillforge.config import Workspace
from skillforge.library.services import Services
from skillforge.library.split import child_trees, plan_split, publish_children
from skillforge.routing.embedding import get_embedder

svc = Services(Workspace(Path(sys.argv[1])))
plan = plan_split(svc, "convert-anything", get_embedder())
calls = []

def stop_here():  # the third checkpoint: both children committed, the transaction not begun
    calls.append(1)
    if len(calls) == 3:
        Path(sys.argv[2]).write_text("ready")
        time.sleep(120)  # SIGKILLed here
    return False

publish_children(svc.machine, "convert-anything", plan.release.release_id, child_trees(plan),
                 {n: {"kind": "split"} for n in plan.names.values()}, "split into a, b", interrupted=stop_here)
"""


def test_a_killed_split_is_not_offered_for_import_and_import_is_clean(tmp_path: Path) -> None:
    ws = base.workspace(tmp_path / "ws", PLAIN)
    ready = tmp_path / "ready"
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(ws.root), str(ready)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO),
                                                                     "OMP_NUM_THREADS": "1"})
    deadline = time.monotonic() + 120
    while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert ready.exists(), proc.communicate(timeout=5)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    svc = Services(ws)
    for child in (base.CURRENCY, base.UNITS):
        assert [r.status for r in svc.store.releases(child)] == [ReleaseStatus.PREPARING]
        assert (ws.skills_dir / child).is_dir()

    listed = run_cli(["skills", "list", "-w", str(ws.root)])
    assert "not yet imported" not in listed.stdout and "was interrupted" in " ".join(listed.stdout.split())
    as_json = run_cli(["skills", "list", "--json", "-w", str(ws.root)])
    assert '"unregistered": []' in as_json.stdout

    imported = run_cli(["skills", "import", "-w", str(ws.root)])
    assert "pathspec" not in imported.stderr and "imported 0 skill(s)" in imported.stdout
    svc = Services(ws)
    for child in (base.CURRENCY, base.UNITS):
        assert [r.status for r in svc.store.releases(child)] == [ReleaseStatus.ABANDONED]  # no extra IMPORTED row
        assert not (ws.skills_dir / child).exists()
    assert svc.store.current("convert-anything") is not None  # the parent stayed live throughout
    assert "not yet imported" not in run_cli(["skills", "list", "-w", str(ws.root)]).stdout
