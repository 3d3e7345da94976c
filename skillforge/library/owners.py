"""Who runs a PREPARING release: a lock file its process holds for as long as it lives.

Each ReleaseStateMachine that begins a release creates `runs/locks/<token>.lock` and holds an
exclusive flock on it; the token goes on the release row. The kernel drops the lock when the
process dies, however it dies (kill -9 included), so another process can tell a release that is
still being worked on (lock held: ReleaseConflict) from one left behind by a dead process (lock
free, or file gone: the next begin_release recovers it by itself, no watchdog needed).
"""

from __future__ import annotations

import fcntl
import os
import uuid
from pathlib import Path

LOCKS_DIR = "locks"


class ReleaseOwner:
    """This process's claim on the releases it begins (one lock file, taken on first use)."""

    def __init__(self, runs_dir: Path) -> None:
        self.folder = Path(runs_dir) / LOCKS_DIR
        self._token: str | None = None
        self._fd: int | None = None

    @property
    def token(self) -> str:
        """The token written on the rows this process begins; takes the lock on first use."""
        if self._token is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            token = uuid.uuid4().hex
            fd = os.open(self.folder / f"{token}.lock", os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.flock(fd, fcntl.LOCK_EX)
            self._token, self._fd = token, fd
        return self._token

    @property
    def held(self) -> str | None:
        """The token if this process holds one, else None (never takes the lock)."""
        return self._token

    def release(self) -> None:
        """Give the lock up and delete its file (call when no PREPARING row carries the token)."""
        if self._token is None or self._fd is None:
            return
        (self.folder / f"{self._token}.lock").unlink(missing_ok=True)
        os.close(self._fd)
        self._token, self._fd = None, None

    def alive(self, token: str | None) -> bool:
        """Whether the process owning `token` still runs (holds its lock). Rows without a token
        (written before owners existed) and missing lock files count as dead."""
        if not token or not token.isalnum():
            return False
        path = self.folder / f"{token}.lock"
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True  # held by its process (this one included, through another descriptor)
        finally:
            os.close(fd)
        return False

    def forget(self, token: str | None) -> None:
        """Delete the lock file of a dead owner once its releases are recovered."""
        if token and token.isalnum() and token != self._token and not self.alive(token):
            (self.folder / f"{token}.lock").unlink(missing_ok=True)


__all__ = ["LOCKS_DIR", "ReleaseOwner"]
