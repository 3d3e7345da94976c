"""Confusion pairs of `route eval` (issue 26): the pure rule's edges, and the pairs and their
not_for hints in `route eval --json` and the text output (fake embedder, no model)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import KEPT_ENV, init_workspace
from helpers import FakeEmbedder

from skillforge.routing.eval import EvalCase, summarize
from skillforge.rules.confusions import (
    EXAMPLE_CHARS,
    EXAMPLES,
    HINT_CHARS,
    MIN_PAIR,
    RankedCase,
    confusion_pairs,
    not_for_phrase,
)
from skillforge.state.route import HitLayer, RouteState

DESCRIPTIONS = {"flights": "Book a flight between two cities. Use when the user wants a plane ticket.",
                "trains": "Book a train ticket between two cities. Use when the user wants a rail trip."}


def cases(*rows: tuple[str | None, str | None], times: int = 1) -> list[RankedCase]:
    return [RankedCase(f"q{i} {e}->{r}", e, r) for i, (e, r) in enumerate(list(rows) * times)]


# ---- the pure rule --------------------------------------------------------------------------
def test_no_cases_no_pairs() -> None:
    assert confusion_pairs([]) == []
    assert confusion_pairs(cases(("flights", "flights"), ("trains", "trains"))) == []  # all ranked right


def test_confusion_with_none_is_not_a_pair() -> None:
    # expected NONE ranked to a skill, a skill's case nothing ranked: threshold matters, not pairs
    assert confusion_pairs(cases((None, "flights"), ("flights", None), (None, None), times=3)) == []


def test_both_directions_are_counted_apart_and_together() -> None:
    rows = cases(("trains", "flights"), ("trains", "flights"), ("trains", "flights"), ("flights", "trains"),
                 ("flights", "flights"), ("trains", "trains"), ("weather", "flights"))
    pairs = confusion_pairs(rows, DESCRIPTIONS)
    assert [(p.a, p.b, p.a_to_b, p.b_to_a, p.total) for p in pairs] == \
        [("flights", "trains", 1, 3, 4), ("flights", "weather", 0, 1, 1)]
    top = pairs[0].as_json()
    assert (top["a_cases"], top["b_cases"], top["share"], top["a_share"], top["b_share"]) == (2, 4, 0.6667, 0.5, 0.75)
    assert len(top["examples"]) == EXAMPLES and top["examples"][0] == {
        "query": rows[0].query, "expected": "trains", "ranked": "flights"}
    # trains' queries go to flights: flights must say it is not for train tickets (the dominant direction only)
    assert top["hint"] == "add to flights's not_for: Book a train ticket between two cities"
    assert top["not_for"] == [{"skill": "flights", "add": "Book a train ticket between two cities", "other": "trains"}]
    assert pairs[1].as_json()["hint"] is None  # a single confusion: below MIN_PAIR


def test_ties_sort_by_name_and_a_tied_pair_hints_both_ways() -> None:
    rows = cases(("b", "c"), ("c", "b"), ("a", "d"), ("d", "a"))
    pairs = confusion_pairs(rows)
    assert [(p.a, p.b, p.total) for p in pairs] == [("a", "d", 2), ("b", "c", 2)]
    assert pairs[0].as_json()["hint"] == "add to d's not_for: a; add to a's not_for: d"  # no description: the name
    assert [(h.skill, h.other) for h in pairs[1].hints] == [("c", "b"), ("b", "c")]


def test_below_the_thresholds_no_hint() -> None:
    assert MIN_PAIR == 2
    one = confusion_pairs(cases(("flights", "trains"), ("flights", "flights"), ("trains", "trains")), DESCRIPTIONS)
    assert one[0].total == 1 and one[0].hints == () and one[0].as_json()["hint"] is None
    # twice, but in under 20% of each skill's cases: no hint either
    many = cases(("flights", "trains"), ("trains", "flights")) + cases(("flights", "flights"), ("trains", "trains"),
                                                                       times=5)
    rare = confusion_pairs(many, DESCRIPTIONS)[0]
    assert (rare.total, rare.as_json()["a_share"], rare.as_json()["b_share"]) == (2, 0.1667, 0.1667)
    assert rare.hints == ()
    # twice in one direction, 2 of 10 cases (20%): hinted
    edge = cases(("flights", "trains"), times=2) + cases(("flights", "flights"), times=8)
    assert [h.skill for h in confusion_pairs(edge, DESCRIPTIONS)[0].hints] == ["trains"]


def test_examples_are_cut_and_phrases_shortened() -> None:
    long = "x" * 200
    pair = confusion_pairs([RankedCase(long, "a", "b"), RankedCase("  two\nlines ", "a", "b")])[0]
    assert len(pair.examples[0].query) == EXAMPLE_CHARS and pair.examples[0].query.endswith("…")
    assert pair.examples[1].query == "two lines"
    phrase = not_for_phrase("s", "Summarise a long pull request thread into decisions, open questions and owners "
                                 "for the weekly engineering sync. Use when asked.")
    assert len(phrase) <= HINT_CHARS and phrase.endswith("…") and not phrase[:-1].endswith(" ")
    assert not_for_phrase("air-quality", "") == "air quality"
    assert not_for_phrase("w", "查询天气。用于天气问题") == "查询天气"


def test_summarize_reports_pairs_and_keeps_the_contract() -> None:
    def state(query: str, ranked: str | None) -> RouteState:
        scores = {"embed": {ranked: 0.9}} if ranked else {}
        return RouteState(query=query, chosen=None, hit_layer=HitLayer.NONE, scores=scores)

    results = [(EvalCase("fly me to Rome", "trains"), state("fly me to Rome", "flights")),
               (EvalCase("rail to Rome", "trains"), state("rail to Rome", "flights")),
               (EvalCase("tell a joke", None), state("tell a joke", "flights"))]
    report = summarize(results, DESCRIPTIONS)
    assert {"worst_confusions", "recall_at_1", "top1", "cases"} <= set(report)
    assert report["worst_confusions"][0] == {"expected": "trains", "chosen": None, "count": 2}  # unchanged: decisions
    [pair] = report["confusion_pairs"]  # by ranking: NONE was answered, flights ranked first
    assert (pair["a"], pair["b"], pair["b_to_a"], pair["total"]) == ("flights", "trains", 2, 2)
    assert pair["hint"] == "add to flights's not_for: Book a train ticket between two cities"
    assert summarize(results)["confusion_pairs"][0]["hint"] == "add to flights's not_for: trains"


# ---- the command ----------------------------------------------------------------------------
def skill(folder: Path, name: str, description: str, keywords: list[str]) -> None:
    (folder / name).mkdir(parents=True)
    (folder / name / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: \"{description}\"\nmetadata: {{version: \"1.0.0\"}}\n"
        f"keywords: {json.dumps(keywords)}\n---\n## Overview\n{description}\n", encoding="utf-8")


def test_cli_route_eval_reports_the_confused_pair(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from skillforge.cli.main import app
    from skillforge.routing import embedding

    for key in [k for k in os.environ if k.startswith(("SKILLFORGE_", "OPENAI_")) and k not in KEPT_ENV]:
        monkeypatch.delenv(key)
    monkeypatch.setattr(embedding, "get_embedder", lambda spec=None: FakeEmbedder())  # no model
    folder = tmp_path / "skills"
    skill(folder, "hotel-booking", "Book a hotel room in a city for some nights.", ["hotel"])
    skill(folder, "hostel-booking", "Book a hostel bed in a city for some nights.", ["hostel"])
    ws = init_workspace(tmp_path / "ws")
    rows = [{"query": "book a hotel room in Rome", "expected": "hotel-booking"},
            {"query": "a hotel for two nights in Paris", "expected": "hotel-booking"},
            {"query": "a cheap bed in a city for some nights", "expected": "hotel-booking"},  # ranked hostel
            {"query": "book a hostel bed in Oslo", "expected": "hostel-booking"},
            {"query": "a room in Berlin for some nights", "expected": "hostel-booking"},  # ranked hotel
            {"query": "a room in a city for some nights please", "expected": "hostel-booking"},  # ranked hotel
            {"query": "tell me a joke", "expected": None}]
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    args = ["route", "eval", "--cases", str(path), "--skills", str(folder), "-w", str(ws.root), "--no-llm"]

    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert {"worst_confusions", "recall_at_1", "top1", "confusion_pairs"} <= set(report)
    [pair] = report["confusion_pairs"]
    assert (pair["a"], pair["b"], pair["a_to_b"], pair["b_to_a"], pair["a_cases"], pair["b_cases"]) == \
        ("hostel-booking", "hotel-booking", 2, 1, 3, 3)
    # hostel's queries go to hotel most: hotel must say it is not for hostel beds
    assert pair["hint"] == "add to hotel-booking's not_for: Book a hostel bed in a city for some nights"
    assert [e["query"] for e in pair["examples"]] == [rows[2]["query"], rows[4]["query"], rows[5]["query"]]
    assert [(c["expected"], c["top1"]) for c in report["cases"]][2] == ("hotel-booking", "hostel-booking")

    text = CliRunner().invoke(app, args)
    assert text.exit_code == 0, text.output
    flat = " ".join(text.stdout.split())  # the console may wrap long lines
    assert "confused pairs" in flat and "3x hostel-booking <-> hotel-booking" in flat
    assert f"hint: {pair['hint']}" in flat
