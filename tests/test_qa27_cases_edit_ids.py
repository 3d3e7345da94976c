"""QA 27 T6: `cases review --edit` of a case's query keeps its identifiers comparable: the hashes are
taken again from the edited text, and the hashes of what redaction took are kept when the edit keeps
the same [REDACTED:...] placeholders; a case whose identifiers cannot be known (other placeholders,
or harvested before hashes) never folds a later request into itself. So another customer's request
with the same wording is staged, not dropped as a near-duplicate of an edited case."""

from __future__ import annotations

import json

import pytest
from test_qa25_cases_ids import _file

from skillforge.rules.sessions import edited_hashes, identifier_hashes, same_text_request
from skillforge.sessions import review as rv
from skillforge.sessions.harvest import harvest
from skillforge.sessions.staging import read_staged, write_staged
from skillforge.state.sessions import StagedFile
from skillforge.testing.evolve_world import SKILL, new_workspace

KEY = b"k" * 32
RAW = "Where is my order {} for {}? It was due yesterday."
RED = "Where is my order {} for [REDACTED:email]? It was due yesterday."


def test_edited_hashes_keep_what_redaction_took_and_read_the_rest_again():
    old_h = identifier_hashes(RAW.format("A100", "alice@example.com"), KEY)
    old = RED.format("A100")
    kept = edited_hashes(old, old_h, RED.format("A100") + "!", KEY, "c1")
    assert kept == old_h  # only punctuation changed
    renum = edited_hashes(old, old_h, RED.format("A200"), KEY, "c1")  # the order number typed anew
    assert renum == identifier_hashes(RAW.format("A200", "alice@example.com"), KEY)
    gone = edited_hashes(old, old_h, "Where is my order A100? It was due yesterday.", KEY, "c1")
    assert gone == identifier_hashes("Where is my order A100?", KEY)  # the address edited out
    typed = edited_hashes(old, old_h, "Where is my order A100 for bob@example.com?", KEY, "c1")
    assert typed == identifier_hashes("order A100 bob@example.com", KEY)
    assert identifier_hashes("[REDACTED:base64-credential]", KEY) != []  # why placeholders are not read
    assert edited_hashes("q", None, "x [REDACTED:base64-credential] y", KEY, "c1") != []


@pytest.mark.parametrize("old_query,old_hashes,new_query", [
    (RED.format("A1"), ["aaaaaaaaaaaaaaaa"], RED.format("A1") + " [REDACTED:phone]"),  # another placeholder
    (RED.format("A1"), None, RED.format("A1") + "!"),  # harvested before hashes
    ("Where is my order A1? It was due yesterday.", [], RED.format("A1")),  # a placeholder typed in
])
def test_unknown_identifiers_never_fold_a_later_request(old_query, old_hashes, new_query):
    got = edited_hashes(old_query, old_hashes, new_query, KEY, "case-1")
    assert got != edited_hashes(old_query, old_hashes, new_query, KEY, "case-2")  # keyed on the case
    for who in ("alice@example.com", "bob@example.com"):
        later = identifier_hashes(RAW.format("A1", who), KEY)
        assert not same_text_request(new_query, RED.format("A1") + "!", got, later)


def _staged(ws):
    return {c.id: c for c in read_staged(ws, SKILL).cases}


@pytest.mark.parametrize("edit_to", [RED.format("A100") + "!", RED.format("A100") + " [REDACTED:phone]"])
def test_other_customers_are_staged_after_an_edit(tmp_path, edit_to):
    ws = new_workspace(tmp_path / "ws")
    r = harvest(ws, "jsonl", _file(tmp_path / "a.jsonl", [("alice", RAW.format("A100", "alice@example.com"))]),
                embed=None)
    (case,) = r.staged
    assert case.query == RED.format("A100")
    done = rv.edit(ws, case.id, json.dumps({"query": edit_to}), embed=None)
    assert done.provenance.identifier_hashes  # not dropped
    assert _staged(ws)[case.id].provenance.identifier_hashes == done.provenance.identifier_hashes
    bob = harvest(ws, "jsonl", _file(tmp_path / "b.jsonl", [("bob", RAW.format("A100", "bob@example.com"))]),
                  embed=None)
    assert len(bob.staged) == 1 and bob.duplicates == 0  # QA 27 T6: was 0 staged, 1 near-duplicate
    rv.accept(ws, case.id, embed=None)
    carol = harvest(ws, "jsonl", _file(tmp_path / "c.jsonl", [("carol", RAW.format("A100", "carol@example.com"))]),
                    embed=None)
    assert len(carol.staged) == 1 and carol.duplicates == 0
    again = harvest(ws, "jsonl", tmp_path / "a.jsonl", embed=None)  # the edited session itself: still known
    assert again.staged == [] and again.known == 1


def test_the_same_customer_still_folds_into_a_kept_edit(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    r = harvest(ws, "jsonl", _file(tmp_path / "a.jsonl", [("alice", RAW.format("A100", "alice@example.com"))]),
                embed=None)
    rv.edit(ws, r.staged[0].id, json.dumps({"query": RED.format("A100") + "!"}), embed=None)
    later = harvest(ws, "jsonl", _file(tmp_path / "a2.jsonl", [("alice-2", RAW.format("A100", "alice@example.com"))]),
                    embed=None)
    assert later.staged == [] and later.duplicates == 1  # the same address and wording: one request


def test_an_edit_of_a_case_harvested_before_hashes_is_not_a_fold_target(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    r = harvest(ws, "jsonl", _file(tmp_path / "a.jsonl", [("alice", RAW.format("A100", "alice@example.com"))]),
                embed=None)
    staged = read_staged(ws, SKILL)  # as a version before QA 25 staged it: no hashes
    write_staged(ws, StagedFile(skill=SKILL, cases=[c.model_copy(update={"provenance": c.provenance.model_copy(
        update={"identifier_hashes": None})}) for c in staged.cases]))
    done = rv.edit(ws, r.staged[0].id, json.dumps({"query": RED.format("A100") + "!"}), embed=None)
    assert done.provenance.identifier_hashes and len(done.provenance.identifier_hashes) == 2
    assert (ws.runs_dir / "identifier-salt").exists()
    bob = harvest(ws, "jsonl", _file(tmp_path / "b.jsonl", [("bob", RAW.format("A100", "bob@example.com"))]),
                  embed=None)
    assert len(bob.staged) == 1
