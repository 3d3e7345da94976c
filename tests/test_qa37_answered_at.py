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


def test_an_api_run_without_a_start_time_gets_one_so_a_backdated_answer_is_replaced(machine):
    """QA 39 G2: a run started through the API has no started_at in its input, so an answered_at from
    before the run began was stored as given. The first node now stamps started_at."""
    from evolve_fakes import World, eta_patch, seed_failures, write_sets

    from skillforge.context import EvolveContext
    from skillforge.graphs.evolve import build_evolve_graph
    from skillforge.runners.checkpoint import sqlite_saver
    from skillforge.state.evolve import EvolveState

    ws = machine.ws
    write_sets(ws)
    world = World(lambda r: [eta_patch(claimed=2)])
    seed_failures(ws, world.llm())
    graph = build_evolve_graph(checkpointer=sqlite_saver(ws.checkpoints_dir / "api.sqlite"))
    cfg, ctx = {"configurable": {"thread_id": "api-1"}}, EvolveContext(ws=ws, llm=world.llm())
    paused = graph.invoke(EvolveState(run_id="api-1", skill="taxi-hailing"), cfg, context=ctx, durability="sync")
    assert paused["started_at"].endswith("Z")
    out = graph.invoke(Command(resume={"action": "reject", "answered_at": "2026-01-01T00:00:00Z"}), cfg, context=ctx,
                       durability="sync")
    assert out["status"] == "REJECTED" and out["review"].answered_at > paused["started_at"], out["review"]
