"""The response cache: SQLite in the workspace (runs/llm_cache.db).

The key hashes everything that can change an answer: role, endpoint, model, the messages, the
tools or output schema, and the generation parameters. Only successful, validated answers are
stored; an error is never cached.

Concurrency: several processes (evolve workers, `--all` batches) and the graph's worker threads share
one file. Each thread gets its own connection, every read finishes (and so ends its read
transaction) before it returns, and every write is a BEGIN IMMEDIATE transaction, so the busy timeout
applies to it. One shared connection did not hold: a write on a connection whose other thread still
had a read open failed at once with "database is locked" when another process had written since
(SQLite's stale WAL snapshot; the busy handler does not retry it). A cache is an optimisation: a
write that still cannot get the lock, or a read that fails, is logged and skipped, never an error
of the call that made the answer.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import sqlite3
import threading
import time
from pathlib import Path

from skillforge.errors import StoreError
from skillforge.library.sqlite_wal import enable_wal

CACHE_FILE = "llm_cache.db"
BUSY_TIMEOUT_S = 15.0
WRITE_ATTEMPTS = 3
"""Each attempt waits up to BUSY_TIMEOUT_S for the write lock (SQLite's busy handler), then backs off."""

log = logging.getLogger(__name__)

RUN_NONCE = re.compile(r"sfn-[0-9a-f]{12}")
"""Evaluation runs stamp fixture responses with a fresh nonce (rules/provenance.py). It is masked in
cache keys, so a re-run of the same evaluation is served from the cache; a replayed answer that
repeats the old nonce is then caught by the provenance check as stale."""

_SCHEMA = ("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, role TEXT NOT NULL, "
           "model TEXT NOT NULL, answer_json TEXT NOT NULL CHECK (json_valid(answer_json)), "
           "created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')))")


def cache_key(**parts: object) -> str:
    """sha256 of the canonical JSON of the parts (sorted keys, no whitespace), nonces masked."""
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(RUN_NONCE.sub("sfn-<nonce>", blob).encode("utf-8")).hexdigest()


class LLMCache:
    """key -> JSON answer. Safe across threads and processes (a connection per thread, WAL, writes
    in BEGIN IMMEDIATE with a busy timeout, a failed read or write skipped with a warning)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._conns: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self.skipped_writes = 0
        try:
            self._open()
        except sqlite3.DatabaseError as e:
            self.close()
            raise StoreError(f"{self.path}: cannot open the LLM cache: {e}") from None

    def _open(self) -> None:
        conn = self._conn()
        enable_wal(conn, BUSY_TIMEOUT_S)  # several processes may open one new cache together
        self._write(conn, _SCHEMA, ())

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, isolation_level=None, timeout=BUSY_TIMEOUT_S, check_same_thread=False)
            self._local.conn = conn
            with self._lock:
                self._conns.append(conn)
        return conn

    @staticmethod
    def _write(conn: sqlite3.Connection, sql: str, args: tuple[object, ...]) -> None:
        for attempt in range(WRITE_ATTEMPTS):
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError:
                if attempt == WRITE_ATTEMPTS - 1:
                    raise
                time.sleep(0.05 * (attempt + 1))
                continue
            try:
                conn.execute(sql, args)
                conn.execute("COMMIT")
                return
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def get(self, key: str) -> dict[str, object] | None:
        try:
            rows = self._conn().execute("SELECT answer_json FROM responses WHERE key = ?", (key,)).fetchall()
        except sqlite3.DatabaseError as e:
            log.warning("LLM cache %s: read skipped (%s); the call goes to the model", self.path, e)
            return None
        return json.loads(rows[0][0]) if rows else None

    def put(self, key: str, role: str, model: str, answer: dict[str, object]) -> None:
        try:
            self._write(self._conn(), "INSERT OR REPLACE INTO responses(key, role, model, answer_json) "
                        "VALUES (?, ?, ?, ?)", (key, role, model, json.dumps(answer, ensure_ascii=False)))
        except sqlite3.DatabaseError as e:
            with self._lock:
                self.skipped_writes += 1
            log.warning("LLM cache %s: write skipped (%s); the answer is used but not cached", self.path, e)

    def older(self, before: str) -> tuple[int, int]:
        """(rows, bytes of their answers) written before `before` (the `created_at` format)."""
        row = self._conn().execute("SELECT count(*), coalesce(sum(length(key) + length(answer_json)), 0) "
                                   "FROM responses WHERE created_at < ?", (before,)).fetchall()[0]
        return int(row[0]), int(row[1])

    def drop_older(self, before: str) -> int:
        """Delete the answers written before `before`, in one transaction (a miss asks the model again)."""
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            n = conn.execute("DELETE FROM responses WHERE created_at < ?", (before,)).rowcount
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return int(n)

    def __len__(self) -> int:
        return int(self._conn().execute("SELECT count(*) FROM responses").fetchall()[0][0])

    def close(self) -> None:
        with self._lock:
            conns, self._conns = self._conns, []
        for conn in conns:
            conn.close()
        self._local = threading.local()
