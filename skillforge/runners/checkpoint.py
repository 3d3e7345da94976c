"""The checkpointer of CLI and batch runs, with SkillForge's state types registered, so checkpoints
round-trip them as typed models (and stay loadable once LangGraph blocks unregistered types). The
types are every pydantic model and enum under `skillforge.state`; a checkpoint written before a type
moved there (it names the type's old module) is read through `LEGACY_TYPES`.

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
import pkgutil
import re
import shlex
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ormsgpack
from langgraph.checkpoint.serde.jsonplus import (EXT_CONSTRUCTOR_KW_ARGS, EXT_CONSTRUCTOR_POS_ARGS,
                                                 EXT_CONSTRUCTOR_SINGLE_ARG, EXT_METHOD_SINGLE_ARG, EXT_PYDANTIC_V1,
                                                 EXT_PYDANTIC_V2, JsonPlusSerializer)
from langgraph.checkpoint.sqlite import SqliteSaver
from pydantic import BaseModel

import skillforge.state
from skillforge.config import WORKSPACE_ID_FILE
from skillforge.errors import CheckpointStoreError, SkillForgeError
from skillforge.rules.ids import IdKind, run_owner, thread_id
from skillforge.state.cliopts import EvalVerdict, ExecutionMode, Role
from skillforge.state.ids import require_id
from skillforge.state.result import DimensionScores, EvalKind, EvalResult, Evidence, Measured, Outcome, RatchetVerdict
from skillforge.library.sqlite_wal import enable_wal

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

LEGACY_TYPES: dict[tuple[str, str], type] = {
    **{(old, cls.__name__): cls for old in ("skillforge.evaluation", "skillforge.evaluation.compare")
       for cls in (EvalKind, Measured, EvalResult)},
    **{("skillforge.rules.paired", cls.__name__): cls for cls in (Outcome, Evidence)},
    **{("skillforge.rules.ratchet", cls.__name__): cls for cls in (RatchetVerdict, DimensionScores)},
    ("skillforge.state.result", "EvalVerdict"): EvalVerdict,
    ("skillforge.state.evaluate", "ExecutionMode"): ExecutionMode,
    ("skillforge.state.llm", "Role"): Role,
}
"""(module, class) a stored checkpoint may name -> the state type it is now. Checkpoints name each
model and enum by module: these are the paths of types that moved into state/ (skillforge.evaluation
until the package split, then skillforge.evaluation.compare; rules/paired.py, rules/ratchet.py), and
of the enums the CLI names, which moved to state/cliopts.py to keep its start-up free of pydantic."""
NAMED_CODES = frozenset({EXT_CONSTRUCTOR_SINGLE_ARG, EXT_CONSTRUCTOR_POS_ARGS, EXT_CONSTRUCTOR_KW_ARGS,
                         EXT_METHOD_SINGLE_ARG, EXT_PYDANTIC_V1, EXT_PYDANTIC_V2})
"""LangGraph's msgpack ext records whose payload starts with (module, class name)."""
_LEGACY_MARKS = tuple(sorted({module.encode() for module, _ in LEGACY_TYPES}))


def state_modules() -> list[str]:
    """Every module of the `skillforge.state` package, sorted."""
    return sorted(m.name for m in pkgutil.walk_packages(skillforge.state.__path__, "skillforge.state."))


def state_types() -> list[tuple[str, str]]:
    """(module, class) of every pydantic model and enum under `skillforge.state`: the types the graphs
    keep in state."""
    found = []
    for name in state_modules():
        for obj in vars(importlib.import_module(name)).values():
            if inspect.isclass(obj) and obj.__module__ == name and issubclass(obj, (BaseModel, enum.Enum)):
                found.append((name, obj.__name__))
    return sorted(found)


