"""What `release publish --from` and `skills import --from` say about a candidate folder (QA qa10a
F16, qa11 N10): the name it must carry, the lineage of a new skill's first release, a path git
refuses (named before git runs), and what the release leaves out (nested .git, empty folders).
Real workspaces (git + SQLite) and real `skillforge` processes."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import flat, machine_of, run_cli

from skillforge.skill.tree import git_reserved, left_out
from skillforge.state.release import LineageKind

DEAD_LLM = {"SKILLFORGE_LLM_BASE_URL": "http://127.0.0.1:9/v1", "SKILLFORGE_LLM_MODEL": "m"}  # never reached


def head(ws: Path) -> str:
    return subprocess.run(["git", "-C", str(ws), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


def candidate(ws: Path, tmp_path: Path, skill: str, name: str | None = None) -> Path:
    """A copy of the workspace's `skill` folder under tmp_path/cand/<name>, its SKILL.md's `name:`
    set to `name` and one line added (so it differs from the live release)."""
    name = name or skill
    folder = tmp_path / "cand" / name
    shutil.copytree(ws / "skills" / skill, folder)
    text = (folder / "SKILL.md").read_text(encoding="utf-8").replace(f"name: {skill}\n", f"name: {name}\n", 1)
    (folder / "SKILL.md").write_text(text.rstrip("\n") + "\n- one more line\n", encoding="utf-8")
    return folder


def test_publish_from_another_skills_folder_names_the_skill_being_published(examples_ws: Path, tmp_path: Path) -> None:
    """The folder is called taxi-hailing and so is its SKILL.md: the mismatch is with the skill
    being published, which the old message called 'its folder name'."""
    cand = candidate(examples_ws, tmp_path, "taxi-hailing")
    before = head(examples_ws)
    proc = run_cli(["release", "publish", "hotel-booking", "--from", str(cand), "-w", str(examples_ws)], ok=2)
    assert "must equal the skill being published 'hotel-booking', got 'taxi-hailing'" in flat(proc.stderr)
    assert "folder name" not in proc.stderr
    assert head(examples_ws) == before


def test_first_release_of_a_new_skill_is_imported_not_a_fix(examples_ws: Path, tmp_path: Path) -> None:
    cand = candidate(examples_ws, tmp_path, "taxi-hailing", "brand-new")
    run_cli(["release", "publish", "brand-new", "--from", str(cand), "-w", str(examples_ws)])
    listed = run_cli(["releases", "list", "brand-new", "-w", str(examples_ws)])
    assert "IMPORTED" in listed.stdout and "FIX" not in listed.stdout
    m = machine_of(examples_ws)
    first = m.store.current("brand-new")
    assert first is not None
    assert [(lk.parent, lk.kind) for lk in m.store.lineage(first.release_id)] == [(None, LineageKind.IMPORTED)]
    (cand / "SKILL.md").write_text((cand / "SKILL.md").read_text(encoding="utf-8") + "- and another\n",
                                   encoding="utf-8")
    run_cli(["release", "publish", "brand-new", "--from", str(cand), "-w", str(examples_ws)])
    second = m.store.current("brand-new")
    assert second is not None and second.release_id != first.release_id
    assert [(lk.parent, lk.kind) for lk in m.store.lineage(second.release_id)] == [(first.release_id, LineageKind.FIX)]


@pytest.mark.parametrize("part", [".GIT", ".Git", ".git.", ".git ", "git~1", "GIT~1", ".gitx", "x.git", ".gi", "git"])
def test_git_reserved_matches_what_git_refuses(tmp_path: Path, part: str) -> None:
    repo = tmp_path / "r"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / part).mkdir()
    (repo / part / "notes.txt").write_text("x\n")
    added = subprocess.run(["git", "-C", str(repo), "add", f"{part}/notes.txt"], check=False,
                           capture_output=True, text=True)
    assert git_reserved(part) == (added.returncode != 0), added.stderr


def test_a_path_git_refuses_is_a_named_error_everywhere_before_git(examples_ws: Path, tmp_path: Path) -> None:
    """`.GIT/notes.txt` in a candidate: publish failed with git's raw 'invalid path ... fatal:
    adding files failed'. Now validate, evaluate, publish and import all name the file and the rule."""
    cand = candidate(examples_ws, tmp_path, "taxi-hailing")
    (cand / ".GIT").mkdir()
    (cand / ".GIT" / "notes.txt").write_text("notes\n")
    before = head(examples_ws)
    rule = "git refuses a path with a '.GIT' component"
    bad = f"{cand}/.GIT/notes.txt"
    published = run_cli(["release", "publish", "taxi-hailing", "--from", str(cand), "-w", str(examples_ws)], ok=2)
    assert bad in flat(published.stderr) and rule in flat(published.stderr), published.stderr
    assert "fatal" not in published.stderr and "invalid path" not in published.stderr
    validated = run_cli(["skills", "validate", str(cand), "-w", str(examples_ws)], ok=1)
    assert rule in flat(validated.stdout + validated.stderr)
    evaluated = run_cli(["evaluate", "taxi-hailing", "--candidate", str(cand), "-w", str(examples_ws)], DEAD_LLM, ok=2)
    assert rule in flat(evaluated.stderr)
    src = tmp_path / "src"
    shutil.copytree(cand, src / "new-one")
    text = (src / "new-one" / "SKILL.md").read_text(encoding="utf-8").replace("name: taxi-hailing", "name: new-one")
    (src / "new-one" / "SKILL.md").write_text(text, encoding="utf-8")
    imported = run_cli(["skills", "import", "--from", str(src), "-w", str(examples_ws)], ok=1)
    assert rule in flat(imported.stderr) and not (examples_ws / "skills" / "new-one").exists()
    assert head(examples_ws) == before
    status = subprocess.run(["git", "-C", str(examples_ws), "status", "--porcelain", "skills"],
                            capture_output=True, text=True, check=True).stdout
    assert status == ""


