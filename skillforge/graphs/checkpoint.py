"""The checkpointer of CLI and batch runs, with SkillForge's state types registered, so checkpoints
round-trip them as typed models (and stay loadable once LangGraph blocks unregistered types).

`checkpointer_for(ws, name)` decides: a SqliteSaver at `<workspace>/checkpoints/<name>` by default,
or, when `SKILLFORGE_CHECKPOINT_URL=postgresql://...` is set, a PostgresSaver on that database (one
schema per store name, `setup()` run once per process and schema, under an advisory lock so that
workers starting together do not race on the migrations)."""

from __future__ import annotations

import enum
import importlib
import inspect
import logging
import os
import re
import sqlite3
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from pydantic import BaseModel

from skillforge.errors import CheckpointStoreError
from skillforge.sqlite_wal import enable_wal

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg import Connection

    from skillforge.config import Workspace

log = logging.getLogger(__name__)
CHECKPOINT_URL_ENV = "SKILLFORGE_CHECKPOINT_URL"
CHECKPOINT_BUSY_S = 15.0
"""How long a checkpoint write waits for another process's lock (SQLite's busy timeout)."""
SETUP_LOCK = 0x5F6B1
"""pg_advisory_lock key held while one process runs the PostgresSaver migrations."""
_set_up: set[tuple[str, str]] = set()
_setup_guard = threading.Lock()

STATE_MODULES = ("skillforge.state.evaluate", "skillforge.state.evaluate_graph", "skillforge.state.llm",
                 "skillforge.state.route", "skillforge.state.skill", "skillforge.state.release",
                 "skillforge.evaluation", "skillforge.rules.ratchet", "skillforge.rules.paired",
                 "skillforge.state.evolve")


def state_types(modules: tuple[str, ...] = STATE_MODULES) -> list[tuple[str, str]]:
    """(module, class) of every pydantic model and enum the graphs keep in state (in `modules`)."""
    found = []
    for name in modules:
        module = importlib.import_module(name)
        for attr, obj in vars(module).items():
            if inspect.isclass(obj) and obj.__module__ == name and issubclass(obj, (BaseModel, enum.Enum)):
                found.append((name, attr))
    return sorted(found)


def serializer(modules: tuple[str, ...] = STATE_MODULES) -> JsonPlusSerializer:
    """The checkpoint serializer with every SkillForge state type (of `modules`) allowed."""
    return JsonPlusSerializer(allowed_msgpack_modules=state_types(modules))


def sqlite_saver(path: Path, serde: JsonPlusSerializer | None = None) -> SqliteSaver:
    """A SqliteSaver on `path` (created), with our serializer (or `serde`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, check_same_thread=False, timeout=CHECKPOINT_BUSY_S)
    try:
        # SqliteSaver's own setup switches to WAL too, unretried; once the file is WAL that is a no-op
        enable_wal(conn, CHECKPOINT_BUSY_S)
    except sqlite3.DatabaseError as e:
        conn.close()
        raise CheckpointStoreError(f"{path}: cannot open the checkpoint store: {e}") from None
    return SqliteSaver(conn, serde=serde or serializer())


def checkpoint_url(env: dict[str, str] | None = None) -> str | None:
    """The Postgres URL from SKILLFORGE_CHECKPOINT_URL, or None (SQLite). Anything but a
    postgresql:// or postgres:// URL is a CheckpointStoreError."""
    url = (os.environ if env is None else env).get(CHECKPOINT_URL_ENV, "").strip()
    if not url:
        return None
    if not url.startswith(("postgresql://", "postgres://")):
        raise CheckpointStoreError(f"{CHECKPOINT_URL_ENV} must be a postgresql://user@host:port/db URL, got {redact(url)!r}")
    return url


def redact(url: str) -> str:
    """The URL without its password, for messages."""
    return re.sub(r"://([^:/@]+):[^@]*@", r"://\1:***@", url)


def schema_for(name: str) -> str:
    """The Postgres schema of a store name: `graphs.sqlite` -> `skillforge_graphs`."""
    return "skillforge_" + re.sub(r"[^a-z0-9_]", "_", Path(name).stem.lower())


def pg_connect(url: str, schema: str | None = None, *, autocommit: bool = True) -> Connection:
    """A psycopg connection (dict rows, no prepared statements, TCP keepalives so that a dead
    peer's session ends), with `search_path` set to `schema` when given."""
    try:
        import psycopg
        from psycopg.rows import dict_row
    except ImportError:
        raise CheckpointStoreError(f"{CHECKPOINT_URL_ENV} is set but the [postgres] extra is not installed: "
                                   "pip install 'skillforge[postgres]'") from None
    kw: dict[str, str | int] = {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5,
                                "keepalives_count": 3, "connect_timeout": 10}
    if schema is not None:
        kw["options"] = f"-c search_path={schema}"
    try:
        return psycopg.Connection.connect(url, autocommit=autocommit, prepare_threshold=0, row_factory=dict_row, **kw)
    except psycopg.Error as e:
        raise CheckpointStoreError(f"cannot reach the checkpoint database {redact(url)}: {str(e).strip()[:300]}") from None


def postgres_saver(url: str, name: str) -> PostgresSaver:
    """A PostgresSaver in the schema of store `name` on `url`, with our serializer; the schema and
    the tables are created (under an advisory lock) the first time this process opens it."""
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError:
        raise CheckpointStoreError(f"{CHECKPOINT_URL_ENV} is set but the [postgres] extra is not installed: "
                                   "pip install 'skillforge[postgres]'") from None
    schema = schema_for(name)
    conn = pg_connect(url, schema)
    saver = PostgresSaver(conn, serde=serializer())
    with _setup_guard:
        if (url, schema) not in _set_up:
            # try-and-sleep, not pg_advisory_lock: a session blocked in that call is a transaction the
            # migrations' CREATE INDEX CONCURRENTLY would wait for (a deadlock Postgres detects)
            while not conn.execute("SELECT pg_try_advisory_lock(%s) AS ok", (SETUP_LOCK,)).fetchone()["ok"]:
                time.sleep(0.1)
            try:
                conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
                saver.setup()
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (SETUP_LOCK,))
            _set_up.add((url, schema))
            log.info("checkpoints in %s, schema %s", redact(url), schema)
    return saver


def checkpointer_for(ws: Workspace, name: str) -> BaseCheckpointSaver:
    """The checkpointer every graph run of the CLI uses for store `name`: Postgres when
    SKILLFORGE_CHECKPOINT_URL is set, else SQLite at `<workspace>/checkpoints/<name>`."""
    url = checkpoint_url()
    if url is None:
        return sqlite_saver(ws.checkpoints_dir / name)
    return postgres_saver(url, name)


def thread_ids(saver: BaseCheckpointSaver, sqlite_path: Path | None = None) -> list[str]:
    """Every thread id the checkpointer holds, sorted."""
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError:
        PostgresSaver = None  # type: ignore[assignment,misc]  # noqa: N806
    if PostgresSaver is not None and isinstance(saver, PostgresSaver):
        with saver.lock, saver.conn.cursor() as cur:  # type: ignore[union-attr]
            rows = cur.execute("SELECT DISTINCT thread_id FROM checkpoints").fetchall()
        return sorted(r["thread_id"] for r in rows)
    if sqlite_path is None or not sqlite_path.exists():
        return []
    with sqlite3.connect(sqlite_path) as conn:
        try:
            found = conn.execute("SELECT DISTINCT thread_id FROM checkpoints").fetchall()
        except sqlite3.OperationalError:
            return []
    return sorted(r[0] for r in found)
