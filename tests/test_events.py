"""The events API and `skillforge feedback`: input checked before anything is written, the live
release filled in, one seq across both files, torn lines skipped and reported (and never glued
onto), private text nowhere but private.jsonl, and two rebuilds of the projection byte-identical."""

from __future__ import annotations

import json
import logging

import pytest
from conftest import edited, run_cli

from skillforge.errors import EventError, InvalidId, NotWritable, UnknownRelease, UnknownSkill
from skillforge.events import EventLog, rebuild, record_feedback, record_tool_error, record_use
from skillforge.events.projection import load
from skillforge.state.events import EventKind, FeedbackOutcome

from conftest import live_release

SKILL = "taxi-hailing"
CANARY = "PRIVATE-CANARY-7f3e"


@pytest.fixture
def ws(machine):
    return machine.ws


def live(ws, skill=SKILL):
    return live_release(ws, skill)


def fb(ws, session, skill, outcome, *args, **kwargs):
    """record_feedback naming the live release (a session never served the skill needs one)."""
    if kwargs.get("corrects") is None and "release_id" not in kwargs:
        kwargs["release_id"] = live(ws, skill)
    return record_feedback(ws, session, skill, outcome, *args, **kwargs)


def nothing_written(ws):
    d = ws.runs_dir / "events"
    return not (d / "public.jsonl").exists() and not (d / "private.jsonl").exists()


def test_record_use_and_feedback_fill_in_the_live_release(ws):
    use = record_use(ws, "s1", SKILL, None, reason="user asked for a taxi")
    fb = record_feedback(ws, "s1", SKILL, "good", "fine")
    err = record_tool_error(ws, "s1", SKILL, None, "taxi.book timed out")
    assert use.kind is EventKind.SKILL_USED and use.release_id == live(ws) and use.seq == 1
    assert fb.kind is EventKind.FEEDBACK and fb.outcome is FeedbackOutcome.GOOD and fb.release_id == live(ws)
    assert err.kind is EventKind.TOOL_ERROR and err.seq == 3
    assert use.at.endswith("Z") and use.at <= fb.at <= err.at
    read = EventLog(ws).read_public()
    assert read.events == [use, fb, err] and read.skipped_lines == 0


def test_a_release_prefix_becomes_the_full_id(ws):
    rel = live(ws)
    assert record_use(ws, "s", SKILL, rel[:8]).release_id == rel


@pytest.mark.parametrize("call,error", [
    (lambda ws: record_feedback(ws, "s", "no-such-skill", "good"), UnknownSkill),
    (lambda ws: record_feedback(ws, "s", "../etc", "good"), InvalidId),
    (lambda ws: record_feedback(ws, "s", SKILL, "great"), EventError),
    (lambda ws: record_feedback(ws, "s", SKILL, "good", release_id="ffffffff"), UnknownRelease),
    (lambda ws: record_feedback(ws, "s\x1b[2J", SKILL, "good"), EventError),
    (lambda ws: record_feedback(ws, "x" * 201, SKILL, "good"), EventError),
    (lambda ws: record_feedback(ws, "", SKILL, "good"), EventError),
    (lambda ws: record_feedback(ws, "s", SKILL, "good", "bell\x07"), EventError),
    (lambda ws: record_feedback(ws, "s", SKILL, "good", corrects=1), EventError),
    (lambda ws: record_feedback(ws, "s", SKILL, "good", corrects=0), EventError),
    (lambda ws: record_use(ws, "s", "no-such-skill", None), UnknownSkill),
    (lambda ws: record_use(ws, "s\n", SKILL, None), EventError),
])
def test_bad_input_is_a_named_error_and_nothing_is_written(ws, call, error):
    with pytest.raises(error):
        call(ws)
    assert nothing_written(ws)


def test_an_empty_workspace_knows_no_skill(workspace):
    with pytest.raises(UnknownSkill):
        record_feedback(workspace, "s", SKILL, "good")


