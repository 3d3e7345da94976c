"""QA 24 findings 6 and 7: an answer given through the Python API (`Command(resume={...})`) is
stamped with the time the run took it, and one the run does not take is an error raised to the
caller (RunNotPaused, AlreadyAnswered), never dropped silently."""

from __future__ import annotations

import pytest
from langgraph.types import Command

from evolve_fakes import World, eta_patch, seed_failures, write_sets
from skillforge.context import EvolveContext
from skillforge.errors import AlreadyAnswered
from skillforge.runners.evolve import Runner, RunNotPaused
from skillforge.state.evolve import ReviewAction


def _paused(machine):
    ws = machine.ws
    write_sets(ws)
    world = World(lambda r: [eta_patch(claimed=2)])
    seed_failures(ws, world.llm())
    runner = Runner(ws, llm_factory=world.llm)
    out = runner.start("taxi-hailing")
    assert out["status"] == "PENDING_REVIEW", out
    cfg = {"configurable": {"thread_id": out["run_id"]}}
    return runner, cfg, EvolveContext(ws=ws, llm=world.llm())


def test_an_api_answer_is_stamped_and_a_late_one_is_refused(machine):
    runner, cfg, ctx = _paused(machine)
    g = runner.graph
    out = g.invoke(Command(resume={"action": "reject", "comment": "no", "reviewer": "api"}), cfg, context=ctx,
                   durability="sync")
    assert out["status"] == "REJECTED" and out["review"].answered_at.endswith("Z"), out["review"]
    assert out["review"].action is ReviewAction.REJECT
    with pytest.raises(AlreadyAnswered, match=r"already answered: rejected by api at .*Z \(\"no\"\): your approve "
                                              r"was not taken"):
        g.invoke(Command(resume={"action": "approve"}), cfg, context=ctx, durability="sync")
    same = g.invoke(Command(resume={"action": "reject"}), cfg, context=ctx, durability="sync")  # a repeat: as it stands
    assert same["status"] == "REJECTED"


def test_an_answer_to_a_run_that_never_waited_for_review_is_refused(machine):
    runner, cfg, ctx = _paused(machine)
    runner.cancel(cfg["configurable"]["thread_id"], comment="stop")
    with pytest.raises(RunNotPaused, match="is not waiting for a review .*: your approve was not taken"):
        runner.graph.invoke(Command(resume={"action": "approve"}), cfg, context=ctx, durability="sync")


def test_an_answer_that_lost_a_race_is_an_error():
    """Two processes answer at once: the one whose answer the run did not take is told so."""
    from types import SimpleNamespace

    from skillforge.nodes.outcome import answer_lost
    from skillforge.state.evolve import ReviewDecision

    won = SimpleNamespace(values={"run_id": "r3", "review": ReviewDecision(action="reject", reviewer="b")}, tasks=())
    with pytest.raises(AlreadyAnswered, match="run r3 already answered: rejected by b while yours ran: your approve"):
        answer_lost(won, ReviewAction.APPROVE)  # type: ignore[arg-type]
    answer_lost(won, ReviewAction.REJECT)  # type: ignore[arg-type]
    answer_lost(SimpleNamespace(values={"run_id": "r3", "review": None}, tasks=()), ReviewAction.REBASE)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["approve", ["approve"], 42, {"action": 1}, {"action": "APPROVE"}, {}],
                         ids=["str", "list", "int", "bad-action", "upper", "empty"])
def test_a_resume_value_a_finished_run_cannot_take_is_refused_not_dropped(machine, value):
    """QA 26 N11: on a run that waits for nothing, values that are no review answer returned the run
    as it stood, as if taken; while it waits, the review refuses them itself (InvalidResume)."""
    runner, cfg, ctx = _paused(machine)
    g = runner.graph
    g.invoke(Command(resume={"action": "reject", "comment": "no"}), cfg, context=ctx, durability="sync")
    with pytest.raises(RunNotPaused, match=r"waits for no answer \(status REJECTED\): the resume value was not taken"):
        g.invoke(Command(resume=value), cfg, context=ctx, durability="sync")


def test_a_resume_on_a_thread_that_never_ran_or_without_a_value_is_a_named_error(machine):
    """QA 27 C1: a resume on a thread that never ran raised pydantic's multi-line ValidationError (the
    state missing), and Command(resume=None) an UnboundLocalError inside LangGraph."""
    from skillforge.errors import InvalidResume

    runner, cfg, ctx = _paused(machine)
    g = runner.graph
    never = {"configurable": {"thread_id": "never-ran"}}
    for value in ({"action": "approve"}, "approve", {"max_calls": 5}):
        with pytest.raises(RunNotPaused, match="no run on this thread"):
            g.invoke(Command(resume=value), never, context=ctx, durability="sync")
    with pytest.raises(InvalidResume, match=r"Command\(resume=None\) carries no answer"):
        g.invoke(Command(resume=None), cfg, context=ctx, durability="sync")
    assert g.get_state(cfg).next == ("review",)  # still waits: a real answer is taken
    assert g.invoke(Command(resume={"action": "approve", "comment": "ok"}), cfg, context=ctx,
                    durability="sync")["status"] == "PUBLISHED"


def test_an_answer_that_meets_the_winners_publish_is_told_it_lost(machine):
    """QA 37 F5: the CLI approved and was publishing when the API's reject, checked a moment before
    (the run still waited), ran the thread on: it met the approve's PREPARING release and got
    ReleaseConflict ("try again when it ends"), a retry that could never be taken. Now AlreadyAnswered."""
    from skillforge.library.releases import ReleaseStateMachine

    runner, cfg, ctx = _paused(machine)
    g = runner.graph
    waiting = g.get_state(cfg)  # what the reject's check saw, before the approve was taken
    g.invoke(Command(resume={"action": "approve", "reviewer": "cli"}), cfg, context=ctx, durability="sync",
             interrupt_after=["review"])  # the approve is taken; its publish has not run yet
    ReleaseStateMachine.open(machine.ws).begin_release("taxi-hailing")  # the winner's publish, under way
    seen = iter([waiting])
    g._state = lambda config: next(seen, None) or type(g)._state(g, config)  # noqa: SLF001 - the check ran first
    with pytest.raises(AlreadyAnswered, match=r"already answered: approved by cli .* while yours ran: your reject "
                                              r"was not taken"):
        g.invoke(Command(resume={"action": "reject", "reviewer": "api"}), cfg, context=ctx, durability="sync")
