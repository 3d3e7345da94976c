"""What the three session readers share: the caps, a transcript being assembled (`Session`), JSON
lines streamed with a byte cap (`json_lines`), and content / argument normalisers. Nothing here
raises on bad content: it becomes a `SourceProblem`."""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator
from typing import BinaryIO
from dataclasses import dataclass, field
from pathlib import Path

from skillforge.state.sessions import (
    Message,
    SessionSource,
    SourceProblem,
    ToolCallRec,
    Transcript,
)

MAX_FILE_BYTES = 50 * 1024 * 1024
"""Bytes read from one file; the rest is skipped with a problem."""
MAX_TEXT_CHARS = 100_000
"""Characters kept of one message's text; the rest is cut with a problem."""
MAX_JSON_DEPTH = 64
"""Arrays and objects nested deeper than this in a line (or in a JSON string inside it) are not
read: everything downstream (redaction, dumps, validation) walks values recursively."""
DEEP = f"JSON nested more than {MAX_JSON_DEPTH} levels deep, skipped"


@dataclass
class Draft:
    """A message being assembled (Claude Code splits one API response over several lines)."""

    role: str
    line: int
    text: str = ""
    tool_calls: list[ToolCallRec] = field(default_factory=list)
    tool_call_id: str | None = None
    tool_name: str | None = None
    is_error: bool = False
    timestamp: str | None = None
    msg_id: str | None = None


@dataclass
class Session:
    """One transcript being read."""

    session_id: str | None = None
    started: str | None = None
    cwd: str | None = None
    drafts: list[Draft] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)
    """call id -> tool name, to name tool results."""

    def see(self, ts: object, cwd: object = None) -> str | None:
        if isinstance(cwd, str) and cwd and not self.cwd:
            self.cwd = cwd
        if isinstance(ts, str) and ts:
            self.started = self.started or ts
            return ts
        return None

    def user(self, line: int, text: str, ts: str | None) -> None:
        self.drafts.append(Draft("user", line, text=text, timestamp=ts))

    def assistant(self, line: int, text: str, calls: list[ToolCallRec], ts: str | None,
                  msg_id: str | None = None, attach: bool = False) -> None:
        """A new assistant message, or more of the last one: same `msg_id`, or `attach` (Codex tool
        calls that follow the assistant's text)."""
        for c in calls:
            self.names[c.call_id] = c.name
        last = self.drafts[-1] if self.drafts else None
        if last is not None and last.role == "assistant" and (attach or (msg_id and last.msg_id == msg_id)):
            last.text = "\n".join(t for t in (last.text, text) if t)
            last.tool_calls.extend(calls)
            return
        if text or calls:
            self.drafts.append(Draft("assistant", line, text=text, tool_calls=list(calls), timestamp=ts,
                                      msg_id=msg_id))

    def tool(self, line: int, call_id: str | None, text: str, is_error: bool, ts: str | None,
             name: str | None = None) -> None:
        name = name or (self.names.get(call_id) if call_id else None)
        self.drafts.append(Draft("tool", line, text=text, tool_call_id=call_id, tool_name=name,
                                  is_error=is_error, timestamp=ts))

    def build(self, source: SessionSource, path: Path, problems: list[SourceProblem],
              fallback_id: str) -> Transcript | None:
        if not self.drafts:
            problems.append(SourceProblem(path=str(path), reason="no messages"))
            return None
        messages = []
        for i, d in enumerate(self.drafts):
            text = d.text
            if len(text) > MAX_TEXT_CHARS:
                problems.append(SourceProblem(path=str(path), line=d.line,
                                              reason=f"message text over {MAX_TEXT_CHARS} characters, truncated"))
                text = text[:MAX_TEXT_CHARS]
            messages.append(Message(index=i, role=d.role, text=text, tool_calls=d.tool_calls,  # type: ignore[arg-type]
                                    tool_call_id=d.tool_call_id, tool_name=d.tool_name, is_error=d.is_error,
                                    timestamp=d.timestamp))
        return Transcript(source=source, session_id=self.session_id or fallback_id, path=str(path),
                          started=self.started, cwd=self.cwd, messages=messages)