def _renamed_ext(code: int, data: bytes) -> ormsgpack.Ext:
    """One msgpack ext record, with each legacy (module, class) in it (nested ones too) renamed to
    the type's path now; untouched when its bytes name no legacy module."""
    if not any(mark in data for mark in _LEGACY_MARKS):
        return ormsgpack.Ext(code, data)
    value = ormsgpack.unpackb(data, ext_hook=_renamed_ext, option=ormsgpack.OPT_NON_STR_KEYS)
    if code in NAMED_CODES and isinstance(value, list) and len(value) >= 2:
        now = LEGACY_TYPES.get((value[0], value[1]))
        if now is not None:
            value[0], value[1] = now.__module__, now.__name__
    return ormsgpack.Ext(code, ormsgpack.packb(value, option=ormsgpack.OPT_NON_STR_KEYS))


def renamed(blob: bytes) -> bytes:
    """A msgpack blob with every legacy type path renamed (`LEGACY_TYPES`), for LangGraph to load
    as usual; the same bytes when it names no legacy module."""
    if not any(mark in blob for mark in _LEGACY_MARKS):
        return blob
    value = ormsgpack.unpackb(blob, ext_hook=_renamed_ext, option=ormsgpack.OPT_NON_STR_KEYS)
    return ormsgpack.packb(value, option=ormsgpack.OPT_NON_STR_KEYS)


class StateSerializer(JsonPlusSerializer):
    """LangGraph's serializer, which also reads the checkpoints written before a state type moved:
    their type paths are renamed (`renamed`) before LangGraph's allowlist and reconstruction see
    them, so they load as the typed models they were (not as blocked raw dicts and strings)."""

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        kind, blob = data
        return super().loads_typed((kind, renamed(blob) if kind == "msgpack" else blob))


def serializer() -> JsonPlusSerializer:
    """The checkpoint serializer with every SkillForge state type allowed (`state_types`)."""
    return StateSerializer(allowed_msgpack_modules=state_types())


class CheckpointCorrupt(CheckpointStoreError):
    """The SQLite checkpoint file is damaged ("database disk image is malformed", "file is not a
    database"); the message names the file and what moving it aside loses and keeps."""


def is_corrupt(e: sqlite3.Error) -> bool:
    """SQLite's own verdict that a file is damaged or not a database at all (not a lock, not a
    full disk, not a missing table)."""
    return getattr(e, "sqlite_errorname", "") in ("SQLITE_CORRUPT", "SQLITE_NOTADB")


def damaged(path: Path, e: sqlite3.Error) -> CheckpointCorrupt:
    """The named error for a damaged checkpoint file: what the user can do, what is lost, what is not."""
    where = shlex.quote(str(path))
    return CheckpointCorrupt(
        f"{path} is damaged ({e}). Move it aside (mv {where} {where}.damaged, and its -wal / -shm files if "
        "any) and run the command again: the unfinished runs it held (waiting for a review or a budget, or "
        "killed) are lost and must be started again; releases and their history (runs/skillforge.db, the "
        "skills git repository), evaluation results, traces and logs (runs/) are not.")


class CheckedSqliteSaver(SqliteSaver):
    """SqliteSaver whose every query turns SQLite's "this file is damaged" into CheckpointCorrupt
    (every read and write goes through `cursor`), instead of an internal error."""

    def __init__(self, conn: sqlite3.Connection, path: Path, serde: JsonPlusSerializer | None = None) -> None:
        super().__init__(conn, serde=serde or serializer())
        self.path = path

    @contextmanager
    def cursor(self, transaction: bool = True) -> Iterator[sqlite3.Cursor]:
        try:
            with super().cursor(transaction) as cur:
                yield cur
        except sqlite3.DatabaseError as e:
            if is_corrupt(e):
                raise damaged(self.path, e) from None
            raise

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """LangGraph's `BaseCheckpointSaver.prune`, which SqliteSaver 3.1 leaves unimplemented
        (PostgresSaver has it): "delete" is `delete_thread` for each thread; "keep_latest" keeps
        each namespace's latest checkpoint (the one `get_tuple` loads, by checkpoint id) with its
        writes, and deletes the rest. One transaction per thread, so a kill leaves each thread
        pruned or untouched. No graph of ours uses a DeltaChannel (whose latest value would need
        the deleted ancestors)."""
        if isinstance(thread_ids, str):
            raise TypeError("thread_ids must be a sequence of thread ids, not a str")
        if strategy not in ("keep_latest", "delete"):
            raise ValueError(f"unknown prune strategy: {strategy!r}")
        for tid in thread_ids:
            if strategy == "delete":
                self.delete_thread(tid)
                continue
            with self.cursor() as cur:
                for table in ("writes", "checkpoints"):
                    cur.execute(f"DELETE FROM {table} WHERE thread_id = ? AND {not_latest(table)}", (tid,))


