"""Evaluation sets: the example workspace loads; every loading rule refuses bad data by name; the
proposer can never receive holdout or final_audit cases."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLE_SKILLS, REPO

from skillforge.config import init_workspace
from skillforge.evaluation.datasets import (DatasetError, HoldoutAccessError, ProposerBundle, load_proposer_bundle, load_sets,
                                 read_set)
from skillforge.state.evaluate import Partition

SKILLS = sorted(p.name for p in EXAMPLE_SKILLS.iterdir() if p.is_dir())


@pytest.fixture
def ws(tmp_path):
    w = init_workspace(tmp_path / "ws")
    for f in (REPO / "evaluation_sets").glob("*.json"):
        shutil.copy(f, w.evaluation_sets_dir / f.name)
    return w


def write(ws, name: str, partition: str, cases: list[dict], auto: list[str] | None = None) -> Path:
    path = ws.evaluation_sets_dir / f"{name}.json"
    path.write_text(json.dumps({"meta": {"name": name, "partition": partition, "skills": sorted({c["skill"] for c in cases}),
                                         "auto_case_ids": auto or []}, "cases": cases}, ensure_ascii=False))
    return path


def case(id_: str, query: str, skill: str = "taxi-hailing", **kw) -> dict:
    return {"id": id_, "skill": skill, "query": query, **kw}


def test_example_sets_meet_the_required_sizes(ws):
    sets = load_sets(ws, SKILLS)
    sizes = {s.meta.partition: len(s.cases) for s in sets.values()}
    assert sizes[Partition.DEV] >= 32 and sizes[Partition.P0] >= 10 and sizes[Partition.REPAIR] >= 16
    assert sizes[Partition.HOLDOUT] >= 9 and sizes[Partition.FINAL_AUDIT] >= 9
    assert all(c.p0 for c in sets["p0"].cases)
    negatives = [json.loads(x) for x in (REPO / "evaluation_sets" / "router" / "negatives.jsonl").read_text().splitlines()]
    assert len(negatives) >= 50 and all(n["expected"] is None for n in negatives)


def test_proposer_bundle_has_no_holdout_by_construction(ws):
    bundle = load_proposer_bundle(ws)
    assert set(ProposerBundle.__dataclass_fields__) == {"dev", "repair", "p0"}
    sets = load_sets(ws)
    hidden = {c.id for s in sets.values() if s.meta.partition in (Partition.HOLDOUT, Partition.FINAL_AUDIT) for c in s.cases}
    seen = {c.id for part in (bundle.dev, bundle.repair, bundle.p0) for c in part}
    assert hidden and not (hidden & seen) and len(seen) == sum(len(s.cases) for s in sets.values()) - len(hidden)
    for forbidden in ("holdout", "final_audit", Partition.HOLDOUT):
        with pytest.raises(HoldoutAccessError):
            load_proposer_bundle(ws, [Partition.DEV, forbidden])
    assert bundle.for_skill("taxi-hailing").dev and all(c.skill == "taxi-hailing" for c in bundle.for_skill("taxi-hailing").dev)


def _sizes(bundle: ProposerBundle) -> tuple[int, int, int]:
    return len(bundle.dev), len(bundle.repair), len(bundle.p0)


def test_proposer_bundle_never_parses_holdout_files(ws):
    before = load_proposer_bundle(ws)
    (ws.evaluation_sets_dir / "holdout.json").write_text('{"meta": {"partition": "holdout"}, "cases": "corrupt!"}')
    with pytest.raises(DatasetError, match="holdout.json"):
        load_sets(ws)  # the evaluator parses it and refuses it...
    after = load_proposer_bundle(ws)  # ...the proposer's loader never builds its cases
    assert _sizes(after) == _sizes(before) and after.dev and after.repair and after.p0
    assert after == before


@pytest.mark.parametrize("content, match", [
    ('{"meta": {"partition": "dev"}, "cases": [', "dev.json: cannot read"),
    (b"\xff\xfe not utf-8", "dev.json: cannot read"),
    ("[1, 2]", "dev.json: meta.partition is none"),
    ('{"cases": []}', "dev.json: meta.partition is none"),
    ('{"meta": {"partition": "training"}, "cases": []}', "dev.json: meta.partition is 'training', not one of dev"),
], ids=["truncated", "not-utf8", "not-an-object", "no-meta", "unknown-partition"])
def test_proposer_bundle_names_a_set_file_it_cannot_read(ws, content, match):
    path = ws.evaluation_sets_dir / "dev.json"
    assert load_proposer_bundle(ws).dev  # the example dev set is there
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    with pytest.raises(DatasetError, match=match):  # not 0 dev cases without a word
        load_proposer_bundle(ws)


def test_auto_ids_must_match_meta_exactly(tmp_path):
    ws = init_workspace(tmp_path / "w")
    path = write(ws, "d", "dev", [case("d_auto_1", "q1"), case("d-2", "q2")], auto=[])
    with pytest.raises(DatasetError, match="auto"):
        read_set(path)
    path = write(ws, "d", "dev", [case("d-1", "q1")], auto=["d_auto_9"])
    with pytest.raises(DatasetError, match="auto"):
        read_set(path)
    read_set(write(ws, "d", "dev", [case("d_auto_1", "q1")], auto=["d_auto_1"]))


def test_a_set_saved_with_a_utf8_bom_loads(tmp_path):
    """Windows editors write a byte-order mark; it is not part of the JSON."""
    ws = init_workspace(tmp_path / "w")
    path = write(ws, "d", "dev", [case("d-1", "叫车去机场")])
    path.write_bytes("\ufeff".encode("utf-8") + path.read_bytes())
    assert [c.query for c in read_set(path).cases] == ["叫车去机场"]


def test_cross_partition_rules(tmp_path):
    ws = init_workspace(tmp_path / "w")
    write(ws, "a", "dev", [case("x-1", "叫车去机场")])
    write(ws, "b", "holdout", [case("x-1", "another query")])
    with pytest.raises(DatasetError, match="x-1"):
        load_sets(ws)
    write(ws, "b", "holdout", [case("y-1", "  叫车去机场 ")])  # the same query, other spacing
    with pytest.raises(DatasetError, match="two partitions|partitions"):
        load_sets(ws)


@pytest.mark.parametrize("bad,match", [
    ([case("d-1", "q"), case("d-1", "q2")], "duplicate"),
    ([case("d-1", "   ")], "empty query"),
    ([{"id": "d-1", "skill": "taxi-hailing"}], "query"),
    ([case("d-1", "q", p0="yes please")], "p0"),
    ([case("d-1", "q", surprise=1)], "surprise|Extra"),
])
def test_malformed_sets_are_named_errors(tmp_path, bad, match):
    ws = init_workspace(tmp_path / "w")
    with pytest.raises(DatasetError, match=match):
        read_set(write(ws, "d", "dev", bad))


@pytest.mark.parametrize("top", ["[]", '"a set"', "3"])
def test_a_set_file_that_is_not_an_object_is_named(tmp_path, top):
    ws = init_workspace(tmp_path / "w")
    path = ws.evaluation_sets_dir / "zz.json"
    path.write_text(top)
    with pytest.raises(DatasetError, match=r'zz\.json: a set is a JSON object with "meta" and "cases", not '):
        read_set(path)


def test_unknown_skill_and_undeclared_skill(tmp_path):
    ws = init_workspace(tmp_path / "w")
    write(ws, "d", "dev", [case("d-1", "q", skill="no-such-skill")])
    with pytest.raises(DatasetError, match="unknown skill"):
        load_sets(ws, SKILLS)
    path = ws.evaluation_sets_dir / "e.json"
    path.write_text(json.dumps({"meta": {"name": "e", "partition": "dev", "skills": ["hotel-booking"], "auto_case_ids": []},
                                "cases": [case("e-1", "q9")]}))
    with pytest.raises(DatasetError, match="not in meta.skills"):
        read_set(path)
    path.write_text("{not json")
    with pytest.raises(DatasetError, match="cannot read"):
        read_set(path)


# --- the two decision-sized example sets (issue 9, section 8) ---------------------------------------------

BIG_SETS = ("restaurant-booking", "sql-query-helper")
REQUIRED = {Partition.DEV: 24, Partition.REPAIR: 16, Partition.HOLDOUT: 16, Partition.FINAL_AUDIT: 8, Partition.P0: 6}
SETS_README = REPO / "evaluation_sets" / "README.md"


def _cases_by_partition(ws):
    return {s.meta.partition: s.cases for s in load_sets(ws, SKILLS).values()}


@pytest.mark.parametrize("skill", BIG_SETS)
def test_big_example_sets_have_the_required_sizes(ws, skill):
    parts = _cases_by_partition(ws)
    sizes = {p: sum(c.skill == skill for c in parts[p]) for p in REQUIRED}
    assert all(sizes[p] >= n for p, n in REQUIRED.items()), sizes
    assert all(c.p0 for c in parts[Partition.P0]) and not any(c.p0 for p, cs in parts.items() if p is not Partition.P0 for c in cs)


def test_example_fixtures_use_declared_tools_and_expectations_are_satisfiable(ws):
    """Every fixture is a tool the skill declares (the evaluate graph refuses others); a correct answer
    (the must_include facts) states no forbidden text and no live value that is in neither query nor fixtures."""
    from skillforge.rules.provenance import check_provenance
    from skillforge.skill.file import parse

    declared = {name: set(parse((EXAMPLE_SKILLS / name / "SKILL.md").read_text(encoding="utf-8")).dependencies) for name in SKILLS}
    for cases in _cases_by_partition(ws).values():
        for c in cases:
            assert set(c.fixtures) <= declared[c.skill], (c.id, set(c.fixtures) - declared[c.skill])
            ideal = " ; ".join(c.expect.must_include)
            assert not [x for x in c.expect.must_not_include if x.casefold() in ideal.casefold()], c.id
            sources = [json.dumps(v, ensure_ascii=False) for v in c.fixtures.values()] + [c.query]
            assert check_provenance(ideal, sources, "sfn-000000000000").ok, c.id


def test_planted_failures_are_tagged_placed_and_documented(ws):
    readme = SETS_README.read_text(encoding="utf-8")
    where: dict[str, set[Partition]] = {}
    for part, cases in _cases_by_partition(ws).items():
        for c in cases:
            reasons = [t for t in c.tags if t.startswith("planted-")]
            assert ("planted" in c.tags) == bool(reasons), c.id
            if not reasons:
                continue
            assert len(reasons) == 1 and part is not Partition.P0, c.id
            assert f"`{c.id}`" in readme, f"planted case {c.id} is not listed in evaluation_sets/README.md"
            where.setdefault(reasons[0], set()).add(part)
    assert len(where) >= 5
    for reason, parts in where.items():
        assert f"`{reason}`" in readme, reason
        assert Partition.REPAIR in parts and parts & {Partition.HOLDOUT, Partition.FINAL_AUDIT}, (reason, parts)
    for skill in BIG_SETS:
        planted = [c for c in _cases_by_partition(ws)[Partition.REPAIR] if c.skill == skill and "planted" in c.tags]
        assert len(planted) >= 8, skill
