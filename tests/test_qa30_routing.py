"""QA30 routing: `route calibrate --undo` undoes a first fit (back to the auto head), also after an
edit (N5); the duplicate rule sees negations and moved clauses (N3); `route calibrate` keeps the
auto head when the labelled cases name under half the skills (N4); a renamed skill is listed once
in the stale-head warning (N7)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from skillforge.routing.compare import FewSkillsNamed, coverage_gap
from skillforge.routing.fit import LabelledQuery, fit
from skillforge.routing.index import (FIT_FILE, HEAD_FILE, PREVIOUS_HEAD_FILE, NothingToUndo, RouteIndex,
                                      load_thresholds, routing_dir, undo_thresholds)
from skillforge.routing.undo import undo_fit
from skillforge.rules.confusions import same_description
from skillforge.rules.thresholds import Scorer
from skillforge.state.skill import SkillFile
from test_qa28_replace_router import cli_ws  # noqa: F401 - the fixture
from test_qa28_stale_head import fitted, skills  # noqa: F401 - fitted: the fixture
from test_route_none import LABELLED, BigramEmbedder


# ---- N3: the duplicate rule ------------------------------------------------------------------------
@pytest.mark.parametrize("a, b, dup", [
    ("Cancel an existing unpaid invoice.", "Do not cancel an existing unpaid invoice.", False),   # containment + not
    ("Cancel an existing unpaid invoice.", "Don't cancel an existing unpaid invoice.", False),     # don't
    ("Cancel an existing unpaid invoice.", "Never cancel an existing unpaid invoice.", False),
    ("Upload a file to the shared drive.", "Upload a file to the shared drive without a password.", False),  # without
    ("Book a table at a restaurant for dinner tonight with friends and family.",
     "Never book a table at a restaurant for dinner tonight with friends and family.", False),  # ratio rule + never
    ("Book a table at a restaurant for dinner tonight with friends and family.",
     "Book no table at a restaurant for dinner tonight with friends and family.", False),      # a word swapped for no
    ("取消一张未付款的发票", "不要取消一张未付款的发票", False),                                      # 不
    ("取消一张未付款的发票", "别取消一张未付款的发票", False),                                        # 别
    ("Translate a quarterly sales report into French.", "Into French, translate a quarterly sales report.", True),
    ("Translate French text into English.", "Translate English text into French.", False),  # roles swapped, no move
    ("Cancel an existing recipe subscription.", "Please just basically cancel an existing recipe subscription.", True),
    ("Cancel an existing recipe", "Cancel an existing recipe quickly and reliably", True),
    ("Book a hotel room in the city centre for a few nights next week.",
     "Book a hostel room in the city centre for a few nights next week.", True),   # one word of 13: the 0.9 ratio
    ("Book a hotel room in the city centre for a few nights next week.",
     "Book a hostel bed in the city centre for a few nights next week.", False),
    ("Translate text", "Translate text into French for a client", False),          # too short to be contained
    ("", "Cancel an invoice", False),
])
def test_duplicate_rule_edges(a: str, b: str, dup: bool) -> None:
    assert same_description(a, b) is dup
    assert same_description(b, a) is dup


# ---- N4: cases naming few skills do not replace an auto router ------------------------------------
def test_coverage_gap_names_the_skills_left_out() -> None:
    msg = coverage_gap("the auto head", 2, 25)
    assert msg is not None and "your cases name 2 of 25 skills" in msg and "the other 23" in msg and "--force" in msg
    assert coverage_gap("the auto head", 13, 25) is None            # half or more
    assert coverage_gap("the auto head", 5, 10) is None
    assert coverage_gap("the auto cosine thresholds", 1, 10) is not None
    assert coverage_gap("the default cosine thresholds", 1, 10) is None   # no router that covers every skill


# ---- N5 / N7 on the API (a fitted workspace, fake embedder) ----------------------------------------
def test_undo_of_a_first_fit_sets_the_head_aside_and_twice_redoes_it(fitted) -> None:  # noqa: F811
    folder = routing_dir(fitted, BigramEmbedder.name)
    fitted_th = load_thresholds(fitted, BigramEmbedder.name, Scorer.HEAD)
    assert fitted_th.calibrated and (folder / FIT_FILE).exists()
    assert undo_fit(fitted, BigramEmbedder.name) == ("undid", ["head thresholds", "scoring head"])
    assert not (folder / HEAD_FILE).exists() and (folder / PREVIOUS_HEAD_FILE).exists()
    assert not load_thresholds(fitted, BigramEmbedder.name, Scorer.HEAD).calibrated
    assert RouteIndex.build(skills(), BigramEmbedder(), ws=fitted).head is None   # no fitted head in use
    assert undo_fit(fitted, BigramEmbedder.name)[0] == "redid"
    assert (folder / HEAD_FILE).exists() and load_thresholds(fitted, BigramEmbedder.name, Scorer.HEAD) == fitted_th


def test_undo_of_a_fit_works_after_an_edit_made_the_head_stale(fitted) -> None:  # noqa: F811
    edited = RouteIndex.build(skills(flight_booking={"description": "Feed the zebras at the zoo."}), BigramEmbedder(),
                              ws=fitted)
    assert edited.head is None   # stale: routing does not use it, yet the fit is the last change
    with pytest.raises(NothingToUndo):  # what --undo did before: the cosine thresholds were never changed
        undo_thresholds(fitted, BigramEmbedder.name, Scorer.COSINE)
    assert undo_fit(fitted, BigramEmbedder.name)[0] == "undid"
    assert not (routing_dir(fitted, BigramEmbedder.name) / HEAD_FILE).exists()


def test_undo_of_a_second_fit_puts_the_first_head_back(fitted) -> None:  # noqa: F811
    folder = routing_dir(fitted, BigramEmbedder.name)
    first = (folder / HEAD_FILE).read_bytes()
    fit(fitted, RouteIndex.build(skills(), BigramEmbedder()), [LabelledQuery(q, e) for q, e in LABELLED] + [LabelledQuery("plan a picnic", None)])
    second = (folder / HEAD_FILE).read_bytes()
    assert first != second
    undo_fit(fitted, BigramEmbedder.name)
    assert (folder / HEAD_FILE).read_bytes() == first and (folder / PREVIOUS_HEAD_FILE).read_bytes() == second


def test_a_calibration_after_the_fit_is_the_last_change(fitted) -> None:  # noqa: F811
    from skillforge.routing.index import save_thresholds

    save_thresholds(fitted, load_thresholds(fitted, BigramEmbedder.name, Scorer.HEAD))
    assert undo_fit(fitted, BigramEmbedder.name) is None


def test_a_renamed_skill_is_listed_once_as_new(fitted, caplog) -> None:  # noqa: F811
    renamed = [s if s.name != "flight-booking" else SkillFile(name="air-travel", body=s.body, description=s.description,
                                                             examples=s.examples) for s in skills()]
    with caplog.at_level(logging.WARNING):
        assert RouteIndex.build(renamed, BigramEmbedder(), ws=fitted).head is None
    assert "stale (new skills: air-travel)" in caplog.text and "changed since the fit" not in caplog.text


# ---- the commands, on a real workspace (the default embedder, 4 skills) ----------------------------
def test_cli_undo_after_a_first_fit_routes_by_the_auto_head_again(cli_ws) -> None:  # noqa: F811
    invoke, root, cases = cli_ws
    before = invoke("route", "calibrate", "--undo", ok=None)
    assert isinstance(before.exception, NothingToUndo) and "nothing to undo" in str(before.exception)
    invoke("route", "fit", "--cases", str(cases))
    [folder] = (root / "runs" / "routing").iterdir()
    assert (folder / HEAD_FILE).exists()
    err = " ".join(invoke("route", "calibrate", "--undo").stderr.split())
    assert "undid route fit" in err and "scorer of the auto head" in err
    assert not (folder / HEAD_FILE).exists()
    err = " ".join(invoke("route", "calibrate", "--undo").stderr.split())   # twice: the fit again
    assert "redid route fit" in err and (folder / HEAD_FILE).exists()


def test_cli_calibrate_on_cases_naming_one_of_four_skills_keeps_the_auto_head(cli_ws, tmp_path: Path) -> None:  # noqa: F811
    invoke, root, _ = cli_ws
    narrow = tmp_path / "narrow.jsonl"
    rows = [(f"will it rain in {city} tomorrow", "weather-query") for city in
            ["Rome", "Oslo", "Lima", "Cairo", "Delhi", "Quito", "Perth", "Dakar", "Hanoi", "Porto"]]
    rows += [(q, None) for q in ["how do I bake sourdough bread", "who won the 1998 world cup", "讲个笑话吧",
                                 "recommend a good novel", "我的狗不吃饭怎么办"]]
    narrow.write_text("".join(json.dumps({"query": q, "expected": e}, ensure_ascii=False) + "\n" for q, e in rows),
                      encoding="utf-8")
    refused = invoke("route", "calibrate", "--cases", str(narrow), ok=None)   # `skillforge` exits 2 on it
    assert isinstance(refused.exception, FewSkillsNamed) and "your cases name 1 of 4 skills" in str(refused.exception)
    assert not any(p.name == "thresholds-cosine.json" for p in (root / "runs" / "routing").rglob("*"))
    forced = invoke("route", "calibrate", "--cases", str(narrow), "--force")
    assert "--force: replacing the auto head though your cases name 1 of 4 skills" in " ".join(forced.stderr.split())
