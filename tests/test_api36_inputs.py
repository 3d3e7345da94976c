"""QA 36 F4: wrong input types given to the graphs through the Python API (as `langgraph dev`
passes them) are named errors: InvalidInput naming the field, what was given (repr and type) and
what it should be, no pydantic URL; a context of the wrong kind or with an unknown key is
InvalidContext. Normal input still runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from evaluate_fakes import context, fake_llm, make_set, skill_text
from evolve_fakes import SKILL
from helpers import FakeEmbedder, bench_skills

from skillforge.context import EvalContext, EvolveContext, RouteContext
from skillforge.errors import InvalidContext, InvalidInput, SkillForgeError
from skillforge.routing.index import RouteIndex
from skillforge.state.evaluate import SkillSide
from skillforge.state.evaluate_graph import EvalState
from skillforge.state.evolve import EvolveState
from skillforge.state.route import RouteState
from test_graph_ids import evolve_world  # noqa: F401 - the fixture


def _files(root: Path) -> dict[str, int]:
    """Every file and its mtime; SQLite's -wal/-shm side files left out: a reader opening the store
    makes them (a fresh-clone run under load once saw them appear, with skillforge.db unchanged)."""
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*")
            if p.is_file() and not p.name.endswith(("-wal", "-shm"))}


@pytest.fixture
def route_ctx(tmp_path: Path) -> RouteContext:
    return RouteContext(index=RouteIndex.build(bench_skills()[:3], FakeEmbedder()),
                        router_log=tmp_path / "runs" / "router.jsonl")


@pytest.mark.parametrize("data,says", [
    ({"query": 42}, "RouteState: query: should be a valid string, got 42 (int)"),
    ({"query": None}, "RouteState: query: should be a valid string, got None (NoneType)"),
    ({}, "RouteState: query is required"),
    ({"query": "hi", "candidates": "weather-query"}, "candidates: should be a valid list, got 'weather-query' (str)"),
])
def test_route_graph_wrong_input_is_invalid_input(route_ctx, tmp_path, data, says):
    from skillforge.graphs.route import graph

    with pytest.raises(InvalidInput) as e:
        graph.invoke(data, context=route_ctx)
    assert says in str(e.value) and "pydantic" not in str(e.value) and "errors.pydantic.dev" not in str(e.value)
    assert isinstance(e.value, SkillForgeError) and isinstance(e.value, TypeError)  # Studio shows a TypeError's text
    assert not route_ctx.router_log.exists()  # no node ran
    with pytest.raises(InvalidInput, match="query: should be a valid string"):  # the model itself
        RouteState(query=42)  # type: ignore[arg-type]


def test_route_graph_sound_input_still_routes(route_ctx):
    from skillforge.graphs.route import graph

    out = RouteState.model_validate(graph.invoke({"query": "weather in Paris tomorrow"}, context=route_ctx))
    assert out.hit_layer is not None and route_ctx.router_log.exists()


def _eval_data(**over: object) -> dict[str, object]:
    side = SkillSide(text=skill_text(), release_id="r-old").model_dump()
    return {"run_id": "run-1", "skill": "taxi-hailing", "eval_set": "t", "baseline": side, "candidate": side, **over}


@pytest.mark.parametrize("over,says", [
    ({"run_id": 5}, "run_id: should be a valid string, got 5 (int)"),
    ({"baseline": "live"}, "baseline: should be a valid dictionary or instance of SkillSide, got 'live' (str)"),
    ({"kind": "xx"}, "kind: should be 'ab' or 'aa', got 'xx' (str)"),
])
def test_evaluate_graph_wrong_input_is_invalid_input_and_writes_nothing(tmp_path, over, says):
    from skillforge.graphs.evaluate import graph

    ctx = context(fake_llm()[0], make_set(tmp_path, 5), tmp_path / "logs")
    before = _files(tmp_path)
    with pytest.raises(InvalidInput) as e:
        graph.invoke(_eval_data(**over), context=ctx)
    assert str(e.value).startswith("EvalState: ") and says in str(e.value), str(e.value)
    assert "errors.pydantic.dev" not in str(e.value)
    assert _files(tmp_path) == before


def test_evaluate_missing_fields_are_named(tmp_path):
    with pytest.raises(InvalidInput, match=r"EvalState: run_id is required; skill is required"):
        EvalState.model_validate({})
    with pytest.raises(InvalidInput, match=r"EvalState: the input must be a dict of its fields, got 'nope' \(str\)"):
        EvalState.model_validate("nope")




def test_evolve_graph_wrong_input_is_invalid_input_then_a_sound_one_runs(evolve_world, tmp_path):  # noqa: F811
    from skillforge.graphs.evolve import graph

    ws, world = evolve_world
    before = _files(tmp_path)
    for data, says in (({"run_id": "studio-run", "skill": SKILL, "max_rounds": "two"},
                        "max_rounds: should be a valid integer, unable to parse string as an integer, got 'two' (str)"),
                       ({"skill": SKILL}, "EvolveState: run_id is required"),
                       ({"run_id": ["a"], "skill": SKILL}, "run_id: should be a valid string, got ['a'] (list)")):
        with pytest.raises(InvalidInput) as e:
            graph.invoke(data, context=EvolveContext(ws=ws, llm=world.llm()))
        assert says in str(e.value), str(e.value)
    assert _files(tmp_path) == before  # collect never ran
    with pytest.raises(InvalidInput, match="mode: should be 'autonomous'"):
        EvolveState.model_validate({"run_id": "r", "skill": SKILL, "mode": "wild"})
    out = graph.invoke({"run_id": "studio.run_2", "skill": SKILL}, context=EvolveContext(ws=ws, llm=world.llm()))
    assert out.get("status") == "PUBLISHED", out.get("message")


# ---- contexts ------------------------------------------------------------------------------
@pytest.mark.parametrize("ctx,says", [
    ("nope", "context must be a RouteContext (or a dict of its fields), got 'nope' (str)"),
    (42, "context must be a RouteContext (or a dict of its fields), got 42 (int)"),
    ({"bogus": 1}, "RouteContext has no field 'bogus': its fields are index, llm, router_log, source, llm_off"),
])
def test_route_graph_wrong_context_is_invalid_context(ctx, says):
    from skillforge.graphs.route import graph

    with pytest.raises(InvalidContext) as e:
        graph.invoke({"query": "weather"}, context=ctx)
    assert says in str(e.value), str(e.value)
    assert isinstance(e.value, TypeError)


def test_an_unknown_context_key_is_named_for_every_context_class_and_subclass():
    from skillforge.testing.studio_graphs import ScriptedRouteContext

    with pytest.raises(InvalidContext, match="EvalContext has no field 'sets_dir': its fields are llm, sets, others"):
        EvalContext(sets_dir="x")  # type: ignore[call-arg]
    with pytest.raises(InvalidContext, match="EvolveContext has no field 'workspace': its fields are ws, llm, embedder"):
        EvolveContext(workspace="x")  # type: ignore[call-arg]
    with pytest.raises(InvalidContext, match="ScriptedRouteContext has no field 'bogus'"):
        ScriptedRouteContext(bogus=1)  # type: ignore[call-arg]
    assert RouteContext().empty and ScriptedRouteContext(**{}).empty  # what a server builds from `{}`


def test_evolve_graph_given_another_graphs_context_is_invalid_context(evolve_world):  # noqa: F811
    from skillforge.graphs.evolve import graph

    with pytest.raises(InvalidContext, match=r"context must be an EvolveContext \(or a dict of its fields\), got EvalContext\("):
        graph.invoke({"run_id": "ctx-run", "skill": SKILL}, context=EvalContext())
