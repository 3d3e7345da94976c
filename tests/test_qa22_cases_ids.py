"""QA 22 TRUST-5: a different request under a session id and request index already taken (a reused
session id, two generic-JSONL files whose names share a stem) is a new case, not "seen before" and
not lost; re-harvesting stays idempotent and keeps the ids earlier harvests gave; the counts add up."""

from __future__ import annotations

import json

from skillforge.rules.sessions import case_id, settle_id
from skillforge.sessions.harvest import harvest
from skillforge.sessions.staging import read_staged
from skillforge.testing.evolve_world import SKILL, new_workspace

from test_qa22_cases_dedupe import _session


def test_case_id_without_content_is_the_id_earlier_harvests_gave():
    assert case_id("s", "jsonl", "sess-1", 0) == "s_auto_s" + __import__("hashlib").sha256(
        b"jsonl\0sess-1\0" b"0").hexdigest()[:10]
    assert case_id("s", "jsonl", "sess-1", 0, "ab") != case_id("s", "jsonl", "sess-1", 0)
    assert case_id("s", "jsonl", "sess-1", 0, "ab") != case_id("s", "jsonl", "sess-1", 0, "cd")


def test_settle_id_edges():
    me = ("h1", "where is SF1")
    assert settle_id("b", "s", me, {}) == ("new", "b")
    assert settle_id("b", "s", me, {"b": ("h1", "edited by a reviewer")}) == ("same", "b")  # same hash
    assert settle_id("b", "s", me, {"b": ("h-old", "where is SF1")}) == ("same", "b")  # same query
    assert settle_id("b", "s", me, {"b": None}) == ("same", "b")  # a set case or folded id: as before
    assert settle_id("b", "s", me, {"b": ("h2", "another request")}) == ("new", "s")
    assert settle_id("b", "s", me, {"b": ("h2", "another"), "s": me}) == ("same", "s")


def _write(path, sessions):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({k: v for k, v in x.items() if k != "session_id"}) + "\n"
                            for sid, q in sessions for x in _session(sid, q)), encoding="utf-8")


def _counts_add_up(r):
    assert r.failing == len(r.staged) + r.known + r.duplicates + len(r.dropped), r.as_dict()


def test_two_files_with_one_stem_are_two_cases_and_re_harvest_is_idempotent(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    _write(tmp_path / "in" / "a" / "session.jsonl", [("x", "where is parcel SF1111111111111, no news")])
    _write(tmp_path / "in" / "b" / "session.jsonl", [("x", "my taxi to the airport never came, order 88123")])
    first = harvest(ws, "jsonl", tmp_path / "in", embed=None)
    _counts_add_up(first)
    assert len(first.staged) == 2 and first.known == 0 and len({c.id for c in first.staged}) == 2
    assert first.staged[0].id == case_id(SKILL, "jsonl", "session", 0)  # the first keeps the plain id
    again = harvest(ws, "jsonl", tmp_path / "in", embed=None)
    _counts_add_up(again)
    assert again.staged == [] and again.known == 2
    assert len(read_staged(ws, SKILL).cases) == 2


def test_a_new_request_under_a_reused_session_id_is_staged(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    one = tmp_path / "one.jsonl"
    one.write_text("".join(json.dumps(x) + "\n" for x in _session("s02", "where is parcel SF2222222222222")),
                   encoding="utf-8")
    two = tmp_path / "two.jsonl"
    two.write_text("".join(json.dumps(x) + "\n" for x in _session("s02", "我的快递 ZT3333333333333 三天没更新了")),
                   encoding="utf-8")
    assert len(harvest(ws, "jsonl", one, embed=None).staged) == 1
    r = harvest(ws, "jsonl", two, embed=None)
    _counts_add_up(r)
    assert len(r.staged) == 1 and r.known == 0
    assert r.staged[0].id != case_id(SKILL, "jsonl", "s02", 0)
    r = harvest(ws, "jsonl", one, embed=None)  # the first file again: still known under its old id
    assert r.staged == [] and r.known == 1
    both = tmp_path / "both"
    both.mkdir()
    (both / "1.jsonl").write_text(one.read_text(encoding="utf-8"), encoding="utf-8")
    (both / "2.jsonl").write_text(one.read_text(encoding="utf-8"), encoding="utf-8")  # the same file twice
    r = harvest(ws, "jsonl", both, embed=None)
    _counts_add_up(r)
    assert r.staged == []
