"""`skillforge cases review`: an accepted case joins the set of the partition its id hashes to, with
its manifest in the same atomic write; rejected and edited cases; a crash between the set and the
staged file; and unreviewed cases refused by the set loader, `evaluate` and `evolve`."""

from __future__ import annotations

import json

import pytest
from conftest import flat, run_cli

from skillforge.evaluation.datasets import UnreviewedCase, load_sets, read_set, set_files
from skillforge.rules.sessions import partition_for
from skillforge.sessions import review as rv
from skillforge.sessions.staging import pending, read_staged, write_staged
from skillforge.state.evaluate import Partition
from skillforge.state.sessions import Provenance, SessionSource, Signal, StagedCase, StagedFile
from skillforge.testing.evolve_world import SKILL, new_workspace


PLACES = [("望京", "国贸"), ("五道口", "首都机场"), ("中关村", "北京南站"), ("西单", "西直门"), ("王府井", "798艺术区"),
          ("三里屯", "颐和园"), ("亦庄", "鸟巢"), ("通州", "后海"), ("回龙观", "奥森"), ("天通苑", "雍和宫"),
          ("大兴", "天坛"), ("顺义", "南锣鼓巷")]
"""Twelve distinct trips: accepting refuses a query that nearly copies a holdout one (one case per
number, "第1次问" / "第2次问", would be near-duplicates of each other across partitions)."""


def staged_case(n: int, *, query: str | None = None, skill: str = SKILL) -> StagedCase:
    from skillforge.rules.sessions import case_id

    start, end = PLACES[n % len(PLACES)]
    cid = case_id(skill, "jsonl", f"sess-{n}", 0)
    return StagedCase(id=cid, skill=skill, query=query or f"从{start}打车去{end}要多久，第{n}次问",
                      fixtures={"ride.estimate_fare": {"fare_cny": 30 + n, "pickup_eta": "5分钟"}},
                      signals=[Signal.NEGATIVE_FOLLOWUP], why="negative follow-up: 你没告诉我司机多久到",
                      provenance=Provenance(source=SessionSource.JSONL, session_id=f"sess-{n}", path="x.jsonl",
                                            request_index=0, content_hash="0" * 64))