def not_latest(table: str) -> str:
    """SQL condition: a row of `table` (checkpoints or writes) that is not of its thread and
    namespace's latest checkpoint (what `prune(strategy="keep_latest")` deletes)."""
    return (f"{table}.checkpoint_id IS NOT (SELECT max(m.checkpoint_id) FROM checkpoints m "
            f"WHERE m.thread_id = {table}.thread_id AND m.checkpoint_ns = {table}.checkpoint_ns)")


def sqlite_saver(path: Path, serde: JsonPlusSerializer | None = None) -> SqliteSaver:
    """A SqliteSaver on `path` (created), with our serializer (or `serde`); a damaged file is
    CheckpointCorrupt."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, check_same_thread=False, timeout=CHECKPOINT_BUSY_S)
    try:
        # SqliteSaver's own setup switches to WAL too, unretried; once the file is WAL that is a no-op
        enable_wal(conn, CHECKPOINT_BUSY_S)
    except sqlite3.DatabaseError as e:
        conn.close()
        if is_corrupt(e):
            raise damaged(path, e) from None
        raise CheckpointStoreError(f"{path}: cannot open the checkpoint store: {e}") from None
    return CheckedSqliteSaver(conn, path, serde)


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


class ForeignRun(SkillForgeError):
    """The run id exists in the shared checkpoint database, but under another workspace's id."""


def is_shared(saver: BaseCheckpointSaver) -> bool:
    """True for a checkpointer several workspaces may share (Postgres); False for the workspace's
    own SQLite file."""
    return not isinstance(saver, SqliteSaver)


def thread_scope(ws: Workspace, saver: BaseCheckpointSaver) -> str | None:
    """The prefix of this workspace's thread ids in `saver`: its workspace id in a shared database,
    None in its own SQLite file (whose thread ids stay the bare run ids, as they always were)."""
    return ws.workspace_id if is_shared(saver) else None


def run_thread(saver: BaseCheckpointSaver, ws: Workspace, run_id: str) -> str:
    """The thread id of this workspace's run `run_id` in `saver`; InvalidId for an id that could
    name a path (it also names files under runs/)."""
    return thread_id(thread_scope(ws, saver), require_id(IdKind.RUN, run_id))


def refuse_foreign(saver: BaseCheckpointSaver, ws: Workspace, run_id: str, what: str = "run") -> None:
    """ForeignRun, naming the other workspace, when `run_id` is not this workspace's but another's
    in the shared database; nothing otherwise (an unknown run is the caller's to report)."""
    scope = thread_scope(ws, saver)
    owner = None if scope is None else run_owner(thread_ids(saver), scope, run_id)
    if owner is None:
        return
    other = (f"workspace '{owner}'" if owner else
             "no workspace (it was written before runs were scoped by workspace, so it cannot be told apart)")
    raise ForeignRun(f"{what} '{run_id}' belongs to {other}, not to this one ('{scope}', {ws.root}): both use the "
                     f"checkpoint database {redact(checkpoint_url() or '')}. Run the command in that workspace "
                     f"(its id is in runs/{WORKSPACE_ID_FILE}); runs are never answered or shown across workspaces.")


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
    with closing(sqlite3.connect(sqlite_path)) as conn:
        try:
            found = conn.execute("SELECT DISTINCT thread_id FROM checkpoints").fetchall()
        except sqlite3.OperationalError:
            return []
        except sqlite3.DatabaseError as e:
            if is_corrupt(e):
                raise damaged(sqlite_path, e) from None
            raise
    return sorted(r[0] for r in found)
