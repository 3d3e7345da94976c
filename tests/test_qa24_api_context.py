"""QA 24 findings 2 and 3: a context the caller passes is used as it is or refused, never completed
from $SKILLFORGE_WORKSPACE (which may be another workspace); only a context with every field at its
default (the one `langgraph dev` constructs) is built from the environment."""

from __future__ import annotations

import pytest

from evolve_fakes import SKILL, World, write_sets
from skillforge.config import init_workspace
from skillforge.context import ContextIncomplete, EvalContext, EvolveContext, RouteContext, eval_context
from skillforge.errors import SkillForgeError
from skillforge.graphs.evolve import build_evolve_graph
from skillforge.runners.checkpoint import sqlite_saver
from skillforge.state.evolve import EvolveState


def test_a_partial_context_is_a_named_error_when_constructed(machine, tmp_path):
    ws = machine.ws
    write_sets(ws)
    full = eval_context(ws, World(lambda r: []).llm())
    with pytest.raises(ContextIncomplete, match=r"EvalContext has sets, others, evaluations_log, traces_dir.* but "
                                                r"no llm: pass llm=build_llm\(ws\)") as e:
        EvalContext(llm=None, sets=full.sets, others=full.others, evaluations_log=full.evaluations_log,
                    traces_dir=full.traces_dir)
    assert isinstance(e.value, SkillForgeError) and "\n" not in str(e.value)
    with pytest.raises(ContextIncomplete, match="EvolveContext has ws but no llm"):
        EvolveContext(ws=ws)
    with pytest.raises(ContextIncomplete, match="EvolveContext has llm but no ws"):
        EvolveContext(llm=full.llm)
    with pytest.raises(ContextIncomplete, match="RouteContext has router_log but no index"):
        RouteContext(router_log=tmp_path / "router.jsonl")
    assert EvalContext().empty and EvolveContext().empty and RouteContext().empty  # Studio's: built from settings


def test_a_field_emptied_after_construction_is_refused_not_refilled(machine, monkeypatch, tmp_path):
    """The run's own workspace keeps its records: nothing is taken from $SKILLFORGE_WORKSPACE."""
    other = init_workspace(tmp_path / "other")
    monkeypatch.setenv("SKILLFORGE_WORKSPACE", str(other.root))
    ws = machine.ws
    write_sets(ws)
    ctx = eval_context(ws, World(lambda r: []).llm())
    ctx.llm = None  # type: ignore[assignment]

    class Run:
        context = ctx
    with pytest.raises(ContextIncomplete, match="no llm"):
        EvalContext.of(Run())
    assert ctx.evaluations_log == ws.evaluations_log


def test_evolve_without_a_model_leaves_no_open_run(machine):
    """Finding 3: refused before the graph records anything, so the skill is not blocked."""
    ws = machine.ws
    write_sets(ws)
    g = build_evolve_graph(checkpointer=sqlite_saver(ws.checkpoints_dir / "graphs.sqlite"))
    cfg = {"configurable": {"thread_id": "r9"}}
    with pytest.raises(ContextIncomplete, match="no llm"):
        g.invoke(EvolveState(run_id="r9", skill=SKILL), cfg, context=EvolveContext(ws=ws), durability="sync")
    assert g.get_state(cfg).next == () and not g.get_state(cfg).values
