"""QA 23 F17: `release revert NAME` (or naming the live release) puts the live release's files back
into a deleted or edited skill folder, with no new release, as docs/cli.md and the rollback warnings
say; a real workspace, git repository and the console script."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from canary_world import CANARY_LINE, SKILL, canary_workspace
from conftest import run_cli

from skillforge.config import Workspace
from skillforge.library.store import Store


def _releases(ws: Workspace) -> int:
    store = Store(ws.db_path)
    try:
        return len(store.releases(SKILL))
    finally:
        store.close()


def _state(ws: Workspace) -> str:
    rows = run_cli(["skills", "list", "-w", str(ws.root)]).stdout
    line = next(x for x in rows.splitlines() if SKILL in x)
    return "missing" if "missing" in line else "clean" if "clean" in line else "modified" if "modified" in line else line


def _git_clean(ws: Workspace) -> bool:
    return subprocess.run(["git", "-C", str(ws.root), "status", "--porcelain", "--", f"skills/{SKILL}"],
                          capture_output=True, text=True, check=True).stdout == ""


def _live(tmp_path: Path) -> Workspace:
    ws, _, _ = canary_workspace(tmp_path / "ws")
    run_cli(["canary", "rollback", SKILL, "-w", str(ws.root)])
    return ws


def test_a_deleted_folder_comes_back_by_revert_name_without_a_new_release(tmp_path: Path) -> None:
    ws = _live(tmp_path)
    before, text = _releases(ws), (ws.skills_dir / SKILL / "SKILL.md").read_text()
    shutil.rmtree(ws.skills_dir / SKILL)
    assert _state(ws) == "missing"
    proc = run_cli(["release", "revert", SKILL, "-w", str(ws.root)])
    assert "holds live release" in proc.stdout and "no new release" in proc.stdout
    assert (ws.skills_dir / SKILL / "SKILL.md").read_text() == text and _state(ws) == "clean" and _git_clean(ws)
    assert _releases(ws) == before
    proc = run_cli(["release", "revert", SKILL, "-w", str(ws.root)], ok=2)  # nothing left to restore
    assert "is not RETIRED and its folder holds its live release" in proc.stderr


def test_naming_the_live_version_restores_a_deleted_folder_too(tmp_path: Path) -> None:
    ws = _live(tmp_path)
    store = Store(ws.db_path)
    version = store.current(SKILL).version  # type: ignore[union-attr]
    store.close()
    shutil.rmtree(ws.skills_dir / SKILL)
    run_cli(["release", "revert", SKILL, version, "-w", str(ws.root)])
    assert _state(ws) == "clean"
    proc = run_cli(["release", "revert", SKILL, version, "-w", str(ws.root)], ok=2)
    assert "already serves the bytes" in proc.stderr


def test_an_edited_folder_needs_force_and_the_edits_are_saved(tmp_path: Path) -> None:
    ws = _live(tmp_path)
    skill_md = ws.skills_dir / SKILL / "SKILL.md"
    skill_md.write_text(skill_md.read_text() + "- an edit by hand\n")
    proc = run_cli(["release", "revert", SKILL, "-w", str(ws.root)], ok=2)
    assert "unpublished changes" in proc.stderr and "--force" in proc.stderr
    assert "an edit by hand" in skill_md.read_text()
    proc = run_cli(["release", "revert", SKILL, "--force", "-w", str(ws.root)])
    assert "an edit by hand" not in skill_md.read_text() and _state(ws) == "clean"
    assert "saved the unpublished edits" in proc.stderr
    assert any("an edit by hand" in p.read_text() for p in (ws.runs_dir / "backups").rglob("SKILL.md"))


def test_a_canary_rolled_back_with_its_folder_deleted_names_a_command_that_works(tmp_path: Path) -> None:
    ws, _, _ = canary_workspace(tmp_path / "ws", files=False)  # a working-tree canary: HEAD is its commit
    assert CANARY_LINE in (ws.skills_dir / SKILL / "SKILL.md").read_text()
    shutil.rmtree(ws.skills_dir / SKILL)
    proc = run_cli(["canary", "rollback", SKILL, "-w", str(ws.root)])
    assert f"`skillforge release revert {SKILL}`" in proc.stderr, proc.stderr
    run_cli(["release", "revert", SKILL, "-w", str(ws.root)])
    assert CANARY_LINE not in (ws.skills_dir / SKILL / "SKILL.md").read_text()
    assert _state(ws) == "clean" and _git_clean(ws)  # committed: git HEAD held the declined bytes


def test_the_recovery_warning_command_works_for_an_edited_folder(tmp_path: Path) -> None:
    ws, _, _ = canary_workspace(tmp_path / "ws", files=False)
    skill_md = ws.skills_dir / SKILL / "SKILL.md"
    skill_md.write_text(skill_md.read_text() + "- edited during the canary\n")
    proc = run_cli(["canary", "rollback", SKILL, "-w", str(ws.root)])
    assert f"release revert {SKILL}" in proc.stderr and "--force" in proc.stderr
    store = Store(ws.db_path)
    version = store.current(SKILL).version  # type: ignore[union-attr]
    store.close()
    run_cli(["release", "revert", SKILL, version, "--force", "-w", str(ws.root)])  # as the WARNING log line says
    assert _state(ws) == "clean" and _git_clean(ws) and "edited during the canary" not in skill_md.read_text()
