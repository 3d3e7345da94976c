"""git processes killed under SkillForge: a cat-file reader dying mid-read, and a writer that
left `.git/index.lock`.

1. gitpython's persistent cat-file process dying under a read.

A Ctrl-C in a terminal reaches the whole process group, so it kills the `git cat-file --batch`
processes gitpython keeps. A request written to one that dies before answering reads back nothing,
and gitpython raises the same ValueError it raises for a repository without commits. Under load
test_sigint_during_revert_rolls_back caught the consequence (1 run in ~20): `head()` said "no
commits", so `unstage` ran `git rm --cached` on the skill folder and the rolled-back revert left
the whole SKILL.md staged for deletion. These tests make the process die exactly there: stopped
(SIGSTOP) so the request is written into its pipe, then killed before it can answer.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from skillforge.errors import GitError
from skillforge.library.gitrepo import SkillsRepo


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> SkillsRepo:
    root = tmp_path / "ws"
    (root / "skills" / "demo").mkdir(parents=True)
    (root / "skills" / "demo" / "SKILL.md").write_text("---\nname: demo\ndescription: d\n---\nbody\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    return SkillsRepo(root / "skills")


def dies_on_next_read(repo: SkillsRepo, attr: str = "cat_file_header") -> threading.Thread:
    """Stop gitpython's persistent cat-file process (started first) and kill it 0.3 s later: a
    request written in between goes into its pipe and is never answered."""
    repo.repo.git.get_object_header("HEAD") if attr == "cat_file_header" else repo.repo.git.get_object_data("HEAD")
    pid = getattr(repo.repo.git, attr).proc.pid
    os.kill(pid, signal.SIGSTOP)
    killer = threading.Timer(0.3, os.kill, (pid, signal.SIGKILL))
    killer.start()
    return killer


def test_head_is_not_taken_for_an_empty_repository_when_cat_file_dies(repo):
    want = git(repo.workdir, "rev-parse", "HEAD").strip()
    killer = dies_on_next_read(repo)
    assert repo.head() == want
    killer.join()
    assert repo.head() == want  # and the next read has a working cat-file again


def test_unstage_after_a_dead_cat_file_leaves_the_index_alone(repo):
    folder = repo.workdir / "skills" / "demo"
    killer = dies_on_next_read(repo)
    assert repo.unstage(folder) is False
    killer.join()
    assert git(repo.workdir, "diff", "--cached", "--name-only", "HEAD") == ""
    assert "SKILL.md" in git(repo.workdir, "ls-files", "--", "skills/demo")


def test_missing_commits_are_not_reported_for_a_dead_cat_file(repo):
    head = git(repo.workdir, "rev-parse", "HEAD").strip()
    killer = dies_on_next_read(repo)
    assert repo.missing_commits([head]) == []
    killer.join()
    assert repo.missing_commits(["0" * 40, head]) == ["0" * 40]


def test_a_folder_named_missing_is_still_read_after_a_dead_cat_file(repo):
    folder = repo.workdir / "skills" / "missing-data"
    folder.mkdir()
    (folder / "SKILL.md").write_text("---\nname: missing-data\ndescription: d\n---\nb\n")
    sha = repo.commit_folders([folder], "add missing-data")
    killer = dies_on_next_read(repo)
    tree = repo.tree_at(sha, "skills/missing-data")
    killer.join()
    assert set(tree) == {"SKILL.md"}
    assert repo.tree_at(sha, "skills/nowhere", missing_ok=True) == {}


def test_an_empty_repository_still_has_no_head(tmp_path):
    root = tmp_path / "empty"
    (root / "skills").mkdir(parents=True)
    git(root, "init", "-q")
    assert SkillsRepo(root / "skills").head() is None


# ---- 2. A git killed mid-write (kill -9, power loss) leaves its lock files; git then refuses every
# later write ("remove the file manually to continue"). A QA pass saw every publish of every skill
# fail that way after one killed publish (index.lock), and later after one that left HEAD.lock and
# next-index-*.lock (issue 21). Our write lock clears every such lock file, and only then: a lock
# that some process holds open, or that is seconds old, is git's own and is left alone.

LOCKS = ["index.lock", "HEAD.lock", "next-index-4242.lock", "refs/heads/{branch}.lock", "packed-refs.lock",
         "ORIG_HEAD.lock", "refs/tags/v1.lock"]


def left_lock(repo: SkillsRepo, age_s: float, name: str = "index.lock") -> Path:
    branch = git(repo.workdir, "symbolic-ref", "--short", "HEAD").strip()
    lock = Path(repo.repo.git_dir) / name.format(branch=branch)
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_bytes(b"DIRC")  # what a killed git leaves: a partial file nobody holds
    age(lock, age_s)
    return lock


def age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def commit_edit(repo: SkillsRepo, text: str) -> str:
    folder = repo.workdir / "skills" / "demo"
    (folder / "SKILL.md").write_text(f"---\nname: demo\ndescription: d\n---\n{text}\n")
    with repo.lock():
        return repo.commit_folders([folder], text)


@pytest.mark.parametrize("name", LOCKS)
def test_a_lock_left_by_a_killed_git_is_cleared_and_the_write_goes_through(repo, caplog, name):
    lock = left_lock(repo, 30, name)
    ours = Path(repo.repo.git_dir) / "skillforge.lock"
    with caplog.at_level(logging.WARNING):
        sha = commit_edit(repo, "second")
    assert not lock.exists() and "a git process that was killed left it" in caplog.text
    assert git(repo.workdir, "rev-parse", "HEAD").strip() == sha
    assert git(repo.workdir, "diff", "--cached", "--name-only", "HEAD") == ""
    age(ours, 30)  # our own write lock is never taken for git's
    commit_edit(repo, "third")
    assert ours.exists()


@pytest.mark.parametrize("name", ["index.lock", "HEAD.lock"])
def test_a_lock_some_process_holds_open_is_left_alone(repo, name):
    lock = left_lock(repo, 30, name)
    with lock.open("rb"):  # a live git (say, the user's own) still working on it
        with pytest.raises(GitError, match=name):
            commit_edit(repo, "second")
        assert lock.exists()


@pytest.mark.parametrize("name", ["index.lock", "HEAD.lock"])
def test_a_fresh_lock_is_left_alone(repo, name):
    lock = left_lock(repo, 0, name)
    with pytest.raises(GitError, match=name):
        commit_edit(repo, "second")
    assert lock.exists()


def git_version() -> tuple[int, ...]:
    return tuple(int(x) for x in git(Path("."), "version").split()[2].split(".")[:2])


@pytest.mark.skipif(git_version() < (2, 28), reason="the reference-transaction hook needs git 2.28")
def test_a_commit_killed_while_it_moves_the_branch_is_recovered(repo, tmp_path):
    """The real thing: `git commit -- path` (as commit_folders runs it) SIGKILLed while it holds the
    branch's lock (a reference-transaction hook pauses it there) leaves index.lock,
    next-index-*.lock, HEAD.lock and refs/heads/<branch>.lock. The next write goes through."""
    ready = tmp_path / "ready"
    hooks = Path(repo.repo.git_dir) / "hooks"
    hooks.mkdir(exist_ok=True)
    hook = hooks / "reference-transaction"
    hook.write_text(f'#!/bin/sh\n[ "$1" = prepared ] && touch "{ready}" && sleep 60\nexit 0\n')
    hook.chmod(0o755)
    folder = repo.workdir / "skills" / "demo"
    (folder / "SKILL.md").write_text("---\nname: demo\ndescription: d\n---\nkilled\n")
    before = git(repo.workdir, "rev-parse", "HEAD").strip()
    git(repo.workdir, "add", "-A", "--", "skills/demo")
    proc = subprocess.Popen(["git", "-C", str(repo.workdir), "-c", "user.name=t", "-c", "user.email=t@t", "commit",
                             "-qm", "killed", "--", "skills/demo"], start_new_session=True)
    deadline = time.monotonic() + 60
    while not ready.exists():
        assert proc.poll() is None and time.monotonic() < deadline, "git never reached its branch update"
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    hook.unlink()
    left = sorted(p.relative_to(repo.repo.git_dir).as_posix() for p in Path(repo.repo.git_dir).rglob("*.lock"))
    assert {"index.lock", "HEAD.lock"} <= set(left) and any(n.startswith("next-index-") for n in left) \
        and any(n.startswith("refs/heads/") for n in left), left
    for lock in Path(repo.repo.git_dir).rglob("*.lock"):
        age(lock, 30)  # as found a few seconds later
    sha = commit_edit(repo, "after the kill")
    assert git(repo.workdir, "rev-parse", "HEAD~1").strip() == before and sha != before
    assert [p.name for p in Path(repo.repo.git_dir).rglob("*.lock")] == ["skillforge.lock"]
    assert git(repo.workdir, "status", "--porcelain", "--", "skills") == ""
