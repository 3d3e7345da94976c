"""QA 33 F5: `skills list` says a skill whose folder was deleted is still served, with both ways on."""

from __future__ import annotations

import shutil
import subprocess

from conftest import SKILLFORGE_EXE, cli_env

from skillforge.config import init_workspace
from skillforge.library.releases import ReleaseStateMachine
from skillforge.skill import file as skillfile


def test_a_missing_folder_is_named_as_still_served_with_revert_and_retire(tmp_path):
    ws = init_workspace(tmp_path / "ws")
    for name in ("gone", "kept"):
        (ws.skills_dir / name).mkdir(parents=True)
        (ws.skills_dir / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {name} skill\n---\nbody\n")
    ReleaseStateMachine.open(ws).import_skills(skillfile.scan(ws.skills_dir, ws.root))
    shutil.rmtree(ws.skills_dir / "gone")
    run = subprocess.run([str(SKILLFORGE_EXE), "skills", "list"], capture_output=True, text=True,
                         env=cli_env({"SKILLFORGE_WORKSPACE": str(ws.root), "COLUMNS": "400"}))
    assert run.returncode == 0, run.stderr
    line = next(x for x in run.stdout.splitlines() if x.startswith("missing: "))
    assert "missing: gone: still served from git" in line and "kept" not in line
    assert "release revert NAME" in line and "release retire NAME" in line
