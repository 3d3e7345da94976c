"""QA 27 T3: a query the proposer would read that contains a held-out query (or most of its words in
order) with more text added is a near-copy at `cases review --edit` and `--accept`, both ways round
(the case going to repair, or the case going to a held-out partition); short held-out phrases and the
shipped evaluation sets are not refused."""

from __future__ import annotations

import itertools
import json

import pytest
from conftest import REPO
from test_qa22_cases_review import PLACES, files, staged_case

from skillforge.evaluation.datasets import read_set
from skillforge.rules.sessions import held_within, partition_for
from skillforge.sessions import review as rv
from skillforge.sessions.staging import read_staged, write_staged
from skillforge.state.evaluate import VISIBLE_TO_PROPOSER, Partition
from skillforge.state.sessions import StagedFile
from skillforge.testing.evolve_world import SKILL, new_workspace

HELD = "Parcel XQ004455667788 is lost in the Utrecht hub since Monday, please check"
SUFFIX = " !!! urgent urgent urgent, I need it for my daughter's birthday party on Saturday"
OTHER = "a different question entirely about a taxi fare to the airport"


@pytest.mark.parametrize("seen", [
    HELD + SUFFIX, "Hi, quick one. " + HELD + SUFFIX, HELD.upper() + SUFFIX * 5,
    HELD.replace("Utrecht", "Rotterdam") + SUFFIX, HELD.replace("since Monday, ", "") + SUFFIX,
    HELD.replace("XQ004455667788", "XQ1") + SUFFIX, HELD, "周日中午帮我订个位子" "吧，谢谢",
])
def test_held_within_catches_a_copy_with_text_added(seen):
    held = "周日中午帮我订个位子" if "周" in seen else HELD
    assert held_within(held, seen)


@pytest.mark.parametrize("held,seen", [
    (HELD, "Parcel lost? " + SUFFIX),
    (HELD, "is lost in the Utrecht hub since Monday" + SUFFIX),  # 8 of 12 words: under 80 %
    (HELD, "Parcel XQ004455667788 " + SUFFIX + " is lost in the Utrecht hub since Monday, please check"),  # torn apart
    ("帮我订个位子", "周日中午想找个地方吃粤菜，帮我订个位子"),  # 3 words (a CJK character is half): a phrase
    ("book a table", "book a table for four at the Italian place tonight"),
    (HELD + SUFFIX, HELD),  # the other direction: the held-out text is not inside the visible one
])
def test_held_within_leaves_phrases_and_the_reverse_direction(held, seen):
    assert not held_within(held, seen)


def test_no_shipped_visible_case_contains_a_shipped_held_out_query():
    visible, held = [], []
    for p in sorted((REPO / "evaluation_sets").glob("*.json")):
        s = read_set(p)
        (visible if s.meta.partition in VISIBLE_TO_PROPOSER else held).extend(c.query for c in s.cases)
    assert len(visible) >= 100 and len(held) >= 50
    assert [(v, h) for v, h in itertools.product(visible, held) if held_within(h, v)] == []


@pytest.fixture
def ws(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    write_staged(ws, StagedFile(skill=SKILL, cases=[staged_case(n) for n in range(len(PLACES))]))
    return ws


def _cases(ws, held_first: bool):
    vis = hid = None
    for n in range(400):
        c = staged_case(n, session=f"qa27-{n}")
        if partition_for(c.id) in VISIBLE_TO_PROPOSER and vis is None:
            vis = c
        elif partition_for(c.id) is Partition.HOLDOUT and hid is None:
            hid = c
    first, second = (hid, vis) if held_first else (vis, hid)
    first = first.model_copy(update={"query": HELD if held_first else HELD + SUFFIX})
    second = second.model_copy(update={"query": OTHER})
    write_staged(ws, StagedFile(skill=SKILL, cases=[*read_staged(ws, SKILL).cases, first, second]))
    rv.accept(ws, first.id, embed=None)
    return first, second


@pytest.mark.parametrize("held_first", [True, False])
def test_a_copy_with_a_suffix_is_refused_at_edit_and_accept_without_an_embedder(ws, held_first):
    first, second = _cases(ws, held_first)
    query = HELD + SUFFIX if held_first else HELD  # the visible side always holds the held-out text
    with pytest.raises(rv.ReviewError, match="holds the held-out query"):
        rv.edit(ws, second.id, json.dumps({"query": query}), embed=None)
    assert read_staged(ws, SKILL).case(second.id).query == OTHER
    staged = read_staged(ws, SKILL)  # written directly (an older version's edit): accept refuses it
    write_staged(ws, StagedFile(skill=SKILL, cases=[c.model_copy(update={"query": query}) if c.id == second.id
                                                    else c for c in staged.cases]))
    before = files(ws)
    with pytest.raises(rv.ReviewError, match="copy of a"):
        rv.accept(ws, second.id, embed=None)
    assert files(ws) == before


def test_a_held_out_case_may_hold_more_than_a_visible_query(ws):
    """Only the leak direction counts: a holdout case longer than a repair query is not refused."""
    first, second = _cases(ws, held_first=False)  # repair holds HELD + SUFFIX
    rv.edit(ws, second.id, json.dumps({"query": HELD + SUFFIX + " And the courier never called back either."}),
            embed=None)
