"""The band's NONE guard (rules/band.py): with a router model, a skill is answered from the unsure
band only when the head gives it at least `llm_none_ratio` times what it leaves for NONE. The ratio
is set for the worst model (one that answers a skill for every query it is asked), so that NONE
rejection with any router model stays within NONE_SLACK of the calibrated rate. Pure-rule edges,
then the route graph with a real head and a scripted router model."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from helpers import FakeEmbedder, router_llm
from skillforge.config import init_workspace
from skillforge.context import RouteContext
from skillforge.graphs.route import route
from skillforge.nodes.route import Choice
from skillforge.routing import fit as route_fit
from skillforge.routing.fit import LabelledQuery
from skillforge.routing.index import RouteIndex
from skillforge.rules.band import guard_allows, none_ratio
from skillforge.rules.thresholds import (EmbedCase, EmbedVerdict, RouteThresholds, Scorer, class_weights,
                                         default_thresholds, embed_decision)
from skillforge.state.route import HitLayer
from skillforge.state.skill import SkillFile


def none_case(top1: float, share: float | None, *, top2: float = 0.0, rule: bool | None = None) -> EmbedCase:
    return EmbedCase(top1, top2, False, False, rule_answer=rule, none_share=share)


def in_case(top1: float, share: float | None = 0.1) -> EmbedCase:
    return EmbedCase(top1, 0.0, True, True, none_share=share)


def worst_rejected(cases: list[EmbedCase], high: float, low: float, margin: float, ratio: float) -> float:
    """NONE rejected if the router model answered a skill for every query it is asked (brute force)."""
    w = class_weights(np.array([c.in_scope for c in cases]), np.array([c.weight for c in cases]))
    total = rejected = 0.0
    for c, wi in zip(cases, w, strict=True):
        if c.in_scope:
            continue
        total += wi
        if c.rule_answer is not None:
            continue
        verdict = embed_decision(c.top1, c.top2, high, low, margin)
        if verdict is EmbedVerdict.REJECT or (verdict is EmbedVerdict.UNSURE
                                              and not guard_allows(c.top1, c.none_share, ratio)):
            rejected += wi
    return rejected / total


def test_guard_allows_at_the_ratio_and_without_a_guard_or_a_share() -> None:
    assert guard_allows(0.4, 0.2, 2.0) and not guard_allows(0.39, 0.2, 2.0)
    assert guard_allows(0.01, 0.9, None) and guard_allows(0.01, None, 5.0)
    assert guard_allows(0.0, 0.0, 3.0)  # nothing left for NONE: nothing to guard against


def test_none_ratio_is_the_smallest_that_reaches_the_target() -> None:
    """Four NONE queries in the band (top1 / NONE share 0.5, 1, 2, 4), one below LOW; rejecting 3 of
    the 5 needs the two lowest ratios guarded: the ratio sits just above 1.0."""
    cases = [none_case(0.2, 0.4), none_case(0.3, 0.3), none_case(0.4, 0.2), none_case(0.4, 0.1),
             none_case(0.01, 0.9), in_case(0.9)]
    ratio = none_ratio(cases, 0.8, 0.1, 0.0, target=0.6)
    assert ratio is not None and 1.0 < ratio < 1.0 + 1e-6
    assert worst_rejected(cases, 0.8, 0.1, 0.0, ratio) >= 0.6
    assert worst_rejected(cases, 0.8, 0.1, 0.0, 1.0 - 1e-6) < 0.6  # any less lets too many through
    assert none_ratio(cases, 0.8, 0.1, 0.0, target=0.2) == 0.0  # LOW alone rejects a fifth


def test_none_ratio_edges() -> None:
    assert none_ratio([none_case(0.3, None), in_case(0.9, None)], 0.8, 0.1, 0.0, 0.9) is None  # cosine scorer
    assert none_ratio([in_case(0.9), in_case(0.5)], 0.8, 0.1, 0.0, 0.9) is None  # no NONE case
    # a NONE query above HIGH is answered whatever the guard: the most it can do is guard all the band
    cases = [none_case(0.95, 0.01), none_case(0.3, 0.5), none_case(0.3, 0.2), in_case(0.9)]
    ratio = none_ratio(cases, 0.8, 0.1, 0.0, target=0.9)
    assert ratio is not None and ratio > 0.3 / 0.2 and worst_rejected(cases, 0.8, 0.1, 0.0, ratio) == pytest.approx(2 / 3)
    # a keyword answer is an answer: it cannot be guarded, and counts against the target
    ruled = [none_case(0.3, 0.5, rule=False), none_case(0.3, 0.5), in_case(0.9)]
    ratio = none_ratio(ruled, 0.8, 0.1, 0.0, target=0.5)
    assert ratio is not None and 0.6 < ratio < 0.61
    # NONE's share 0 cannot be guarded; with nothing else in the band the guard stays off
    assert none_ratio([none_case(0.3, 0.0), in_case(0.9)], 0.8, 0.1, 0.0, target=0.9) == 0.0


def test_none_ratio_holds_its_target_on_random_cases() -> None:
    """Against brute force: the ratio reaches the target when any ratio can (else it guards the
    whole band), and just below it the target is missed."""
    rng = random.Random(7)
    for _ in range(300):
        cases = []
        for _ in range(rng.randint(2, 30)):
            t1 = rng.random()
            cases.append(EmbedCase(t1, rng.random() * t1, rng.random() < 0.5, rng.random() < 0.5,
                                   weight=rng.choice([1.0, 0.5, 2.0]), rule_answer=rng.choice([None, None, None, True]),
                                   none_share=rng.random() * (1 - t1)))
        margin, target = rng.choice([0.0, 0.1]), rng.random()
        ratio = none_ratio(cases, 0.7, 0.2, margin, target)
        if ratio is None:
            assert all(c.in_scope for c in cases)
            continue
        best = worst_rejected(cases, 0.7, 0.2, margin, 1e12)  # every band query guarded
        got = worst_rejected(cases, 0.7, 0.2, margin, ratio)
        assert got >= target - 1e-9 if best >= target else got == pytest.approx(best)
        if ratio > 0 and best >= target:
            assert worst_rejected(cases, 0.7, 0.2, margin, ratio * (1 - 1e-8)) < target


def library() -> list[SkillFile]:
    domains = ["invoice", "weather", "flight", "hotel", "recipe", "taxi", "stock", "email"]
    return [SkillFile(name=f"{d}-helper", description=f"Everything about {d} requests.", keywords=[],
                      examples=[f"help me with my {d}", f"a question about {d} please", f"{d} status now",
                                f"I need {d} information"], body="## Overview\nx\n") for d in domains]


@pytest.fixture(scope="module")
def fitted(tmp_path_factory: pytest.TempPathFactory) -> tuple[RouteIndex, RouteThresholds]:
    """A head fitted on labelled queries (and NONE ones) with the fake embedder, no bank."""
    ws = init_workspace(tmp_path_factory.mktemp("guard") / "ws")
    index = RouteIndex.for_workspace(ws, library(), FakeEmbedder(), use_head=False)
    cases = [LabelledQuery(f"{w} {d}", f"{d}-helper") for d in ("invoice", "weather", "flight", "hotel", "recipe",
                                                                 "taxi", "stock", "email") for w in ("my", "the")]
    cases += [LabelledQuery(q, None) for q in ("tell me a joke", "what is love", "sing a song", "who won the match",
                                              "write a poem", "how tall is everest", "good morning", "thank you")]
    _, th = route_fit.fit(None, index, cases, folds=4, seed=0)
    return index, th


def test_route_fit_sets_the_guard_and_cosine_calibration_does_not(fitted: tuple[RouteIndex, RouteThresholds]) -> None:
    _, th = fitted
    assert th.scorer is Scorer.HEAD and th.llm_none_ratio is not None and th.llm_none_ratio >= 0.0
    old = RouteThresholds.model_validate_json(th.model_dump_json(exclude={"llm_none_ratio"}))
    assert old.llm_none_ratio is None  # a thresholds file from before the guard: no guard, as before
    assert default_thresholds("e", Scorer.HEAD).llm_none_ratio is None


def in_band(index: RouteIndex, query: str, ratio: float) -> tuple[dict[str, float], float]:
    """Set the index's thresholds so that `query` falls in the band, with the guard at `ratio`."""
    vec = index.embed_query(query)
    scores, share = index.embed_scores(vec), index.none_share(vec)
    assert share is not None and share > 0
    top1 = next(iter(scores.values()))
    index.thresholds = index.thresholds.model_copy(update={
        "high": top1 + 1e-3, "low": top1 + 1e-3, "llm_high": top1 + 0.05, "llm_low": max(top1 - 0.05, 0.0),
        "margin": 0.0, "llm_none_ratio": ratio})
    return scores, share


