"""A batch of evolve runs shared by worker processes on several machines, coordinated through the
Postgres database that holds the checkpoints (SKILLFORGE_CHECKPOINT_URL); no server of our own.

Table `skillforge_batches.claims` has one row per (batch, skill): the workspace it belongs to
(`Workspace.workspace_id`: several workspaces may share one database, and a worker only ever
claims, lists or answers its own workspace's rows), its run id, status (PENDING, CLAIMED, DONE),
the worker, the number of claims, and the run's final status. A worker claims a row
inside a transaction that row-locks it (`SELECT ... FOR UPDATE SKIP LOCKED`, so two workers never
look at the same row at once) and takes the row's session-level advisory lock, which it holds until
the run ends. When a worker dies its session ends and Postgres frees the lock: the next worker sees
a CLAIMED row with a free lock (`rules.claims.claim_decision`) and resumes that run from its
Postgres checkpoint. A run is thus driven by at most one worker at a time, and none is lost.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import zlib
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

from skillforge.runners.evolve import Runner
from skillforge.runners.evolve_batch import NOT_STARTED, run_one
from skillforge.errors import SkillForgeError
from skillforge.runners.checkpoint import pg_connect
from skillforge.rules.claims import ClaimDecision, ClaimStatus, claim_decision
from skillforge.rules.ids import IdKind
from skillforge.state.evolve import MAX_ROUNDS, EvolveMode, EvolveStatus
from skillforge.state.ids import require_id
from skillforge.state.llm import BudgetCaps

if TYPE_CHECKING:
    from psycopg import Connection  # the [postgres] extra; pg_connect names it when it is missing

log = logging.getLogger(__name__)
SCHEMA = "skillforge_batches"
LOCK_CLASS = 0x5F6B2
"""First key of every claim's advisory lock (the second is a hash of batch and skill)."""
DDL_LOCK = 0x5F6B3
WAIT_SECONDS = 1.0
"""How often a worker with nothing to claim looks again while other workers still hold runs (one of
them may die, and its run must not be left behind)."""
DDL = (f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}",
       f"""CREATE TABLE IF NOT EXISTS {SCHEMA}.claims (
    batch_id text NOT NULL, skill text NOT NULL, run_id text NOT NULL,
    status text NOT NULL DEFAULT 'PENDING', worker text, attempts integer NOT NULL DEFAULT 0,
    claimed_at timestamptz, finished_at timestamptz, result text, message text,
    PRIMARY KEY (batch_id, skill))""",
       # tables made before workspaces were told apart: their rows belong to no workspace ('')
       f"ALTER TABLE {SCHEMA}.claims ADD COLUMN IF NOT EXISTS workspace_id text NOT NULL DEFAULT ''")


class UnknownBatch(SkillForgeError):
    """No batch with that id in the claims table of the checkpoint database."""


class ForeignBatch(SkillForgeError):
    """The batch id exists in the claims table, but belongs to another workspace."""


@dataclass(frozen=True)
class Claim:
    """A row this worker holds (with its advisory lock) until `finish`."""

    workspace_id: str
    batch_id: str
    skill: str
    run_id: str
    attempts: int
    resumed: bool


def lock_key(workspace_id: str, batch_id: str, skill: str) -> int:
    """The claim's advisory-lock key: a signed 32-bit hash of workspace, batch and skill."""
    h = zlib.crc32(f"{workspace_id}/{batch_id}/{skill}".encode())
    return h - (1 << 32) if h >= 1 << 31 else h


def worker_id() -> str:
    """host:pid:thread, as the claims table shows it."""
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident() % 100000}"


def connect(url: str) -> Connection:
    """A claims session (transactions, not autocommit); the table is created once, under a lock."""
    conn = pg_connect(url, SCHEMA, autocommit=False)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (DDL_LOCK,))
        for statement in DDL:
            conn.execute(statement)
    return conn


def _refuse_foreign(conn: Connection, batch_id: str, workspace_id: str) -> None:
    """ForeignBatch, naming the owner, when the batch's rows belong to another workspace."""
    row = conn.execute(f"SELECT workspace_id FROM {SCHEMA}.claims WHERE batch_id = %s AND workspace_id <> %s LIMIT 1",
                       (batch_id, workspace_id)).fetchone()
    if row is not None:
        owner = (f"workspace '{row['workspace_id']}'" if row["workspace_id"]
                 else "no workspace (made before batches were scoped)")
        raise ForeignBatch(f"batch '{batch_id}' belongs to {owner}, not to this one ('{workspace_id}'); join it from "
                           "that workspace: a worker only runs its own workspace's batches")


def register(url: str, batch_id: str, runs: dict[str, str], workspace_id: str) -> None:
    """Add the batch's rows (PENDING) for workspace `workspace_id`; rows that exist are left as they
    are. ForeignBatch if the batch id is another workspace's."""
    require_id(IdKind.BATCH, batch_id)
    with connect(url) as conn, conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_CLASS, lock_key("", batch_id, "")))
        _refuse_foreign(conn, batch_id, workspace_id)
        for skill, run_id in runs.items():
            conn.execute(f"INSERT INTO {SCHEMA}.claims (workspace_id, batch_id, skill, run_id) VALUES (%s, %s, %s, %s) "
                         "ON CONFLICT (batch_id, skill) DO NOTHING", (workspace_id, batch_id, skill, run_id))


