"""QA 22 TRUST-1: `cases review` actions run from several processes at once are serialised by the
review lock; every accept that says "accepted" is in exactly one set and marked accepted, every
reject is in no set and marked rejected, nothing is lost. And an accept stopped between the set
and the staged file is finished by accepting again, never rejected or edited behind the set's back."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import CLI_TIMEOUT_S, SKILLFORGE_EXE, cli_env

from skillforge.evaluation.datasets import load_sets, read_set, set_files
from skillforge.rules.sessions import case_id
from skillforge.sessions import review as rv
from skillforge.sessions.staging import read_staged, write_staged
from skillforge.state.sessions import Provenance, SessionSource, Signal, StagedCase, StagedFile
from skillforge.testing.evolve_world import SKILL, new_workspace

PLACES = [("望京", "国贸"), ("五道口", "首都机场"), ("中关村", "北京南站"), ("西单", "西直门"), ("王府井", "798艺术区"),
          ("三里屯", "颐和园"), ("亦庄", "鸟巢"), ("通州", "后海")]


def staged_case(n: int) -> StagedCase:
    start, end = PLACES[n]
    return StagedCase(id=case_id(SKILL, "jsonl", f"race-{n}", 0), skill=SKILL, query=f"从{start}打车去{end}要多久",
                      fixtures={"ride.estimate_fare": {"fare_cny": 30 + n}}, signals=[Signal.NEGATIVE_FOLLOWUP],
                      why="negative follow-up", provenance=Provenance(
                          source=SessionSource.JSONL, session_id=f"race-{n}", path="x.jsonl", request_index=0,
                          content_hash="0" * 64))


@pytest.fixture
def ws(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    write_staged(ws, StagedFile(skill=SKILL, cases=[staged_case(n) for n in range(len(PLACES))]))
    return ws


def holders(ws) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for p in set_files(ws):
        for c in read_set(p).cases:
            out.setdefault(c.id, []).append(p.name)
    return out


def test_six_accepts_and_two_rejects_at_once_all_land_and_agree(ws):
    ids = [c.id for c in read_staged(ws, SKILL).cases]
    actions = [("--accept" if i < 6 else "--reject", cid) for i, cid in enumerate(ids)]
    procs = [(flag, cid, subprocess.Popen([str(SKILLFORGE_EXE), "cases", "review", flag, cid, "--json",
                                           "-w", str(ws.root)], env=cli_env({"OMP_NUM_THREADS": "1"}),
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
             for flag, cid in actions]
    said = {}
    for flag, cid, p in procs:
        out, err = p.communicate(timeout=CLI_TIMEOUT_S)
        assert p.returncode == 0, err
        said[cid] = json.loads(out)["done"][0]
    staged = {c.id: c for c in read_staged(ws, SKILL).cases}
    inset = holders(ws)
    for flag, cid in actions:
        if flag == "--accept":
            assert said[cid]["action"] == "accepted"
            assert len(inset.get(cid, [])) == 1 and inset[cid][0] == said[cid]["set_file"].rsplit("/", 1)[-1]
            assert staged[cid].status == "accepted" and staged[cid].partition == said[cid]["partition"]
        else:
            assert said[cid]["action"] == "rejected" and cid not in inset and staged[cid].status == "rejected"
    manifest = {i for s in load_sets(ws).values() for i in s.meta.auto_case_ids}
    assert {cid for flag, cid in actions if flag == "--accept"} <= manifest  # the sets still load


def test_an_interrupted_accept_is_finished_by_accepting_again_not_rejected_or_edited(ws, monkeypatch):
    cid = read_staged(ws, SKILL).cases[0].id
    monkeypatch.setattr(rv, "write_staged", lambda *a, **k: (_ for _ in ()).throw(OSError("killed")))
    with pytest.raises(OSError):
        rv.accept(ws, cid)
    monkeypatch.undo()
    (where,) = holders(ws)[cid]
    assert read_staged(ws, SKILL).case(cid).status == "pending"  # never "accepted" with the case in no set
    with pytest.raises(rv.ReviewError, match=f"already in {where}.*--accept {cid}"):
        rv.reject(ws, cid, note="no")
    with pytest.raises(rv.ReviewError, match=f"already in {where}"):
        rv.edit(ws, cid, json.dumps({"note": "x"}))
    assert read_staged(ws, SKILL).case(cid).status == "pending"
    done, path = rv.accept(ws, cid)
    assert done.status == "accepted" and path.name == where and holders(ws)[cid] == [where]


def test_the_lock_file_is_neither_a_set_nor_a_staged_file(ws):
    rv.accept(ws, read_staged(ws, SKILL).cases[0].id)
    assert (ws.evaluation_sets_dir / "staged" / ".lock").exists()
    load_sets(ws)  # not read as a set
    from skillforge.sessions.staging import staged_skills

    assert staged_skills(ws) == [SKILL]


def test_the_listing_warns_of_states_an_older_version_left_and_says_how_to_settle_them(ws):
    from conftest import flat, run_cli

    a, b, c = (x.id for x in read_staged(ws, SKILL).cases[:3])
    rv.accept(ws, a)
    rv.accept(ws, b)
    staged = read_staged(ws, SKILL)  # as the unlocked race left it: a rejected in a set, b accepted in none
    write_staged(ws, StagedFile(skill=SKILL, cases=[x.model_copy(update={"status": "rejected"}) if x.id == a else x
                                                    for x in staged.cases]))
    (where_b,) = holders(ws)[b]
    path = ws.evaluation_sets_dir / where_b
    s = read_set(path)
    from skillforge.evolution.harvest import write_set_atomic

    write_set_atomic(path, s.model_copy(update={
        "cases": [x for x in s.cases if x.id != b],
        "meta": s.meta.model_copy(update={"auto_case_ids": [i for i in s.meta.auto_case_ids if i != b]})}))
    listed = run_cli(["cases", "review", "-w", str(ws.root)])
    warn = flat(listed.stderr)
    assert f"{a} was rejected but is still in" in warn and f"{b} is marked accepted but is in no set" in warn
    assert c in listed.stdout
    done, path = rv.accept(ws, b)  # the advice works: b is back in a set
    assert holders(ws)[b] == [path.name] and done.status == "accepted"
