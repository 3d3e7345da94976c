"""One process drives the runs of a skill at a time: an exclusive flock on
`runs/locks/evolve-<skill>.lock`, held while a run of that skill is started, resumed, answered or
cancelled. The kernel drops it when the process dies (kill -9 included), so a dead holder never
blocks anyone. The file says who holds it (pid, run, since) for the message of whoever waits.

The holder deletes the file on release; a waiter that locked a file deleted meanwhile sees that
the path no longer names the file it holds, and starts again with the new one.
"""

from __future__ import annotations

import fcntl
import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from skillforge.config import Workspace
from skillforge.errors import RunBusy
from skillforge.journal import utc_now
from skillforge.library.owners import LOCKS_DIR

log = logging.getLogger(__name__)
POLL_S = 0.05
ANSWER_WAIT_S = 60.0
"""How long a review answer waits for another process that is driving the same skill's run (a
publish takes seconds; a rebase, which validates again, may take longer: then the answer is refused
as busy, never queued behind it blindly)."""


def lock_path(ws: Workspace, skill: str) -> Path:
    return ws.runs_dir / LOCKS_DIR / f"evolve-{skill}.lock"


def _holder(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8").split()
    except OSError:
        return "another process"
    return f"process {text[0]} (run {text[1]}, since {text[2]})" if len(text) >= 3 else "another process"


def _try(path: Path) -> int | None:
    """A descriptor holding the lock on the file `path` names now, or None if it is held."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    try:
        if os.fstat(fd).st_ino == os.stat(path).st_ino:
            return fd
    except FileNotFoundError:
        pass
    os.close(fd)  # the holder deleted it between our open and our lock: take the new one
    return _try(path)


BUSY_HINT = "try again when it is done (skillforge runs list shows where each run is)"


@contextmanager
def driving(ws: Workspace, skill: str, run_id: str, *, wait_s: float = 0.0, busy: str = BUSY_HINT) -> Iterator[None]:
    """Hold the skill's lock for the block; wait up to `wait_s` for it, then RunBusy naming the
    holder and `busy` (what to do)."""
    path = lock_path(ws, skill)
    path.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + wait_s
    said = False
    while (fd := _try(path)) is None:
        if time.monotonic() >= deadline:
            raise RunBusy(f"'{skill}' is being evolved by {_holder(path)}: {busy}")
        if not said:  # a wait is never silent: who holds the skill, and for how long we wait
            log.warning("'%s' is being evolved by %s: waiting up to %.0f s for it to let go", skill, _holder(path),
                        wait_s)
            said = True
        time.sleep(POLL_S)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()} {run_id} {utc_now()}\n".encode())
        yield
    finally:
        try:
            path.unlink(missing_ok=True)
        finally:
            os.close(fd)
