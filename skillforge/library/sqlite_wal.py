"""Turning on SQLite's WAL mode when several processes open one new file at once.

Switching a file to WAL needs its exclusive lock. When another connection holds the reserved lock
(a write begun in rollback mode, as on a file another process is creating), SQLite answers "database
is locked" at once, without calling the busy handler: it would deadlock otherwise. Seen in CI: three
processes opening one new LLM cache together, one failed to open. Once the file is in WAL mode the
pragma is a no-op that takes no lock, so only the first opening races; it is retried with backoff.
"""

from __future__ import annotations

import sqlite3
import time


def is_lock_error(e: BaseException) -> bool:
    """Whether SQLite said another connection holds the lock ("database is locked", "busy")."""
    text = str(e).lower()
    return isinstance(e, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


def enable_wal(conn: sqlite3.Connection, timeout_s: float) -> str:
    """Put `conn`'s file in WAL mode, retrying a "locked"/"busy" answer until `timeout_s` has
    passed (then the OperationalError propagates). Returns the journal mode in force: a file system
    without shared memory keeps its old mode, and SQLite still works on it."""
    deadline = time.monotonic() + timeout_s
    attempt = 0
    while True:
        try:
            mode = str(conn.execute("PRAGMA journal_mode").fetchall()[0][0]).lower()
            if mode != "wal":
                mode = str(conn.execute("PRAGMA journal_mode = WAL").fetchall()[0][0]).lower()
            return mode
        except sqlite3.OperationalError as e:
            if not is_lock_error(e) or time.monotonic() >= deadline:
                raise
            attempt += 1
            time.sleep(min(0.2, 0.005 * attempt))