def batch_rows(url: str, batch_id: str, workspace_id: str) -> list[dict[str, object]]:
    """Every row of workspace `workspace_id`'s batch, by skill; ForeignBatch when the batch is
    another workspace's, UnknownBatch when there is none."""
    require_id(IdKind.BATCH, batch_id)
    with connect(url) as conn:
        rows = conn.execute(f"SELECT * FROM {SCHEMA}.claims WHERE batch_id = %s AND workspace_id = %s ORDER BY skill",
                            (batch_id, workspace_id)).fetchall()
        if not rows:
            _refuse_foreign(conn, batch_id, workspace_id)
    if not rows:
        raise UnknownBatch(f"no batch '{batch_id}' in the claims table of the checkpoint database")
    return [dict(r) for r in rows]


def claim_next(conn: Connection, workspace_id: str, batch_id: str, worker: str,
               gave_up: list[dict[str, object]] | None = None, skip: Collection[str] = ()) -> Claim | None:
    """Claim the first row of workspace `workspace_id`'s batch this worker may take (a PENDING one,
    or a CLAIMED one whose worker died), holding its advisory lock on `conn`'s session; None when
    nothing is left to take. A row its workers died on MAX_ATTEMPTS times is marked DONE, FAILED,
    and added to `gave_up` (skill, run_id, message, attempt) for the caller to close its run. Rows of
    the skills in `skip` (runs this worker process stopped open: its endpoint failed them) are left to
    other workers."""
    with conn.transaction():
        rows = conn.execute(f"SELECT skill, run_id, status, attempts FROM {SCHEMA}.claims WHERE batch_id = %s "
                            "AND workspace_id = %s AND status <> 'DONE' AND NOT (skill = ANY(%s)) ORDER BY skill "
                            "FOR UPDATE SKIP LOCKED", (batch_id, workspace_id, list(skip))).fetchall()
        for row in rows:
            key = lock_key(workspace_id, batch_id, row["skill"])
            got = conn.execute("SELECT pg_try_advisory_lock(%s, %s) AS ok", (LOCK_CLASS, key)).fetchone()["ok"]
            decision = claim_decision(ClaimStatus(row["status"]), bool(got), int(row["attempts"]))
            if decision in (ClaimDecision.CLAIM, ClaimDecision.RECLAIM):
                conn.execute(f"UPDATE {SCHEMA}.claims SET status = 'CLAIMED', worker = %s, attempts = attempts + 1, "
                             "claimed_at = now() WHERE batch_id = %s AND skill = %s", (worker, batch_id, row["skill"]))
                if decision is ClaimDecision.RECLAIM:
                    log.warning("batch %s: %s's worker died; resuming run %s", batch_id, row["skill"], row["run_id"])
                return Claim(workspace_id, batch_id, row["skill"], row["run_id"], int(row["attempts"]) + 1,
                             decision is ClaimDecision.RECLAIM)
            if decision is ClaimDecision.GIVE_UP:
                why = f"gave up: its worker died {row['attempts']} times on this run"
                conn.execute(f"UPDATE {SCHEMA}.claims SET status = 'DONE', result = %s, finished_at = now(), message = %s "
                             "WHERE batch_id = %s AND skill = %s", (EvolveStatus.FAILED.value, why, batch_id, row["skill"]))
                if gave_up is not None:
                    gave_up.append({"skill": row["skill"], "run_id": row["run_id"], "message": why,
                                    "attempt": int(row["attempts"])})
            if got:
                conn.execute("SELECT pg_advisory_unlock(%s, %s)", (LOCK_CLASS, key))
    return None


def reopen_stopped(url: str, batch_id: str, workspace_id: str) -> list[str]:
    """Rows whose run stopped open (RUNNING: an endpoint did not answer; BUDGET: paused at its caps;
    NOT_STARTED: the batch's caps were reached first) are claimable again by the workers that join the
    batch now, with their death count reset (a stop is no death); their skills. A DONE row of a
    finished run stays as it is."""
    with connect(url) as conn, conn.transaction():
        rows = conn.execute(f"UPDATE {SCHEMA}.claims SET status = 'PENDING', attempts = 0 WHERE batch_id = %s "
                            "AND workspace_id = %s AND status = 'DONE' AND result IN (%s, %s, %s) RETURNING skill",
                            (batch_id, workspace_id, EvolveStatus.RUNNING.value, EvolveStatus.BUDGET.value,
                             NOT_STARTED)).fetchall()
    return sorted(r["skill"] for r in rows)


