"""The graphs run with no context (as `langgraph dev` runs them): the context is built from the
workspace settings ($SKILLFORGE_WORKSPACE), once per run; only graphs built with a context schema of
their own (the Studio test's, skillforge.testing.studio_graphs) get scripted models, and nothing
else does: no environment variable turns fakes on in the package's graphs."""

from __future__ import annotations

import importlib
import json
import os

import pytest
from conftest import KEPT_ENV, REPO
from langgraph.graph.state import CompiledStateGraph

import skillforge.context as context_mod
from skillforge.context import EvalContext, EvolveContext, RouteContext
from skillforge.errors import LLMNotConfigured, WorkspaceError
from skillforge.graphs.route import graph as route_graph
from skillforge.testing.fake_chat import ScriptedChatModel
from skillforge.state.llm import Role
from skillforge.testing import studio_graphs

QUERY = "帮我叫辆车去虹桥火车站"


@pytest.fixture
def settings_ws(machine, monkeypatch):
    """The example skills' workspace as $SKILLFORGE_WORKSPACE, with no model settings."""
    for key in list(os.environ):
        if key.startswith(("SKILLFORGE_", "OPENAI_")) and key not in KEPT_ENV:
            monkeypatch.delenv(key)
    monkeypatch.setenv("SKILLFORGE_WORKSPACE", str(machine.ws.root))
    return machine.ws


@pytest.fixture
def builds(monkeypatch):
    """Counts the route contexts built from settings."""
    calls: list[str] = []
    real = context_mod.route_context

    def counted(ws, **kw):
        calls.append(str(ws.root))
        return real(ws, **kw)
    monkeypatch.setattr(context_mod, "route_context", counted)
    return calls


def test_langgraph_json_lists_the_three_graphs_compiled_without_a_checkpointer():
    config = json.loads((REPO / "langgraph.json").read_text(encoding="utf-8"))
    assert set(config["graphs"]) == {"route", "evaluate", "evolve"}
    for spec in config["graphs"].values():
        module, var = spec.split(":")
        graph = getattr(importlib.import_module(module), var)
        assert isinstance(graph, CompiledStateGraph) and graph.checkpointer is None, spec


def test_no_context_routes_with_the_workspace_settings(settings_ws, builds):
    out = route_graph.invoke({"query": QUERY})
    assert out["chosen"] == "taxi-hailing" and out["hit_layer"] in ("rule", "embed")
    logged = [json.loads(line) for line in settings_ws.router_log.read_text(encoding="utf-8").splitlines()]
    assert logged[-1]["chosen"] == "taxi-hailing"  # the settings' router log, in that workspace
    assert builds and set(builds) == {str(settings_ws.root)}  # no run-wide context to fill: one per node


def test_the_servers_empty_context_is_filled_once_per_run(settings_ws, builds):
    ctx = RouteContext()  # what the server constructs from a run's empty `context` payload
    assert ctx.empty and EvalContext().empty and EvolveContext().empty
    out = route_graph.invoke({"query": QUERY}, context=ctx)
    assert out["chosen"] == "taxi-hailing"
    assert builds == [str(settings_ws.root)]  # rule_match built it; the later nodes reused it
    assert not ctx.empty and ctx.router_log == settings_ws.router_log and ctx.llm is None  # no router model set


def test_a_context_passed_by_the_caller_is_used_as_is(settings_ws, builds):
    given = context_mod.route_context(settings_ws, use_llm=False)
    given.router_log = None
    builds.clear()
    route_graph.invoke({"query": QUERY}, context=given)
    assert builds == [] and not settings_ws.router_log.exists()


def test_no_workspace_is_a_named_error(settings_ws, monkeypatch, tmp_path):
    monkeypatch.setenv("SKILLFORGE_WORKSPACE", str(tmp_path / "nowhere"))
    with pytest.raises(WorkspaceError, match="skillforge init"):
        route_graph.invoke({"query": QUERY})


def test_fake_models_only_in_the_graphs_built_with_them(settings_ws, monkeypatch):
    monkeypatch.setenv("SKILLFORGE_FAKE_MODELS", "evolve-l2")  # what once turned them on: now nothing
    for kind in (EvalContext, EvolveContext):
        with pytest.raises(LLMNotConfigured):  # the workspace's settings: no model configured here
            kind.from_settings(settings_ws).llm.model(Role.EXECUTOR)
    for kind in (studio_graphs.ScriptedEvalContext, studio_graphs.ScriptedEvolveContext):
        llm = kind.from_settings(settings_ws).llm
        assert all(isinstance(llm.model(r), ScriptedChatModel) for r in (Role.EXECUTOR, Role.JUDGE, Role.PROPOSER))
    assert all(isinstance(g, CompiledStateGraph) and g.checkpointer is None
               for g in (studio_graphs.route, studio_graphs.evaluate, studio_graphs.evolve))
    ctx = studio_graphs.ScriptedEvolveContext()  # what the server constructs for a studio_graphs run
    assert studio_graphs.evolve.invoke({"run_id": "r1", "skill": "taxi-hailing"}, context=ctx)["status"] == "NO_FAILURES"
    assert isinstance(ctx.llm.model(Role.PROPOSER), ScriptedChatModel) and ctx.ws.root == settings_ws.root
    routed = studio_graphs.route.invoke({"query": QUERY}, context=studio_graphs.ScriptedRouteContext())
    assert routed["chosen"] == "taxi-hailing"
