"""`runs prune`: remove what ended runs no longer need, then give the space back.

One reading of the workspace (every evolve and evaluate run's last checkpoint, the request
ledger's activity per run, the skills with a PREPARING release) goes to the pure rule
(rules/prune.py), which decides. Then, each step its own transaction(s), so a kill anywhere leaves
a working workspace and a second prune finishes the job:
- an ended evolve run keeps only its last checkpoint (LangGraph's `prune(strategy="keep_latest")`):
  `runs list`, `runs show`, `review show` read that, as before;
- an ended evaluation's thread goes (`delete_thread`): its verdict, traces and meta are in
  runs/evaluations.jsonl and runs/traces/, which `report` and `--rejudge` read;
- the ledger's request rows of pruned runs go (their totals stay), and cache answers older than the
  horizon;
- runs/router.jsonl's lines written before the cutoff (or an open canary's start, if earlier) move
  to runs/archive/ (library/logarchive.py), the newest use of each skill among them kept for
  `skills health`;
- each SQLite file that lost rows is VACUUMed and its WAL truncated. A file another process keeps
  busy past the busy timeout is reported (`busy`) and left as it is: the rows are gone, the space
  comes back at the next prune.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from skillforge.config import Workspace
from skillforge.library.sqlite_wal import is_lock_error
from skillforge.llm.cache import CACHE_FILE, LLMCache
from skillforge.llm.ledger import LEDGER_FILE, RequestLedger
from skillforge.rules.ids import scoped_run_ids, thread_id
from skillforge.library.logarchive import LogArchive, archive_router_log
from skillforge.rules.prune import LedgerRun, Plan, RunFacts, RunKind, cutoff_of, log_horizon, plan
from skillforge.rules.runs import run_status
from skillforge.runners.checkpoint import (checkpoint_url, is_shared, not_latest, postgres_saver, sqlite_saver,
                                          thread_ids, thread_scope)
from skillforge.runners.evaluate import CHECKPOINT_FILE
from skillforge.runners.reader import GRAPHS_DB, interrupt_kind, pending_of
from skillforge.state.evolve import EvolveStatus

VACUUM_BUSY_S = 15.0
"""How long VACUUM waits for another process's write lock before the file is reported busy."""


def cache_time(t: datetime) -> str:
    """`t` as the cache's `created_at` text (UTC, milliseconds), for comparing in SQL."""
    t = t.astimezone(UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def parse_time(value: object) -> datetime | None:
    """An aware datetime from an ISO text (a checkpoint's `ts`, a ledger `at`), or None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        t = datetime.fromisoformat(value)
    except ValueError:
        return None
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


@dataclass
class Report:
    """What a prune removed (or, with dry_run, would remove) and the files' sizes."""

    dry_run: bool
    older_than_days: float
    plan: Plan
    evolve_runs: list[str] = field(default_factory=list)
    evaluate_runs: list[str] = field(default_factory=list)
    checkpoint_rows: int = 0
    checkpoint_bytes: int = 0
    ledger_rows: int = 0
    cache_rows: int = 0
    cache_bytes: int = 0
    files: dict[str, dict[str, int]] = field(default_factory=dict)
    busy: list[str] = field(default_factory=list)
    router_log: LogArchive | None = None

    def as_json(self) -> dict[str, object]:
        kept: dict[str, list[str]] = {}
        for rid, why in self.plan.kept.items():
            kept.setdefault(why.value, []).append(rid)
        return {"dry_run": self.dry_run, "older_than_days": self.older_than_days,
                "evolve_runs": self.evolve_runs, "evaluate_runs": self.evaluate_runs,
                "kept": kept, "checkpoint_rows": self.checkpoint_rows, "checkpoint_bytes": self.checkpoint_bytes,
                "ledger_runs": self.plan.ledger_ids, "ledger_rows": self.ledger_rows, "cache_rows": self.cache_rows,
                "cache_bytes": self.cache_bytes, "files": self.files, "busy": self.busy,
                "router_log": self.router_log.as_json() if self.router_log is not None else None}


def file_bytes(path: Path) -> int:
    """A SQLite file's bytes on disk, with its -wal (not its -shm: a fixed-size index of the WAL)."""
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())