def test_a_correction_must_name_feedback_of_the_same_session_and_skill(ws):
    use = record_use(ws, "s", SKILL, None)
    first = fb(ws, "s", SKILL, "bad")
    other = fb(ws, "s", "hotel-booking", "bad")
    for kwargs, why in [({"corrects": use.seq}, "not feedback"), ({"corrects": 99}, "no event #99"),
                        ({"corrects": other.seq}, "another session or skill")]:
        with pytest.raises(EventError, match=why):
            fb(ws, "s", SKILL, "good", **kwargs)
    with pytest.raises(EventError, match="another session"):
        fb(ws, "t", SKILL, "good", corrects=first.seq)
    with pytest.raises(EventError, match="public feedback, so its correction is public too"):
        fb(ws, "s", SKILL, "good", "why", private=True, corrects=first.seq)  # it would not count
    c = fb(ws, "s", SKILL, "good", corrects=first.seq)
    assert c.kind is EventKind.CORRECTION and c.release_id == first.release_id and c.corrects == first.seq
    assert not c.private and EventLog(ws).counts().public == 4


def test_seq_is_one_counter_across_both_files(ws):
    seqs = [fb(ws, f"s{i}", SKILL, "neutral", private=i % 3 == 0).seq for i in range(12)]
    assert seqs == list(range(1, 13))
    log = EventLog(ws)
    files = [[json.loads(line)["seq"] for line in p.read_text().splitlines()] for p in (log.public_path, log.private_path)]
    for f in files:
        assert f == sorted(f) and len(set(f)) == len(f)
    assert sorted(files[0] + files[1]) == seqs
    assert log.counts().model_dump() == {"public": 8, "private": 4, "skipped_lines": 0, "last_seq": 12}


def test_a_torn_last_line_is_skipped_reported_and_never_glued_onto(ws, caplog):
    log = EventLog(ws)
    fb(ws, "s", SKILL, "good")
    with log.public_path.open("ab") as fh:
        fh.write(b'{"ts": "2026", "kind": "feedback", "session_id": "s", "se')  # a writer killed mid-line
    with caplog.at_level(logging.WARNING):
        read = log.read_public()
    assert read.skipped_lines == 1 and len(read.events) == 1 and "torn" in caplog.text
    nxt = fb(ws, "s", SKILL, "bad")
    assert nxt.seq == 2
    lines = log.public_path.read_bytes().split(b"\n")
    assert lines[-1] == b"" and json.loads(lines[-2])["seq"] == 2 and lines[-3].endswith(b'"se')
    read = log.read_public()
    assert [e.seq for e in read.events] == [1, 2] and read.skipped_lines == 1
    assert log.counts().skipped_lines == 1


def test_a_whole_record_without_its_newline_keeps_its_seq(ws):
    """A record whose newline never reached the disk still holds a seq: it is never given again."""
    log = EventLog(ws)
    fb(ws, "s", SKILL, "good")
    log.private_path.parent.mkdir(parents=True, exist_ok=True)
    log.private_path.write_bytes(b'{"ts": "x", "kind": "feedback", "session_id": "s", "skill": "k", "seq": 7}')
    assert fb(ws, "s", SKILL, "bad").seq == 8


