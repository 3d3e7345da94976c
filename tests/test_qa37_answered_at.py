"""QA 37 F3: a review answer could carry its own `answered_at`, unchecked: a backdated time or "not a
date" was stored in the run and in the release's evaluation record. Now a given time must be a UTC
ISO-8601 time not in the future (else InvalidResume, the run still waits), and one from before the
run started is replaced by the time the run took the answer."""

from __future__ import annotations

import pytest
from langgraph.types import Command
from test_qa24_api_review import _paused

from skillforge.errors import InvalidResume


@pytest.mark.parametrize(("given", "said"), [
    ("not a date", "answered_at must be a UTC time"),
    ("2026-12-07T17:00:00+02:00", "answered_at must be a UTC time"),
    ("2026-12-07T17:00:00", "answered_at must be a UTC time"),   # no zone: not known to be UTC
    ("2999-01-01T00:00:00Z", "answered_at is in the future"),
])
def test_an_answer_time_that_is_not_a_past_utc_time_is_refused_and_the_run_still_waits(machine, given, said):
    runner, cfg, ctx = _paused(machine)
    g = runner.graph
    with pytest.raises(InvalidResume, match=said):
        g.invoke(Command(resume={"action": "reject", "answered_at": given}), cfg, context=ctx, durability="sync")
    assert runner.summary(cfg["configurable"]["thread_id"])["status"] == "PENDING_REVIEW"
    out = g.invoke(Command(resume={"action": "reject", "reviewer": "api"}), cfg, context=ctx, durability="sync")
    assert out["status"] == "REJECTED" and out["review"].answered_at.endswith("Z")


def test_a_backdated_answer_time_is_replaced_by_the_time_the_run_took_it(machine):
    runner, cfg, ctx = _paused(machine)
    started = runner.state(cfg["configurable"]["thread_id"]).started_at
    out = runner.graph.invoke(Command(resume={"action": "reject", "answered_at": "1999-01-01T00:00:00Z"}), cfg,
                              context=ctx, durability="sync")
    assert out["status"] == "REJECTED" and out["review"].answered_at > started, (out["review"], started)


def test_a_real_earlier_answer_time_is_kept(machine):
    """The CLI records the time the person answered; the run may take it later (after a crash)."""
    runner, cfg, ctx = _paused(machine)
    started = runner.state(cfg["configurable"]["thread_id"]).started_at
    out = runner.graph.invoke(Command(resume={"action": "reject", "answered_at": started}), cfg, context=ctx,
                              durability="sync")
    assert out["review"].answered_at == started
