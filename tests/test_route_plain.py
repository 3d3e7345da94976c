"""`route_plain` (the route graph's nodes walked along its edges without LangGraph, the CLI's path
when no router model is in play) against the compiled graph: the same answer, layer, reason,
scores, top-k, latency keys and router log line, query by query, in every branch of the cascade;
and `skillforge route --json` (the plain path) against the graph over the same workspace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import EXAMPLE_SKILLS, run_cli
from helpers import PLAIN, FakeEmbedder, bench_skills, read_log, router_llm

from skillforge.config import Workspace
from skillforge.context import RouteContext, route_context
from skillforge.errors import UnknownSkill
from skillforge.graphs.route import route, route_plain
from skillforge.nodes.route import NONE, Choice
from skillforge.routing.index import RouteIndex
from skillforge.rules.thresholds import RouteThresholds
from skillforge.state.route import HitLayer, RouteState

SKILLS = bench_skills()


def comparable(state: RouteState) -> dict[str, object]:
    """Everything but the latencies' values (wall clock): their keys say which layers ran."""
    data = state.model_dump(mode="json")
    data["latency_ms"] = sorted(data["latency_ms"])
    return data


def comparable_line(line: dict[str, object]) -> dict[str, object]:
    return {**{k: v for k, v in line.items() if k != "ts"}, "latency_ms": sorted(line["latency_ms"])}  # type: ignore[arg-type]


def thresholds(index: RouteIndex, *, high: float, low: float, rule: float = 1.0) -> RouteThresholds:
    return RouteThresholds(embedder=index.embedder.name, scorer=index.scorer, rule_margin=rule,
                           rule_min_score=rule, high=high, low=low, margin=0.0)


CASES = [  # (query, candidates, thresholds: high, low, rule) and the layer the graph ends at
    ("北京明天天气预报，会下雨吗", None, (2.0, -2.0, 1.0), HitLayer.RULE),
    ("北京明天天气预报，会下雨吗", ["stock-quote", "flight-booking"], (2.0, -2.0, 1.0), HitLayer.NONE),
    ("明早七点提醒我吃药", None, (-1.0, -2.0, 100.0), HitLayer.EMBED),  # embed accepts
    ("给我讲个笑话", None, (3.0, 2.0, 100.0), HitLayer.EMBED),  # out of scope: rejected, NONE
    ("给我讲个笑话", None, (2.0, -2.0, 100.0), HitLayer.NONE),  # uncertain: the LLM layer's query
    ("   \u200b ", None, (2.0, -2.0, 1.0), HitLayer.NONE),  # empty query
    ("weather-query", None, (2.0, -2.0, 1.0), HitLayer.NONE),  # only a skill's name
    ("明早七点提醒我吃药", [], (2.0, -2.0, 1.0), HitLayer.NONE),  # an empty candidate list
]


@pytest.mark.parametrize(("query", "candidates", "th", "layer"), CASES)
def test_plain_path_decides_and_logs_as_the_graph(tmp_path: Path, query: str, candidates: list[str] | None,
                                                  th: tuple[float, float, float], layer: HitLayer) -> None:
    index = RouteIndex.build(SKILLS, FakeEmbedder())
    high, low, rule = th
    index.thresholds = thresholds(index, high=high, low=low, rule=rule)
    graph_log, plain_log = tmp_path / "graph.jsonl", tmp_path / "plain.jsonl"
    by_graph = route(query, RouteContext(index=index, router_log=graph_log), candidates)
    by_plain = route_plain(query, RouteContext(index=index, router_log=plain_log), candidates)
    assert by_graph.hit_layer is layer
    assert comparable(by_plain) == comparable(by_graph)
    [g], [p] = read_log(graph_log), read_log(plain_log)
    assert comparable_line(p) == comparable_line(g)


@pytest.mark.parametrize("answer", ["the second", NONE])
def test_plain_path_with_a_router_model_asks_it_as_the_graph_does(tmp_path: Path, answer: str) -> None:
    index = RouteIndex.build(SKILLS, FakeEmbedder())
    index.thresholds = thresholds(index, high=2.0, low=-2.0, rule=100.0)
    query = "明早七点提醒我吃药"
    second = list(index.embed_scores(index.embed_query(query)))[1]
    skill = second if answer == "the second" else NONE
    states, lines = [], []
    for how, name in ((route, "graph"), (route_plain, "plain")):
        llm, fake = router_llm(Choice(skill=skill, reason="it fits"))
        log = tmp_path / f"{name}.jsonl"
        states.append(comparable(how(query, RouteContext(index=index, llm=llm, router_log=log))))
        lines.append([comparable_line(line) for line in read_log(log)])
        assert fake.position == 1
    assert states[0] == states[1] and lines[0] == lines[1]
    assert states[0]["hit_layer"] == "llm" and states[0]["chosen"] == (None if skill == NONE else skill)


@pytest.fixture
def example_ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    run_cli(["init", str(ws)])
    run_cli(["skills", "import", "--from", str(EXAMPLE_SKILLS), "-w", str(ws)])
    return ws


def test_cli_route_json_matches_the_graph(example_ws: Path) -> None:
    """`skillforge route --json` (no router model: the plain path) against the compiled graph on
    the same workspace, its real embedder and (auto) thresholds: a rule hit, two out-of-scope ones,
    --candidates, --no-llm."""
    queries = [("where is my parcel", []), ("recommend a good book", []), ("给我讲个笑话", []),
               ("where is my parcel", ["--candidates", "hotel-booking,news-digest"]),
               ("book a table for two tonight", ["--no-llm"])]
    ctx = route_context(Workspace.open(example_ws), use_llm=False)
    log = example_ws / "runs" / "router.jsonl"
    for query, flags in queries:
        proc = run_cli(["route", query, "-w", str(example_ws), "--json", *flags], env=PLAIN)
        by_cli = RouteState.model_validate(json.loads(proc.stdout))
        cli_line = read_log(log)[-1]
        if "--no-llm" in flags:
            ctx.llm_off = "the LLM layer off (--no-llm)"
        candidates = flags[1].split(",") if flags[:1] == ["--candidates"] else None
        by_graph = route(query, ctx, candidates)
        assert comparable(by_cli) == comparable(by_graph), query
        assert comparable_line(cli_line) == comparable_line(read_log(log)[-1]), query
    hit = {q: RouteState.model_validate(json.loads(run_cli(["route", q, "-w", str(example_ws), "--json"]).stdout)).hit_layer
           for q, _ in queries[:2]}
    # uncalibrated, the workspace routes by its auto thresholds (routing.defaults): no band without
    # a router model, so the book query is out of scope at the embed layer
    assert hit == {"where is my parcel": HitLayer.RULE, "recommend a good book": HitLayer.EMBED}


def test_an_unknown_candidate_is_the_same_named_error_on_both_paths(tmp_path: Path) -> None:
    ctx = RouteContext(index=RouteIndex.build(SKILLS, FakeEmbedder()), router_log=tmp_path / "router.jsonl")
    errors = []
    for how in (route, route_plain):
        with pytest.raises(UnknownSkill) as caught:
            how("where is my parcel", ctx, ["flight-search"])
        errors.append(str(caught.value))
    assert errors[0] == errors[1] and "flight-booking" in errors[0]
    assert read_log(tmp_path / "router.jsonl") == []