def test_private_text_stays_in_private_jsonl(ws):
    fb(ws, "s", SKILL, "bad", "public words")
    secret = fb(ws, "s", SKILL, "good", f"my card is {CANARY}", private=True)
    fix = fb(ws, "s", SKILL, "bad", corrects=secret.seq)  # a correction of a private verdict is private
    assert fix.kind is EventKind.CORRECTION and fix.private
    log = EventLog(ws)
    assert all(e.corrects != secret.seq and e.seq != fix.seq for e in log.read_public().events)
    rebuild(log)
    assert CANARY in log.private_path.read_text()
    assert CANARY not in log.public_path.read_text()
    assert CANARY not in log.effective_path.read_text()
    assert CANARY not in log.read_public().model_dump_json()
    assert CANARY not in log.lookup(secret.seq).model_dump_json()
    assert all(not e.private for e in log.read_public().events)
    assert log.counts().private == 2
    root = str(ws.root)
    for args in (["feedback", "list"], ["feedback", "list", "--json"], ["feedback", "list", "--skill", SKILL],
                 ["feedback", "rebuild", "--json"]):
        proc = run_cli([*args, "-w", root])
        assert CANARY not in proc.stdout + proc.stderr
    assert "2 private events not shown" in run_cli(["feedback", "list", "-w", root]).stdout
    listed = json.loads(run_cli(["feedback", "list", "--json", "-w", root]).stdout)
    assert listed["private_count"] == 2 and [e["seq"] for e in listed["events"]] == [1]
    added = run_cli(["feedback", "add", "--session", "s", "--skill", SKILL, "--outcome", "bad", "--release", live(ws),
                     "--comment", CANARY + "2", "--private", "--json", "-w", root])
    assert CANARY not in added.stdout and json.loads(added.stdout)["private"] is True


def test_two_rebuilds_are_byte_identical(ws):
    for i in range(6):
        record_use(ws, f"s{i % 2}", SKILL, None)
        record_feedback(ws, f"s{i % 2}", SKILL, ["good", "bad", "neutral"][i % 3], private=i == 4)
    record_feedback(ws, "s0", SKILL, "good", corrects=2)
    log = EventLog(ws)
    first, _ = rebuild(log)
    a = log.effective_path.read_bytes()
    log.effective_path.unlink()
    second, _ = rebuild(log)
    assert log.effective_path.read_bytes() == a and first == second == load(log)
    assert run_cli(["feedback", "rebuild", "-w", str(ws.root)]).returncode == 0
    assert log.effective_path.read_bytes() == a
    assert not list(log.dir.glob(".*.tmp"))


def test_cli_add_list_rebuild(ws):
    root = str(ws.root)
    record_use(ws, "s1", SKILL, None)
    first = run_cli(["feedback", "add", "--session", "s1", "--skill", SKILL, "--outcome", "bad",
                     "--comment", "mis-tap", "-w", root])
    assert "recorded feedback #2" in first.stdout
    run_cli(["feedback", "add", "--session", "s1", "--skill", SKILL, "--outcome", "good", "--corrects", "2", "-w", root])
    listed = json.loads(run_cli(["feedback", "list", "--json", "--skill", SKILL, "-w", root]).stdout)
    assert [(e["kind"], e["outcome"]) for e in listed["events"]] == [
        ("skill_used", None), ("feedback", "bad"), ("correction", "good")]
    assert listed["events"][1]["release_id"] == live(ws)
    assert json.loads(run_cli(["feedback", "list", "--json", "--skill", "hotel-booking", "-w", root]).stdout)["events"] == []
    built = json.loads(run_cli(["feedback", "rebuild", "--json", "-w", root]).stdout)
    [t] = built["releases"]
    assert (t["good"], t["bad"]) == (1, 0) and built["last_seq"] == 3


@pytest.mark.parametrize("args,says", [
    (["--skill", "no-such-skill", "--outcome", "good"], "unknown skill"),
    (["--skill", SKILL, "--outcome", "great"], "unknown outcome"),
    (["--skill", SKILL, "--outcome", "good", "--corrects", "5"], "no event #5"),
    (["--skill", SKILL, "--outcome", "good", "--release", "zzzz9999"], "release"),
])
def test_cli_bad_input_exits_2_and_writes_nothing(ws, args, says):
    proc = run_cli(["feedback", "add", "--session", "s", *args, "-w", str(ws.root)], ok=2)
    assert says in proc.stderr.lower()
    assert nothing_written(ws)


@pytest.mark.parametrize("session", ["a\x01b", "x" * 201])
def test_cli_bad_session_exits_2(ws, session):
    proc = run_cli(["feedback", "add", "--session", session, "--skill", SKILL, "--outcome", "good",
                    "-w", str(ws.root)], ok=2)
    assert "session id" in proc.stderr and nothing_written(ws)


