"""A release holds every file of its folder, even files git would ignore (QA: a skill's own
.gitignore, the workspace's unanchored `runs/` pattern, or a global excludes file made `release
publish` and `skills import` say success while the release lacked those files, `skills list` said
modified at once, and "publish them first" could never succeed)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from conftest import EXAMPLE_SKILLS, run_cli

SKILL = "taxi-hailing"


def tracked(ws: Path, skill: str) -> set[str]:
    out = subprocess.run(["git", "-C", str(ws), "ls-tree", "-r", "--name-only", "HEAD", f"skills/{skill}"],
                         capture_output=True, text=True, check=True).stdout
    return {line.split(f"skills/{skill}/", 1)[1] for line in out.splitlines()}


def with_ignored_files(folder: Path) -> None:
    (folder / ".gitignore").write_text("*.txt\n")
    (folder / "fares.txt").write_text("important table\n")
    (folder / "runs").mkdir()
    (folder / "runs" / "notes.md").write_text("matched by the workspace's runs/ pattern\n")


def worktree(ws: Path, skill: str) -> str:
    rows = json.loads(run_cli(["skills", "list", "--json", "-w", str(ws)]).stdout)["skills"]
    return next(r["worktree"] for r in rows if r["name"] == skill)


def test_publish_and_import_keep_files_git_would_ignore(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    run_cli(["init", str(ws)])
    src = tmp_path / "src"
    shutil.copytree(EXAMPLE_SKILLS / SKILL, src / SKILL)
    with_ignored_files(src / SKILL)
    run_cli(["skills", "import", "--from", str(src), "-w", str(ws)])
    assert {".gitignore", "fares.txt", "runs/notes.md", "SKILL.md"} <= tracked(ws, SKILL)
    assert worktree(ws, SKILL) == "clean"

    cand = tmp_path / "cand" / SKILL
    shutil.copytree(ws / "skills" / SKILL, cand)
    (cand / "fares.txt").write_text("important table, new fares\n")
    (cand / "runs" / "more.md").write_text("another\n")
    run_cli(["release", "publish", SKILL, "--from", str(cand), "-w", str(ws)])
    assert {"fares.txt", "runs/notes.md", "runs/more.md"} <= tracked(ws, SKILL)
    shown = subprocess.run(["git", "-C", str(ws), "show", f"HEAD:skills/{SKILL}/fares.txt"], capture_output=True,
                           text=True, check=True).stdout
    assert shown == "important table, new fares\n" and worktree(ws, SKILL) == "clean"
    refused = run_cli(["release", "publish", SKILL, "-w", str(ws)], ok=2)
    assert "nothing to publish" in refused.stderr  # the folder is the release, ignored files included
