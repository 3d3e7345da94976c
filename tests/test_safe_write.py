"""Files written at a path a user gave, or under runs/: only ever a regular file, atomically, with
the umask respected (issue 21, item 5's `report --html /dev/full` and item 6's 0600 files).

Devices are made with mknod inside the test's own folder (root only; skipped otherwise): a broken
writer must never get the chance to replace a real /dev node."""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import EXAMPLE_SKILLS, SKILLFORGE_EXE, cli_env, flat, run_cli

from skillforge.skill import file as skillfile
from skillforge.runners.evaluate import check_report_path
from skillforge.config import init_workspace
from skillforge.errors import NotWritable, ReportPathError
from skillforge.evolution.harvest import write_set_atomic
from skillforge.library.releases import ReleaseStateMachine
from skillforge.safewrite import write_text_atomic
from skillforge.state.evaluate import EvalSet, Partition, SetMeta

SKILL = "news-digest"
KINDS = ["folder", "fifo", "socket", "device", "link-to-fifo", "link-to-device"]


@contextmanager
def umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def make(kind: str, where: Path) -> Path:
    """A path of the given kind in `where` that is not a regular file."""
    path = where / f"target-{kind}"
    if kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        sock.close()
    elif kind == "device":
        try:  # a twin of /dev/full: every write fails with ENOSPC
            os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 7))
        except PermissionError:
            pytest.skip("mknod needs root (CAP_MKNOD)")
    else:
        target = make(kind.removeprefix("link-to-"), where)
        path.symlink_to(target)
    return path


def fingerprint(path: Path) -> tuple[int, int, int]:
    st = os.lstat(path)
    return st.st_ino, st.st_mode, st.st_rdev


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


@pytest.mark.parametrize("kind", KINDS)
def test_only_a_regular_file_is_ever_replaced(tmp_path, kind):
    path = make(kind, tmp_path)
    before = fingerprint(path)
    with pytest.raises(NotWritable, match="not a regular file"):
        write_text_atomic(path, "<html>")
    assert fingerprint(path) == before and leftovers(tmp_path) == []


def test_a_link_to_a_file_replaces_the_file_and_keeps_the_link(tmp_path):
    real = tmp_path / "real.html"
    real.write_text("old")
    real.chmod(0o640)
    link = tmp_path / "link.html"
    link.symlink_to(real)
    write_text_atomic(link, "new")
    assert link.is_symlink() and real.read_text() == "new" and stat.S_IMODE(real.stat().st_mode) == 0o640


@pytest.mark.parametrize("mask,mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_a_new_file_respects_the_umask_and_an_old_one_keeps_its_mode(tmp_path, mask, mode):
    kept = tmp_path / "kept.md"
    kept.write_text("x")
    kept.chmod(0o640)
    with umask(mask):
        new = write_text_atomic(tmp_path / "runs" / "new.md", "hello")
        failures = write_text_atomic(tmp_path / "runs" / "failures" / "run-1.md", "# failures")
        write_set_atomic(tmp_path / "repair.json",
                         EvalSet(meta=SetMeta(name="repair", partition=Partition.REPAIR, skills=[]), cases=[]))
        write_text_atomic(kept, "y")
    for path in (new, failures, tmp_path / "repair.json"):
        assert stat.S_IMODE(path.stat().st_mode) == mode, path
    assert stat.S_IMODE(kept.stat().st_mode) == 0o640 and kept.read_text() == "y"
    assert new.read_text() == "hello" and leftovers(tmp_path / "runs") == []


@pytest.mark.parametrize("kind", ["fifo", "device", "socket"])
def test_evaluate_report_refuses_before_the_run(tmp_path, kind):
    path = make(kind, tmp_path)
    before = fingerprint(path)
    with pytest.raises(ReportPathError, match="not a regular file"):
        check_report_path(path)  # a FIFO used to block this check forever
    assert fingerprint(path) == before


# ---- through the CLI ---------------------------------------------------------------------------
@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = init_workspace(tmp_path / "ws")
    shutil.copytree(EXAMPLE_SKILLS / SKILL, workspace.skills_dir / SKILL)
    m = ReleaseStateMachine.open(workspace)
    assert m.import_skills(skillfile.scan(workspace.skills_dir, workspace.root)).imported
    m.store.close()
    return workspace.root


def sf(*args: str, mask: int = 0o022) -> subprocess.CompletedProcess[str]:
    """The console script under `umask MASK`; a timeout instead of a hang on a FIFO."""
    proc = subprocess.run(["sh", "-c", f'umask {mask:03o}; exec "$0" "$@"', str(SKILLFORGE_EXE), *args],
                          capture_output=True, text=True, env=cli_env(), timeout=60)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    return proc


@pytest.mark.parametrize("kind", ["fifo", "device", "link-to-fifo", "socket"])
def test_report_html_refuses_what_is_not_a_file(ws, tmp_path, kind):
    """`report X --html /dev/full` run as root turned the device into a 0600 HTML file and said
    "wrote"."""
    path = make(kind, tmp_path)
    before = fingerprint(path)
    proc = sf("report", SKILL, "--html", str(path), "-w", str(ws))
    assert proc.returncode == 2 and "not a regular file" in flat(proc.stderr) and "wrote" not in proc.stdout
    assert fingerprint(path) == before and leftovers(tmp_path) == []


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_skills_export_out_refuses_what_is_not_a_file(ws, tmp_path, kind):
    path = make(kind, tmp_path)
    before = fingerprint(path)
    proc = sf("skills", "export", SKILL, "--out", str(path), "-w", str(ws))
    assert proc.returncode == 2 and "not a regular file" in flat(proc.stderr), proc.stdout + proc.stderr
    assert fingerprint(path) == before


@pytest.mark.parametrize("command", [("skills", "export", SKILL, "--strict", "--out"), ("report", SKILL, "--html")])
def test_export_and_report_into_a_missing_folder_are_refused_and_make_no_folder(ws, tmp_path, command):
    """`skills export --out nodir/sub/x.md` made nodir/sub, wrote the file and exited 0, where
    `report --html` into a missing folder is refused (docs/safety.md "Files written whole")."""
    target = tmp_path / "nodir" / "sub" / "x.md"
    proc = run_cli([*command, str(target), "-w", str(ws)], ok=2)
    assert f"cannot write {target}: no folder {target.parent}" in flat(proc.stderr), proc.stderr
    assert "wrote" not in proc.stdout and not (tmp_path / "nodir").exists()


@pytest.mark.parametrize("mask,mode", [(0o022, 0o644), (0o077, 0o600)])
def test_report_html_and_export_respect_the_umask(ws, tmp_path, mask, mode):
    page, exported = tmp_path / "page.html", tmp_path / "SKILL.md"
    assert sf("report", SKILL, "--html", str(page), "-w", str(ws), mask=mask).returncode == 0
    assert sf("skills", "export", SKILL, "--out", str(exported), "-w", str(ws), mask=mask).returncode == 0
    assert stat.S_IMODE(page.stat().st_mode) == mode and stat.S_IMODE(exported.stat().st_mode) == mode
