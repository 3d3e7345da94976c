"""A git killed mid-write (kill -9, power loss) leaves `.git/index.lock`; git then refuses every
later write ("remove the file manually to continue"). A QA pass saw every publish of every skill
fail that way after one killed publish. Our write lock clears such a lock file, and only then:
a lock that some process holds open, or that is seconds old, is git's own and is left alone."""

from __future__ import annotations

import logging
import os
import subprocess
import time
from pathlib import Path

import pytest

from skillforge.errors import GitError
from skillforge.gitrepo import SkillsRepo


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


def left_lock(repo: SkillsRepo, age_s: float) -> Path:
    lock = Path(repo.repo.git_dir) / "index.lock"
    lock.write_bytes(b"DIRC")  # what a killed `git add` leaves: a partial index nobody holds
    then = time.time() - age_s
    os.utime(lock, (then, then))
    return lock


def commit_edit(repo: SkillsRepo, text: str) -> str:
    folder = repo.workdir / "skills" / "demo"
    (folder / "SKILL.md").write_text(f"---\nname: demo\ndescription: d\n---\n{text}\n")
    with repo.lock():
        return repo.commit_folders([folder], text)


def test_a_lock_left_by_a_killed_git_is_cleared_and_the_write_goes_through(repo, caplog):
    lock = left_lock(repo, age_s=30)
    with caplog.at_level(logging.WARNING):
        sha = commit_edit(repo, "second")
    assert not lock.exists() and "a git process that was killed left it" in caplog.text
    assert git(repo.workdir, "rev-parse", "HEAD").strip() == sha
    assert git(repo.workdir, "diff", "--cached", "--name-only", "HEAD") == ""


def test_a_lock_some_process_holds_open_is_left_alone(repo):
    lock = left_lock(repo, age_s=30)
    with lock.open("rb"):  # a live git (say, the user's own) still working on the index
        with pytest.raises(GitError, match="index.lock"):
            commit_edit(repo, "second")
        assert lock.exists()


def test_a_fresh_lock_is_left_alone(repo):
    lock = left_lock(repo, age_s=0)
    with pytest.raises(GitError, match="index.lock"):
        commit_edit(repo, "second")
    assert lock.exists()
