"""QA 27 M1: session files are read as the golden and route-case readers read lines: broken at LF,
CRLF and a lone CR (a CR-only file is many lines, not one "torn last line"), never at U+2028, U+0085
or the other characters str.splitlines() breaks at, which stay inside a JSON string."""

from __future__ import annotations

import io
import json
import re

import pytest
from test_qa22_cases_dedupe import _session

from skillforge.sessions.harvest import harvest
from skillforge.sessions.sources import detect_source, read_sessions
from skillforge.sessions.sources.common import raw_lines
from skillforge.state.sessions import SessionSource
from skillforge.testing.evolve_world import new_workspace

QUERIES = ["Where is parcel LS0000000001?", "Where is parcel LS0000000002?\u2028next line",
           "Where is parcel LS0000000003? plain"]


def _text() -> str:
    return "".join(json.dumps(x, ensure_ascii=False) + "\n" for i, q in enumerate(QUERIES)
                   for x in _session(f"ls{i}", q))


def _reference(data: bytes) -> list[bytes]:
    out, i = [], 0
    for m in re.finditer(rb"\r\n|\r|\n", data):
        out.append(data[i:m.end()])
        i = m.end()
    return [*out, data[i:]] if i < len(data) else out


@pytest.mark.parametrize("data", [b"", b"a", b"a\r", b"a\r\n", b"a\r\rb", b"a\n\rb\r\n\r\nc", b"\r\n\r\n",
                                  "x\u2028y\u0085z\rw".encode(), b"{\"a\": 1}\r{\"b\": 2}"])
@pytest.mark.parametrize("chunk", [1, 2, 3, 64])
def test_raw_lines_break_at_lf_crlf_and_cr_only(data, chunk):
    assert list(raw_lines(io.BytesIO(data), None, chunk)) == _reference(data)
    for limit in range(len(data) + 2):  # a cap cuts the bytes read, never splits a CRLF into two breaks wrongly
        assert list(raw_lines(io.BytesIO(data), limit, chunk)) == _reference(data[:limit])


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("bom", [False, True])
def test_every_line_ending_reads_the_same_sessions(tmp_path, ending, bom):
    path = tmp_path / "s.jsonl"
    path.write_bytes((("\ufeff" if bom else "") + _text().replace("\n", ending)).encode("utf-8"))
    transcripts, problems = read_sessions("jsonl", path)
    assert problems == [] and len(transcripts) == 3
    assert [t.messages[0].text for t in transcripts] == QUERIES  # U+2028 stays inside the query
    assert detect_source(path) is SessionSource.JSONL


def test_a_cr_only_file_is_harvested_and_a_torn_last_line_is_still_named(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    path = tmp_path / "cr.jsonl"
    path.write_bytes(_text().replace("\n", "\r").encode("utf-8"))
    report = harvest(ws, "jsonl", path, embed=None, dry_run=True)
    assert len(report.staged) == 3 and report.problems == []
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(_text().replace("\n", "\r").encode("utf-8") + b'{"session_id": "x", "ro')
    _, problems = read_sessions("jsonl", torn)
    assert [(p.line, p.reason) for p in problems] == [(22, "torn last line (no newline, not valid JSON)")]
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"session_id": "x", "ro\r' + _text().encode("utf-8"))
    _, problems = read_sessions("jsonl", bad)
    assert [(p.line, p.reason) for p in problems] == [(1, "not valid JSON")]
