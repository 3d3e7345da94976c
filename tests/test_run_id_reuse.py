"""A second evolve run under a run id another run already used (QA 24 finding 0): two Studio threads
given docs/studio.md's example input {"run_id": "r1", ...}, or two notebooks. Publish is idempotent per
run id, so the second run's approved candidate was answered "published taxi-hailing 0.3.2" with the
first run's release while the live release stayed the revert. Now the second run is refused at its
first node (RunIdTaken, nothing written), and publish itself refuses to hand back a release of this
run id whose SKILL.md is not the candidate's."""

from __future__ import annotations

import pytest
from evolve_fakes import SKILL, World, eta_patch, new_workspace, seed_failures
from langgraph.types import Command

from skillforge.context import EvolveContext
from skillforge.errors import RunIdTaken
from skillforge.evolution.archive import publish_candidate
from skillforge.graphs.evolve import build_evolve_graph
from skillforge.journal import utc_now
from skillforge.library.registry import SkillRegistry
from skillforge.library.releases import ReleaseStateMachine
from skillforge.runners.checkpoint import sqlite_saver
from skillforge.state.evolve import EvolveState
from skillforge.state.llm import BudgetCaps, BudgetLedger

FIRST = "- QUOTE-ETA：报价时同时告诉用户司机预计多久到达。"
SECOND = "- QUOTE-ETA：报价时同时告诉用户司机预计多久到达，并提醒用户核对上车点。"


def start(ws, thread: str, line: str):
    world = World(lambda r: [eta_patch(claimed=2, line=line)])
    seed_failures(ws, world.llm())
    graph = build_evolve_graph(checkpointer=sqlite_saver(ws.checkpoints_dir / "studio_like.sqlite"))
    cfg = {"configurable": {"thread_id": thread}}
    ctx = EvolveContext(ws=ws, llm=world.llm())
    state = EvolveState(run_id="r1", skill=SKILL, budget=BudgetLedger(caps=BudgetCaps()), started_at=utc_now())
    graph.invoke(state, cfg, context=ctx, durability="sync")
    return graph, cfg, ctx


def test_a_second_run_under_a_used_run_id_is_refused_before_it_writes_anything(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    graph, cfg, ctx = start(ws, "thread-1", FIRST)
    graph.invoke(Command(resume={"action": "approve", "comment": "ok"}), cfg, context=ctx, durability="sync")
    first = EvolveState.model_validate(graph.get_state(cfg).values)
    assert first.status.value == "PUBLISHED"
    m = ReleaseStateMachine.open(ws)
    m.revert(SKILL, "0.3.1")
    live = SkillRegistry.load(ws).get(SKILL).release
    repair = (ws.evaluation_sets_dir / "repair.json").read_bytes()
    with pytest.raises(RunIdTaken, match="run id 'r1' was already used in this workspace .*release taxi-hailing 0.3.2"):
        start(ws, "thread-2", SECOND)
    assert SkillRegistry.load(ws).get(SKILL).release.release_id == live.release_id
    assert (ws.evaluation_sets_dir / "repair.json").read_bytes() == repair  # collect harvested nothing

    # the publish's own guard: the release under this run id holds the first candidate, not this one
    cand = first.candidates[0].model_copy(update={"text": first.candidates[0].text.replace(FIRST, SECOND)})
    with pytest.raises(RunIdTaken, match="already published taxi-hailing 0.3.2 .* with another SKILL.md"):
        publish_candidate(ws, first, cand, {})
    assert publish_candidate(ws, first, first.candidates[0], {})[0] == first.release_id  # a resume gets its own back


def test_two_threads_started_at_once_under_one_run_id_cannot_both_run(tmp_path):
    """QA 26 N1: two threads started together both passed the used-id check (nothing recorded yet),
    both reached review, and the review file showed one while approve published the other. The first
    node now claims the id for its thread (runs/claims/<run>, created exclusively): the other thread is
    refused, and the claiming thread's own resume passes."""
    from skillforge.evolution.preflight import claim_run

    ws = new_workspace(tmp_path / "ws")
    claim_run(ws, "r1", "thread-A")  # thread A's first node got there first
    claim_run(ws, "r1", "thread-A")  # its resume re-enters the node: still its own
    with pytest.raises(RunIdTaken, match="run id 'r1' is taken by another graph thread \\(thread-A\\)"):
        start(ws, "thread-B", SECOND)
    graph, cfg, ctx = start(ws, "thread-A", FIRST)
    assert graph.get_state(cfg).next == ("review",)
    assert not (ws.runs_dir / "reviews" / "r1.md").read_text(encoding="utf-8").count("提醒用户核对上车点")
