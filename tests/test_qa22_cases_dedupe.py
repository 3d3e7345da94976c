"""QA 22 TRUST-3: the harvest's near-duplicate folding keeps requests that name different
identifiers (tracking numbers, "parcel 0" / "parcel 1", emails) as separate cases, under the text
rule and the embedder rule; a real copy is still folded; the leak checks keep near_duplicate alone."""

from __future__ import annotations

import json

import pytest

from skillforge.rules.failures import near_duplicate
from skillforge.rules.sessions import identifiers, same_request, same_text_request
from skillforge.sessions.harvest import harvest
from skillforge.testing.evolve_world import SKILL, new_workspace


@pytest.mark.parametrize("a,b", [
    ("where is parcel SF1234567890123, it has not moved", "where is parcel SF1234567890456, it has not moved"),
    ("where is parcel 1Z999AA10123456784?", "where is parcel 1Z999AA10123456785?"),
    ("Parcel number 0 SF5555555555500 stuck, courier 0 at building 0",
     "Parcel number 1 SF5555555555501 stuck, courier 1 at building 1"),
    ("Parcel number 0 stuck, courier 0 at building 0", "Parcel number 1 stuck, courier 1 at building 1"),
    ("send the receipt to bob@example.com please", "send the receipt to rob@example.com please"),
    ("book a taxi at 18:30 to the airport", "book a taxi at 18:45 to the airport"),
    ("我的快递 ZT3333333333333 三天没更新了", "我的快递 ZT3333333333334 三天没更新了"),
    ("从三号楼寄出的包裹到哪了", "从四号楼寄出的包裹到哪了"),  # Chinese numerals read as digits
    ("where is parcel SF1234567890123", "where is parcel SF1234567890123 and SF1234567890124"),
])
def test_requests_with_different_identifiers_are_not_one_request(a, b):
    assert near_duplicate(a, b) or a[:10] == b[:10]  # the text alone would (nearly) fold them
    assert identifiers(a) != identifiers(b)
    assert not same_text_request(a, b)
    assert not same_request(a, b, 0.999, 0.97)


@pytest.mark.parametrize("a,b", [
    ("Where is parcel SF1234567890123?", "where is parcel  sf1234567890123"),  # case, spacing
    ("where is my parcel ＳＦ１２３４５６７８９０１２３", "where is my parcel SF1234567890123"),  # full width
    ("my parcel hasn't moved, can you check?", "my parcel hasn't moved - can you check"),  # no identifiers
    ("where is SF1234567890123.", "where is SF1234567890123"),  # trailing punctuation is not part of it
])
def test_copies_are_still_one_request(a, b):
    assert identifiers(a) == identifiers(b)
    assert same_text_request(a, b)


def test_identifier_edges():
    assert identifiers("Where is SF1234567890123? order A-77x1") == {"sf1234567890123", "a-77x1"}
    assert identifiers("no digits here, none at all") == frozenset()
    assert identifiers("parcel 0") == {"0"}
    assert identifiers("mail bob.x@ex.com at 18:30 on 2026-11-24") == {"bob.x@ex.com", "18:30", "2026-11-24"}
    assert identifiers("[REDACTED:email] [REDACTED:phone]") == frozenset()  # redacted: nothing to tell apart


def test_the_leak_rule_is_unchanged_a_copy_with_another_number_is_still_a_copy():
    assert near_duplicate("where is parcel SF1234567890123, it has not moved", "where is parcel SF1234567890456, it has not moved")


def _session(sid: str, query: str) -> list[dict]:
    return [{"session_id": sid, "role": "user", "content": query},
            {"session_id": sid, "role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "use_skill",
                                                              "arguments": json.dumps({"name": SKILL})}}]},
            {"session_id": sid, "role": "tool", "tool_call_id": "c1", "name": "use_skill", "content": "Loaded."},
            {"session_id": sid, "role": "assistant", "content": None, "tool_calls": [
                {"id": "c2", "type": "function", "function": {"name": "ride.estimate_fare", "arguments": "{}"}}]},
            {"session_id": sid, "role": "tool", "tool_call_id": "c2", "content": "upstream down", "is_error": True},
            {"session_id": sid, "role": "assistant", "content": "The fare is 30 yuan."},
            {"session_id": sid, "role": "user", "content": "No, that is wrong"}]


def test_harvest_keeps_two_parcels_two_cases_and_folds_a_copy(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    queries = ["Parcel number 0 stuck, courier 0 at building 0", "Parcel number 1 stuck, courier 1 at building 1",
               "where is parcel SF1234567890123", "where is parcel SF1234567890456",
               "Where is parcel SF1234567890123?"]  # the last copies the third
    src = tmp_path / "s.jsonl"
    src.write_text("".join(json.dumps(x) + "\n" for i, q in enumerate(queries) for x in _session(f"d{i}", q)),
                   encoding="utf-8")
    report = harvest(ws, "jsonl", src, embed=None)
    assert report.failing == 5 and len(report.staged) == 4 and report.duplicates == 1
    assert [c.query for c in report.staged] == queries[:4]
    again = harvest(ws, "jsonl", src, embed=None)  # the known check: same rule against the staged file
    assert again.staged == [] and again.known + again.duplicates == 5
    src2 = tmp_path / "s2.jsonl"
    src2.write_text("".join(json.dumps(x) + "\n" for x in _session("d9", "where is parcel SF1234567890789")),
                    encoding="utf-8")
    assert [c.query for c in harvest(ws, "jsonl", src2, embed=None).staged] == ["where is parcel SF1234567890789"]