@pytest.fixture
def ws(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    write_staged(ws, StagedFile(skill=SKILL, cases=[staged_case(n) for n in range(12)]))
    return ws


def where(ws, cid):
    return [(p.name, s.meta.partition) for p in set_files(ws) for s in [read_set(p)] if any(c.id == cid for c in s.cases)]


def test_accept_puts_the_case_in_its_hashed_partition_with_a_valid_manifest(ws):
    parts = set()
    for c in read_staged(ws, SKILL).cases:
        done, path = rv.accept(ws, c.id, note="looks right")
        assert done.status == "accepted" and done.reviewed and done.partition is partition_for(c.id)
        (name, part), = where(ws, c.id)
        assert part is done.partition and path.name == name
        s = read_set(path)
        assert c.id in s.meta.auto_case_ids and SKILL in s.meta.skills
        parts.add(part)
    assert Partition.HOLDOUT in parts and Partition.REPAIR in parts  # 12 ids spread over the partitions
    sets = load_sets(ws)  # the workspace still loads: manifests match, no query in two partitions
    assert sum(1 for s in sets.values() for c in s.cases if "session" in c.tags) == 12
    assert pending(ws) == []
    again, _ = rv.accept(ws, read_staged(ws, SKILL).cases[0].id)  # idempotent
    assert sum(1 for s in load_sets(ws).values() for c in s.cases if c.id == again.id) == 1


def test_a_crash_between_the_set_and_the_staged_file_is_finished_by_accepting_again(ws, monkeypatch):
    cid = read_staged(ws, SKILL).cases[0].id
    monkeypatch.setattr(rv, "write_staged", lambda *a, **k: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError):
        rv.accept(ws, cid)
    assert len(where(ws, cid)) == 1 and read_staged(ws, SKILL).case(cid).status == "pending"
    monkeypatch.undo()
    done, _ = rv.accept(ws, cid)
    assert done.status == "accepted" and len(where(ws, cid)) == 1


def test_a_query_already_in_another_partition_is_refused_and_nothing_changes(ws):
    holdout = next(c for s in load_sets(ws).values() if s.meta.partition is Partition.HOLDOUT for c in s.cases)
    clash = staged_case(99, query=holdout.query)
    write_staged(ws, StagedFile(skill=SKILL, cases=[*read_staged(ws, SKILL).cases, clash]))
    before = {p.name: p.read_bytes() for p in set_files(ws)}
    if partition_for(clash.id) is Partition.HOLDOUT:
        pytest.skip("the id hashed to holdout itself")
    with pytest.raises(rv.ReviewError, match="appears in partitions"):
        rv.accept(ws, clash.id)
    assert {p.name: p.read_bytes() for p in set_files(ws)} == before
    assert read_staged(ws, SKILL).case(clash.id).status == "pending"


def test_reject_and_edit(ws):
    a, b = read_staged(ws, SKILL).cases[:2]
    assert rv.reject(ws, a.id, note="not a failure").status == "rejected"
    with pytest.raises(rv.ReviewError, match="only a pending case"):
        rv.edit(ws, a.id, "{}")
    edited = rv.edit(ws, b.id, json.dumps({"expect": {"must_include": ["5分钟"], "must_not_include": []}}))
    assert edited.expect.must_include == ["5分钟"] and edited.id == b.id and edited.provenance == b.provenance
    for bad, why in [("[1]", "JSON object"), ("{", "not JSON"), ('{"id": "x"}', "only query"),
                     ('{"query": "key sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1w"}', "secret"),
                     ('{"query": "  "}', "empty"), ('{"expect": {"must_include": 3}}', "must_include")]:
        with pytest.raises(rv.ReviewError, match=why):
            rv.edit(ws, b.id, bad)
    assert read_staged(ws, SKILL).case(b.id) == edited
    done, _ = rv.accept(ws, b.id)
    case = next(c for s in load_sets(ws).values() for c in s.cases if c.id == b.id)
    assert case.expect.must_include == ["5分钟"] and done.status == "accepted"
    with pytest.raises(rv.ReviewError, match="was accepted"):
        rv.reject(ws, b.id)
    with pytest.raises(rv.ReviewError, match="no staged case"):
        rv.accept(ws, "taxi-hailing_auto_snope")


def test_unreviewed_cases_are_refused_by_the_loader_evaluate_and_evolve(ws):
    staged = read_staged(ws, SKILL).cases[0]
    pasted = ws.evaluation_sets_dir / "repair.json"
    data = json.loads(pasted.read_text(encoding="utf-8"))
    data["cases"].append(staged.model_dump(mode="json"))
    data["meta"]["auto_case_ids"].append(staged.id)
    original = pasted.read_bytes()
    pasted.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(UnreviewedCase, match="nobody has accepted"):
        load_sets(ws)
    env = {"SKILLFORGE_LLM_MODEL": "m", "SKILLFORGE_LLM_BASE_URL": "http://127.0.0.1:9/v1"}
    for args in (["evaluate", SKILL, "--aa", "--set", "repair"], ["evolve", SKILL]):
        proc = run_cli([*args, "-w", str(ws.root)], env=env, ok=None)
        assert proc.returncode != 0 and "nobody has accepted" in flat(proc.stderr), proc.stderr
    pasted.write_bytes(original)
    (ws.evaluation_sets_dir / "copied.json").write_text(
        (ws.evaluation_sets_dir / "staged" / f"{SKILL}.json").read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(UnreviewedCase, match="staged file"):
        load_sets(ws)


def test_the_cli_lists_accepts_and_rejects(ws):
    ids = [c.id for c in read_staged(ws, SKILL).cases]
    listed = run_cli(["cases", "review", "-w", str(ws.root)])
    assert all(i in listed.stdout for i in ids) and "negative follow-up" in listed.stdout
    done = run_cli(["cases", "review", "--accept", ids[0], "--reject", ids[1], "--note", "checked", "--json",
                    "-w", str(ws.root)])
    got = {d["id"]: d for d in json.loads(done.stdout)["done"]}
    assert got[ids[0]]["action"] == "accepted" and got[ids[0]]["partition"] == partition_for(ids[0]).value
    assert got[ids[1]]["action"] == "rejected"
    edit = ws.root / "edit.json"
    edit.write_text('{"query": "从望京打车去国贸多少钱？"}', encoding="utf-8")
    run_cli(["cases", "review", "--edit", ids[2], "--from-file", str(edit), "-w", str(ws.root)])
    assert read_staged(ws, SKILL).case(ids[2]).query == "从望京打车去国贸多少钱？"
    bad = run_cli(["cases", "review", "--accept", "nope_auto_s1", "-w", str(ws.root)], ok=2)
    assert "no staged case" in flat(bad.stderr)
    (ws.root / "skillforge.toml").write_text('[sessions]\nshares = "repair=100"\n', encoding="utf-8")
    refused = run_cli(["cases", "review", "--accept", ids[3], "-w", str(ws.root)], ok=None)
    assert refused.returncode != 0 and "holdout" in flat(refused.stderr)
    assert read_staged(ws, SKILL).case(ids[3]).status == "pending"
