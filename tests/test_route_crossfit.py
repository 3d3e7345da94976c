"""Rejection that carries over to unseen data (issue 26): cross-fitted rates with intervals, folds
that keep a bank kind whole, `--min-reject` held out of fold, and the router model's band value in
`route eval`. Pure rules on generated numbers, plus one `route calibrate` through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import EXAMPLE_SKILLS, run_cli
from skillforge.routing.eval import llm_band
from skillforge.routing.fit import LabelledQuery
from skillforge.rules.crossfit import Rate, assign_folds, cross_fitted, holding_target
from skillforge.rules.thresholds import EmbedCase, calibrate_embed, operating_point
from skillforge.state.route import HitLayer, RouteState

DEFAULTS = (0.9, 0.5, 0.0)


def world(seed: int = 0, kinds: int = 8, per_kind: int = 15) -> list[EmbedCase]:
    """In-scope cases scored 0.6-0.95, right 90 % of the time; bank NONE cases in kinds, each kind
    centred elsewhere (one kind scores like in-scope queries: a kind no other fold predicts)."""
    rng = np.random.default_rng(seed)
    cases = [EmbedCase(float(t), float(t) - 0.1, bool(rng.random() < 0.9), True) for t in rng.uniform(0.6, 0.95, 80)]
    # NONE cases lead by as much as in-scope ones: only the top score tells them apart
    for k in range(kinds):
        centre = 0.55 + 0.05 * k
        cases += [EmbedCase(float(t), float(t) - 0.1, False, False, group="bank", fold_group=f"kind{k}")
                  for t in rng.normal(centre, 0.05, per_kind)]
    cases += [EmbedCase(float(t), float(t) - 0.1, False, False) for t in rng.uniform(0.4, 0.7, 12)]
    return cases


def test_folds_keep_a_bank_kind_whole_and_deal_the_rest() -> None:
    cases = world()
    fold = assign_folds([c.in_scope for c in cases], [c.fold_group for c in cases], 5, seed=1)
    for k in range(8):
        assert len({int(fold[i]) for i, c in enumerate(cases) if c.fold_group == f"kind{k}"}) == 1
    in_scope = [int(fold[i]) for i, c in enumerate(cases) if c.in_scope]
    assert sorted(np.bincount(in_scope).tolist()) == [16] * 5  # 80 dealt evenly
    own = [int(fold[i]) for i, c in enumerate(cases) if not c.in_scope and not c.fold_group]
    assert len(set(own)) > 1  # the workspace's own negatives are each their own group
    again = assign_folds([c.in_scope for c in cases], [c.fold_group for c in cases], 5, seed=1)
    assert (again == fold).all()


def test_held_out_rates_are_counts_of_cases_never_seen_by_their_thresholds() -> None:
    cases = world()
    held = cross_fitted(cases, DEFAULTS, folds=4)
    assert held is not None and held.folds == 4
    assert held.answered_right.n == 80 and held.rejected_bank.n == 120 and held.rejected_own.n == 12
    s = held.summary()["rejected_bank"]
    assert s["ci95"][0] <= s["share"] <= s["ci95"][1]  # type: ignore[index]
    # the rates are measured on held-out folds: one calibration on all of them would do at least as well
    high, low, margin, _ = calibrate_embed(cases, DEFAULTS)
    assert operating_point(cases, high, low, margin).answered_right is not None


def test_nothing_to_hold_out_is_said_not_faked() -> None:
    one_kind = [EmbedCase(0.9, 0.1, True, True), EmbedCase(0.8, 0.1, True, True)] + \
               [EmbedCase(0.5, 0.1, False, False, group="bank", fold_group="k") for _ in range(5)]
    assert cross_fitted(one_kind, DEFAULTS) is None  # every NONE case in one fold
    assert cross_fitted([EmbedCase(0.9, 0.1, True, True)], DEFAULTS) is None
    assert holding_target(one_kind, DEFAULTS, 0.8) == (0.8, None)


def test_min_reject_is_held_out_of_fold_not_only_in_sample() -> None:
    """In sample, a floor of 0.8 is met on every case; a bank kind unlike the others is rejected less
    on held-out folds. holding_target raises the in-sample floor until the held-out rate holds."""
    cases = world(seed=3)
    plain = cross_fitted(cases, DEFAULTS, folds=4, min_reject=0.8)
    floor, held = holding_target(cases, DEFAULTS, 0.8, folds=4)
    assert plain is not None and held is not None
    assert (plain.rejected_min or 0) < 0.75  # fitted to 0.8 in sample, about 0.66 on folds it never saw
    assert 0.8 < floor <= 1.0 and (held.rejected_min or 0) >= 0.8 - 1e-9
    assert held.answered_right.share < plain.answered_right.share  # the price, reported, not hidden


def test_rate_interval_edges() -> None:
    assert Rate(0, 0).summary() == {"share": None, "n": 0} and Rate(0, 0).share is None
    r = Rate(11, 11).summary()
    assert r["share"] == 1.0 and r["ci95"][1] == 1.0 and r["ci95"][0] < 0.8  # type: ignore[index]  # 11 cases carry little


def test_llm_band_value_is_the_model_against_its_two_plain_replacements() -> None:
    def state(chosen: str | None, top: str, layer: HitLayer) -> RouteState:
        return RouteState(query="q", chosen=chosen, hit_layer=layer, top_k=[top, "z"])

    results = [(LabelledQuery("a", "s1"), state("s1", "s1", HitLayer.LLM)),
               (LabelledQuery("b", "s2"), state("s2", "s1", HitLayer.LLM)),  # the model fixed the ranking
               (LabelledQuery("c", None), state(None, "s1", HitLayer.LLM)),
               (LabelledQuery("d", "s1"), state("s1", "s1", HitLayer.EMBED))]
    band = llm_band(results, ["s1", "s1", "s1", "s1"])
    assert band == {"cases": 3, "llm_right": 3, "top1_right": 1, "none_right": 1, "gain": 2,
                    "guard": {"not_asked": 0, "picks_vetoed": 0, "right": 0}}
    assert llm_band(results[3:], ["s1"])["gain"] is None
    # the band's NONE guard: kept NONE in the band without the model, and a pick of the model's made NONE
    guarded = [(LabelledQuery("e", None), RouteState(query="e", hit_layer=HitLayer.EMBED, none_share=0.6,
                                                      scores={"embed": {"s1": 0.2}})),
               (LabelledQuery("f", "s1"), RouteState(query="f", hit_layer=HitLayer.LLM, none_share=0.5,
                                                      scores={"embed": {"s1": 0.3, "s2": 0.1}, "llm": {"s2": 1.0}})),
               (LabelledQuery("g", None), RouteState(query="g", hit_layer=HitLayer.LLM, none_share=0.5,
                                                      scores={"embed": {"s1": 0.3}, "llm": {"NONE": 1.0}})),
               (LabelledQuery("h", None), RouteState(query="h", hit_layer=HitLayer.EMBED, reason="out of scope"))]
    assert llm_band(guarded, ["s1"] * 4)["guard"] == {"not_asked": 1, "picks_vetoed": 1, "right": 1}


def test_route_calibrate_reports_held_out_rates_with_intervals(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    run_cli(["init", str(ws)])
    run_cli(["skills", "import", "--from", str(EXAMPLE_SKILLS), "-w", str(ws)])
    lines = [("track my parcel from the courier", "package-tracking"), ("where is my package now", "package-tracking"),
             ("book me a hotel in Rome", "hotel-booking"), ("find a hotel room for two nights", "hotel-booking"),
             ("get me a taxi to the station", "taxi-hailing"), ("I need a cab right now", "taxi-hailing"),
             ("what's in the news today", "news-digest"), ("summarise today's headlines", "news-digest"),
             ("reserve a table for dinner", "restaurant-booking"), ("book a restaurant for four", "restaurant-booking"),
             ("what should I cook with eggs", "recipe-suggest"), ("tell me a joke", None), ("who won the 1998 world cup", None),
             ("write a poem about rain", None), ("what is the capital of Peru", None), ("sing me a song", None)]
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps({"query": q, "expected": e}) + "\n" for q, e in lines), encoding="utf-8")
    proc = run_cli(["route", "calibrate", "--cases", str(cases), "-w", str(ws), "--json"])
    th = json.loads(proc.stdout)
    held = th["held_out"]
    assert held["answered_right"]["n"] == 11 and held["rejected_own"]["n"] == 5 and held["rejected_bank"]["n"] > 300
    assert "held out (5 folds" in proc.stderr and "95% CI" in proc.stderr
    assert th["calibrated"] is True and th["llm_high"] >= th["high"] >= th["low"] >= th["llm_low"]
    strict = json.loads(run_cli(["route", "calibrate", "--cases", str(cases), "-w", str(ws), "--json",
                                 "--min-reject", "0.8"]).stdout)
    assert strict["min_reject"] == 0.8 and strict["fitted_min_reject"] >= 0.8
    assert strict["held_out"]["rejected_bank"]["share"] >= 0.8 - 1e-9 or strict["fitted_min_reject"] == pytest.approx(1.0)
