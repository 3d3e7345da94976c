"""QA 22 TRUST-6, MESSAGE-5, TRUST-2: a decided case is not accepted again as if pending; an
unknown `--skill` is refused by name; an accept (and an edit) never puts a near-copy of a case of
the skill into another partition, whichever of the two the proposer reads."""

from __future__ import annotations

import json

import pytest
from conftest import flat, run_cli

from skillforge.evaluation.datasets import read_set, set_files
from skillforge.rules.sessions import case_id, partition_for
from skillforge.sessions import review as rv
from skillforge.sessions.staging import read_staged, write_staged
from skillforge.state.evaluate import VISIBLE_TO_PROPOSER, Partition
from skillforge.state.sessions import Provenance, SessionSource, Signal, StagedCase, StagedFile
from skillforge.testing.evolve_world import SKILL, new_workspace

PLACES = [("望京", "国贸"), ("五道口", "首都机场"), ("中关村", "北京南站"), ("西单", "西直门")]


def staged_case(n: int, query: str | None = None, session: str | None = None) -> StagedCase:
    start, end = PLACES[n % len(PLACES)]
    sid = session or f"qa22-{n}"
    return StagedCase(id=case_id(SKILL, "jsonl", sid, 0), skill=SKILL, query=query or f"从{start}打车去{end}要多久",
                      fixtures={"ride.estimate_fare": {"fare_cny": 30 + n}}, signals=[Signal.NEGATIVE_FOLLOWUP],
                      why="negative follow-up", provenance=Provenance(
                          source=SessionSource.JSONL, session_id=sid, path="x.jsonl", request_index=0,
                          content_hash="0" * 64))


@pytest.fixture
def ws(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    write_staged(ws, StagedFile(skill=SKILL, cases=[staged_case(n) for n in range(len(PLACES))]))
    return ws


def files(ws) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in [*set_files(ws), *(ws.evaluation_sets_dir / "staged").glob("*.json")]}


def test_a_rejected_case_is_not_accepted_and_nothing_is_written(ws):
    cid = read_staged(ws, SKILL).cases[0].id
    run_cli(["cases", "review", "--reject", cid, "--note", "no", "-w", str(ws.root)])
    before = files(ws)
    refused = run_cli(["cases", "review", "--accept", cid, "-w", str(ws.root)], ok=2)
    assert "was rejected (note: no)" in flat(refused.stderr) and "Traceback" not in refused.stderr
    assert files(ws) == before


def test_accepting_an_accepted_case_again_says_so_and_writes_nothing(ws):
    cid = read_staged(ws, SKILL).cases[1].id
    first = run_cli(["cases", "review", "--accept", cid, "-w", str(ws.root)])
    assert first.stdout.startswith(f"accepted {cid}")
    before = files(ws)
    again = run_cli(["cases", "review", "--accept", cid, "-w", str(ws.root)])
    assert again.stdout.startswith(f"already accepted {cid} -> ") and "nothing written" in again.stdout
    assert files(ws) == before
    done = json.loads(run_cli(["cases", "review", "--accept", cid, "--json", "-w", str(ws.root)]).stdout)["done"]
    assert done[0]["already"] is True and done[0]["action"] == "accepted"


def test_an_unknown_skill_is_refused_with_the_closest_names(ws):
    bad = run_cli(["cases", "review", "--skill", "taxi-hailin", "-w", str(ws.root)], ok=2)
    assert "taxi-hailing" in flat(bad.stderr) and "no staged case" not in bad.stdout
    run_cli(["cases", "review", "--skill", "nope", "-w", str(ws.root)], ok=2)
    listed = run_cli(["cases", "review", "--skill", SKILL, "-w", str(ws.root)])
    assert read_staged(ws, SKILL).cases[0].id in listed.stdout


def _pair(ws, visible_first: bool):
    """Two staged cases whose ids hash to a visible and a held-out partition, the first accepted."""
    vis = hid = None
    for n in range(400):
        c = staged_case(n, session=f"pair-{n}")
        if partition_for(c.id) in VISIBLE_TO_PROPOSER and vis is None:
            vis = c
        elif partition_for(c.id) is Partition.HOLDOUT and hid is None:
            hid = c
    assert vis is not None and hid is not None
    first, second = (vis, hid) if visible_first else (hid, vis)
    first = first.model_copy(update={"query": "where is parcel SF9901000000001? it has not moved for a week"})
    second = second.model_copy(update={"query": "a different question entirely about a taxi fare to the airport"})
    write_staged(ws, StagedFile(skill=SKILL, cases=[*read_staged(ws, SKILL).cases, first, second]))
    rv.accept(ws, first.id)
    return first, second


@pytest.mark.parametrize("visible_first", [True, False])
def test_an_edit_into_a_near_copy_of_another_partitions_case_is_refused_both_ways(ws, visible_first):
    first, second = _pair(ws, visible_first)
    copy = json.dumps({"query": "Where is parcel SF9901000000001?  It has not moved for a week!"})
    with pytest.raises(rv.ReviewError, match="copy of a"):
        rv.edit(ws, second.id, copy)
    assert read_staged(ws, SKILL).case(second.id).query == second.query  # nothing changed
    # a case edited before the first was accepted (or staged by an older version) is refused at accept
    staged = read_staged(ws, SKILL)
    write_staged(ws, StagedFile(skill=SKILL, cases=[c.model_copy(update={"query": json.loads(copy)["query"]})
                                                    if c.id == second.id else c for c in staged.cases]))
    before = files(ws)
    with pytest.raises(rv.ReviewError, match="copy of a"):
        rv.accept(ws, second.id)
    assert files(ws) == before
    assert all(second.id not in {c.id for c in read_set(p).cases} for p in set_files(ws))
