"""QA 26 N5/N9/N10: what `release revert` does with a skill path that is not the folder it wrote
(a file, a symlink), and with a file deleted beside SKILL.md: a file or a link is refused unless
--force saves it under runs/backups/ (a link as a link, its target untouched); a deletion loses
nothing when the live release is put back and needs no --force (an older release still refuses it)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from conftest import EXAMPLE_SKILLS, run_cli

from skillforge.config import Workspace, init_workspace
from skillforge.library.releases import ReleaseStateMachine
from skillforge.library.store import Store
from skillforge.skill import file as skillfile

SKILL = "news-digest"


def _ws(tmp_path: Path) -> tuple[Workspace, str]:
    """SKILL with references/notes.md imported (0.x), then one more line published; returns the
    first version (an older release to revert to)."""
    ws = init_workspace(tmp_path / "ws")
    shutil.copytree(EXAMPLE_SKILLS / SKILL, ws.skills_dir / SKILL)
    (ws.skills_dir / SKILL / "references").mkdir(exist_ok=True)
    (ws.skills_dir / SKILL / "references" / "notes.md").write_text("notes\n")
    m = ReleaseStateMachine.open(ws)
    first = m.import_skills(skillfile.scan(ws.skills_dir, ws.root)).imported[0]
    folder = m.folder_of(SKILL)
    tree = {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    tree["SKILL.md"] = tree["SKILL.md"].rstrip(b"\n") + b"\n- one more line\n"
    m.publish(SKILL, tree, triggered_by="test")
    m.store.close()
    return ws, first.version


def _cli(ws: Workspace, *args: str, ok: int = 0):
    return run_cli(["release", "revert", SKILL, *args, "-w", str(ws.root)], ok=ok)


def _count(ws: Workspace) -> int:
    store = Store(ws.db_path)
    try:
        return len(store.releases(SKILL))
    finally:
        store.close()


def _backups(ws: Workspace) -> list[Path]:
    d = ws.runs_dir / "backups"
    return sorted(d.iterdir()) if d.is_dir() else []


def test_a_deleted_file_comes_back_without_force(tmp_path: Path) -> None:
    ws, _ = _ws(tmp_path)
    notes = ws.skills_dir / SKILL / "references" / "notes.md"
    notes.unlink()
    proc = _cli(ws)
    assert "holds live release" in proc.stdout
    assert "brings back what was deleted" in proc.stderr and "references/notes.md" in proc.stderr
    assert "would be lost" not in proc.stderr
    assert notes.read_text() == "notes\n" and _backups(ws) == []


def test_a_deleted_file_is_still_an_edit_for_an_older_release(tmp_path: Path) -> None:
    ws, first = _ws(tmp_path)  # QA 15 TRUST-4 stands: the deletion may be an edit meant for publishing
    notes = ws.skills_dir / SKILL / "references" / "notes.md"
    notes.unlink()
    assert "deleted: references/notes.md" in _cli(ws, first, ok=2).stderr
    assert "now serves" in _cli(ws, first, "--force").stdout and notes.read_text() == "notes\n"


def test_an_edit_beside_a_deletion_still_needs_force_and_names_only_the_edit(tmp_path: Path) -> None:
    ws, _ = _ws(tmp_path)
    (ws.skills_dir / SKILL / "references" / "notes.md").unlink()
    (ws.skills_dir / SKILL / "extra.txt").write_text("mine\n")
    proc = _cli(ws, ok=2)
    assert "would be lost: extra.txt;" in proc.stderr and "deleted" not in proc.stderr
    _cli(ws, "--force")
    assert [p.name for p in _backups(ws) if p.is_dir()] and not (ws.skills_dir / SKILL / "extra.txt").exists()


def test_a_file_at_the_folder_path_is_refused_then_saved_with_force(tmp_path: Path) -> None:
    ws, _ = _ws(tmp_path)
    folder = ws.skills_dir / SKILL
    shutil.rmtree(folder)
    folder.write_text("my important notes\n")
    before = _count(ws)
    proc = _cli(ws, ok=2)
    assert "is a file, not the skill's folder" in proc.stderr and "--force" in proc.stderr
    assert folder.read_text() == "my important notes\n" and _backups(ws) == [] and _count(ws) == before
    proc = _cli(ws, "--force")
    assert "holds live release" in proc.stdout and folder.is_dir()
    [backup] = _backups(ws)
    assert backup.read_text() == "my important notes\n" and str(backup) in proc.stderr
    assert _count(ws) == before


def test_a_file_at_the_folder_path_is_refused_for_an_older_release_with_no_release_left(tmp_path: Path) -> None:
    ws, first = _ws(tmp_path)
    folder = ws.skills_dir / SKILL
    shutil.rmtree(folder)
    folder.write_text("x\n")
    before = _count(ws)
    _cli(ws, first, ok=2)
    assert _count(ws) == before and folder.read_text() == "x\n"  # no ABANDONED row: refused before it began
    proc = _cli(ws, first, "--force")
    assert "now serves" in proc.stdout and folder.is_dir() and _backups(ws)[0].read_text() == "x\n"
    assert "one more line" not in (folder / "SKILL.md").read_text()


def test_a_symlinked_folder_says_how_to_go_on_and_force_replaces_only_the_link(tmp_path: Path) -> None:
    ws, first = _ws(tmp_path)
    folder = ws.skills_dir / SKILL
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(folder, elsewhere)
    (elsewhere / "SKILL.md").write_text((elsewhere / "SKILL.md").read_text() + "- my edit\n")
    shutil.rmtree(folder)
    folder.symlink_to(elsewhere)
    snapshot = {p: p.read_bytes() for p in elsewhere.rglob("*") if p.is_file()}
    proc = _cli(ws, ok=2)
    assert "is a symlink" in proc.stderr and "remove the link" in proc.stderr and "--force" in proc.stderr
    assert "field 'path'" not in proc.stderr and "copy the folder itself" not in proc.stderr
    _cli(ws, first, ok=2)  # the same for an older release
    proc = _cli(ws, "--force")
    assert "holds live release" in proc.stdout and folder.is_dir() and not folder.is_symlink()
    [backup] = _backups(ws)
    assert backup.is_symlink() and os.readlink(backup) == str(elsewhere)
    assert {p: p.read_bytes() for p in elsewhere.rglob("*") if p.is_file()} == snapshot  # target untouched


def test_removing_the_link_then_revert_puts_the_live_release_back(tmp_path: Path) -> None:
    ws, _ = _ws(tmp_path)
    folder = ws.skills_dir / SKILL
    text = (folder / "SKILL.md").read_text()
    shutil.copytree(folder, tmp_path / "elsewhere")
    shutil.rmtree(folder)
    folder.symlink_to(tmp_path / "elsewhere")
    folder.unlink()  # what the message says to do
    _cli(ws)
    assert (folder / "SKILL.md").read_text() == text and _backups(ws) == []
