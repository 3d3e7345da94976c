"""Feedback comments and tool-error reasons are stored redacted, and `skillforge runs redact`
redacts what was stored before (runs/router.jsonl, its archives, runs/events/*.jsonl) in place:
atomically, with the writers' locks, malformed lines kept, counts only (never the secret)."""

from __future__ import annotations

import fcntl
import gzip
import json
import os
import threading

import pytest
from conftest import run_cli

from skillforge.events import EventLog, rebuild, record_feedback, record_tool_error, record_use
from skillforge.events.projection import render
from skillforge.journal import append_jsonl, read_jsonl
from skillforge.rules.redact import redact
from skillforge.runners.redact_logs import redact_logs
from conftest import live_release

SKILL = "taxi-hailing"
AWS = "AKIAIOSFODNN7EXAMPLE"
SECRETS = ("hunter2abc", AWS, "jane.doe@example.com")


@pytest.fixture
def ws(machine):
    return machine.ws


def raw_text(ws) -> str:
    d = ws.runs_dir / "events"
    return "".join(p.read_text(encoding="utf-8") for p in (d / "public.jsonl", d / "private.jsonl") if p.exists())


def test_comments_and_reasons_are_stored_redacted(ws):
    rel = live_release(ws, SKILL)
    record_use(ws, "s1", SKILL, None, reason=f"user gave key {AWS}")
    fb = record_feedback(ws, "s1", SKILL, "bad", "the DB_PASSWORD=hunter2abc fails, mail jane.doe@example.com")
    err = record_tool_error(ws, "s1", SKILL, None, f"taxi.book 403 with {AWS}")
    priv = record_feedback(ws, "s2", SKILL, "good", "password=hunter2abc", private=True, release_id=rel)
    assert fb.comment == ("the DB_PASSWORD=[REDACTED:credential-assignment] fails, mail [REDACTED:email]")
    assert err.reason == "taxi.book 403 with [REDACTED:aws-access-key]" and "[REDACTED:" in priv.comment
    stored = raw_text(ws)
    assert not any(s in stored for s in SECRETS) and stored.count("[REDACTED:") == 5
    long = "x " * 1990 + "ok"  # at the limit and clean: kept whole, not cut
    assert record_feedback(ws, "s1", SKILL, "good", long).comment == long


def test_cli_feedback_and_the_harvest_read_redacted_comments(ws):
    run_cli(["feedback", "use", "--session", "s1", "--skill", SKILL, "-w", str(ws.root)], ok=None)
    proc = run_cli(["feedback", "add", "--session", "s1", "--skill", SKILL, "--outcome", "bad",
                    "--release", live_release(ws, SKILL), "--comment", f"fails with {AWS}", "-w", str(ws.root)])
    assert AWS not in proc.stdout and AWS not in raw_text(ws)
    listed = run_cli(["feedback", "list", "-w", str(ws.root)]).stdout
    assert "[REDACTED:aws-access-key]" in listed and AWS not in listed
    from skillforge.sessions.harvest import _events_by_session

    bad, _, _ = _events_by_session(ws)
    assert bad["s1"][SKILL] == "fails with [REDACTED:aws-access-key]"
    assert redact(bad["s1"][SKILL])[0] == bad["s1"][SKILL]  # a second redaction changes nothing


def _old_event(ws, seq: int, **fields) -> bytes:
    return (json.dumps({"ts": "2026-01-01T00:00:00.000Z", "kind": "feedback", "session_id": "s", "skill": SKILL,
                        "release_id": "r" * 40, "outcome": "bad", "seq": seq, **fields}, ensure_ascii=False)
            + "\n").encode()


def _route(query: str, reason: str = "") -> bytes:
    return (json.dumps({"ts": "2026-01-01T00:00:00.000Z", "event": "route", "query": query, "chosen": None,
                        "reason": reason}, ensure_ascii=False) + "\n").encode()


def seed(ws) -> dict[str, bytes]:
    """Lines as an older SkillForge wrote them: raw secrets, clean lines, a torn and a corrupt one."""
    runs = ws.runs_dir
    (runs / "events").mkdir(parents=True, exist_ok=True)
    (runs / "archive").mkdir(parents=True, exist_ok=True)
    files = {
        "router.jsonl": _route("weather in Paris") + _route(f"book a taxi, key {AWS}", "llm: DB_PASSWORD=hunter2abc")
        + b"{not json at all\n" + _route("call me on +44 20 7946 0958") + b'{"ts": "torn',
        "events/public.jsonl": _old_event(ws, 1, comment="fine") + _old_event(ws, 2, comment="it says password=hunter2abc")
        + b"garbage line\n",
        "events/private.jsonl": _old_event(ws, 3, comment="mail jane.doe@example.com", private=True),
    }
    for name, data in files.items():
        (runs / name).write_bytes(data)
    (runs / "archive" / "router-20260101T000000Z.jsonl.gz").write_bytes(
        gzip.compress(_route("clean") + _route(f"my key {AWS}"), mtime=0))
    return files


