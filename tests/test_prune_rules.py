"""rules/prune.py on its edges: open, paused and resumable runs, a PREPARING release, exactly at the
cutoff, clock skew, no time, ledger rows of unknown and open runs, the cache horizon, an empty workspace."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from skillforge.rules.prune import Keep, LedgerRun, RunFacts, RunKind, cutoff_of, plan, run_verdict
from skillforge.state.evolve import EvolveStatus

NOW = datetime(2026, 6, 1, 12, tzinfo=UTC)
DAYS = 30
CUT = NOW - timedelta(days=DAYS)
OLD = CUT - timedelta(seconds=1)


def evolve(rid: str, status: EvolveStatus, at: datetime | None = OLD, skill: str = "s") -> RunFacts:
    return RunFacts(rid, RunKind.EVOLVE, skill, at, at, status=status)


def verdict(run: RunFacts, busy: frozenset[str] = frozenset()) -> Keep:
    return run_verdict(run, NOW, CUT, busy)


@pytest.mark.parametrize("status", [EvolveStatus.RUNNING, EvolveStatus.PENDING_REVIEW, EvolveStatus.BUDGET])
def test_open_paused_and_resumable_evolve_runs_stay_however_old(status):
    assert verdict(evolve("r", status, at=NOW - timedelta(days=3650))) is Keep.OPEN


@pytest.mark.parametrize("status", [EvolveStatus.PUBLISHED, EvolveStatus.REJECTED, EvolveStatus.CANCELLED,
                                    EvolveStatus.NO_IMPROVEMENT, EvolveStatus.SUGGESTED])
def test_ended_old_evolve_runs_go(status):
    assert verdict(evolve("r", status)) is Keep.PRUNE


def test_an_evaluation_goes_only_with_its_verdict():
    resumable = RunFacts("e", RunKind.EVALUATE, "s", OLD)
    assert verdict(resumable) is Keep.OPEN
    assert verdict(RunFacts("e", RunKind.EVALUATE, "s", OLD, has_verdict=True)) is Keep.PRUNE


def test_a_skill_with_a_preparing_release_or_canary_keeps_its_ended_runs():
    assert verdict(evolve("r", EvolveStatus.PUBLISHED), frozenset({"s"})) is Keep.RELEASE_PREPARING
    assert verdict(evolve("r", EvolveStatus.PUBLISHED, skill="other"), frozenset({"s"})) is Keep.PRUNE
    assert verdict(RunFacts("r", RunKind.EVOLVE, None, OLD, status=EvolveStatus.PUBLISHED)) is Keep.RELEASE_PREPARING


def test_exactly_at_the_cutoff_stays_one_microsecond_before_goes():
    assert verdict(evolve("r", EvolveStatus.PUBLISHED, at=CUT)) is Keep.RECENT
    assert verdict(evolve("r", EvolveStatus.PUBLISHED, at=CUT - timedelta(microseconds=1))) is Keep.PRUNE
    assert verdict(evolve("r", EvolveStatus.PUBLISHED, at=CUT + timedelta(microseconds=1))) is Keep.RECENT


def test_a_future_or_missing_time_is_never_old():
    assert verdict(evolve("r", EvolveStatus.PUBLISHED, at=NOW + timedelta(days=400))) is Keep.FUTURE
    assert verdict(evolve("r", EvolveStatus.PUBLISHED, at=None)) is Keep.NO_TIME
    # with --older-than 0 the cutoff is now: a run a second in the future still stays
    assert run_verdict(evolve("r", EvolveStatus.PUBLISHED, at=NOW + timedelta(seconds=1)), NOW, NOW,
                       frozenset()) is Keep.FUTURE


def test_bad_ages_are_refused():
    for days in (-1, float("nan"), 10**9):
        with pytest.raises(ValueError):
            cutoff_of(NOW, days)
    assert cutoff_of(NOW, 0) == NOW


def test_empty_workspace_plans_nothing():
    p = plan([], [], now=NOW, days=DAYS, busy_skills=frozenset())
    assert p.prune == {RunKind.EVOLVE: [], RunKind.EVALUATE: []} and p.kept == {} and p.ledger_ids == []
    assert p.cache_before == CUT


def test_ledger_rows_go_with_pruned_runs_and_idle_unknown_ids_never_an_open_runs():
    runs = [evolve("ended", EvolveStatus.PUBLISHED), evolve("recent", EvolveStatus.PUBLISHED, at=NOW),
            evolve("paused", EvolveStatus.PENDING_REVIEW, at=NOW - timedelta(days=90))]
    ledger = [LedgerRun("ended", OLD, OLD), LedgerRun("recent", NOW, NOW),
              LedgerRun("paused", NOW - timedelta(days=90), OLD), LedgerRun("llm-adhoc", OLD, OLD),
              LedgerRun("llm-new", OLD, NOW), LedgerRun("llm-skewed", OLD, NOW + timedelta(days=1)),
              LedgerRun("llm-untimed", None, None)]
    p = plan(runs, ledger, now=NOW, days=DAYS, busy_skills=frozenset())
    assert p.prune[RunKind.EVOLVE] == ["ended"]
    assert p.kept == {"paused": Keep.OPEN, "recent": Keep.RECENT}
    assert p.ledger_ids == ["ended", "llm-adhoc"]
    # the paused run began 90 days ago: cache answers since then stay, for its resume
    assert p.cache_before == NOW - timedelta(days=90)


def test_an_open_run_with_no_time_at_all_keeps_the_whole_cache():
    p = plan([RunFacts("e", RunKind.EVALUATE, "s", None)], [], now=NOW, days=DAYS, busy_skills=frozenset())
    assert p.cache_before is None and p.kept == {"e": Keep.OPEN}
