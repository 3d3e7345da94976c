"""The harvest bar on hand-written transcripts in the three formats (tests/fixtures/sessions,
ground truth in expected.json): exactly the expected staged cases, near-duplicates folded, every
secret redacted, re-harvesting idempotent, public feedback joined by session, private feedback
never read, and accepted cases landing in partitions with a valid manifest."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from skillforge.evaluation.datasets import load_sets
from skillforge.events import record_feedback, record_use
from skillforge.sessions import review as rv
from skillforge.sessions.harvest import harvest
from skillforge.sessions.staging import pending, staged_dir
from skillforge.state.sessions import Signal

FIXTURES = Path(__file__).parent / "fixtures" / "sessions"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text(encoding="utf-8"))
CANARY = "PRIVATE-CANARY-91c2"


def expected_cases() -> dict[tuple[str, str], set[str]]:
    """(session id, skill) -> the signal kinds, for every failing span that is not a duplicate."""
    out: dict[tuple[str, str], set[str]] = {}
    for e in EXPECTED:
        if e.get("duplicate_of"):
            continue
        for s in e["signals"]:
            out.setdefault((e["session_id"], s["skill"]), set()).add(s["kind"])
    return out


def staged_by_key(cases):
    return {(c.provenance.session_id, c.skill): c for c in cases}


@pytest.fixture
def ws(machine):
    return machine.ws


def test_the_fixtures_cover_the_bar():
    assert len(EXPECTED) >= 20 and {e["source"] for e in EXPECTED} == {"claude-code", "codex", "jsonl"}
    kinds = {s["kind"] for e in EXPECTED for s in e["signals"]}
    assert kinds == {"tool_error", "correction", "negative_followup"}
    assert sum(len(e["secrets"]) for e in EXPECTED) >= 8 and sum(1 for e in EXPECTED if e.get("duplicate_of")) >= 2
    assert any(not e["skills_loaded"] for e in EXPECTED) and any(len(e["skills_loaded"]) > 1 for e in EXPECTED)


def test_harvest_stages_exactly_the_expected_cases_redacted(ws):
    mtimes = {p: p.stat().st_mtime_ns for p in FIXTURES.rglob("*") if p.is_file()}
    report = harvest(ws, "auto", FIXTURES)
    want = expected_cases()
    got = staged_by_key(report.staged)
    assert set(got) == set(want)
    for key, kinds in want.items():
        assert kinds <= {s.value for s in got[key].signals}, (key, got[key].signals)
        assert got[key].why and got[key].provenance.content_hash and got[key].id.startswith(f"{key[1]}_auto_s")
    assert report.duplicates == sum(1 for e in EXPECTED if e.get("duplicate_of"))
    folded = {d for c in report.staged for d in c.duplicates}
    assert folded == {e["session_id"] for e in EXPECTED if e.get("duplicate_of")}
    staged_text = "".join(p.read_text(encoding="utf-8") for p in staged_dir(ws).glob("*.json"))
    for secret in {s for e in EXPECTED for s in e["secrets"]}:
        assert secret not in staged_text, secret
    assert "[REDACTED:" in staged_text and sum(report.redactions.values()) >= 5
    assert {p: p.stat().st_mtime_ns for p in FIXTURES.rglob("*") if p.is_file()} == mtimes  # read-only
    for c in report.staged:  # fixtures are the skill's declared tools, with the message they came from
        assert set(c.fixtures) == set(c.provenance.fixture_indexes)
    again = harvest(ws, "auto", FIXTURES)
    assert again.staged == [] and again.known == len(report.staged) + report.duplicates


def test_each_source_alone_gives_its_share(ws):
    want = expected_cases()
    by_source = {e["session_id"]: e["source"] for e in EXPECTED}
    for source in ("claude-code", "codex", "jsonl"):
        got = harvest(ws, source, FIXTURES / source, dry_run=True)
        mine = {k for k in want if by_source[k[0]] == source}
        alone = {(e["session_id"], s["skill"]) for e in EXPECTED for s in e["signals"]  # its twin is in another source
                 if e["source"] == source and e.get("duplicate_of") and (e["duplicate_of"], s["skill"]) not in mine}
        assert set(staged_by_key(got.staged)) == mine | alone, source
    assert not staged_dir(ws).exists()  # dry runs write nothing


def test_public_feedback_joins_by_session_and_private_feedback_is_never_read(ws):
    quiet = next(e for e in EXPECTED if e["skills_loaded"] and not e["signals"] and e["source"] == "jsonl")
    skill = quiet["skills_loaded"][0]
    record_use(ws, quiet["session_id"], skill, None, reason="served by the MCP server")
    record_feedback(ws, quiet["session_id"], skill, "bad", "the hotel was fully booked on arrival")
    other = next(e for e in EXPECTED if e["skills_loaded"] and not e["signals"] and e["session_id"] != quiet["session_id"])
    record_use(ws, other["session_id"], other["skills_loaded"][0], None)
    record_feedback(ws, other["session_id"], other["skills_loaded"][0], "bad", CANARY, private=True)
    report = harvest(ws, "auto", FIXTURES)
    got = staged_by_key(report.staged)
    case = got[(quiet["session_id"], skill)]
    assert case.signals == [Signal.FEEDBACK_BAD] and "fully booked" in case.why
    assert case.provenance.release_id is not None
    assert (other["session_id"], other["skills_loaded"][0]) not in got  # a private verdict makes no case
    assert CANARY not in "".join(p.read_text(encoding="utf-8") for p in staged_dir(ws).glob("*.json"))
    assert CANARY not in json.dumps(report.as_dict())
    corrected = record_feedback(ws, quiet["session_id"], skill, "good", corrects=2)  # a mis-tap, corrected
    assert corrected.seq == 5


def test_accepted_cases_land_in_partitions_with_a_valid_manifest(ws):
    harvest(ws, "auto", FIXTURES)
    for c in pending(ws):
        rv.accept(ws, c.id)
    sets = load_sets(ws)
    accepted = [c for s in sets.values() for c in s.cases if "session" in c.tags]
    assert len(accepted) == len(expected_cases())
    for s in sets.values():
        assert sorted(s.meta.auto_case_ids) == sorted(c.id for c in s.cases if "_auto_" in c.id)
    assert {s.meta.partition.value for s in sets.values() if any("session" in c.tags for c in s.cases)} >= {"repair", "holdout"}
    assert pending(ws) == []


def test_a_secret_that_survives_redaction_is_not_staged(ws, tmp_path, monkeypatch):
    import skillforge.sessions.harvest as h

    monkeypatch.setattr(h, "redact", lambda text: (text, __import__("collections").Counter()))  # redaction broken
    report = harvest(ws, "auto", FIXTURES)
    assert report.dropped and all("still present after redaction" in d for d in report.dropped)
    staged_text = "".join(p.read_text(encoding="utf-8") for p in staged_dir(ws).glob("*.json")) if staged_dir(ws).exists() else ""
    assert "AKIA" not in staged_text and "sk-proj-" not in staged_text
    assert os.environ.get("OMP_NUM_THREADS") == "1"


def test_a_subagent_transcript_gets_its_own_case_ids():
    from skillforge.sessions.harvest import session_key
    from skillforge.state.sessions import SessionSource, Transcript

    main = Transcript(source=SessionSource.CLAUDE_CODE, session_id="s1", path="/p/-home-x/s1.jsonl")
    sub = Transcript(source=SessionSource.CLAUDE_CODE, session_id="s1", path="/p/-home-x/s1/subagents/agent-a9.jsonl")
    assert session_key(main) == "s1" and session_key(sub) == "s1/agent-a9"


def test_a_secret_in_a_feedback_comment_is_counted_among_the_redactions(ws):
    """QA 32 M3: the `why` built from an event comes redacted (clipped), and its redaction was not counted."""
    quiet = next(e for e in EXPECTED if e["skills_loaded"] and not e["signals"] and e["source"] == "jsonl")
    skill = quiet["skills_loaded"][0]
    record_use(ws, quiet["session_id"], skill, None)
    key = "sk-proj-" + "Ab3dEf9hIjKlMn0pQrStUv" * 2
    record_feedback(ws, quiet["session_id"], skill, "bad", f"wrong answer; my key {key}")
    report = harvest(ws, "auto", FIXTURES, dry_run=True)
    case = staged_by_key(report.staged)[(quiet["session_id"], skill)]
    assert key not in case.why and "[REDACTED:" in case.why
    assert case.redactions >= 1 and sum(report.redactions.values()) >= case.redactions
