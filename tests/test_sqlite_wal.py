"""Opening a new SQLite file while another process is creating it.

Switching a file to WAL needs its exclusive lock; when another connection holds the reserved lock
(a write begun in rollback mode) SQLite answers "database is locked" at once, without its busy
handler. CI saw it: one of three processes opening one new LLM cache failed. Each of our SQLite
files (release store, LLM cache, vector cache, checkpoints) must wait for the other writer instead,
and a lock held past the timeout must be a named error that deletes nothing.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from skillforge.errors import StoreError
from skillforge.runners.checkpoint import sqlite_saver
from skillforge.llm.cache import LLMCache
from skillforge.routing import embedding
from skillforge.routing.embedding import EmbedderError, VectorCache
from skillforge.library.sqlite_wal import enable_wal
from skillforge.library.store import Store


class Writer:
    """Another process's connection: a new file in rollback mode, a write transaction open."""

    def __init__(self, path: Path, hold_s: float) -> None:
        self.path, self.hold_s = path, hold_s
        self.ready, self.release = threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self._run)
        self.thread.start()
        assert self.ready.wait(5)

    def _run(self) -> None:
        conn = sqlite3.connect(self.path, isolation_level=None)
        conn.execute("CREATE TABLE other (x)")
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO other VALUES (1)")
        self.ready.set()
        self.release.wait(self.hold_s)
        conn.execute("COMMIT")
        conn.close()

    def join(self) -> None:
        self.release.set()
        self.thread.join(5)


def _open_llm_cache(p: Path) -> object:
    return LLMCache(p)


def _open_store(p: Path) -> object:
    return Store(p)


def _open_vectors(p: Path) -> object:
    return VectorCache(p)


def _open_checkpoints(p: Path) -> object:
    return sqlite_saver(p)


OPENERS = {"llm cache": _open_llm_cache, "release store": _open_store, "vector cache": _open_vectors,
           "checkpoints": _open_checkpoints}


@pytest.mark.parametrize("name", sorted(OPENERS))
def test_opening_waits_for_a_writer_that_holds_the_new_file(tmp_path, name):
    path = tmp_path / "new.db"
    writer = Writer(path, hold_s=0.4)
    try:
        started = time.monotonic()
        opened = OPENERS[name](path)
        waited = time.monotonic() - started
    finally:
        writer.join()
    assert waited >= 0.2  # it waited for the writer rather than failing at once or ignoring the lock
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT count(*) FROM other").fetchone()[0] == 1  # the writer's row kept
    getattr(opened, "close", lambda: None)()


def test_enable_wal_gives_up_after_its_timeout_and_leaves_the_mode(tmp_path):
    path = tmp_path / "held.db"
    writer = Writer(path, hold_s=10)
    conn = sqlite3.connect(path, isolation_level=None, timeout=0.05)
    try:
        started = time.monotonic()
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            enable_wal(conn, 0.3)
        assert 0.25 <= time.monotonic() - started < 5
    finally:
        conn.close()
        writer.join()
    with sqlite3.connect(path) as check:
        assert check.execute("PRAGMA journal_mode").fetchone()[0] == "delete"


def test_enable_wal_is_a_no_op_on_a_wal_file(tmp_path):
    conn = sqlite3.connect(tmp_path / "w.db", isolation_level=None)
    assert enable_wal(conn, 1) == "wal"
    assert enable_wal(conn, 1) == "wal"
    conn.close()


def test_a_store_held_past_its_timeout_is_a_store_error(tmp_path):
    path = tmp_path / "skillforge.db"
    writer = Writer(path, hold_s=10)
    try:
        with pytest.raises(StoreError, match="cannot open the store"):
            Store(path, busy_timeout_ms=200)
    finally:
        writer.join()


def test_a_locked_vector_cache_is_an_error_and_is_not_deleted_as_corrupt(tmp_path, monkeypatch):
    monkeypatch.setattr(embedding, "VECTOR_BUSY_S", 0.2)
    path = tmp_path / "vectors.db"
    writer = Writer(path, hold_s=10)
    try:
        with pytest.raises(EmbedderError, match="locked by another process"):
            VectorCache(path)
    finally:
        writer.join()
    with sqlite3.connect(path) as conn:  # the other process's data is still there
        assert conn.execute("SELECT count(*) FROM other").fetchone()[0] == 1