def test_left_out_names_nested_git_and_empty_folders(tmp_path: Path) -> None:
    f = tmp_path / "s"
    for d in ("empty", "chain/of/empty", "docs/.git/objects", "refs/deep"):
        (f / d).mkdir(parents=True)
    for file in ("SKILL.md", "docs/a.md", "refs/deep/b.md", "docs/.git/HEAD"):
        (f / file).write_text("x\n")
    assert left_out(f) == ["chain/", "docs/.git/", "empty/"]
    assert left_out(tmp_path / "missing") == []


def test_publish_and_import_warn_about_what_they_leave_out(examples_ws: Path, tmp_path: Path) -> None:
    cand = candidate(examples_ws, tmp_path, "taxi-hailing")
    (cand / "empty").mkdir()
    (cand / "refs" / ".git").mkdir(parents=True)
    (cand / "refs" / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (cand / "refs" / "kept.md").write_text("kept\n")
    published = run_cli(["release", "publish", "taxi-hailing", "--from", str(cand), "-w", str(examples_ws)])
    warning = (f"{cand}: left out refs/.git/: a nested .git folder is version-control data; "
               "empty/: an empty folder, and git keeps none")  # each with its own reason (QA 42 F5)
    assert warning in flat(published.stderr), published.stderr
    assert len(published.stderr.strip().splitlines()) == 1
    assert (examples_ws / "skills" / "taxi-hailing" / "refs" / "kept.md").is_file()
    assert not (examples_ws / "skills" / "taxi-hailing" / "refs" / ".git").exists()
    quiet = candidate(examples_ws, tmp_path / "q", "hotel-booking")
    again = run_cli(["release", "publish", "hotel-booking", "--from", str(quiet), "-w", str(examples_ws)])
    assert "left out" not in again.stderr
    src = tmp_path / "src" / "new-one"
    shutil.copytree(cand, src)
    text = (src / "SKILL.md").read_text(encoding="utf-8").replace("name: taxi-hailing", "name: new-one")
    (src / "SKILL.md").write_text(text, encoding="utf-8")
    imported = run_cli(["skills", "import", "--from", str(src.parent), "-w", str(examples_ws)])
    assert f"{src}: left out refs/.git/: a nested .git" in flat(imported.stderr), imported.stderr
    assert (examples_ws / "skills" / "new-one" / "refs" / "kept.md").is_file()
