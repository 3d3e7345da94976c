"""Lock files a killed git leaves in the repository, and when they may be removed.

git takes a lock by creating `<file>.lock` and renames it into place when done. Killed in between
(kill -9, a closed terminal, power loss), it leaves the lock file behind and every later git write
fails ("Unable to create '.../index.lock': File exists ... remove the file manually"). A `git
commit -- paths` killed while it moves the branch leaves four: index.lock, next-index-<pid>.lock,
HEAD.lock and refs/heads/<branch>.lock. SkillForge clears them under its own write lock, and only
those that are stale.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable
from pathlib import Path

from skillforge.errors import NotWritable

log = logging.getLogger(__name__)

STALE_LOCK_S = 2.0
"""A git lock file younger than this is never taken for stale (git closes it just before renaming)."""
OUR_LOCK = "skillforge.lock"
"""Our own write lock in the git folder (see SkillsRepo.lock): never a git lock file."""


def held_open(paths: Iterable[Path]) -> set[str]:
    """Which of `paths` (as realpaths) any process we can see has open (Linux /proc). Unreadable
    processes (other users') are skipped: they cannot be running git in this repository as us."""
    targets = {os.path.realpath(p) for p in paths}
    held: set[str] = set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            fds = list((proc / "fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink(fd)
            except OSError:
                continue
            if link in targets:
                held.add(link)
    return held


def git_lock_files(git_dir: Path, common_dir: Path) -> list[Path]:
    """Every lock file a killed git may leave: any `*.lock` at the top of the git folder (and of
    the common folder, for a worktree), ours excepted: index.lock, HEAD.lock, next-index-*.lock,
    packed-refs.lock, ...; and `refs/**/*.lock` (a branch or tag being moved)."""
    found: dict[Path, None] = {}
    for folder in dict.fromkeys((git_dir.resolve(), common_dir.resolve())):
        for lock in (*folder.glob("*.lock"), *(folder / "refs").rglob("*.lock")):
            if lock.name != OUR_LOCK and lock.is_file() and not lock.is_symlink():
                found[lock] = None
    return list(found)


def clear_stale_locks(git_dir: Path, common_dir: Path) -> list[Path]:
    """Remove the stale lock files among `git_lock_files` and return them. Stale means at least
    STALE_LOCK_S old and held open by no process (git keeps a lock file open while it writes it).
    Where open files cannot be listed (no /proc), nothing is removed: git reports them itself.
    Call it only under our write lock, so that none of our own git commands is running."""
    now = time.time()
    old = []
    for lock in git_lock_files(git_dir, common_dir):
        try:
            if now - lock.stat().st_mtime >= STALE_LOCK_S:
                old.append(lock)
        except FileNotFoundError:
            continue
    if not old or not Path("/proc/self/fd").is_dir():
        return []
    held = held_open(old)
    removed = []
    for lock in old:
        if os.path.realpath(lock) in held:
            continue
        try:
            lock.unlink()
        except FileNotFoundError:
            continue
        except OSError as e:
            raise NotWritable(f"cannot remove the stale git lock {lock}: {e.strerror or e}") from None
        log.warning("removed %s: a git process that was killed left it (no process holds it)", lock)
        removed.append(lock)
    return removed


__all__ = ["OUR_LOCK", "STALE_LOCK_S", "clear_stale_locks", "git_lock_files", "held_open"]
