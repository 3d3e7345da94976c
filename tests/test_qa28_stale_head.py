"""QA28 F3: a fitted head remembers what each skill said when it was fitted; after an edit of a
skill's card or examples it is stale (warned, not used), like a head missing a new skill, and so
is one that `route calibrate --undo` brings back."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from skillforge.config import init_workspace
from skillforge.routing.fit import LabelledQuery, fit
from skillforge.routing.head import ScoringHead
from skillforge.routing.index import HEAD_FILE, RouteIndex, reset_routing, routing_dir
from skillforge.routing.undo import undo_reset
from skillforge.state.skill import SkillFile
from test_route_none import LABELLED, SKILLS, BigramEmbedder


def skills(**changes: dict) -> list[SkillFile]:
    return [SkillFile(name=n, body="## Overview\nx\n", **{**fields, **changes.get(n.replace("-", "_"), {})})
            for n, fields in SKILLS.items()]


@pytest.fixture
def fitted(tmp_path: Path):  # noqa: ANN201 - the workspace
    ws = init_workspace(tmp_path / "ws")
    fit(ws, RouteIndex.build(skills(), BigramEmbedder()), [LabelledQuery(q, e) for q, e in LABELLED])
    return ws


def test_a_head_fitted_on_the_current_skills_is_used_and_an_edit_makes_it_stale(fitted, caplog) -> None:
    assert RouteIndex.build(skills(), BigramEmbedder(), ws=fitted).head is not None
    with caplog.at_level(logging.WARNING):
        edited = RouteIndex.build(skills(flight_booking={"description": "Feed the zebras at the zoo."}),
                                  BigramEmbedder(), ws=fitted)
    assert edited.head is None and edited.scorer.value == "cosine"
    assert "stale (changed since the fit: flight-booking)" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):  # an example changed: the head saw its vector
        examples = RouteIndex.build(skills(stock_quote={"examples": ["how is AAPL doing today"]}),
                                    BigramEmbedder(), ws=fitted)
    assert examples.head is None and "changed since the fit: stock-quote" in caplog.text


def test_keywords_and_not_for_do_not_reach_the_head(fitted, caplog) -> None:
    with caplog.at_level(logging.WARNING):
        index = RouteIndex.build(skills(flight_booking={"keywords": ["plane"], "not_for": ["boats"]}),
                                 BigramEmbedder(), ws=fitted)
    assert index.head is not None and "stale" not in caplog.text


def test_a_new_and_a_changed_skill_are_both_named(fitted, caplog) -> None:
    extra = SkillFile(name="zebra-feeding", body="## Overview\nx\n", description="Feed zebras.", examples=["hay for zebras"])
    with caplog.at_level(logging.WARNING):
        index = RouteIndex.build([*skills(weather_query={"use_when": "the user asks about tides"}), extra],
                                 BigramEmbedder(), ws=fitted)
    assert index.head is None
    assert "new skills: zebra-feeding; changed since the fit: weather-query" in caplog.text


def test_a_head_saved_without_fingerprints_still_loads_with_a_warning(fitted, caplog) -> None:
    path = routing_dir(fitted, BigramEmbedder.name) / HEAD_FILE
    head = ScoringHead.load(path)
    assert head.fitted_on is not None and set(head.fitted_on) == set(SKILLS)
    head.fitted_on = None
    head.save(path)
    with caplog.at_level(logging.WARNING):
        index = RouteIndex.build(skills(flight_booking={"description": "Feed the zebras."}), BigramEmbedder(), ws=fitted)
    assert index.head is not None   # nothing to compare with: used as before
    assert "cannot be noticed" in caplog.text and "route fit` again" in caplog.text


def test_the_head_put_back_by_undo_of_a_reset_is_checked_too(fitted, caplog) -> None:
    assert "scoring head" in reset_routing(fitted, BigramEmbedder.name)
    assert "scoring head" in undo_reset(fitted, BigramEmbedder.name)
    assert RouteIndex.build(skills(), BigramEmbedder(), ws=fitted).head is not None
    with caplog.at_level(logging.WARNING):
        index = RouteIndex.build(skills(sql_query_helper={"description": "Tune espresso machines."}),
                                 BigramEmbedder(), ws=fitted)
    assert index.head is None and "changed since the fit: sql-query-helper" in caplog.text
