"""Reading agent sessions (skillforge.sessions.sources): the three formats on hand-written
fixtures (tests/fixtures/sessions, ground truth in expected.json), and every kind of bad input."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO

from skillforge.errors import SourceError
from skillforge.sessions import read_sessions
from skillforge.sessions.sources import common as src  # the caps the readers use
from skillforge.state.sessions import SessionSource, Transcript

SESSIONS = FIXTURES / "sessions"
EXPECTED = json.loads((SESSIONS / "expected.json").read_text(encoding="utf-8"))
CLAUDE = SESSIONS / "claude-code" / "projects" / "-home-dev-shop"
CODEX = SESSIONS / "codex" / "sessions"


def read(source: str, path: Path, **kw: object) -> tuple[list[Transcript], list]:
    return read_sessions(source, path, **kw)  # type: ignore[arg-type]


def by_key(transcripts: list[Transcript]) -> dict[tuple[str, str], Transcript]:
    return {(str(Path(t.path).relative_to(REPO)), t.session_id): t for t in transcripts}


def all_transcripts() -> dict[tuple[str, str], Transcript]:
    out: dict[tuple[str, str], Transcript] = {}
    for source in SessionSource:
        out.update(by_key(read(source.value, SESSIONS / source.value)[0]))
    return out


def write(path: Path, lines: list[object] | bytes, newline_at_end: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(lines, bytes):
        path.write_bytes(lines)
    else:
        text = "\n".join(x if isinstance(x, str) else json.dumps(x, ensure_ascii=False) for x in lines)
        path.write_text(text + ("\n" if newline_at_end else ""), encoding="utf-8")
    return path


# A simple skill-load detector (the real one lives elsewhere): Skill tool, Read of a SKILL.md,
# a shell command that prints a SKILL.md, or an MCP `use_skill` call.
SKILL_PATH = re.compile(r"skills/([a-z0-9-]+)/SKILL\.md")


def skills_loaded(t: Transcript) -> list[str]:
    found: list[str] = []
    for m in t.messages:
        for c in m.tool_calls:
            a = c.arguments
            names: list[str] = []
            if c.name == "Skill":
                names = [str(a.get("skill"))]
            elif c.name.endswith("use_skill"):
                names = [str(a.get("name"))]
            elif c.name == "Read":
                names = SKILL_PATH.findall(str(a.get("file_path", "")))
            elif c.name in ("shell", "local_shell"):
                cmd = a.get("command")
                names = SKILL_PATH.findall(" ".join(cmd) if isinstance(cmd, list) else str(cmd))
            found += [n for n in names if n not in found]
    return found


# ---- the fixtures and their ground truth ------------------------------------------------------
def test_fixture_set_is_large_and_mixed() -> None:
    counts = {s.value: sum(e["source"] == s.value for e in EXPECTED) for s in SessionSource}
    assert len(EXPECTED) >= 22 and min(counts.values()) >= 7, counts
    kinds = {s["kind"] for e in EXPECTED for s in e["signals"]}
    assert kinds == {"tool_error", "correction", "negative_followup"}
    assert any(not e["skills_loaded"] for e in EXPECTED)
    assert any(len(e["skills_loaded"]) == 2 for e in EXPECTED)
    assert any(e["duplicate_of"] for e in EXPECTED)
    assert any("subagents" in e["path"] for e in EXPECTED)


def test_every_expected_transcript_is_read_and_nothing_else() -> None:
    got = all_transcripts()
    want = {(e["path"], e["session_id"]) for e in EXPECTED}
    assert set(got) == want


def test_parser_sees_exactly_the_expected_skill_loads() -> None:
    got = all_transcripts()
    for e in EXPECTED:
        assert skills_loaded(got[(e["path"], e["session_id"])]) == e["skills_loaded"], e["path"]


def test_signal_requests_are_user_messages_of_their_transcript() -> None:
    got = all_transcripts()
    for e in EXPECTED:
        users = [m.text for m in got[(e["path"], e["session_id"])].messages if m.role == "user"]
        for s in e["signals"]:
            assert s["request"] in users, (e["path"], s)
            assert s["skill"] in e["skills_loaded"]


def test_expected_secrets_are_in_their_files_and_reach_the_messages() -> None:
    got = all_transcripts()
    for e in EXPECTED:
        raw = (REPO / e["path"]).read_text(encoding="utf-8")
        t = got[(e["path"], e["session_id"])]
        seen = " ".join([m.text for m in t.messages] + [json.dumps(c.arguments, ensure_ascii=False)
                                                        for m in t.messages for c in m.tool_calls])
        for secret in e["secrets"]:
            assert secret.splitlines()[0] in raw and secret in seen, (e["path"], secret)


def test_duplicates_point_at_known_sessions() -> None:
    ids = {e["session_id"] for e in EXPECTED}
    got = all_transcripts()
    for e in EXPECTED:
        if e["duplicate_of"]:
            assert e["duplicate_of"] in ids and e["duplicate_of"] != e["session_id"]
            mine = next(m.text for m in got[(e["path"], e["session_id"])].messages if m.role == "user")
            other = next(t for (p, sid), t in got.items() if sid == e["duplicate_of"] and "subagents" not in p)
            theirs = next(m.text for m in other.messages if m.role == "user")
            norm = lambda s: re.sub(r"[^\w ]", "", s.lower())
            assert norm(mine) == norm(theirs)


def test_only_the_planted_malformed_lines_are_problems() -> None:
    problems = [p for s in SessionSource for p in read(s.value, SESSIONS / s.value)[1]]
    got = sorted((Path(p.path).name[:20], p.line, p.reason.split(" (")[0]) for p in problems)
    assert got == sorted([
        ("2026-11-29.jsonl", 6, "not valid JSON"),
        ("5c2e9f81-6a4d-4b0e-b", 6, "not valid JSON"),
        ("5c2e9f81-6a4d-4b0e-b", 7, "not valid JSON"),
        ("7e9b1d24-3c5a-4f87-9", 12, "torn last line"),
        ("rollout-2026-12-01T0", 12, "not valid JSON"),
        ("rollout-2026-12-01T0", 18, "torn last line"),
    ])


def test_indexes_count_kept_messages_and_tool_results_name_their_tool() -> None:
    for t in all_transcripts().values():
        assert [m.index for m in t.messages] == list(range(len(t.messages)))
        calls = {c.call_id: c.name for m in t.messages for c in m.tool_calls}
        for m in t.messages:
            if m.role == "tool":
                assert m.tool_call_id in calls and m.tool_name == calls[m.tool_call_id], t.path
            else:
                assert m.tool_call_id is None and not m.is_error
            if m.role != "assistant":
                assert not m.tool_calls


def test_reading_is_read_only() -> None:
    def snap() -> dict[str, tuple[int, str]]:
        return {str(p): (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
                for p in sorted(SESSIONS.rglob("*")) if p.is_file()}
    before = snap()
    all_transcripts()
    assert snap() == before


# ---- Claude Code ------------------------------------------------------------------------------
def test_claude_split_response_is_merged_and_noise_skipped() -> None:
    (t,), _ = read("claude-code", CLAUDE / "3f6b2a10-8c4e-4d21-9a77-5b1e0c9d2f41.jsonl")
    m = t.messages
    assert t.session_id == "3f6b2a10-8c4e-4d21-9a77-5b1e0c9d2f41" and t.cwd == "/home/dev/shop"
    assert (m[0].role, m[0].text) == ("user", "Where is my package SF1234567890123?")
    assert m[1].role == "assistant" and m[1].text == "I'll load the package-tracking skill first."
    assert [c.name for c in m[1].tool_calls] == ["Skill"] and m[1].tool_calls[0].arguments == {"skill": "package-tracking"}
    assert (m[2].role, m[2].tool_name, m[2].text) == ("tool", "Skill", "Launching skill: package-tracking")
    assert m[3].tool_calls[0].name == "mcp__shop__detect_carrier"  # the isMeta skill body was skipped
    users = [x.text for x in m if x.role == "user"]
    assert users == ["Where is my package SF1234567890123?",
                     "that's wrong, it was delivered to the locker, not the front desk"]
    assert not any("signature" in x.text or "parcel status" in x.text for x in m)  # thinking skipped


def test_claude_interrupt_and_reminder_are_not_requests() -> None:
    (t,), _ = read("claude-code", CLAUDE / "2a6d9c3f-7e1b-4a05-9d84-f3c0b8e2a157.jsonl")
    assert [x.text for x in t.messages if x.role == "user"] == ["where is my package SF1234567890123"]
    err = [x for x in t.messages if x.is_error]
    assert len(err) == 1 and err[0].tool_name == "mcp__shop__track_package"


def test_claude_subagent_is_its_own_transcript_under_the_parent_session_id() -> None:
    ts, _ = read("claude-code", CLAUDE)
    parent = "d1a7c3e5-9f2b-4c68-a014-8e6b2f7d3c95"
    mine = [t for t in ts if t.session_id == parent]
    assert len(mine) == 2
    sub = next(t for t in mine if "subagents" in t.path)
    assert sub.path.endswith("subagents/agent-a91c3f2.jsonl")
    assert sub.messages[0].text.startswith("Summarise this week's news")


def test_claude_meta_lines_and_text_with_reminders(tmp_path: Path) -> None:
    base = {"sessionId": "s-1", "cwd": "/w", "timestamp": "2026-11-21T10:00:00.000Z"}
    f = write(tmp_path / "x.jsonl", [
        {**base, "type": "user", "isMeta": True, "message": {"role": "user", "content": "skill body"}},
        {**base, "type": "user", "message": {"role": "user", "content":
            "Caveat: The messages below were generated by the user while running local commands. DO NOT respond."}},
        {**base, "type": "user", "message": {"role": "user", "content": [
            {"type": "text", "text": "book a taxi<system-reminder>todo list empty</system-reminder>"}]}},
        {**base, "type": "assistant", "message": {"id": "m1", "role": "assistant", "model": "<synthetic>",
                                                  "content": [{"type": "text", "text": "No response requested."}]}},
        {**base, "type": "assistant", "message": {"id": "m2", "role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/w/skills/taxi-hailing/SKILL.md"}},
            {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "ls"}}]}},
        {**base, "type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
            {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "image", "source": {"type": "base64"}}],
             "is_error": True}]}},
        {**base, "type": "custom-future-type"},
    ])
    (t,), problems = read("claude-code", f)
    assert [(m.role, m.text) for m in t.messages][:2] == [("user", "book a taxi"), ("assistant", "")]
    assert [c.name for c in t.messages[1].tool_calls] == ["Read", "Bash"]
    r2, r1 = t.messages[2], t.messages[3]
    assert (r2.tool_name, r2.text, r2.is_error) == ("Bash", "a\nb", False)
    assert (r1.tool_name, r1.text, r1.is_error) == ("Read", '{"type":"image","source":{"type":"base64"}}', True)
    assert [(p.line, p.reason) for p in problems] == [(7, "unknown line type 'custom-future-type', skipped")]


def test_claude_session_id_falls_back_to_file_stem(tmp_path: Path) -> None:
    f = write(tmp_path / "0a1b.jsonl", [{"type": "user", "message": {"role": "user", "content": "hi"}}])
    (t,), _ = read("claude-code", f)
    assert t.session_id == "0a1b" and t.started is None


# ---- Codex ------------------------------------------------------------------------------------
def test_codex_context_messages_skipped_and_exit_codes_make_errors() -> None:
    ts, _ = read("codex", CODEX / "2026" / "11" / "28")
    t = next(t for t in ts if t.session_id == "019ab7e1-2c3d-7a45-9b56-c7d8e9f0a1b2")
    assert t.cwd == "/home/dev/shop" and t.started == "2026-11-28T20:05:47.090Z"
    assert [m.text for m in t.messages if m.role == "user"] == ["Book a table for 4 at Nopa tomorrow 7:30pm",
                                                                 "yes, 7:30 please"]
    shell = [m for m in t.messages if m.role == "tool" and m.tool_name == "shell"]
    assert [m.is_error for m in shell] == [False, True]
    assert shell[1].text.startswith("Traceback") and "metadata" not in shell[1].text
    call = t.messages[1].tool_calls[0]
    assert call.arguments["command"] == ["bash", "-lc", "sed -n 1,200p skills/restaurant-booking/SKILL.md"]


def test_codex_local_shell_call_and_old_layout() -> None:
    (t,), _ = read("codex", next(CODEX.rglob("*019ac5a2-6b7c*.jsonl")))
    c = t.messages[1].tool_calls[0]
    assert c.name == "local_shell" and c.arguments["command"][-1] == "cat skills/git-commit-message/SKILL.md"
    (old,), problems = read("codex", next(CODEX.rglob("rollout-2026-11-25T12-00-07-*.jsonl")))
    assert not problems and old.session_id == "4d3c2b1a-0f9e-4d8c-b7a6-958473625140"
    assert old.started == "2026-11-25T12:00:07.318Z" and old.messages[0].timestamp is None
    assert [m.role for m in old.messages] == ["user", "assistant", "tool", "assistant", "tool", "assistant", "user", "assistant"]


@pytest.mark.parametrize(("output", "text", "error"), [
    ("plain text", "plain text", False),
    ('{"output":"boom","metadata":{"exit_code":1,"duration_seconds":0.2}}', "boom", True),
    ('{"output":"ok","metadata":{"exit_code":0}}', "ok", False),
    ("Exit code: 127\nWall time: 0.1 seconds\nOutput:\nbash: foo: command not found", None, True),
    ("Wall time: 0.5 seconds\nProcess exited with code 3\nOutput:\n", None, True),
    ("Chunk ID: 9f\nWall time: 0.5 seconds\nProcess exited with code 0\nOutput:\nfine", None, False),
    ({"content": "rate limited", "success": False}, "rate limited", True),
    ([{"type": "input_text", "text": "a"}, {"type": "input_image", "image_url": "data:x"}],
     'a\n{"type":"input_image","image_url":"data:x"}', False),
])
def test_codex_tool_outputs(tmp_path: Path, output: object, text: str | None, error: bool) -> None:
    f = write(tmp_path / "rollout-2026-11-29T10-00-00-019a0000-0000-7000-8000-000000000001.jsonl", [
        {"timestamp": "2026-11-29T10:00:01Z", "type": "response_item", "payload": {
            "type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": "*** Begin Patch"}},
        {"timestamp": "2026-11-29T10:00:02Z", "type": "response_item", "payload": {
            "type": "function_call_output", "call_id": "c1", "output": output}},
    ])
    (t,), problems = read("codex", f)
    assert not problems
    assert t.session_id == "019a0000-0000-7000-8000-000000000001"  # from the file name: no session_meta
    assert t.messages[0].tool_calls[0].arguments == {"input": "*** Begin Patch"}
    r = t.messages[1]
    assert (r.tool_name, r.is_error) == ("apply_patch", error)
    assert r.text == (output if text is None else text)


def test_codex_unknown_types_are_problems(tmp_path: Path) -> None:
    f = write(tmp_path / "rollout-x.jsonl", [
        {"timestamp": "t", "type": "session_meta", "payload": {"id": "s9", "timestamp": "2026-11-29T10:00:00Z"}},
        {"timestamp": "t", "type": "mystery", "payload": {}},
        {"timestamp": "t", "type": "response_item", "payload": {"type": "hologram"}},
        {"timestamp": "t", "type": "response_item", "payload": {"type": "message", "role": "user",
                                                                "content": [{"type": "input_text", "text": "hi"}]}},
        {"timestamp": "t", "type": "event_msg", "payload": {"type": "token_count"}},
    ])
    (t,), problems = read("codex", f)
    assert t.session_id == "s9" and [m.text for m in t.messages] == ["hi"]
    assert [p.line for p in problems] == [2, 3]


# ---- generic JSONL ----------------------------------------------------------------------------
def test_jsonl_several_sessions_per_file_with_meta() -> None:
    ts, _ = read("jsonl", SESSIONS / "jsonl" / "support-bot" / "2026-11-23.jsonl")
    assert [t.session_id for t in ts] == ["sb-2026-11-23-0001", "sb-2026-11-23-0002", "sb-2026-11-23-0003"]
    assert ts[0].started == "2026-11-23T08:00:00+00:00" and ts[0].cwd == "/srv/support-bot"
    assert ts[1].started == "2026-11-23T09:10:04+00:00"  # meta without a start: the first message's time
    err = ts[0].messages[4]
    assert (err.role, err.tool_name, err.is_error) == ("tool", "logistics.track_package", True)


def test_jsonl_content_parts_names_and_roles(tmp_path: Path) -> None:
    f = write(tmp_path / "run-7.jsonl", [
        {"role": "system", "content": "be nice"},
        {"role": "user", "content": [{"type": "text", "text": "part one"}, {"type": "text", "text": "part two"}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "news.search", "arguments": "{\"q\": \"acme\"}"}},
            {"id": "c2", "type": "function", "function": {"name": "news.get_article", "arguments": "not json"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "[]"},
        {"role": "tool", "tool_call_id": "c2", "name": "news.get_article", "content": {"title": "x"}, "is_error": True},
        {"role": "critic", "content": "?"},
    ])
    (t,), problems = read("jsonl", f)
    assert t.session_id == "run-7"  # no session_id: the file's stem
    assert t.messages[0].text == "part one\npart two"
    assert [c.arguments for c in t.messages[1].tool_calls] == [{"q": "acme"}, {"input": "not json"}]
    assert (t.messages[2].tool_name, t.messages[2].text) == ("news.search", "[]")
    assert (t.messages[3].text, t.messages[3].is_error) == ('{"title":"x"}', True)
    assert [(p.line, p.reason) for p in problems] == [(6, "unknown role 'critic', skipped")]


# ---- bad input --------------------------------------------------------------------------------
@pytest.mark.parametrize("source", [s.value for s in SessionSource])
def test_garbage_never_raises(tmp_path: Path, source: str) -> None:
    good = {"session_id": "g", "role": "user", "content": "hello", "type": "user",
            "message": {"role": "user", "content": "hello"}, "timestamp": "2026-11-25T10:00:00Z",
            "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]}}
    if source == "codex":
        good["type"] = "response_item"
    f = write(tmp_path / "bad.jsonl", b"\n".join([
        b"not json", b"[1, 2]", b"42", b"null", b'"a string"', b"\xff\xfe\x00binary\x80",
        b"{" * 200_000, json.dumps(good).encode(), b'{"cut": tru',
    ]))
    ts, problems = read(source, f)
    assert len(ts) == 1 and ts[0].messages[0].text == "hello"
    reasons = [(p.line, p.reason.split(" (")[0]) for p in problems]
    assert reasons == [(1, "not valid JSON"), (2, "not a JSON object"), (3, "not a JSON object"),
                       (4, "not a JSON object"), (5, "not a JSON object"), (6, "not UTF-8"),
                       (7, "not valid JSON"), (9, "torn last line")]


def test_empty_and_blank_files(tmp_path: Path) -> None:
    write(tmp_path / "a" / "empty.jsonl", b"")
    write(tmp_path / "a" / "blank.jsonl", b"\n\n  \n")
    ts, problems = read("jsonl", tmp_path / "a")
    assert ts == []
    assert sorted((Path(p.path).name, p.reason) for p in problems) == [("blank.jsonl", "no messages"),
                                                                      ("empty.jsonl", "empty file")]


def test_unknown_source_and_missing_path(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="claude-code, codex, jsonl"):
        read("cursor", tmp_path)
    with pytest.raises(SourceError, match="no such file"):
        read("codex", tmp_path / "nope")
    assert read(SessionSource.JSONL, tmp_path) == ([], [])  # an empty folder is fine


def test_caps_truncate_with_a_problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = write(tmp_path / "s.jsonl", [{"session_id": "s", "role": "user", "content": "x" * 50},
                                     {"session_id": "s", "role": "assistant", "content": "ok"}])
    monkeypatch.setattr(src, "MAX_TEXT_CHARS", 10)
    (t,), problems = read("jsonl", f)
    assert t.messages[0].text == "x" * 10 and problems[0].line == 1 and "truncated" in problems[0].reason
    monkeypatch.setattr(src, "MAX_TEXT_CHARS", 100_000)
    monkeypatch.setattr(src, "MAX_FILE_BYTES", len(f.read_bytes().splitlines(keepends=True)[0]) + 5)
    (t,), problems = read("jsonl", f)
    assert len(t.messages) == 1 and problems[0].line == 2 and "not read" in problems[0].reason


# ---- folders and since ------------------------------------------------------------------------
def test_folder_walk_is_recursive_sorted_and_stays_inside(tmp_path: Path) -> None:
    root = tmp_path / "root"
    for name in ("b/2.jsonl", "a/1.jsonl", "c.jsonl"):
        write(root / name, [{"session_id": name, "role": "user", "content": "hi"}])
    write(root / "notes.txt", [{"session_id": "txt", "role": "user", "content": "hi"}])
    outside = write(tmp_path / "outside.jsonl", [{"session_id": "out", "role": "user", "content": "hi"}])
    (root / "link.jsonl").symlink_to(outside)
    (root / "inner.jsonl").symlink_to(root / "c.jsonl")
    (root / "dirlink").symlink_to(tmp_path, target_is_directory=True)
    ts, problems = read("jsonl", root)
    assert [t.session_id for t in ts] == ["a/1.jsonl", "b/2.jsonl", "c.jsonl", "c.jsonl"]
    assert [Path(p.path).name for p in problems] == ["link.jsonl"]


def test_since_uses_start_time_then_mtime(tmp_path: Path) -> None:
    ts, _ = read("codex", CODEX, since=datetime(2026, 11, 30, tzinfo=UTC))
    assert sorted(t.started[:10] for t in ts) == ["2026-11-30", "2026-11-30", "2026-12-01", "2026-12-02"]
    naive, _ = read("codex", CODEX, since=datetime(2026, 11, 30))
    assert len(naive) == 4
    f = write(tmp_path / "n.jsonl", [{"session_id": "n", "role": "user", "content": "no time"}])
    os.utime(f, (datetime(2026, 11, 21, tzinfo=UTC).timestamp(),) * 2)
    assert read("jsonl", f, since=datetime(2026, 11, 22, tzinfo=UTC))[0] == []
    assert len(read("jsonl", f, since=datetime(2026, 11, 20, tzinfo=UTC))[0]) == 1


def test_import_is_light() -> None:
    code = ("import sys, skillforge.sessions; "
            "print([m for m in ('langchain', 'langchain_core', 'langgraph', 'openai') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                         env={**os.environ, "PYTHONPATH": str(REPO)}, check=True)
    assert out.stdout.strip() == "[]"


def _mutations(obj: object, depth: int = 0) -> list[object]:
    """`obj` with one value (at any key or index, three levels deep) replaced by a value of a wrong type."""
    out: list[object] = []
    if depth > 3:
        return out
    items = list(obj.items()) if isinstance(obj, dict) else list(enumerate(obj)) if isinstance(obj, list) else []
    for k, v in items:
        for wrong in (None, 7, [], {}, "s", [None], {"type": None}):
            copy = json.loads(json.dumps(obj))
            copy[k] = wrong
            out.append(copy)
        for inner in _mutations(v, depth + 1):
            copy = json.loads(json.dumps(obj))
            copy[k] = inner
            out.append(copy)
    return out


@pytest.mark.parametrize("source", [s.value for s in SessionSource])
def test_wrong_types_anywhere_never_raise(tmp_path: Path, source: str) -> None:
    files = sorted((SESSIONS / source).rglob("*.jsonl"))
    lines = [json.loads(x) for f in files[:2] for x in f.read_text(encoding="utf-8").splitlines()
             if x.strip().startswith("{") and x.strip().endswith("}")]
    variants = [m for line in lines for m in _mutations(line)]
    assert len(variants) > 500
    f = write(tmp_path / "rollout-mutant.jsonl", variants)
    ts, problems = read(source, f)
    assert problems  # the wrong types were reported
    for t in ts:
        assert [m.index for m in t.messages] == list(range(len(t.messages)))


@pytest.mark.parametrize("encoding, bom", [("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff"),
                                           ("utf-32-le", b"\xff\xfe\x00\x00"), ("utf-8", b"\xef\xbb\xbf")])
def test_a_transcript_with_a_byte_order_mark_is_read_in_its_encoding(tmp_path: Path, encoding: str, bom: bytes) -> None:
    """QA 32 M2: a UTF-16 file (PowerShell's `>`) was 8 problems, "not UTF-8" then "not valid JSON"."""
    rows = [{"session_id": "w", "role": "user", "content": "订一张去上海的票, café"},
            {"session_id": "w", "role": "assistant", "content": "好的"}]
    f = write(tmp_path / "wide.jsonl", bom + "\r\n".join(json.dumps(r, ensure_ascii=False) for r in rows).encode(encoding))
    (t,), problems = read("jsonl", f)
    assert problems == [] and [m.text for m in t.messages] == ["订一张去上海的票, café", "好的"]