def test_a_folder_where_the_log_belongs_is_a_named_error(ws):
    log = EventLog(ws)
    log.public_path.mkdir(parents=True)
    with pytest.raises(NotWritable):
        fb(ws, "s", SKILL, "good")
    proc = run_cli(["feedback", "add", "--session", "s", "--skill", SKILL, "--outcome", "good", "-w", str(ws.root)],
                   ok=2)
    assert "public.jsonl" in proc.stderr


def test_a_long_last_line_is_read_past(ws, monkeypatch):
    """The seq is found however long the last event is (the tail read grows until a whole one)."""
    monkeypatch.setattr("skillforge.events.log.TAIL_CHUNK", 64)
    fb(ws, "s", SKILL, "good")
    big = fb(ws, "s", SKILL, "good", "y" * 4000, private=True)
    for _ in range(3):
        big = fb(ws, "s", SKILL, "bad", "z" * 4000)
    assert fb(ws, "s", SKILL, "neutral").seq == big.seq + 1 == 6


def test_a_tool_error_of_a_session_never_served_the_skill_is_refused_as_feedback_is(machine, ws):
    """As `feedback add` (fb12): refused unless the release is named, and filled in from the
    session's skill_used event, not from whatever is live now (QA msgs15 item 4)."""
    record_use(ws, "other", "hotel-booking", None)  # served another skill: still never served this one
    with pytest.raises(EventError) as refused:
        record_tool_error(ws, "other", SKILL, None, "taxi.book timed out")
    assert str(refused.value) == (
        f"session 'other' was never served '{SKILL}' (no skill_used event): its tool error would count against a "
        "release it never saw. Check the session id (an agent loads the skill with use_skill in that session "
        "first), or name the release: pass its release_id")
    with pytest.raises(EventError, match="its feedback would count against a release it never saw"):
        record_feedback(ws, "other", SKILL, "bad")  # the same check, the same words
    assert EventLog(ws).counts().last_seq == 1  # nothing written
    named = record_tool_error(ws, "other", SKILL, live(ws)[:8], "taxi.book timed out")
    assert named.release_id == live(ws) and named.seq == 2
    served = live(ws)
    record_use(ws, "s1", SKILL, None)
    machine.publish(SKILL, edited(machine, SKILL, "- a later line"))
    assert live(ws) != served
    assert record_tool_error(ws, "s1", SKILL, None, "taxi.book timed out").release_id == served  # what it was served


def test_served_finds_a_sessions_skill_used_events_as_a_whole_read_would(ws):
    """`served` parses only the lines whose bytes hold the session id: ids that JSON escapes (a
    quote, a backslash, non-ASCII), an id that is a prefix of another, other skills, other kinds and a
    torn last line give what filtering `read_public` gives."""
    other = next(s for s in ("restaurant-booking", "package-tracking") if s != SKILL)
    ids = ['s1', 's10', 'q"uote', 'back\\slash', '会话-é', 'skill_used']
    for sid in ids:
        record_use(ws, sid, SKILL, None, reason=f"use {sid}")
        record_use(ws, sid, other, None)
        record_feedback(ws, sid, SKILL, "good", f"said in s1 about {sid}")  # holds "s1" and the id, not skill_used
    record_use(ws, "s1", SKILL, None)
    with (ws.runs_dir / "events" / "public.jsonl").open("ab") as f:
        f.write(b'{"kind": "skill_used", "session_id": "s1", "skill": "taxi-hailing", "se')  # torn
    log = EventLog(ws)
    public = log.read_public().events
    for sid in [*ids, "nobody", "s"]:
        for skill in (SKILL, other):
            want = [e for e in public if e.kind is EventKind.SKILL_USED and e.session_id == sid and e.skill == skill]
            assert log.served(sid, skill) == want, (sid, skill)
    assert [e.reason for e in log.served("s1", SKILL)] == ["use s1", None]
    assert [e.reason for e in log.served('q"uote', SKILL)] == ['use q"uote']
