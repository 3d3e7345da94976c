"""The request ledger: every request sent to an endpoint, counted once, durably, before it is sent.

One SQLite file per workspace (runs/llm_ledger.db). A request is admitted in one BEGIN IMMEDIATE
transaction: the run's totals are read, the pure budget rule (rules/budget.py) decides against the
run's caps, and a `paid` row (with the request's worst-case tokens and cost reserved) or a `refused`
row is committed, all before a byte goes out. The write lock makes check-and-insert atomic across the
threads of a run and across processes (batches, resumed runs, workers). When the answer comes, the
row is settled with the usage the endpoint reported; a row whose usage never became known (the
process was killed, the request timed out) keeps its reservation, so the token cap fails closed.
Answers served from the cache get a `cached` row: counted apart, never as a paid request.

The ledger is keyed by run id (an evolve run, an evaluation run; an LLM with no run gets an ad-hoc
id), and a resumed run continues its rows: kill, pause and resume never reset a count. Per-run
totals are kept by triggers in the same transaction as the rows, so admitting stays O(1) however long
the run, and the totals cannot disagree with the rows (until `runs prune` drops an ended run's
rows: its totals stay). Evaluation runs keep their caps here too
(`runs_caps`); an evolve run's caps are in its graph state.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path

from skillforge.errors import BudgetExceeded, StoreError
from skillforge.rules.budget import BudgetVerdict, check_call
from skillforge.library.sqlite_wal import enable_wal
from skillforge.state.llm import BudgetCaps, Role, RoleSpend, Spend

LEDGER_FILE = "llm_ledger.db"
BUSY_TIMEOUT_S = 30.0
SYNCHRONOUS = "NORMAL"
"""In WAL mode a commit is durable against a killed process (the threat here: kill -9, Ctrl-C, a
pause) without an fsync per commit; a power cut may lose the last commits, never corrupt the file.
Measured on the 2-core box under load ~5.7: FULL took 8.2 ms p50 per request (admit + settle, two
fsyncs under the write lock, which serialises every request of a run), NORMAL 0.05 ms."""
log = logging.getLogger(__name__)


class RequestOutcome(StrEnum):
    """What became of one request."""

    PAID = "paid"
    """Sent to the endpoint (whatever it answered, if anything)."""
    CACHED = "cached"
    """Answered from the response cache; nothing was sent."""
    REFUSED = "refused"
    """Not sent: it would have passed a cap."""


_SCHEMA = """
CREATE TABLE IF NOT EXISTS requests (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id TEXT NOT NULL,
  role TEXT NOT NULL,
  outcome TEXT NOT NULL CHECK (outcome IN ('paid', 'cached', 'refused')),
  reserved_tokens INTEGER NOT NULL DEFAULT 0,
  reserved_cost REAL NOT NULL DEFAULT 0,
  prompt_tokens INTEGER NOT NULL DEFAULT 0,
  completion_tokens INTEGER NOT NULL DEFAULT 0,
  cost_usd REAL NOT NULL DEFAULT 0,
  settled INTEGER NOT NULL DEFAULT 0,
  at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')));
CREATE TABLE IF NOT EXISTS totals (
  run_id TEXT NOT NULL, role TEXT NOT NULL,
  paid INTEGER NOT NULL DEFAULT 0, cached INTEGER NOT NULL DEFAULT 0, refused INTEGER NOT NULL DEFAULT 0,
  prompt_tokens INTEGER NOT NULL DEFAULT 0, completion_tokens INTEGER NOT NULL DEFAULT 0,
  reserved_tokens INTEGER NOT NULL DEFAULT 0, cost_usd REAL NOT NULL DEFAULT 0, reserved_cost REAL NOT NULL DEFAULT 0,
  PRIMARY KEY (run_id, role));
CREATE TABLE IF NOT EXISTS runs_caps (
  run_id TEXT PRIMARY KEY, caps_json TEXT NOT NULL CHECK (json_valid(caps_json)));
CREATE TRIGGER IF NOT EXISTS requests_counted AFTER INSERT ON requests BEGIN
  INSERT OR IGNORE INTO totals (run_id, role) VALUES (NEW.run_id, NEW.role);
  UPDATE totals SET paid = paid + (NEW.outcome = 'paid'), cached = cached + (NEW.outcome = 'cached'),
    refused = refused + (NEW.outcome = 'refused'),
    reserved_tokens = reserved_tokens + NEW.reserved_tokens, reserved_cost = reserved_cost + NEW.reserved_cost
  WHERE run_id = NEW.run_id AND role = NEW.role;
END;
CREATE TRIGGER IF NOT EXISTS requests_settled AFTER UPDATE OF settled ON requests
WHEN OLD.settled = 0 AND NEW.settled = 1 BEGIN
  UPDATE totals SET prompt_tokens = prompt_tokens + NEW.prompt_tokens,
    completion_tokens = completion_tokens + NEW.completion_tokens, cost_usd = cost_usd + NEW.cost_usd,
    reserved_tokens = reserved_tokens - OLD.reserved_tokens, reserved_cost = reserved_cost - OLD.reserved_cost
  WHERE run_id = NEW.run_id AND role = NEW.role;
END;
CREATE TABLE IF NOT EXISTS run_groups (run_id TEXT PRIMARY KEY, group_id TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS request_groups (seq INTEGER PRIMARY KEY, group_id TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS refusals (seq INTEGER PRIMARY KEY, scope TEXT NOT NULL, cap TEXT NOT NULL);
CREATE TRIGGER IF NOT EXISTS requests_grouped AFTER INSERT ON requests
WHEN EXISTS (SELECT 1 FROM run_groups WHERE run_id = NEW.run_id) BEGIN
  INSERT INTO request_groups (seq, group_id) SELECT NEW.seq, group_id FROM run_groups WHERE run_id = NEW.run_id;
  INSERT OR IGNORE INTO totals (run_id, role) SELECT group_id, NEW.role FROM run_groups WHERE run_id = NEW.run_id;
  UPDATE totals SET paid = paid + (NEW.outcome = 'paid'), cached = cached + (NEW.outcome = 'cached'),
    refused = refused + (NEW.outcome = 'refused'),
    reserved_tokens = reserved_tokens + NEW.reserved_tokens, reserved_cost = reserved_cost + NEW.reserved_cost
  WHERE run_id = (SELECT group_id FROM run_groups WHERE run_id = NEW.run_id) AND role = NEW.role;
END;
CREATE TRIGGER IF NOT EXISTS requests_group_settled AFTER UPDATE OF settled ON requests
WHEN OLD.settled = 0 AND NEW.settled = 1 AND EXISTS (SELECT 1 FROM request_groups WHERE seq = NEW.seq) BEGIN
  UPDATE totals SET prompt_tokens = prompt_tokens + NEW.prompt_tokens,
    completion_tokens = completion_tokens + NEW.completion_tokens, cost_usd = cost_usd + NEW.cost_usd,
    reserved_tokens = reserved_tokens - OLD.reserved_tokens, reserved_cost = reserved_cost - OLD.reserved_cost
  WHERE run_id = (SELECT group_id FROM request_groups WHERE seq = NEW.seq) AND role = NEW.role;
END;
"""
"""A group (a batch: `evolve --all`) has totals under its own id, counted by the triggers from the rows
of its runs (each row keeps the group its run was in when it was admitted, so its settle moves that
group's totals however the run moves later), and caps under its own id in runs_caps. A refused row
says whose cap refused it (`refusals`: the run's id or its group's, and which cap)."""


class RequestLedger:
    """The ledger file (or, with `path` None, an in-memory ledger for an LLM without a workspace).
    One connection per object, used under a lock: every use is a complete transaction, so no
    thread ever holds a read open while another writes."""

    def __init__(self, path: Path | None) -> None:
        self.path = Path(path) if path is not None else None
        self._lock = threading.Lock()
        try:
            if self.path is not None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(self.path if self.path is not None else ":memory:", isolation_level=None,
                                         timeout=BUSY_TIMEOUT_S, check_same_thread=False)
            if self.path is not None:
                enable_wal(self._conn, BUSY_TIMEOUT_S)  # several processes may open one new ledger together
                self._conn.execute(f"PRAGMA synchronous = {SYNCHRONOUS}")
            with self._lock:  # one transaction; BEGIN IMMEDIATE waits (busy timeout) for another creator
                try:
                    self._conn.executescript("BEGIN IMMEDIATE;" + _SCHEMA + "COMMIT;")
                except BaseException:
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                    raise
        except sqlite3.DatabaseError as e:
            raise StoreError(f"{self.where}: cannot open the request ledger: {e}") from None

    @classmethod
    def of_workspace(cls, runs_dir: Path) -> RequestLedger:
        return cls(runs_dir / LEDGER_FILE)

    @property
    def where(self) -> str:
        return str(self.path) if self.path is not None else "the in-memory request ledger"

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (BEGIN IMMEDIATE: the busy timeout applies to taking the lock)."""
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.DatabaseError as e:
                raise StoreError(f"{self.where}: the request ledger cannot be written: {e}") from None
            try:
                yield self._conn
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

    def _spend(self, conn: sqlite3.Connection, run_id: str) -> Spend:
        rows = conn.execute("SELECT role, paid, cached, refused, prompt_tokens, completion_tokens, reserved_tokens, "
                            "cost_usd, reserved_cost FROM totals WHERE run_id = ?", (run_id,)).fetchall()
        return Spend(by_role={Role(r[0]): RoleSpend(calls=r[1], cache_hits=r[2], refused=r[3], prompt_tokens=r[4],
                                                     completion_tokens=r[5], reserved_tokens=r[6], cost_usd=r[7],
                                                     reserved_cost_usd=r[8]) for r in rows})

    def admit(self, run_id: str, role: Role, caps: BudgetCaps, worst_tokens: int, worst_cost: float) -> int:
        """The sequence number of a `paid` row for a request about to be sent, committed; or, when the
        request would pass a cap, a committed `refused` row and BudgetExceeded (nothing is sent)."""
        try:
            with self._tx() as conn:
                verdict = check_call(caps, self._spend(conn, run_id), worst_tokens, worst_cost)
                group, batch = self._group_caps(conn, run_id), None
                if verdict.allowed and group is not None:  # within the run's caps: and the batch's?
                    held = check_call(group[1], self._spend(conn, group[0]), worst_tokens, worst_cost)
                    if not held.allowed:
                        batch, verdict = group[0], replace(held, reason=f"batch {group[0]}: {held.reason}")
                outcome = RequestOutcome.PAID if verdict.allowed else RequestOutcome.REFUSED
                cur = conn.execute("INSERT INTO requests (run_id, role, outcome, reserved_tokens, reserved_cost) "
                                   "VALUES (?, ?, ?, ?, ?)", (run_id, role.value, outcome.value,
                                                              worst_tokens if verdict.allowed else 0,
                                                              worst_cost if verdict.allowed else 0.0))
                seq = int(cur.lastrowid or 0)
                if not verdict.allowed:
                    conn.execute("INSERT INTO refusals (seq, scope, cap) VALUES (?, ?, ?)",
                                 (seq, batch or run_id, verdict.cap or "calls"))
        except sqlite3.DatabaseError as e:  # fail closed: a request that cannot be counted is not sent
            raise StoreError(f"{self.where}: the request was not sent, it could not be counted: {e}") from None
        if not verdict.allowed:
            raise BudgetExceeded(f"role '{role.value}': {verdict.reason}")
        return seq

    @staticmethod
    def _group_caps(conn: sqlite3.Connection, run_id: str) -> tuple[str, BudgetCaps] | None:
        """(group id, its caps) of the group the run is in, when that group has caps."""
        row = conn.execute("SELECT g.group_id, c.caps_json FROM run_groups g JOIN runs_caps c ON c.run_id = g.group_id "
                           "WHERE g.run_id = ?", (run_id,)).fetchone()
        return (row[0], BudgetCaps.model_validate_json(row[1])) if row else None

    def last_refusal(self, run_id: str) -> tuple[str, str] | None:
        """(whose cap: the run's id or its group's, which cap: "calls", "tokens" or "cost") of the run's
        latest refused request, or None."""
        with self._lock:
            row = self._conn.execute("SELECT f.scope, f.cap FROM refusals f JOIN requests r ON r.seq = f.seq "
                                     "WHERE r.run_id = ? ORDER BY f.seq DESC LIMIT 1", (run_id,)).fetchone()
        return (str(row[0]), str(row[1])) if row else None

    def join(self, group_id: str, run_id: str) -> None:
        """Count the run's requests from now on in `group_id` too (and hold them to its caps, when
        `set_caps(group_id, ...)` gave it some). A run is in one group: joining another moves it
        (the rows it had keep counting in the group they were admitted in)."""
        with self._tx() as conn:
            conn.execute("INSERT OR REPLACE INTO run_groups (run_id, group_id) VALUES (?, ?)", (run_id, group_id))

    def reached(self, group_id: str) -> BudgetVerdict | None:
        """The refusal when a group can send nothing more (its call cap reached, or its token cap spent
        or reserved whole), or None: what a batch checks before it starts or resumes a run."""
        caps = self.caps(group_id)
        verdict = check_call(caps, self.spend(group_id), 1) if caps is not None else None
        return None if verdict is None or verdict.allowed else verdict

    def settle(self, seq: int, prompt_tokens: int, completion_tokens: int, cost_usd: float) -> None:
        """The usage of an answered request replaces its reservation (once; a second settle is a no-op)."""
        with self._tx() as conn:
            conn.execute("UPDATE requests SET settled = 1, prompt_tokens = ?, completion_tokens = ?, cost_usd = ? "
                         "WHERE seq = ? AND outcome = 'paid' AND settled = 0",
                         (prompt_tokens, completion_tokens, cost_usd, seq))

    def record_cached(self, run_id: str, role: Role) -> None:
        """One answer served from the cache."""
        with self._tx() as conn:
            conn.execute("INSERT INTO requests (run_id, role, outcome, settled) VALUES (?, ?, 'cached', 1)",
                         (run_id, role.value))

    def spend(self, run_id: str) -> Spend:
        """The run's totals (all processes, all resumes)."""
        with self._lock:  # one SELECT: its own read transaction, ended before the lock is let go
            return self._spend(self._conn, run_id)

    def set_caps(self, run_id: str, caps: BudgetCaps) -> None:
        """The caps in force for a run, given by its start or its latest resume (an evolve run's
        graph state gets them too, but only when the node that paused at its budget ends)."""
        with self._tx() as conn:
            conn.execute("INSERT OR REPLACE INTO runs_caps (run_id, caps_json) VALUES (?, ?)",
                         (run_id, caps.model_dump_json()))

    def caps(self, run_id: str) -> BudgetCaps | None:
        """The caps `set_caps` stored for the run, if any."""
        with self._lock:
            rows = self._conn.execute("SELECT caps_json FROM runs_caps WHERE run_id = ?", (run_id,)).fetchall()
        return BudgetCaps.model_validate_json(rows[0][0]) if rows else None

    def activity(self) -> list[tuple[str, str, str, int]]:
        """(run id, first request's time, newest request's time, rows) of every run with request rows."""
        with self._lock:
            return self._conn.execute("SELECT run_id, min(at), max(at), count(*) FROM requests GROUP BY run_id "
                                      "ORDER BY run_id").fetchall()

    def forget_requests(self, run_ids: list[str]) -> int:
        """Delete the request rows of these (ended) runs, in one transaction; their totals and caps
        stay (the triggers count on insert and settle only, so the totals do not move). A settle of a
        deleted row later is a no-op, which leaves its reservation counted: fail closed."""
        with self._tx() as conn:
            for rid in run_ids:
                for table in ("request_groups", "refusals"):
                    conn.execute(f"DELETE FROM {table} WHERE seq IN (SELECT seq FROM requests WHERE run_id = ?)", (rid,))
            return sum(conn.execute("DELETE FROM requests WHERE run_id = ?", (rid,)).rowcount for rid in run_ids)

    def close(self) -> None:
        with self._lock:
            self._conn.close()


@dataclass(frozen=True)
class RunBudget:
    """One run's view of the ledger, with the caps in force: what `LLM.ledger` is."""

    store: RequestLedger
    run_id: str
    caps: BudgetCaps = BudgetCaps()

    @classmethod
    def adhoc(cls, store: RequestLedger | None = None, caps: BudgetCaps | None = None) -> RunBudget:
        """A budget for an LLM that belongs to no run (routing, `llm` commands, tests)."""
        return cls(store or RequestLedger(None), f"llm-{uuid.uuid4().hex[:12]}", caps or BudgetCaps())

    def bind(self, run_id: str, caps: BudgetCaps) -> RunBudget:
        """The same ledger, counting for `run_id` against `caps`."""
        return replace(self, run_id=run_id, caps=caps)

    def admit(self, role: Role, worst_tokens: int, worst_cost: float) -> int:
        return self.store.admit(self.run_id, role, self.caps, worst_tokens, worst_cost)

    def settle(self, seq: int, prompt_tokens: int, completion_tokens: int, cost_usd: float) -> None:
        self.store.settle(seq, prompt_tokens, completion_tokens, cost_usd)

    def record_cached(self, role: Role) -> None:
        self.store.record_cached(self.run_id, role)

    def totals(self) -> Spend:
        return self.store.spend(self.run_id)

    # what callers read most, each one reading of the ledger
    def spend(self, role: Role) -> RoleSpend:
        return self.totals().role(role)

    @property
    def by_role(self) -> dict[Role, RoleSpend]:
        return self.totals().by_role

    @property
    def calls(self) -> int:
        return self.totals().calls

    @property
    def cache_hits(self) -> int:
        return self.totals().cache_hits

    @property
    def refused(self) -> int:
        return self.totals().refused

    @property
    def tokens(self) -> int:
        return self.totals().tokens

    @property
    def cost_usd(self) -> float:
        return self.totals().cost_usd
