"""Hostile inputs and interruptions of the file/release side (issue 8, items 1, 4-8 and 16):
symlinks, file modes, unpublished edits, nested skills, Ctrl-C and kill during publish.
Real git repositories, real SQLite files, real `skillforge` processes."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import EXAMPLE_SKILLS, REPO, edited, flat, run_cli, machine_of

from skillforge.skill import file as skillfile
from skillforge.config import Workspace, init_workspace
from skillforge.errors import (AmbiguousRelease, NestedSkill, NoChanges, SkillFileError, UnknownRelease,
                               UnpublishedChanges, UnsafeSymlink)
from skillforge.library.gitrepo import read_folder
from skillforge.library.releases import ReleaseStateMachine
from skillforge.rules.watchdog import may_restore, valid_stale_hours
from skillforge.skill.tree import Entry, FileMode, link_escapes, link_problem, read_tree, signature, tree_digest
from skillforge.skill.version import stamped
from skillforge.state.release import ReleaseStatus
from skillforge.library.store import MIGRATIONS, SCHEMA_VERSION, _statements

SPEC_SKILLS = REPO / "tests" / "fixtures" / "spec_skills"
WORKER = Path(__file__).with_name("release_worker.py")
SIGINT_WORKER = Path(__file__).with_name("sigint_worker.py")
SKILL = "news-digest"
SECRET = b"TOP-SECRET-shadow-line\n"


def sf(*args: str, ok: int | None = 0) -> subprocess.CompletedProcess[str]:
    return run_cli(list(args), ok=ok)


def git(ws: Path | str, *args: str) -> str:
    return subprocess.run(["git", "-C", str(ws), *args], capture_output=True, text=True, check=True).stdout


def modes(ws: Path | str, commit: str, path: str) -> dict[str, str]:
    """path -> git mode of every file under `path` at `commit`."""
    out = {}
    for line in git(ws, "ls-tree", "-r", commit, "--", path).splitlines():
        meta, name = line.split("\t")
        out[name.removeprefix(path + "/")] = meta.split()[0]
    return out


def in_any_git_object(ws: Path | str, needle: bytes) -> bool:
    objects = [line.split()[0] for line in git(ws, "rev-list", "--all", "--objects").splitlines()]
    batch = subprocess.run(["git", "-C", str(ws), "cat-file", "--batch"], input="\n".join(objects).encode(),
                           capture_output=True, check=True).stdout
    return needle in batch


def skill_text(name: str, extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: A test skill called {name}. Use when testing.\n---\n## Instructions\nDo it.{extra}\n"


def make_skill(folder: Path, extra: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(skill_text(folder.name, extra))
    return folder


@pytest.fixture
def ws(examples_ws: Path) -> Path:
    return examples_ws


def versions(root: Path, skill: str = SKILL) -> list[str]:
    return [r.version for r in machine_of(root).store.releases(skill)]


# ---- 1. symlinks never exfiltrate ------------------------------------------------------------
@pytest.fixture
def outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    (out / "etc").mkdir(parents=True)
    (out / "shadow").write_bytes(SECRET)
    (out / "etc" / "passwd").write_bytes(SECRET)
    return out


def test_import_refuses_escaping_symlinks_and_keeps_inner_ones(tmp_path, outside):
    src = tmp_path / "src"
    (make_skill(src / "lnk") / "secret.txt").symlink_to(outside / "shadow")
    (make_skill(src / "dirlink") / "etc").symlink_to(outside / "etc", target_is_directory=True)
    (make_skill(src / "dotdot") / "up.txt").symlink_to("../../outside/shadow")
    good = make_skill(src / "inner")
    (good / "references").mkdir()
    (good / "references" / "guide.md").write_text("the guide\n")
    (good / "latest.md").symlink_to("references/guide.md")
    (good / "refs").symlink_to("references", target_is_directory=True)
    os.mkfifo(make_skill(src / "fifo") / "pipe")  # reading it would hang the import
    root = init_workspace(tmp_path / "ws").root
    said = flat(sf("skills", "import", "--from", str(src), "-w", str(root), ok=1).stderr)
    for name in ("lnk/secret.txt", "dirlink/etc", "dotdot/up.txt", "fifo/pipe"):
        assert name in said, said
    assert said.count("leaves the skill folder") == 3 and "internal error" not in said
    assert machine_of(root).store.skill_names() == ["inner"]
    assert not (root / "skills" / "lnk").exists() and not (root / "skills" / "dirlink").exists()
    assert not in_any_git_object(root, SECRET)
    head = git(root, "rev-parse", "HEAD").strip()
    assert modes(root, head, "skills/inner") == {"SKILL.md": "100644", "latest.md": "120000",
                                                  "references/guide.md": "100644", "refs": "120000"}
    assert os.readlink(root / "skills" / "inner" / "latest.md") == "references/guide.md"
    # validate says the same about the source, naming each link
    checked = sf("skills", "validate", str(src), "--json", ok=1)
    report = json.loads(checked.stdout)
    assert {Path(i["file"]).parent.name for i in report["issues"]} >= {"lnk", "dirlink", "dotdot", "fifo"}


def test_publish_refuses_escaping_symlinks(ws, tmp_path, outside):
    cand = tmp_path / "cand" / SKILL
    shutil.copytree(ws / "skills" / SKILL, cand)
    (cand / "secret.txt").symlink_to(outside / "shadow")
    head = git(ws, "rev-parse", "HEAD")
    e = sf("release", "publish", SKILL, "--from", str(cand), "-w", str(ws), ok=2)
    assert "secret.txt" in flat(e.stderr) and "leaves the skill folder" in flat(e.stderr)
    (ws / "skills" / SKILL / "passwd").symlink_to(outside / "etc" / "passwd")  # in the working tree
    e = sf("release", "publish", SKILL, "-w", str(ws), ok=2)
    assert "passwd" in flat(e.stderr) and "leaves the skill folder" in flat(e.stderr)
    assert git(ws, "rev-parse", "HEAD") == head and not in_any_git_object(ws, SECRET)
    assert versions(ws) == ["1.2.0"]


def test_evaluate_never_reads_a_candidate_through_an_escaping_link(ws, tmp_path, outside):
    cand = tmp_path / "cand" / SKILL
    cand.mkdir(parents=True)
    (outside / "SKILL.md").write_text(skill_text(SKILL, " " + SECRET.decode()))
    (cand / "SKILL.md").symlink_to(outside / "SKILL.md")
    e = sf("evaluate", SKILL, "--candidate", str(cand), "-w", str(ws), ok=2)
    assert "SKILL.md must be a regular file" in flat(e.stderr)
    assert not (ws / "runs" / "evaluations.jsonl").exists() and not (ws / "runs" / "traces").exists()


def test_write_commit_never_writes_through_a_link(machine, tmp_path):
    m = machine
    victim = tmp_path / "victim"
    victim.mkdir()
    rel = m.begin_release(SKILL)
    base = edited(m, SKILL, "x")
    for bad in ({**base, "d": Entry(str(victim).encode(), FileMode.SYMLINK), "d/planted": b"boo"},
                {**base, "ok": Entry(b"sub", FileMode.SYMLINK), "sub": Entry(b"../..", FileMode.SYMLINK)},
                {**base, "abs": Entry(b"/etc/passwd", FileMode.SYMLINK)},
                {"SKILL.md": Entry(b"../other/SKILL.md", FileMode.SYMLINK)}):
        with pytest.raises(UnsafeSymlink):
            m.write_commit(rel.release_id, bad)
    with pytest.raises(SkillFileError, match="under the file"):
        m.write_commit(rel.release_id, {**base, "notes": b"a file", "notes/inner.md": b"x"})
    assert list(victim.iterdir()) == []


@pytest.mark.parametrize("links,link,escapes", [
    ({"a": "b.md"}, "a", False), ({"d/a": "../b.md"}, "d/a", False), ({"a": "../b.md"}, "a", True),
    ({"a": "/etc/passwd"}, "a", True), ({"a": "x/../../b"}, "a", True), ({"a": "./././b"}, "a", False),
    ({"a": "l2", "l2": "../out"}, "a", True), ({"a": "l2", "l2": "d/x"}, "a", False),
    ({"a": "sub/l/..", "sub/l": "/etc/ssl"}, "a", True), ({"a": "a"}, "a", True),
    ({"d/e/a": "../../b"}, "d/e/a", False), ({"d/e/a": "../../../b"}, "d/e/a", True)])
def test_link_escapes_edges(links, link, escapes):
    assert link_escapes(links, link) is escapes


@pytest.mark.parametrize("links,link,problem", [
    ({"a": "a"}, "a", "loop"), ({"a": "b", "b": "a"}, "a", "loop"), ({"a": "../b"}, "a", "outside"),
    ({"a": "l2", "l2": "/etc"}, "a", "outside"), ({"a": "b.md"}, "a", None)])
def test_a_link_loop_is_named_a_loop_not_an_escape(links, link, problem):
    """QA pass 15: `references/loop -> loop` was refused as a link that "leaves the skill folder"."""
    assert link_problem(links, link) == problem


# ---- bar: import stays byte-identical, modes included ------------------------------------------
def test_import_is_byte_identical_with_modes_binaries_and_links(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(SPEC_SKILLS, src)
    font = src / "csv-profile" / "assets" / "font.ttf"
    font.parent.mkdir()
    font.write_bytes(bytes(range(256)) * 64 + b"\x00\r\n\x1a" + os.urandom(4096))
    (src / "csv-profile" / "scripts" / "run.sh").write_bytes(b"#!/bin/sh\necho ok\r\n")
    for script in (src / "changelog-writer" / "scripts" / "commits_since.sh", src / "csv-profile" / "scripts" / "run.sh"):
        script.chmod(0o755)
    (src / "csv-profile" / "checklist.md").symlink_to("references/quality-checklist.md")
    root = init_workspace(tmp_path / "ws").root
    sf("skills", "import", "--from", str(src), "-w", str(root))
    head = git(root, "rev-parse", "HEAD").strip()
    for folder in sorted(src.iterdir()):
        assert read_tree(root / "skills" / folder.name) == read_tree(folder), folder.name
    got = modes(root, head, "skills/csv-profile")
    assert got["scripts/run.sh"] == "100755" and got["checklist.md"] == "120000" and got["assets/font.ttf"] == "100644"
    assert modes(root, head, "skills/changelog-writer")["scripts/commits_since.sh"] == "100755"
    blob = subprocess.run(["git", "-C", str(root), "cat-file", "blob", f"{head}:skills/csv-profile/assets/font.ttf"],
                          capture_output=True, check=True).stdout
    assert blob == font.read_bytes()


# ---- 4. unpublished edits are never silently discarded --------------------------------------------
def test_revert_refuses_unpublished_edits_unless_forced(ws):
    folder = ws / "skills" / SKILL
    (folder / "SKILL.md").write_text((folder / "SKILL.md").read_text() + "\n- published line\n")
    machine_of(ws).publish(SKILL)
    (folder / "SKILL.md").write_text((folder / "SKILL.md").read_text() + "\n- my unpublished edit\n")
    (folder / "notes.md").write_text("my new file\n")
    mine = read_tree(folder)
    e = sf("release", "revert", SKILL, "1.2.0", "-w", str(ws), ok=2)
    assert "unpublished changes" in flat(e.stderr) and "SKILL.md" in flat(e.stderr) and "notes.md" in flat(e.stderr) and "--force" in flat(e.stderr)
    assert read_tree(folder) == mine
    done = sf("release", "revert", SKILL, "1.2.0", "--force", "-w", str(ws))
    [saved_line] = [line for line in flat(done.stderr).splitlines() if "saved the unpublished edits to" in line]
    backup = Path(saved_line.split(" to ", 1)[1].strip())
    assert backup.is_relative_to(ws / "runs" / "backups") and read_tree(backup) == mine
    assert "my unpublished edit" not in (folder / "SKILL.md").read_text() and not (folder / "notes.md").exists()


def test_publish_from_refuses_unpublished_edits_unless_forced(ws, tmp_path):
    folder = ws / "skills" / SKILL
    cand = tmp_path / "cand" / SKILL
    shutil.copytree(folder, cand)
    (cand / "SKILL.md").write_text((cand / "SKILL.md").read_text() + "\n- candidate line\n")
    (folder / "draft.md").write_text("half-written idea\n")
    e = sf("release", "publish", SKILL, "--from", str(cand), "-w", str(ws), ok=2)
    assert "draft.md" in flat(e.stderr) and (folder / "draft.md").exists()
    done = sf("release", "publish", SKILL, "--from", str(cand), "--force", "-w", str(ws))
    assert "1.2.1" in done.stdout and "runs/backups/" in flat(done.stderr)
    [backup] = (ws / "runs" / "backups").iterdir()
    assert (backup / "draft.md").read_text() == "half-written idea\n" and not (folder / "draft.md").exists()
    # a clean working folder needs no --force and makes no backup
    (cand / "SKILL.md").write_text((cand / "SKILL.md").read_text() + "\n- another\n")
    assert "backups" not in sf("release", "publish", SKILL, "--from", str(cand), "-w", str(ws)).stderr


def test_machine_api_refuses_too(machine):
    m = machine
    (m.folder_of(SKILL) / "SKILL.md").write_text((m.folder_of(SKILL) / "SKILL.md").read_text() + "\nDRAFT\n")
    before = len(m.store.releases(SKILL))
    with pytest.raises(UnpublishedChanges) as info:
        m.publish(SKILL, {**edited(m, SKILL, "candidate")})
    assert info.value.files == ["SKILL.md"] and len(m.store.releases(SKILL)) == before  # no row written


# ---- 5. modes and links survive publish --from and revert ---------------------------------------
def test_modes_and_links_kept_on_publish_from_and_revert(ws, tmp_path):
    folder = ws / "skills" / SKILL
    cand = tmp_path / "cand" / SKILL
    shutil.copytree(folder, cand)
    (cand / "scripts").mkdir()
    (cand / "scripts" / "fetch.sh").write_text("#!/bin/sh\necho news\n")
    (cand / "scripts" / "fetch.sh").chmod(0o755)
    (cand / "run").symlink_to("scripts/fetch.sh")
    (cand / "SKILL.md").write_text((cand / "SKILL.md").read_text() + "\n- run scripts/fetch.sh\n")
    sf("release", "publish", SKILL, "--from", str(cand), "-w", str(ws))
    v2 = git(ws, "rev-parse", "HEAD").strip()
    assert modes(ws, v2, f"skills/{SKILL}") == {"SKILL.md": "100644", "run": "120000", "scripts/fetch.sh": "100755"}
    assert os.access(folder / "scripts" / "fetch.sh", os.X_OK) and os.readlink(folder / "run") == "scripts/fetch.sh"
    machine_of(ws).revert(SKILL, "1.2.0")
    assert not (folder / "run").is_symlink() and not (folder / "scripts").exists()
    sf("release", "revert", SKILL, "1.2.1", "-w", str(ws))
    head = git(ws, "rev-parse", "HEAD").strip()
    assert modes(ws, head, f"skills/{SKILL}") == modes(ws, v2, f"skills/{SKILL}")
    assert os.access(folder / "scripts" / "fetch.sh", os.X_OK) and os.readlink(folder / "run") == "scripts/fetch.sh"
    assert read_tree(folder) == stamped(read_tree(cand), "1.2.1")  # metadata.version: the release's


# ---- 6. nested skills are refused --------------------------------------------------------------
def test_nested_skills_are_refused_at_import_and_revert(ws, tmp_path):
    src = tmp_path / "src"
    make_skill(src / "outer")
    make_skill(src / "outer" / "inner-skill")
    make_skill(src / "alone")
    proc = sf("skills", "import", "--from", str(src), "-w", str(ws), ok=1)
    assert flat(proc.stderr).count("nested skills are refused") == 2, proc.stderr
    names = machine_of(ws).store.skill_names()
    assert "alone" in names and "outer" not in names and "inner-skill" not in names
    # a nested skill that appears later inside a registered skill survives its parent's revert
    folder = ws / "skills" / SKILL
    (folder / "SKILL.md").write_text((folder / "SKILL.md").read_text() + "\n- v2\n")
    machine_of(ws).publish(SKILL)
    child = make_skill(folder / "child-skill")
    for force in ((), ("--force",)):
        e = sf("release", "revert", SKILL, "1.2.0", *force, "-w", str(ws), ok=2)
        assert "nested skills are refused" in flat(e.stderr) and "child-skill" in flat(e.stderr)
    assert (child / "SKILL.md").read_text() == skill_text("child-skill")


# ---- 7. Ctrl-C during publish: all or nothing, and said so ----------------------------------------
def run_interrupted(ws: Path, point: str, group: bool, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the CLI in sigint_worker.py, SIGINT it (or its whole process group, as a terminal's
    Ctrl-C does, which also kills its git children) at `point`, and let it finish."""
    runs = ws / "runs"
    for flag in ("ready", "go"):
        (runs / flag).unlink(missing_ok=True)
    proc = subprocess.Popen([sys.executable, str(SIGINT_WORKER), point, str(runs), *args, "-w", str(ws)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 120
    while not (runs / "ready").exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the worker never reached its pause point"
        time.sleep(0.005)
    os.killpg(proc.pid, signal.SIGINT) if group else os.kill(proc.pid, signal.SIGINT)
    (runs / "go").touch()
    stdout, stderr = proc.communicate(timeout=120)
    assert "Traceback" not in stderr + stdout and "KeyboardInterrupt" not in stderr, stderr
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def staged_paths(ws: Path) -> str:
    return git(ws, "diff", "--cached", "--name-only", "HEAD")


@pytest.mark.parametrize("point,group", [("begin", False), ("staged", True), ("written", False),
                                         ("written", True), ("committed", True)])
def test_sigint_during_publish_completes_or_rolls_back(ws, tmp_path, point, group):
    m = ReleaseStateMachine.open(Workspace.open(ws))
    old = m.store.current(SKILL)
    old_tree = read_tree(ws / "skills" / SKILL)
    cand = tmp_path / "cand" / SKILL
    shutil.copytree(ws / "skills" / SKILL, cand)
    (cand / "SKILL.md").write_text((cand / "SKILL.md").read_text() + "\n- interrupted candidate\n")
    proc = run_interrupted(ws, point, group, "release", "publish", SKILL, "--from", str(cand))
    rows = m.store.releases(SKILL)
    assert not [r for r in rows if r.status is ReleaseStatus.PREPARING]
    assert staged_paths(ws) == ""
    if point == "committed":
        assert proc.returncode == 0 and "published news-digest 1.2.1" in proc.stdout and "it stands" in flat(proc.stderr)
        assert m.store.current(SKILL).version == "1.2.1" and read_tree(ws / "skills" / SKILL) == stamped(read_tree(cand), "1.2.1")
        return
    assert proc.returncode == 130, proc.stderr
    assert f"rolled back; 1.2.0 (release {old.release_id[:8]}) is still live" in flat(proc.stderr)
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert m.store.current(SKILL).release_id == old.release_id and rows[-1].status is ReleaseStatus.ABANDONED
    assert read_tree(ws / "skills" / SKILL) == old_tree
    assert machine_of(ws).publish(SKILL, read_tree(cand)).version == "1.2.1"  # no watchdog needed


def test_sigint_keeps_the_working_tree_edit_it_was_publishing(ws):
    folder = ws / "skills" / SKILL
    (folder / "SKILL.md").write_text((folder / "SKILL.md").read_text() + "\n- my edit\n")
    mine = read_tree(folder)
    proc = run_interrupted(ws, "written", True, "release", "publish", SKILL)
    assert proc.returncode == 130 and "rolled back" in flat(proc.stderr)
    assert read_tree(folder) == mine  # the person's edit is still there, ready to publish again
    assert machine_of(ws).publish(SKILL).version == "1.2.1"


def test_sigint_during_revert_rolls_back(ws):
    m = machine_of(ws)
    v2 = m.publish(SKILL, edited(m, SKILL, "second"))
    v2_tree = read_tree(ws / "skills" / SKILL)
    proc = run_interrupted(ws, "begin", True, "release", "revert", SKILL, "1.2.0")
    assert proc.returncode == 130 and f"the revert of {SKILL} was rolled back; 1.2.1" in flat(proc.stderr)
    assert m.store.current(SKILL).release_id == v2.release_id and not m.store.preparing_of(SKILL)
    assert read_tree(ws / "skills" / SKILL) == v2_tree and staged_paths(ws) == ""


def test_sigint_during_import_registers_nothing(tmp_path):
    workspace = init_workspace(tmp_path / "ws")
    shutil.copytree(EXAMPLE_SKILLS, workspace.skills_dir, dirs_exist_ok=True)
    proc = run_interrupted(workspace.root, "begin", True, "skills", "import")
    assert proc.returncode == 130 and "none was registered" in flat(proc.stderr)
    m = machine_of(workspace.root)
    assert m.store.current_releases() == [] and m.store.preparing() == []
    assert len(m.import_skills(skillfile.scan(workspace.skills_dir, workspace.root)).imported) == 10


def test_sigint_that_kills_git_mid_commit_of_an_import_is_an_interruption(tmp_path):
    """A terminal's Ctrl-C kills `git commit` too: gitpython then raises a git failure, which was
    reported as exit 2 with git's command line. A post-commit hook holds git running (its commit
    already made) until the signal has been sent."""
    workspace = init_workspace(tmp_path / "ws")
    shutil.copytree(EXAMPLE_SKILLS, workspace.skills_dir, dirs_exist_ok=True)
    hook = post_commit_pause(workspace.root)
    proc = run_interrupted(workspace.root, "git-hook", True, "skills", "import")
    assert proc.returncode == 130, proc.stderr
    assert "interrupted while git committed them; none was registered" in flat(proc.stderr)
    assert "cmdline" not in proc.stderr
    hook.unlink()
    m = machine_of(workspace.root)
    assert m.store.current_releases() == [] and m.store.preparing() == []
    assert len(m.import_skills(skillfile.scan(workspace.skills_dir, workspace.root)).imported) == 10


def post_commit_pause(root: Path) -> Path:
    """A post-commit hook that holds git running, its commit made, until the test says go."""
    runs = root / "runs"
    hooks = Path(git(root, "rev-parse", "--git-path", "hooks").strip())
    hooks = hooks if hooks.is_absolute() else root / hooks
    hooks.mkdir(parents=True, exist_ok=True)
    (hooks / "post-commit").write_text(f"#!/bin/sh\ntouch '{runs}/ready'\n"
                                       f"while [ ! -e '{runs}/go' ]; do sleep 0.01; done\n")
    (hooks / "post-commit").chmod(0o755)
    return hooks / "post-commit"


def test_sigint_that_kills_git_mid_commit_of_a_publish_rolls_back(ws):
    m = machine_of(ws)
    old = m.store.current(SKILL)
    folder = ws / "skills" / SKILL
    (folder / "SKILL.md").write_text((folder / "SKILL.md").read_text() + "\n- my edit\n")
    mine = read_tree(folder)
    post_commit_pause(ws)
    proc = run_interrupted(ws, "git-hook", True, "release", "publish", SKILL)
    assert proc.returncode == 130 and "rolled back" in flat(proc.stderr), proc.stderr
    assert "(git was interrupted too)" in flat(proc.stderr) and len(proc.stderr.strip().splitlines()) == 1
    assert m.store.current(SKILL).release_id == old.release_id and not m.store.preparing_of(SKILL)
    assert read_tree(folder) == mine and staged_paths(ws) == ""


def test_sigint_in_any_command_prints_one_line(ws):
    proc = run_interrupted(ws, "list", True, "skills", "list")
    assert proc.returncode == 130 and proc.stderr.strip() == "interrupted" and proc.stdout == ""


def test_owner_lock_files_do_not_pile_up(machine):
    m = machine
    for k in range(3):
        m.publish(SKILL, edited(m, SKILL, f"edit {k}"))
    rel = m.begin_release(SKILL)
    assert len(list((m.ws.runs_dir / "locks").iterdir())) == 1  # held while PREPARING
    m.abandon(rel.release_id)
    assert list((m.ws.runs_dir / "locks").iterdir()) == []


def test_rows_from_before_owners_are_recovered(machine):
    """A schema-1 database (no owner column) migrates; its PREPARING row has no owner, so the
    next begin_release treats it as dead rather than blocking forever."""
    m = machine
    old = m.store.current(SKILL)
    db = m.ws.db_path
    m.store.close()
    conn = sqlite3.connect(db, isolation_level=None)
    conn.executescript("DROP TABLE IF EXISTS canaries; DROP TABLE IF EXISTS retirements; DROP TABLE lineage; DROP TABLE releases; DROP TABLE skills; PRAGMA user_version = 0;")
    for stmt in _statements(MIGRATIONS[0]):
        conn.execute(stmt)
    conn.execute("PRAGMA user_version = 1")
    conn.execute("INSERT INTO skills(name) VALUES (?)", (SKILL,))
    conn.execute("INSERT INTO releases(release_id, skill_name, version, skill_path, status, level, triggered_by) "
                 "VALUES (?, ?, '1.2.0', ?, 'PREPARING', 'MANUAL', 'old')", (old.release_id, SKILL, old.skill_path))
    conn.close()
    m2 = ReleaseStateMachine.open(m.ws)
    assert m2.store.schema_version() == SCHEMA_VERSION
    [row] = m2.store.preparing_of(SKILL)
    assert row.owner is None and row.writes_folder is False
    assert m2.begin_release(SKILL).status is ReleaseStatus.PREPARING
    assert m2.store.release(old.release_id).status is ReleaseStatus.ABANDONED


def test_a_dead_publish_never_blocks_the_next_begin(machine):
    m = machine
    old = m.store.current(SKILL)
    proc = subprocess.run([sys.executable, str(WORKER), str(m.ws.root), SKILL, "1", "kill"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL
    [orphan] = [r for r in m.store.releases(SKILL) if r.status is ReleaseStatus.PREPARING]
    rel = m.begin_release(SKILL)  # no watchdog: the orphan's process is gone
    assert m.store.release(orphan.release_id).status is ReleaseStatus.ABANDONED
    assert rel.status is ReleaseStatus.PREPARING and m.store.current(SKILL).release_id == old.release_id


# ---- 8. a killed publish leaves nothing staged --------------------------------------------------
def test_kill_after_git_add_is_recovered_by_the_next_begin(machine):
    m = machine
    old_files = read_folder(m.folder_of(SKILL))
    proc = subprocess.run([sys.executable, str(WORKER), str(m.ws.root), SKILL, "2", "kill-after-add"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL and "dying" in proc.stdout
    assert f"skills/{SKILL}/SKILL.md" in staged_paths(m.ws.root)  # what the issue saw
    m.begin_release(SKILL)
    assert staged_paths(m.ws.root) == ""
    assert read_folder(m.folder_of(SKILL)) == old_files  # it held exactly what the dead release staged


# ---- 16. smaller defects ---------------------------------------------------------------------------
def test_publishing_no_change_is_refused(ws):
    e = sf("release", "publish", SKILL, "-w", str(ws), ok=2)
    assert "nothing to publish" in flat(e.stderr)
    assert versions(ws) == ["1.2.0"]


def test_publishing_the_same_files_is_refused(machine):
    with pytest.raises(NoChanges):
        machine.publish(SKILL, read_tree(machine.folder_of(SKILL)))
    assert len(machine.store.releases(SKILL)) == 1


def test_ambiguous_or_short_release_prefix_lists_the_matches(machine):
    m = machine
    v1 = m.store.current(SKILL)
    v2 = m.publish(SKILL, edited(m, SKILL, "two"))
    with pytest.raises(AmbiguousRelease) as info:
        m.revert(SKILL, v1.release_id[0])
    assert v1.release_id[:8] in str(info.value) and "1.2.0" in str(info.value)
    listed = re.findall(r"[0-9a-f]{8} \(", str(info.value))  # a hex prefix can match an id or a version
    one = len(listed) == 1  # QA 22 MESSAGE-3: one match is no ambiguity
    assert ("is too short a prefix (an id prefix needs 4+ characters)" in str(info.value)) == one
    assert ("ambiguous" in str(info.value)) != one
    with pytest.raises(AmbiguousRelease) as info:
        m.revert(SKILL, "1.2")
    assert v1.release_id[:8] in str(info.value) and v2.release_id[:8] in str(info.value)
    with pytest.raises(UnknownRelease, match="no release 'zzzz'"):
        m.revert(SKILL, "zzzz")
    assert m.revert(SKILL, v1.release_id[:8]).commit_hash == v1.commit_hash


@pytest.mark.parametrize("hours", ["-1", "nan"])
def test_watchdog_refuses_bad_hours(ws, hours):
    e = sf("watchdog", "--hours", hours, "-w", str(ws), ok=2)
    assert "--hours must be a finite number" in flat(e.stderr) and len(e.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("work,written,live,ok", [
    ("cand", ["cand"], "live", True),                 # exactly the dead release's swap: put the live bytes back
    ("staged", ["cand", "staged"], "live", True),     # or what it staged / committed
    ("edit", ["cand"], "live", False),                # a person's edit is never overwritten
    ("live", ["live"], "live", False),                # already the live bytes
    ("cand", [], "live", False),                      # nothing proves who wrote the folder
    ("cand", ["cand"], None, False),                  # nothing to restore to
    ("", ["cand"], "", False)])                       # no folder, and none is live: nothing to do
def test_may_restore_edges(work, written, live, ok):
    assert may_restore(work, written, live) is ok


def test_tree_digest_tells_bytes_modes_and_paths_apart():
    base = {"SKILL.md": Entry(b"x"), "run.sh": Entry(b"#!/bin/sh\n", FileMode.EXECUTABLE)}
    same = tree_digest(signature(dict(base)))
    assert tree_digest(signature(base)) == same and len(same) == 64
    for other in ({**base, "SKILL.md": Entry(b"y")}, {**base, "run.sh": Entry(b"#!/bin/sh\n")},
                  {"SKILL.md": Entry(b"x"), "run2.sh": base["run.sh"]}, {**base, "extra": Entry(b"")},
                  {**base, "run.sh": Entry(b"#!/bin/sh\n", FileMode.SYMLINK)}):
        assert tree_digest(signature(other)) != same
    assert tree_digest({}) != same


@pytest.mark.parametrize("hours,ok", [(0, True), (0.0, True), (24, True), (1e-9, True), (-1e-9, False), (-1, False),
                                      (float("nan"), False), (float("inf"), False), (float("-inf"), False)])
def test_valid_stale_hours_edges(hours, ok):
    assert valid_stale_hours(hours) is ok


def test_scan_refuses_nested_and_linked_skill_folders(tmp_path, outside):
    lib = tmp_path / "lib"
    make_skill(lib / "top")
    make_skill(lib / "top" / "below")
    make_skill(lib / "fine")
    (make_skill(lib / "sneaky") / "x").symlink_to(outside / "shadow")
    report = skillfile.scan(lib, tmp_path)
    assert sorted(report.skills) == ["fine"]
    kinds = sorted((Path(e.file).parent.name, type(e).__name__) for e in report.errors)
    assert kinds == [("below", "NestedSkill"), ("sneaky", "UnsafeSymlink"), ("top", "NestedSkill")]
    assert all(isinstance(e, NestedSkill | UnsafeSymlink) for e in report.errors)


def test_validate_evaluate_and_publish_refuse_the_same_linked_skill_folders_and_files(ws, tmp_path):
    """QA qa10a F8: c1 (a folder whose SKILL.md links to another skill's) and c2 (a link to a whole
    skill folder), each given as the folder and as its SKILL.md. Was: validate passed three of the
    four, evaluate two, and publish --from published c2 and called c1/SKILL.md "no SKILL.md"."""
    c1 = tmp_path / "c1" / SKILL
    c1.mkdir(parents=True)
    (c1 / "SKILL.md").symlink_to(ws / "skills" / SKILL / "SKILL.md")
    real = tmp_path / "real" / SKILL
    shutil.copytree(ws / "skills" / SKILL, real)
    c2 = tmp_path / "c2" / SKILL
    c2.parent.mkdir()
    c2.symlink_to(real, target_is_directory=True)
    head = git(ws, "rev-parse", "HEAD")
    dead = {"SKILLFORGE_LLM_BASE_URL": "http://127.0.0.1:9/v1", "SKILLFORGE_LLM_MODEL": "m"}  # never reached
    for given, why in ((c1, "SKILL.md must be a regular file, not a symlink"),
                       (c1 / "SKILL.md", "SKILL.md must be a regular file, not a symlink"),
                       (c2, "the skill folder is a symlink"), (c2 / "SKILL.md", "the skill folder is a symlink")):
        checked = sf("skills", "validate", str(given), "--json", "-w", str(ws), ok=1)
        assert why in json.dumps(json.loads(checked.stdout)["issues"]), (given, checked.stdout)
        evaluated = run_cli(["evaluate", SKILL, "--candidate", str(given), "-w", str(ws)], dead, ok=2)
        assert why in flat(evaluated.stderr), (given, evaluated.stderr)
        published = sf("release", "publish", SKILL, "--from", str(given), "-w", str(ws), ok=2)
        assert why in flat(published.stderr), (given, published.stderr)
    file = sf("release", "publish", SKILL, "--from", str(real / "SKILL.md"), "-w", str(ws), ok=2)  # F16
    assert f"{real / 'SKILL.md'} is a file, not a skill folder: give its folder ({real})" in flat(file.stderr)
    assert git(ws, "rev-parse", "HEAD") == head and versions(ws) == ["1.2.0"]
    assert sf("skills", "validate", str(real), "-w", str(ws)).returncode == 0  # the real folder itself is fine