def test_the_guard_keeps_none_without_asking_when_even_the_top_skill_is_under_it(
        fitted: tuple[RouteIndex, RouteThresholds]) -> None:
    index, th = fitted
    try:
        scores, share = in_band(index, "a question about the weather and a joke", 1.0)
        top1 = next(iter(scores.values()))
        index.thresholds = index.thresholds.model_copy(update={"llm_none_ratio": top1 / share + 0.01})
        llm, fake = router_llm(Choice(skill=next(iter(scores)), reason="fits"))
        state = route("a question about the weather and a joke", RouteContext(index=index, llm=llm))
        assert state.chosen is None and state.hit_layer is HitLayer.EMBED and fake.received == []
        assert "NONE guard" in state.reason and state.none_share == pytest.approx(share)
        index.thresholds = index.thresholds.model_copy(update={"llm_none_ratio": None})  # no guard: the model decides
        state = route("a question about the weather and a joke", RouteContext(index=index, llm=llm))
        assert state.hit_layer is HitLayer.LLM and state.chosen == next(iter(scores)) and len(fake.received) == 1
    finally:
        index.thresholds = th


def test_a_model_pick_under_the_guard_becomes_none_and_one_above_it_stands(
        fitted: tuple[RouteIndex, RouteThresholds]) -> None:
    index, th = fitted
    query = "a question about the weather and a joke"
    try:
        scores, share = in_band(index, query, 1.0)
        (first, p1), (second, p2) = list(scores.items())[:2]
        assert p1 > p2
        index.thresholds = index.thresholds.model_copy(update={"llm_none_ratio": (p1 + p2) / 2 / share})
        llm, fake = router_llm(Choice(skill=second, reason="fits"), Choice(skill=first, reason="fits"))
        vetoed = route(query, RouteContext(index=index, llm=llm))
        assert vetoed.hit_layer is HitLayer.LLM and vetoed.chosen is None and len(fake.received) == 1
        assert f"chose {second}" in vetoed.reason and "NONE guard" in vetoed.reason
        kept = route(query, RouteContext(index=index, llm=llm))
        assert kept.hit_layer is HitLayer.LLM and kept.chosen == first
        plain = route(query, RouteContext(index=index))  # no router model: HIGH / LOW, no guard, no share
        assert plain.none_share is None and plain.chosen is None
    finally:
        index.thresholds = th


def test_fit_on_a_workspace_saves_the_guard(tmp_path: Path) -> None:
    """`route fit` as the CLI runs it keeps the ratio in the saved thresholds file."""
    from skillforge.routing.index import load_thresholds

    ws = init_workspace(tmp_path / "ws")
    index = RouteIndex.for_workspace(ws, library(), FakeEmbedder(), use_head=False)
    cases = [LabelledQuery(f"{w} {d}", f"{d}-helper") for d in ("invoice", "weather", "flight", "hotel")
             for w in ("my", "the", "status")]
    cases += [LabelledQuery(q, None) for q in ("tell me a joke", "what is love", "sing a song", "good morning",
                                              "write a poem", "thank you")]
    _, th = route_fit.fit(ws, index, cases, folds=3, seed=0)
    assert load_thresholds(ws, FakeEmbedder.name, Scorer.HEAD).llm_none_ratio == th.llm_none_ratio is not None