def test_runs_redact_dry_run_then_for_real(ws):
    files = seed(ws)
    rebuild(EventLog(ws))
    before = {p: p.read_bytes() for p in ws.runs_dir.rglob("*") if p.is_file()}
    dry = json.loads(run_cli(["runs", "redact", "--dry-run", "--json", "-w", str(ws.root)]).stdout)
    assert {p: p.read_bytes() for p in ws.runs_dir.rglob("*") if p.is_file()} == before  # nothing changed
    assert dry["dry_run"] and dry["changed_lines"] == 5 and dry["malformed_lines"] == 3
    assert dry["redactions"] == {"aws-access-key": 2, "credential-assignment": 2, "email": 1, "phone": 1}
    by_path = {f["path"]: f for f in dry["files"]}
    assert by_path["runs/router.jsonl"]["changed_lines"] == 2 and by_path["runs/router.jsonl"]["malformed_lines"] == 2
    assert by_path["runs/archive/router-20260101T000000Z.jsonl.gz"]["changed_lines"] == 1
    assert not any(s in json.dumps(dry) for s in SECRETS)
    text = run_cli(["runs", "redact", "--dry-run", "-w", str(ws.root)]).stdout
    assert "would redact 2 of 5 line(s)" in text and not any(s in text for s in SECRETS)

    mode = 0o640
    os.chmod(ws.router_log, mode)
    done = run_cli(["runs", "redact", "-w", str(ws.root)]).stdout
    assert "redacted: 5 line(s) in 4 file(s)" in done and not any(s in done for s in SECRETS)
    everything = b"".join(p.read_bytes() if p.suffix != ".gz" else gzip.decompress(p.read_bytes())
                          for p in ws.runs_dir.rglob("*") if p.is_file() and not p.name.endswith(".lock"))
    assert not any(s.encode() in everything for s in SECRETS)
    log = ws.router_log.read_bytes().splitlines(keepends=True)
    old = files["router.jsonl"].splitlines(keepends=True)
    assert len(log) == len(old) and log[0] == old[0] and log[2] == b"{not json at all\n" and log[-1] == b'{"ts": "torn'
    assert json.loads(log[1])["query"] == "book a taxi, key [REDACTED:aws-access-key]"
    assert (ws.router_log.stat().st_mode & 0o777) == mode
    assert not list(ws.runs_dir.rglob(".*.redact.tmp"))
    events = EventLog(ws).read_public()
    assert [e.comment for e in events.events] == ["fine", "it says password=[REDACTED:credential-assignment]"]
    assert events.skipped_lines == 1  # the garbage line is kept
    assert (ws.runs_dir / "events" / "effective.json").read_text() == render(rebuild(EventLog(ws))[0])
    again = run_cli(["runs", "redact", "-w", str(ws.root)]).stdout
    assert "nothing to redact" in again


def test_clean_workspace_says_nothing_to_redact(ws):
    proc = run_cli(["runs", "redact", "-w", str(ws.root)])
    assert "nothing to redact" in proc.stdout
    assert json.loads(run_cli(["runs", "redact", "--json", "-w", str(ws.root)]).stdout)["changed_lines"] == 0


def test_a_route_waiting_for_the_log_lock_is_not_lost(ws):
    seed(ws)
    held = os.open(ws.router_log, os.O_RDWR | os.O_APPEND)
    fcntl.flock(held, fcntl.LOCK_EX)  # an appender in the middle of its write
    result: dict[str, object] = {}
    worker = threading.Thread(target=lambda: result.update(r=redact_logs(ws)))
    worker.start()
    worker.join(0.5)
    assert worker.is_alive()  # waits for the appender
    os.write(held, b"\n")  # ends the torn line, as an appender would before its record
    os.write(held, _route(f"late {AWS}"))
    os.close(held)
    worker.join(30)
    late = threading.Thread(target=append_jsonl, args=(ws.router_log, {"event": "route", "query": "after"}))
    late.start()
    late.join(10)
    queries = [x.get("query") for x in read_jsonl(ws.router_log)]
    assert "late [REDACTED:aws-access-key]" in queries and queries[-1] == "after"


def test_a_feedback_waits_for_the_events_lock(ws):
    seed(ws)
    events = EventLog(ws)
    with events._locked():  # what `runs redact` holds while it rewrites the events files
        writer = threading.Thread(target=record_feedback, args=(ws, "s9", SKILL, "good", "ok"),
                                  kwargs={"release_id": live_release(ws, SKILL)})
        writer.start()
        writer.join(0.5)
        assert writer.is_alive()
    writer.join(30)
    redact_logs(ws)
    comments = [e.comment for e in EventLog(ws).read_public().events]
    assert comments[-1] == "ok" and len(comments) == 3


def test_a_torn_line_holding_a_secret_is_redacted_as_text_and_kept() -> None:
    """QA 35 M2: 'nothing to redact' while a torn line with a password stayed on disk."""
    from skillforge.runners.redact_logs import FileRedaction, redact_line

    report = FileRedaction("runs/router.jsonl")
    torn = b'{"ts": "2026-01-01", "query": "PGPASSWORD=hunter2Xk9pq2Lw7RtZ4m and ghp_' + b"A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    out = redact_line(torn, ("query",), report)
    assert b"hunter2Xk9pq2Lw7RtZ4m" not in out and b"ghp_A1b2" not in out and b"[REDACTED:" in out
    assert report.malformed == 1 and report.changed == 1 and out.startswith(b'{"ts": "2026-01-01", "query": "PGPASSWORD=')
    clean = FileRedaction("x")
    assert redact_line(b"{not json at all\n", ("query",), clean) == b"{not json at all\n" and clean.changed == 0
