"""QA 23 F1: `skills split --publish` carries the files beside SKILL.md (references/, scripts/,
assets...) to the children whose SKILL.md names them, and a file no child names to every child,
listed under review:; the preview, --json and the publish output list each child's files."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

from skillforge.config import Workspace, init_workspace
from skillforge.library.services import Services
from skillforge.skill import file as skillfile
from tests.conftest import EXAMPLE_SKILLS, FIXTURES, run_cli

SPLIT = FIXTURES / "split"
RICH = (FIXTURES / "qa23_split" / "convert-anything-rich.md").read_text(encoding="utf-8")
CURRENCY, UNITS = "convert-anything-currency", "convert-anything-units"


def workspace(root: Path, skill_md: str, extra: dict[str, bytes] | None = None, executable: tuple[str, ...] = ()) -> Workspace:
    """The split fixtures' workspace with convert-anything's SKILL.md replaced and files added beside it."""
    ws = init_workspace(root)
    shutil.copytree(EXAMPLE_SKILLS, ws.skills_dir, dirs_exist_ok=True)
    shutil.copytree(SPLIT / "skills", ws.skills_dir, dirs_exist_ok=True)
    folder = ws.skills_dir / "convert-anything"
    (folder / "SKILL.md").write_text(skill_md, encoding="utf-8")
    for rel, data in (extra or {}).items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
        if rel in executable:
            (folder / rel).chmod(0o755)
    shutil.copy(SPLIT / "split_dev.json", ws.evaluation_sets_dir / "split_dev.json")
    result = Services(ws).machine.import_skills(skillfile.scan(ws.skills_dir, ws.root))
    assert not result.errors
    return ws


FILES = {"references/fx-notes.md": b"# FX notes: rates refresh hourly\n", "scripts/units.sh": b"#!/bin/sh\necho units\n",
         "assets/logo.txt": b"logo\n"}


def test_files_follow_the_children_that_name_them_and_the_rest_go_to_every_child(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws", RICH, FILES, executable=("scripts/units.sh",))
    preview = json.loads(run_cli(["skills", "split", "convert-anything", "--json", "-w", str(ws.root)]).stdout)
    assert preview["files"] == {CURRENCY: ["SKILL.md", "assets/logo.txt", "references/fx-notes.md"],
                                UNITS: ["SKILL.md", "assets/logo.txt", "scripts/units.sh"]}
    assert preview["files_for_review"] == ["assets/logo.txt"]
    text = run_cli(["skills", "split", "convert-anything", "-w", str(ws.root)]).stdout
    assert "review: file no child's SKILL.md names, given to every child: assets/logo.txt" in text
    assert f"files: {CURRENCY} gets SKILL.md, assets/logo.txt, references/fx-notes.md" in text
    assert not (ws.skills_dir / CURRENCY).exists()

    done = run_cli(["skills", "split", "convert-anything", "--publish", "-w", str(ws.root)]).stdout
    assert f"published {CURRENCY} 0.1.0" in done and "with 3 file(s)" in done
    svc = Services(ws)
    for child, paths in preview["files"].items():
        rel = svc.store.current(child)
        assert rel is not None
        tree = svc.machine.tree_of(rel)
        assert sorted(tree) == sorted(paths)  # committed, not only written
        for p in paths[1:]:
            assert tree[p].data == FILES[p] and (ws.skills_dir / child / p).read_bytes() == FILES[p]
    assert (ws.skills_dir / UNITS / "scripts/units.sh").stat().st_mode & stat.S_IXUSR  # the mode is kept
    # every file of the parent is in some child: nothing dropped
    assert set(FILES) <= {p for paths in preview["files"].values() for p in paths}