class _Checkpoints:
    """One checkpoint store (graphs or evaluate) of the workspace; None-safe when it does not exist."""

    def __init__(self, ws: Workspace, name: str) -> None:
        self.path = ws.checkpoints_dir / name
        url = checkpoint_url()
        self.saver = None
        if url is not None:
            self.saver = postgres_saver(url, name)
        elif self.path.exists():
            self.saver = sqlite_saver(self.path)
        self.scope = thread_scope(ws, self.saver) if self.saver is not None else None

    def last(self):  # noqa: ANN201 - yields (run id, CheckpointTuple)
        if self.saver is None:
            return
        for rid in scoped_run_ids(thread_ids(self.saver, self.path), self.scope):
            tup = self.saver.get_tuple({"configurable": {"thread_id": thread_id(self.scope, rid), "checkpoint_ns": ""}})
            if tup is not None and tup.checkpoint.get("channel_values"):
                yield rid, tup

    def rows_going(self, run_ids: list[str], keep_latest: bool) -> dict[str, tuple[int, int]]:
        """Per run: (rows, bytes of their blobs) a prune deletes; a run with nothing left to delete
        (pruned before) is left out. On Postgres every run is kept in, with (0, 0): not measured."""
        if self.saver is None or is_shared(self.saver):
            return {rid: (0, 0) for rid in run_ids}
        out: dict[str, tuple[int, int]] = {}
        with closing(sqlite3.connect(self.path, timeout=VACUUM_BUSY_S)) as conn:
            for rid in run_ids:
                rows = nbytes = 0
                for table, size in (("checkpoints", "length(checkpoint) + length(metadata)"), ("writes", "length(value)")):
                    going = f" AND {not_latest(table)}" if keep_latest else ""
                    n, b = conn.execute(f"SELECT count(*), coalesce(sum({size}), 0) FROM {table} WHERE thread_id = ?"
                                        + going, (thread_id(self.scope, rid),)).fetchall()[0]
                    rows, nbytes = rows + n, nbytes + b
                if rows:
                    out[rid] = (rows, nbytes)
        return out

    def prune(self, run_ids: list[str], strategy: str) -> None:
        if self.saver is not None and run_ids:
            self.saver.prune([thread_id(self.scope, rid) for rid in run_ids], strategy=strategy)

    def close(self) -> None:
        conn = getattr(self.saver, "conn", None)
        if conn is not None:
            conn.close()


def _evolve_facts(store: _Checkpoints) -> list[RunFacts]:
    out = []
    for rid, tup in store.last():
        values = tup.checkpoint["channel_values"]
        status = run_status(EvolveStatus(values.get("status", EvolveStatus.RUNNING)),
                            interrupt_kind(pending_of(tup.pending_writes)))
        out.append(RunFacts(rid, RunKind.EVOLVE, values.get("skill"), parse_time(tup.checkpoint.get("ts")),
                            parse_time(values.get("started_at")), status=status))
    return out


def _evaluate_facts(store: _Checkpoints) -> list[RunFacts]:
    return [RunFacts(rid, RunKind.EVALUATE, tup.checkpoint["channel_values"].get("skill"),
                     parse_time(tup.checkpoint.get("ts")), has_verdict=tup.checkpoint["channel_values"].get("result")
                     is not None) for rid, tup in store.last()]


