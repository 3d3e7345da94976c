"""QA 25 T3: identifiers are compared before redaction. Two requests that differ only in an e-mail
address or a phone number (both read [REDACTED:...] once staged) are two cases, within a harvest,
against an earlier harvest's cases, and under a reused session id; only keyed hashes of the
identifiers are kept (runs/identifier-salt), never the raw value."""

from __future__ import annotations

import json
import stat

from test_qa22_cases_dedupe import _session

from skillforge.rules.sessions import identifier_hashes, same_identifiers, same_text_request, settle_id
from skillforge.sessions.harvest import harvest
from skillforge.sessions.staging import SALT_NAME, read_staged
from skillforge.testing.evolve_world import SKILL, new_workspace

BOB = "Where is my order for bob.smith@example.com? It was due yesterday."
ROB = "Where is my order for rob.smith@example.com? It was due yesterday."
PHONE1 = "Where is my parcel, my phone is +1 415 555 0134? It was due yesterday."
PHONE2 = "Where is my parcel, my phone is +1 415 555 0199? It was due yesterday."


def _file(path, sessions):
    path.write_text("".join(json.dumps(x) + "\n" for sid, q in sessions for x in _session(sid, q)), encoding="utf-8")
    return path


def _counts_add_up(r):
    assert r.failing == len(r.staged) + r.known + r.duplicates + len(r.dropped), r.as_dict()


def test_identifier_hashes_are_keyed_and_decide_when_both_sides_have_them():
    k1, k2 = b"k" * 32, b"j" * 32
    assert identifier_hashes(BOB, k1) != identifier_hashes(ROB, k1)
    assert identifier_hashes(BOB, k1) != identifier_hashes(BOB, k2)
    assert all(len(h) == 16 and "bob" not in h for h in identifier_hashes(BOB, k1))
    red = "Where is my order for [REDACTED:email]? It was due yesterday."
    assert same_text_request(red, red)  # as staged, with nothing else: one request (the old behaviour)
    assert not same_text_request(red, red, identifier_hashes(BOB, k1), identifier_hashes(ROB, k1))
    assert same_identifiers(red, red, identifier_hashes(BOB, k1), identifier_hashes(BOB, k1))
    assert same_identifiers(red, red, None, identifier_hashes(BOB, k1))  # one side harvested before: the texts
    me = ("h2", red, ("a",))
    assert settle_id("b", "s", me, {"b": ("h1", red, ("b",))}) == ("new", "s")  # same text, other identifiers
    assert settle_id("b", "s", me, {"b": ("h1", red, None)}) == ("same", "b")  # staged before hashes: as before
    assert settle_id("b", "s", me, {"b": ("h1", red, ("a",))}) == ("same", "b")


def test_an_email_or_phone_difference_is_two_cases_and_nothing_raw_is_kept(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    src = _file(tmp_path / "s.jsonl", [("b1", BOB), ("b2", ROB), ("c1", PHONE1), ("c2", PHONE2), ("b3", BOB)])
    r = harvest(ws, "jsonl", src, embed=None)
    _counts_add_up(r)
    assert len(r.staged) == 4 and r.duplicates == 1  # b3 repeats b1
    salt = ws.runs_dir / SALT_NAME
    assert stat.S_IMODE(salt.stat().st_mode) == 0o600
    again = harvest(ws, "jsonl", src, embed=None)
    assert again.staged == [] and again.known + again.duplicates == 5  # idempotent, same key
    for p in [*ws.evaluation_sets_dir.rglob("*.json"), *ws.runs_dir.rglob("*")]:
        if p.is_file():
            data = p.read_bytes()
            assert b"bob.smith" not in data and b"rob.smith" not in data and b"555 0134" not in data, p


def test_a_dry_run_writes_no_key_and_still_tells_them_apart(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    r = harvest(ws, "jsonl", _file(tmp_path / "s.jsonl", [("b1", BOB), ("b2", ROB)]), embed=None, dry_run=True)
    assert len(r.staged) == 2 and not (ws.runs_dir / SALT_NAME).exists()


def test_a_later_harvest_and_a_reused_session_id_keep_another_address(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    assert len(harvest(ws, "jsonl", _file(tmp_path / "1.jsonl", [("r1", BOB)]), embed=None).staged) == 1
    r = harvest(ws, "jsonl", _file(tmp_path / "2.jsonl", [("r1", ROB)]), embed=None)  # reused session id
    _counts_add_up(r)
    assert len(r.staged) == 1 and r.known == 0
    r = harvest(ws, "jsonl", _file(tmp_path / "3.jsonl", [("r9", ROB.replace("rob.", "carl."))]), embed=None)
    assert len(r.staged) == 1 and r.duplicates == 0  # another session, another address: not a known near-copy
    r = harvest(ws, "jsonl", _file(tmp_path / "4.jsonl", [("r8", BOB)]), embed=None)
    assert r.staged == [] and r.duplicates == 1  # the same address again is folded
    assert len(read_staged(ws, SKILL).cases) == 3


def test_an_edited_query_replaces_the_hashes_of_the_old_one(tmp_path):
    from skillforge.sessions import review as rv

    ws = new_workspace(tmp_path / "ws")
    case = harvest(ws, "jsonl", _file(tmp_path / "1.jsonl", [("e1", BOB)]), embed=None).staged[0]
    assert case.provenance.identifier_hashes
    done = rv.edit(ws, case.id, json.dumps({"query": "Where is my order 4411? It was due yesterday."}), embed=None)
    # QA 27 T6: not dropped (the redacted text then decided and folded other customers' requests in):
    # the edited text's identifiers, under the workspace key
    from skillforge.sessions.staging import identifier_salt

    want = identifier_hashes("Where is my order 4411?", identifier_salt(ws, create=False))
    assert done.provenance.identifier_hashes == want != case.provenance.identifier_hashes
    assert read_staged(ws, SKILL).case(case.id).provenance.identifier_hashes == want
