"""Codex CLI transcripts (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl, and the older layout;
docs/sessions.md)."""

from __future__ import annotations

import re
from pathlib import Path

from skillforge.sessions.sources.common import (
    Session,
    call_arguments,
    compact,
    content_text,
    json_lines,
    loads_capped,
    str_or_none,
    type_of,
)
from skillforge.state.sessions import (
    SessionSource,
    SourceProblem,
    ToolCallRec,
    Transcript,
)

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_CODEX_CONTEXT = ("<environment_context", "<user_instructions", "<codex_internal_context",
                  "# AGENTS.md instructions", "<INSTRUCTIONS>", "<permissions instructions>")
_CODEX_SKIPPED_LINES = {"event_msg", "turn_context", "compacted"}
_CODEX_SKIPPED_ITEMS = {"reasoning", "web_search_call", "ghost_snapshot", "compaction", "compaction_summary", "other"}
_EXIT_TEXT = re.compile(r"\A(?:Chunk ID: \w+\n)?(?:Exit code: (-?\d+)|Wall time: [0-9.]+ seconds\n"
                        r"Process (?:exited with code|completed with exit code) (-?\d+))")


def _codex_output(output: object) -> tuple[str, bool]:
    """(text, is_error) of a function_call_output's `output`: a string (maybe the JSON
    {"output", "metadata": {"exit_code"}}, maybe "Exit code: N ..."), a list of content items, or
    {"content", "success"}."""
    if isinstance(output, dict):
        return content_text(output.get("content"), ("input_text", "text")), output.get("success") is False
    if isinstance(output, list):
        return content_text(output, ("input_text", "output_text", "text"), other_as_json=True), False
    if not isinstance(output, str):
        return ("" if output is None else compact(output)), False
    try:
        parsed = loads_capped(output) if output.lstrip().startswith("{") else None
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and "output" in parsed:
        meta = parsed.get("metadata") if isinstance(parsed.get("metadata"), dict) else {}
        code = meta.get("exit_code", parsed.get("exit_code"))
        failed = (isinstance(code, int) and not isinstance(code, bool) and code != 0) or parsed.get("is_error") is True
        return content_text(parsed["output"], other_as_json=True), failed
    m = _EXIT_TEXT.match(output)
    return output, bool(m and int(m.group(1) or m.group(2)) != 0)


def _codex_item(s: Session, n: int, item: dict, ts: str | None) -> str | None:
    """Add one response item to the session; returns a problem reason, or None."""
    kind = type_of(item.get("type"))
    if kind == "message":
        role = item.get("role")
        text = content_text(item.get("content"), ("input_text", "output_text", "text")).strip()
        if role == "user" and text and not text.startswith(_CODEX_CONTEXT):
            s.user(n, text, ts)
        elif role == "assistant":
            s.assistant(n, text, [], ts)
        elif role not in ("user", "developer", "system", "assistant"):
            return f"message with unknown role {role!r}, skipped"
    elif kind in ("function_call", "custom_tool_call"):
        args = item.get("arguments") if kind == "function_call" else item.get("input")
        call = ToolCallRec(call_id=str(item.get("call_id") or item.get("id") or ""), name=str(item.get("name") or ""),
                           arguments=call_arguments(args))
        s.assistant(n, "", [call], ts, attach=True)
    elif kind == "local_shell_call":
        action = item.get("action") if isinstance(item.get("action"), dict) else {}
        args = {k: v for k, v in action.items() if k != "type" and v is not None}
        call = ToolCallRec(call_id=str(item.get("call_id") or item.get("id") or ""), name="local_shell", arguments=args)
        s.assistant(n, "", [call], ts, attach=True)
    elif kind in ("function_call_output", "custom_tool_call_output"):
        text, failed = _codex_output(item.get("output"))
        s.tool(n, str_or_none(item.get("call_id")), text, failed, ts)
    elif kind not in _CODEX_SKIPPED_ITEMS:
        return f"unknown item type {item.get('type')!r}, skipped"
    return None


def read_codex(path: Path, problems: list[SourceProblem]) -> list[Transcript]:
    """The one transcript of a Codex CLI rollout file (either layout)."""
    s = Session()
    first = True
    for n, rec in json_lines(path, problems):
        kind = type_of(rec.get("type"))
        payload = rec.get("payload") if isinstance(rec.get("payload"), dict) else {}
        reason = None
        if kind == "session_meta":
            s.session_id = s.session_id or str_or_none(payload.get("id"))
            s.started = s.started or str_or_none(payload.get("timestamp"))
            s.see(rec.get("timestamp"), payload.get("cwd"))
        elif kind == "response_item":
            reason = _codex_item(s, n, payload, s.see(rec.get("timestamp") or payload.get("timestamp")))
        elif kind in _CODEX_SKIPPED_LINES or rec.get("record_type") == "state":
            s.see(rec.get("timestamp"), payload.get("cwd"))
        elif kind is None and first and "id" in rec and "timestamp" in rec:
            # The older layout: a first line {id, timestamp, instructions}, then bare items.
            s.session_id, s.started = str_or_none(rec.get("id")), str_or_none(rec.get("timestamp"))
        elif isinstance(kind, str) and ("role" in rec or "call_id" in rec or kind in _CODEX_SKIPPED_ITEMS):
            reason = _codex_item(s, n, rec, s.see(rec.get("timestamp")))
        else:
            reason = f"unknown line type {rec.get('type')!r}, skipped"
        if reason:
            problems.append(SourceProblem(path=str(path), line=n, reason=reason))
        first = False
    ids = _UUID.findall(path.stem)
    t = s.build(SessionSource.CODEX, path, problems, ids[-1] if ids else path.stem)
    return [t] if t else []