def vacuum(path: Path) -> bool:
    """VACUUM a SQLite file that has free pages (rows deleted now, or by a prune killed before its
    VACUUM) and truncate its WAL; False when another process kept it busy past VACUUM_BUSY_S
    (nothing changed: SQLite's VACUUM is all or nothing)."""
    try:
        with closing(sqlite3.connect(path, timeout=VACUUM_BUSY_S, isolation_level=None)) as conn:
            if not conn.execute("PRAGMA freelist_count").fetchall()[0][0]:
                return True
            conn.execute("VACUUM")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    except sqlite3.OperationalError as e:
        if is_lock_error(e):
            return False
        raise
    return True


def prune_runs(ws: Workspace, days: float, *, dry_run: bool = False, now: datetime | None = None) -> Report:
    """Plan with rules/prune.py and (unless `dry_run`) carry it out; see the module docstring."""
    from skillforge.library.canaries import Canaries
    from skillforge.library.store import Store

    now = now or datetime.now(UTC)
    graphs, evals = _Checkpoints(ws, GRAPHS_DB), _Checkpoints(ws, CHECKPOINT_FILE)
    ledger_path, cache_path = ws.runs_dir / LEDGER_FILE, ws.runs_dir / CACHE_FILE
    ledger = RequestLedger(ledger_path) if ledger_path.exists() else None
    cache = LLMCache(cache_path) if cache_path.exists() else None
    try:
        activity = ledger.activity() if ledger is not None else []
        store = Store(ws.db_path)
        try:
            busy_skills = store.busy_skills()
            canary_starts = [parse_time(c.started_at) for c in Canaries(store).unfinished()]
        finally:
            store.close()
        decided = plan([*_evolve_facts(graphs), *_evaluate_facts(evals)],
                       [LedgerRun(rid, parse_time(a), parse_time(b)) for rid, a, b, _ in activity],
                       now=now, days=days, busy_skills=busy_skills)
        report = Report(dry_run, days, decided)
        going = {RunKind.EVOLVE: graphs.rows_going(decided.prune[RunKind.EVOLVE], True),
                 RunKind.EVALUATE: evals.rows_going(decided.prune[RunKind.EVALUATE], False)}
        report.evolve_runs, report.evaluate_runs = sorted(going[RunKind.EVOLVE]), sorted(going[RunKind.EVALUATE])
        counts = [c for per_run in going.values() for c in per_run.values()]
        report.checkpoint_rows, report.checkpoint_bytes = sum(r for r, _ in counts), sum(b for _, b in counts)
        chosen = set(decided.ledger_ids)
        report.ledger_rows = sum(n for rid, _, _, n in activity if rid in chosen)
        before = cache_time(decided.cache_before) if decided.cache_before is not None else None
        if cache is not None and before is not None:
            report.cache_rows, report.cache_bytes = cache.older(before)
        paths = {"checkpoints/" + GRAPHS_DB: graphs.path, "checkpoints/" + CHECKPOINT_FILE: evals.path,
                 "runs/" + LEDGER_FILE: ledger_path, "runs/" + CACHE_FILE: cache_path}
        report.files = {k: {"before": file_bytes(p)} for k, p in paths.items() if p.exists()}
        if dry_run:
            report.router_log = archive_router_log(ws, log_horizon(cutoff_of(now, days), canary_starts), dry_run=True)
            return report
        graphs.prune(report.evolve_runs, "keep_latest")
        evals.prune(report.evaluate_runs, "delete")
        if ledger is not None and decided.ledger_ids:
            report.ledger_rows = ledger.forget_requests(decided.ledger_ids)
        if cache is not None and before is not None and report.cache_rows:
            report.cache_rows = cache.drop_older(before)
    finally:
        for closer in (graphs.close, evals.close, *(x.close for x in (ledger, cache) if x is not None)):
            closer()
    report.router_log = archive_router_log(ws, log_horizon(cutoff_of(now, days), canary_starts), dry_run=dry_run,
                                           now=now)
    for name, info in report.files.items():
        shared = checkpoint_url() is not None and name.startswith("checkpoints/")
        if not shared and not vacuum(paths[name]):
            report.busy.append(name)
        info["after"] = file_bytes(paths[name])
    return report
