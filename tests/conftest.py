"""Shared fixtures: real workspaces (real git repository, real SQLite file) in tmp_path."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
BENCH_SKILLS = SHARED / "bench" / "skills"
EXAMPLE_SKILLS = REPO / "skills"

from skillforge import skillfile  # noqa: E402
from skillforge.config import Workspace, init_workspace  # noqa: E402
from skillforge.releases import ReleaseStateMachine  # noqa: E402


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    """An initialised, empty workspace."""
    return init_workspace(tmp_path / "ws")


@pytest.fixture
def machine(workspace: Workspace) -> ReleaseStateMachine:
    """A workspace with the 10 example skills imported as IMPORTED releases."""
    shutil.copytree(EXAMPLE_SKILLS, workspace.skills_dir, dirs_exist_ok=True)
    m = ReleaseStateMachine.open(workspace)
    result = m.import_skills(skillfile.scan(workspace.skills_dir, workspace.root))
    assert not result.errors and len(result.imported) == 10
    return m


def edited(m: ReleaseStateMachine, skill: str, line: str) -> dict[str, bytes]:
    """The skill's current working-tree files with one line appended to SKILL.md."""
    folder = m.folder_of(skill)
    files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    files["SKILL.md"] = files["SKILL.md"].rstrip(b"\n") + f"\n- {line}\n".encode()
    return files


def run_cli(args: list[str], env: dict[str, str] | None = None, *, cwd: Path | None = None,
            ok: int | None = 0, wrap: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the `skillforge` console script as a user would: a real process, with the LLM settings
    of this environment removed (and `env` added), never a traceback, exit code `ok` if given.
    `wrap` is a command line the script runs under (say, `unshare ...`), given the script and args."""
    exe = str(Path(sys.executable).parent / "skillforge")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SKILLFORGE_", "OPENAI_"))}
    proc = subprocess.run([*(wrap or []), exe, *args], capture_output=True, text=True, cwd=cwd, env={**base, **(env or {})},
                          timeout=180)
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    if ok is not None:
        assert proc.returncode == ok, proc.stdout + proc.stderr
    return proc