def open_rows(conn: Connection, workspace_id: str, batch_id: str, skip: Collection[str] = ()) -> int:
    """Rows of the batch that are not DONE (claimed by live workers, or about to be claimed), but for
    those of the skills in `skip` (claim_next's: a worker does not wait for rows it leaves to others)."""
    with conn.transaction():
        row = conn.execute(f"SELECT count(*) AS n FROM {SCHEMA}.claims WHERE batch_id = %s AND workspace_id = %s "
                           "AND status <> 'DONE' AND NOT (skill = ANY(%s))", (batch_id, workspace_id, list(skip))).fetchone()
    return int(row["n"])


def finish(conn: Connection, claim: Claim, worker: str, result: dict[str, object]) -> bool:
    """Mark the claim DONE with the run's status and free its lock; False (logged) if the row was
    not this worker's any more, which the advisory lock should make impossible."""
    with conn.transaction():
        cur = conn.execute(f"UPDATE {SCHEMA}.claims SET status = 'DONE', result = %s, message = %s, finished_at = now() "
                           "WHERE batch_id = %s AND skill = %s AND workspace_id = %s AND worker = %s "
                           "AND status = 'CLAIMED'",
                           (str(result.get("status")), str(result.get("message") or "")[:500], claim.batch_id,
                            claim.skill, claim.workspace_id, worker))
        mine = cur.rowcount == 1
    conn.execute("SELECT pg_advisory_unlock(%s, %s)",
                 (LOCK_CLASS, lock_key(claim.workspace_id, claim.batch_id, claim.skill)))
    conn.commit()
    if not mine:
        log.error("batch %s: claim of %s was not held by %s when its run ended", claim.batch_id, claim.skill, worker)
    return mine


def work_batch(runner: Runner, url: str, batch_id: str, *, mode: EvolveMode = EvolveMode.AUTONOMOUS,
               max_rounds: int = MAX_ROUNDS, caps: BudgetCaps | None = None, concurrency: int = 1,
               on_done: Callable[[dict[str, object]], None] | None = None) -> list[dict[str, object]]:
    """Join batch `batch_id` as `concurrency` workers (threads, one claims session each): claim,
    run (or resume), finish, until every row of the batch is DONE (a worker with nothing to claim
    waits while others hold runs, in case one dies). Returns the results of this process's runs."""
    workspace_id = runner.ws.workspace_id
    batch_rows(url, batch_id, workspace_id)  # UnknownBatch / ForeignBatch before any thread starts
    if again := reopen_stopped(url, batch_id, workspace_id):
        log.warning("batch %s: resuming the runs that stopped open: %s", batch_id, ", ".join(again))
    results: list[dict[str, object]] = []
    errors: list[BaseException] = []
    stopped: set[str] = set()
    guard = threading.Lock()

    def loop() -> None:
        worker = worker_id()
        try:
            with connect(url) as conn:
                while True:
                    gave_up: list[dict[str, object]] = []
                    with guard:
                        mine_stopped = list(stopped)
                    claim = claim_next(conn, workspace_id, batch_id, worker, gave_up, mine_stopped)
                    for row in gave_up:  # the run says what its batch row says, and stays closed
                        res = {**give_up(runner, row), "worker": worker}
                        with guard:
                            results.append(res)
                        if on_done is not None:
                            on_done(res)
                    if claim is None:
                        if open_rows(conn, workspace_id, batch_id, mine_stopped) == 0:
                            break
                        time.sleep(WAIT_SECONDS)
                        continue
                    log.info("batch %s: %s claims %s (attempt %d)", batch_id, worker, claim.skill, claim.attempts)
                    res = run_one(runner, claim.skill, claim.run_id, mode=mode, max_rounds=max_rounds, caps=caps,
                                  batch_id=batch_id)
                    res = {**res, "worker": worker, "attempt": claim.attempts}
                    finish(conn, claim, worker, res)
                    with guard:
                        results.append(res)
                        if res.get("status") in (EvolveStatus.RUNNING.value, EvolveStatus.BUDGET.value, NOT_STARTED):
                            stopped.add(claim.skill)  # reopened by a worker that joins later: not for this one
                    if on_done is not None:
                        on_done(res)
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
            errors.append(e)

    threads = [threading.Thread(target=loop, name=f"batch-worker-{i}") for i in range(max(1, concurrency))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


def give_up(runner: Runner, row: dict[str, object]) -> dict[str, object]:
    """Close the run of a row the batch gave up on: FAILED with the batch's reason, so `runs show`
    and a later `evolve --resume RUN` agree with the row (QA 37 F1). A run another process drives
    now, one that ended meanwhile, or one that never reached a checkpoint is left as it is (logged)."""
    run_id, why = str(row["run_id"]), str(row["message"])
    try:
        runner.cancel(run_id, failed=f"{why}; the batch closed it (start a new run: skillforge evolve {row['skill']})")
    except SkillForgeError as e:  # RunBusy, RunNotPaused, UnknownRun
        log.warning("batch gave up on %s, but its run %s was left as it is: %s", row["skill"], run_id, e)
    return {"run_id": run_id, "skill": row["skill"], "status": EvolveStatus.FAILED.value, "message": why,
            "attempt": row["attempt"]}
