"""Runs one `skillforge` command in this process and pauses at a named point, so that a test
can send SIGINT exactly there (used by tests/test_release_safety.py).

usage: python sigint_worker.py POINT RUNS_DIR ARGS...
  POINT  begin      after begin_release returned (a PREPARING row exists)
         staged     inside write_commit, after `git add` and before `git commit`
         written    after write_commit returned (the release has its commit)
         committed  after commit_release returned (the release is live)
         list       while `skills list` reads the store (a command with no release)
         git-hook   nothing patched: a git hook the test installed creates RUNS_DIR/ready itself
At the point it creates RUNS_DIR/ready, then waits until the test creates RUNS_DIR/go (after it
sent the signal), and goes on. The exit code and output are the command's own.
"""

from __future__ import annotations

import functools
import sys
import time
from pathlib import Path

from skillforge.cli import main as cli
from skillforge.library.gitrepo import SkillsRepo
from skillforge.library.releases import ReleaseStateMachine
from skillforge.library.store import Store


def pause(runs: Path) -> None:
    (runs / "ready").touch()
    deadline = time.monotonic() + 60
    while not (runs / "go").exists() and time.monotonic() < deadline:
        time.sleep(0.002)


def after(cls: type, name: str, runs: Path) -> None:
    original = getattr(cls, name)

    @functools.wraps(original)
    def wrapper(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        result = original(*args, **kwargs)
        pause(runs)
        return result

    setattr(cls, name, wrapper)


def main() -> None:
    point, runs, args = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]
    if point == "begin":
        after(ReleaseStateMachine, "begin_release", runs)
    elif point == "written":
        after(ReleaseStateMachine, "write_commit", runs)
    elif point == "committed":
        after(ReleaseStateMachine, "commit_release", runs)
    elif point == "staged":
        original = SkillsRepo.commit_folders

        def staged(self, folders, message, **kw):  # noqa: ANN001, ANN202
            self.repo.git.add("-A", "--", *[self.rel(f) for f in folders])
            pause(runs)
            return original(self, folders, message, **kw)

        SkillsRepo.commit_folders = staged
    elif point == "list":
        original_list = Store.current_releases

        def listing(self):  # noqa: ANN001, ANN202
            pause(runs)
            return original_list(self)

        Store.current_releases = listing
    sys.argv = ["skillforge", *args]
    cli.main()


if __name__ == "__main__":
    main()
