"""Which runs, ledger rows and cache rows `runs prune` may remove (pure: data in, verdict out).

- **Runs.** A run may be pruned when it has ended and its last checkpoint is older than the cutoff
  (strictly: a run exactly at the cutoff stays). An open run never goes: an evolve run RUNNING
  (live, or killed and resumable), paused at its budget or waiting for review (rules/runs.py
  `is_open`), an evaluation without its verdict (resumable with `--resume`). Nor does any run of a
  skill with a release still PREPARING (a publish under way, or dead and not yet swept by the
  watchdog) or an open canary. A run with no readable time, or a time after `now` (a clock that
  went back, a copied workspace), stays: what cannot be aged is not old.
- **Ledger rows.** The per-request rows of a run id go when the run is pruned, or when no
  checkpoint names the id (an ad-hoc call, a rejudge, a calibration, a run pruned before) and its
  newest row is older than the cutoff; never the rows of an open run. The run's totals (one row
  per role) and caps stay: the caps are checked against the totals, and `runs show` reads them.
- **Cache rows.** An answer older than the cutoff goes, unless an open run started before it was
  written: a resumed run re-asks its unfinished node's questions, and a miss would be a paid
  request (and might stop it at its cap). The horizon is the older of the cutoff and the first
  activity of every open run.
- **Router log lines.** A line of runs/router.jsonl written before the cutoff moves to the archive,
  unless a canary still open began before it (its comparison counts the loads since it began). A
  line with no readable time stays; so does every line while an open canary has no readable start.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from skillforge.rules.runs import is_open
from skillforge.state.evolve import EvolveStatus

MAX_DAYS = 36500
"""`--older-than` above this (a century) is a typing error, not a policy."""


class RunKind(StrEnum):
    EVOLVE = "evolve"
    EVALUATE = "evaluate"


class Keep(StrEnum):
    """Why a run stays (or PRUNE: it may go)."""

    PRUNE = "prune"
    OPEN = "open"
    RELEASE_PREPARING = "release-preparing"
    RECENT = "recent"
    NO_TIME = "no-time"
    FUTURE = "future-time"


@dataclass(frozen=True)
class RunFacts:
    """What the checkpointer says about one run. `status` is an evolve run's status; an evaluation
    is ended when `has_verdict`. `last_at` is its newest checkpoint's time (aware), `first_at` its
    earliest known activity."""

    run_id: str
    kind: RunKind
    skill: str | None
    last_at: datetime | None
    first_at: datetime | None = None
    status: EvolveStatus | None = None
    has_verdict: bool = False


@dataclass(frozen=True)
class LedgerRun:
    """One run id's rows in the request ledger: the times of its first and newest request."""

    run_id: str
    first_at: datetime | None
    last_at: datetime | None


def cutoff_of(now: datetime, days: float) -> datetime:
    """The instant before which ended things are old. ValueError for a negative, NaN or absurd age."""
    if not 0 <= days <= MAX_DAYS:
        raise ValueError(f"--older-than must be between 0 and {MAX_DAYS} days, got {days}")
    return now - timedelta(days=days)


def ended(run: RunFacts) -> bool:
    """Whether the run is finished: an evolve run in a terminal status, an evaluation with its verdict."""
    if run.kind is RunKind.EVALUATE:
        return run.has_verdict
    return run.status is not None and not is_open(run.status)


def run_verdict(run: RunFacts, now: datetime, cutoff: datetime, busy_skills: frozenset[str]) -> Keep:
    """PRUNE, or why the run stays."""
    if not ended(run):
        return Keep.OPEN
    if run.skill is None or run.skill in busy_skills:
        return Keep.RELEASE_PREPARING
    if run.last_at is None:
        return Keep.NO_TIME
    if run.last_at > now:
        return Keep.FUTURE
    return Keep.PRUNE if run.last_at < cutoff else Keep.RECENT


@dataclass(frozen=True)
class Plan:
    """What may go: runs by kind, the ledger run ids whose request rows may go, the cache horizon
    (rows written before it may go; None: none), and why each other run stays."""

    prune: dict[RunKind, list[str]]
    kept: dict[str, Keep]
    ledger_ids: list[str]
    cache_before: datetime | None


def plan(runs: Iterable[RunFacts], ledger: Iterable[LedgerRun], *, now: datetime, days: float,
         busy_skills: frozenset[str]) -> Plan:
    """Decide everything one prune removes, from one reading of the workspace."""
    cutoff = cutoff_of(now, days)
    runs = list(runs)
    verdicts = {r.run_id: run_verdict(r, now, cutoff, busy_skills) for r in runs}
    pruned = {rid for rid, v in verdicts.items() if v is Keep.PRUNE}
    known = set(verdicts)
    ledger_ids = []
    open_starts = [t for r in runs if not ended(r) for t in (r.first_at, r.last_at) if t is not None]
    open_ids = {r.run_id for r in runs if not ended(r)}
    for row in ledger:
        if row.run_id in open_ids:
            open_starts += [t for t in (row.first_at,) if t is not None]
            continue
        idle = row.last_at is not None and row.last_at <= now and row.last_at < cutoff
        if row.run_id in pruned or (row.run_id not in known and idle):
            ledger_ids.append(row.run_id)
    # an open run with no readable time at all: the cache cannot be aged safely
    unaged_open = any(r.first_at is None and r.last_at is None for r in runs if not ended(r))
    horizon = None if unaged_open else min([cutoff, *open_starts])
    return Plan(prune={k: sorted(r.run_id for r in runs if r.kind is k and r.run_id in pruned) for k in RunKind},
                kept={rid: v for rid, v in sorted(verdicts.items()) if v is not Keep.PRUNE},
                ledger_ids=sorted(ledger_ids), cache_before=horizon)


def log_horizon(cutoff: datetime, open_canary_starts: Iterable[datetime | None]) -> datetime | None:
    """Router log lines written before this may be archived: the cutoff, or the start of the
    oldest open canary when that is earlier; None (nothing moves) when an open canary's start
    cannot be read."""
    starts = list(open_canary_starts)
    if any(t is None for t in starts):
        return None
    return min([cutoff, *(t for t in starts if t is not None)])


def line_goes(at: datetime | None, horizon: datetime | None) -> bool:
    """Whether a router log line written at `at` moves to the archive (strictly before the horizon)."""
    return at is not None and horizon is not None and at < horizon
