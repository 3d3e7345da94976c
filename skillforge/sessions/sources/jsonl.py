"""Generic JSONL transcripts: one message a line, OpenAI chat style, `session_id` per line
(docs/sessions.md)."""

from __future__ import annotations

from pathlib import Path

from skillforge.sessions.sources.common import (
    Session,
    call_arguments,
    content_text,
    json_lines,
    str_or_none,
)
from skillforge.state.sessions import (
    SessionSource,
    SourceProblem,
    ToolCallRec,
    Transcript,
)


def read_jsonl(path: Path, problems: list[SourceProblem]) -> list[Transcript]:
    """The transcripts of a generic JSONL file, one per `session_id` (the file name when none)."""
    sessions: dict[str, Session] = {}
    for n, rec in json_lines(path, problems):
        sid = str_or_none(rec.get("session_id")) or path.stem
        s = sessions.setdefault(sid, Session(session_id=sid))
        role = rec.get("role")
        if role is None and isinstance(rec.get("meta"), dict):
            meta = rec["meta"]
            s.started = str_or_none(meta.get("started")) or str_or_none(meta.get("timestamp")) or s.started
            s.see(None, meta.get("cwd"))
            continue
        ts = s.see(rec.get("timestamp"), rec.get("cwd"))
        text = content_text(rec.get("content"), ("text", "input_text", "output_text"), other_as_json=role == "tool")
        if role == "user":
            if text.strip():
                s.user(n, text.strip(), ts)
        elif role == "assistant":
            calls = []
            raw_calls = rec.get("tool_calls") or []
            for c in raw_calls if isinstance(raw_calls, list) else []:
                if not isinstance(c, dict) or not isinstance(c.get("function"), dict):
                    problems.append(SourceProblem(path=str(path), line=n, reason="tool call without a function, skipped"))
                    continue
                fn = c["function"]
                calls.append(ToolCallRec(call_id=str(c.get("id") or ""), name=str(fn.get("name") or ""),
                                         arguments=call_arguments(fn.get("arguments"))))
            s.assistant(n, text.strip(), calls, ts)
        elif role == "tool":
            s.tool(n, str_or_none(rec.get("tool_call_id")), text, rec.get("is_error") is True, ts, str_or_none(rec.get("name")))
        elif role not in ("system", "developer"):
            problems.append(SourceProblem(path=str(path), line=n, reason=f"unknown role {role!r}, skipped"))
    return [t for s in sessions.values() if (t := s.build(SessionSource.JSONL, path, problems, path.stem))]
