"""QA 25 T2 and M3: `cases review --edit/--accept` judge a cross-partition near-copy as harvest judges
a near-duplicate (the text rule, or the embedder's cosine >= DEDUPE_COSINE), identifiers ignored, both
ways; the refusal of a query already in another held-out partition names the case's own partition."""

from __future__ import annotations

import json

import pytest
from test_qa22_cases_review import PLACES, files, staged_case

from skillforge.evaluation.datasets import read_set, set_files
from skillforge.rules.sessions import leak_copy, partition_for
from skillforge.sessions import review as rv
from skillforge.sessions.staging import read_staged, write_staged
from skillforge.state.evaluate import VISIBLE_TO_PROPOSER, Partition
from skillforge.state.sessions import StagedFile
from skillforge.testing.evolve_world import SKILL, new_workspace

HELD = "Parcel XQ004455667788 is lost in the Utrecht hub since Monday, please check"
WRAPPED = "Hello there! " + HELD + " Thanks a lot."
REORDERED = "Since Monday parcel XQ114455667788 is lost in the Utrecht hub, please check"
OTHER = "a different question entirely about a taxi fare to the airport"


@pytest.fixture
def ws(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    write_staged(ws, StagedFile(skill=SKILL, cases=[staged_case(n) for n in range(len(PLACES))]))
    return ws


def test_leak_copy_is_the_text_rule_or_the_cosine():
    assert leak_copy(HELD, HELD.upper(), None, 0.97)  # text rule, no embedder
    assert not leak_copy(HELD, WRAPPED, None, 0.97)  # difflib alone misses the greeting (what QA 25 saw)
    assert leak_copy(HELD, WRAPPED, 0.974, 0.97)
    assert not leak_copy(HELD, OTHER, 0.969, 0.97)


def _cases(ws, held_first: bool):
    """A staged case accepted into a held-out partition (or a visible one), and a pending one hashing
    to the other side."""
    vis = hid = None
    for n in range(400):
        c = staged_case(n, session=f"qa25-{n}")
        if partition_for(c.id) in VISIBLE_TO_PROPOSER and vis is None:
            vis = c
        elif partition_for(c.id) is Partition.HOLDOUT and hid is None:
            hid = c
    first, second = (hid, vis) if held_first else (vis, hid)
    first = first.model_copy(update={"query": HELD})
    second = second.model_copy(update={"query": OTHER})
    write_staged(ws, StagedFile(skill=SKILL, cases=[*read_staged(ws, SKILL).cases, first, second]))
    rv.accept(ws, first.id)
    return first, second


@pytest.mark.parametrize("held_first", [True, False])
@pytest.mark.parametrize("query", [WRAPPED, REORDERED])
def test_a_greeted_or_reordered_copy_is_refused_at_edit_and_at_accept_both_ways(ws, held_first, query):
    first, second = _cases(ws, held_first)
    with pytest.raises(rv.ReviewError, match="copy of a .*cosine"):
        rv.edit(ws, second.id, json.dumps({"query": query}))
    assert read_staged(ws, SKILL).case(second.id).query == OTHER
    # written directly (an older version's edit): accept refuses it, nothing written
    staged = read_staged(ws, SKILL)
    write_staged(ws, StagedFile(skill=SKILL, cases=[c.model_copy(update={"query": query}) if c.id == second.id
                                                    else c for c in staged.cases]))
    before = files(ws)
    with pytest.raises(rv.ReviewError, match="copy of a"):
        rv.accept(ws, second.id)
    assert files(ws) == before
    # without the embedder (it could not load) the text rules alone decide: what QA 25 saw, except that
    # a repair case holding the held-out query whole (the greeted copy) is refused by containment (QA 27 T3)
    if query == WRAPPED and held_first:
        with pytest.raises(rv.ReviewError, match="holds the held-out query"):
            rv.accept(ws, second.id, embed=None)
    else:
        rv.accept(ws, second.id, embed=None)


def test_an_unrelated_query_is_still_accepted(ws):
    first, second = _cases(ws, True)
    rv.edit(ws, second.id, json.dumps({"query": "Can I change the delivery address of my order to Rotterdam?"}))
    _, where = rv.accept(ws, second.id)
    assert second.id in {c.id for c in read_set(where).cases}


def test_a_query_already_in_another_held_out_partition_names_the_cases_own(ws):
    hid = fin = None
    for n in range(2000):
        c = staged_case(n, session=f"qa25m-{n}")
        if partition_for(c.id) is Partition.HOLDOUT and hid is None:
            hid = c
        elif partition_for(c.id) is Partition.FINAL_AUDIT and fin is None:
            fin = c
    hid, fin = hid.model_copy(update={"query": HELD}), fin.model_copy(update={"query": HELD.replace(" ", "  ")})
    write_staged(ws, StagedFile(skill=SKILL, cases=[hid, fin]))
    rv.accept(ws, hid.id)
    with pytest.raises(rv.ReviewError) as e:
        rv.accept(ws, fin.id)
    msg = str(e.value)
    assert "into final_audit" in msg and "holdout (holdout.json)" in msg and "proposer" not in msg
    assert all(fin.id not in {c.id for c in read_set(p).cases} for p in set_files(ws))