def json_lines(path: Path, problems: list[SourceProblem]) -> Iterator[tuple[int, dict]]:
    """(line number, object) of each JSON-object line; anything else is a problem."""
    def problem(line: int | None, reason: str) -> None:
        problems.append(SourceProblem(path=str(path), line=line, reason=reason))

    try:
        f = path.open("rb")
    except OSError as e:
        problem(None, f"cannot open: {e.strerror or e}")
        return
    with f:
        read, number = 0, 0
        lines = raw_lines(utf8_stream(f), MAX_FILE_BYTES + 1)
        while True:
            try:
                raw = next(lines, b"")
            except OSError as e:
                problem(number + 1, f"cannot read: {e.strerror or e}")
                return
            if not raw:
                if number == 0:
                    problem(None, "empty file")
                return
            number += 1
            read += len(raw)
            if read > MAX_FILE_BYTES:
                problem(number, f"file over {MAX_FILE_BYTES} bytes; the rest was not read")
                return
            stripped = raw.strip()
            if number == 1 and stripped.startswith(codecs.BOM_UTF8):  # a byte-order mark is encoding, not content
                stripped = stripped[len(codecs.BOM_UTF8):].strip()
            if not stripped:
                continue
            try:
                obj = loads_capped(stripped.decode("utf-8"))
            except UnicodeDecodeError:
                problem(number, "not UTF-8")
                continue
            except TooDeep:
                problem(number, DEEP)
                continue
            except ValueError:
                torn = not raw.endswith((b"\n", b"\r"))  # a line without its break ends the file
                problem(number, "torn last line (no newline, not valid JSON)" if torn else "not valid JSON")
                continue
            if not isinstance(obj, dict):
                problem(number, f"not a JSON object ({type(obj).__name__})")
                continue
            yield number, obj


_WIDE_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF16_LE, "utf-16"),
              (codecs.BOM_UTF16_BE, "utf-16"))  # UTF-32 LE's mark starts with UTF-16 LE's: tried first


def utf8_stream(f: BinaryIO) -> BinaryIO:
    """`f` read as UTF-8 bytes: a UTF-16 or UTF-32 file by its byte-order mark (Windows PowerShell's
    `>` writes UTF-16) is recoded as it is read, a bad sequence replaced (QA 32 M2: every line of it
    was "not valid JSON"); any other file is read as it is, and its lines judged as UTF-8."""
    head = f.peek(4)[:4] if hasattr(f, "peek") else b""
    encoding = next((enc for bom, enc in _WIDE_BOMS if head.startswith(bom)), None)
    return f if encoding is None else codecs.EncodedFile(f, "utf-8", encoding, errors="replace")  # type: ignore[return-value]


_BREAK = re.compile(rb"\r\n|\r|\n")


def raw_lines(f: BinaryIO, limit: int | None = None, chunk: int = 1 << 16) -> Iterator[bytes]:
    """The lines of a binary file, each with its line break, streamed: broken at b"\\n", b"\\r\\n" and
    b"\\r" only (journal.text_lines' rule, so a CR-only file, as old Mac editors save it, is many lines,
    and U+2028 or U+0085 inside a JSON string never break one). At most `limit` bytes are read (None:
    all); a UTF-8 multi-byte character never holds a CR or LF byte, so bytes split safely."""
    buf, pos, left, eof = b"", 0, limit, False
    head: list[bytes] = []  # the start of a line longer than what was read so far
    while True:
        m = _BREAK.search(buf, pos)
        if m is not None and (m.end() < len(buf) or eof or m.group(0) != b"\r"):  # a CR at the end may be half a CRLF
            line = buf[pos:m.end()]
            yield b"".join((*head, line)) if head else line
            head, pos = [], m.end()
            continue
        rest = buf[pos:]
        if eof:
            if head or rest:
                yield b"".join((*head, rest))
            return
        carry = b"\r" if rest.endswith(b"\r") else b""
        if len(rest) > len(carry):
            head.append(rest[:len(rest) - len(carry)])
        size = chunk if left is None else min(chunk, left)
        data = f.read(size) if size > 0 else b""
        if left is not None:
            left -= len(data)
        eof = not data
        buf, pos = carry + data, 0


class TooDeep(ValueError):
    """JSON nested deeper than MAX_JSON_DEPTH."""


def too_deep(value: object, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when lists and dicts in `value` nest more than `limit` levels (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, (list, dict)):
            if depth > limit:
                return True
            stack.extend((x, depth + 1) for x in (v.values() if isinstance(v, dict) else v))
    return False


def loads_capped(text: str | bytes) -> object:
    """json.loads that never raises RecursionError: nesting over MAX_JSON_DEPTH (or too deep for the
    decoder itself) is TooDeep; any other bad JSON is ValueError."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise TooDeep(DEEP) from None
    if too_deep(value):
        raise TooDeep(DEEP)
    return value


def compact(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def content_text(content: object, kinds: tuple[str, ...] = ("text",), other_as_json: bool = False) -> str:
    """Text of a content value: a string, or the `text` of the blocks whose type is in `kinds`
    joined by newlines (other blocks as compact JSON when `other_as_json`)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type") in kinds and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif other_as_json:
                parts.append(compact(block))
        return "\n".join(parts)
    return compact(content) if other_as_json else ""


def call_arguments(value: object) -> dict:
    """Call arguments as a dict: a JSON-object string is parsed; anything else becomes {"input": ...}."""
    if value is None or value == "":
        return {}
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            parsed = loads_capped(value)
        except ValueError:
            return {"input": value}
        return parsed if isinstance(parsed, dict) else {"input": value}
    return {"input": value}


def str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def type_of(value: object) -> str | None:
    """A `type` field, if it is a string (anything else is an unknown type)."""
    return value if isinstance(value, str) else None
