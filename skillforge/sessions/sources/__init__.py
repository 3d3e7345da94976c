"""Read agent session transcripts, read-only, into `Transcript`s (formats: docs/sessions.md).

Nothing here writes or raises on bad content: a line or file that cannot be read is a
`SourceProblem` and reading goes on. Only a missing path or an unknown source name is a
`SourceError`. Files are streamed line by line, with a byte cap per file and a text cap per message.
One module per format: claude_code.py, codex.py, jsonl.py; common.py holds what they share (the
caps too: MAX_FILE_BYTES and MAX_TEXT_CHARS, re-exported here).
"""

from __future__ import annotations

import os
import stat
from datetime import UTC, datetime
from pathlib import Path

from skillforge.errors import SourceError
from skillforge.sessions.sources.claude_code import read_claude
from skillforge.sessions.sources.codex import read_codex
from skillforge.sessions.sources.common import MAX_FILE_BYTES, MAX_TEXT_CHARS, loads_capped, raw_lines
from skillforge.sessions.sources.jsonl import read_jsonl
from skillforge.state.sessions import SessionSource, SourceProblem, Transcript

_READERS = {SessionSource.CLAUDE_CODE: read_claude, SessionSource.CODEX: read_codex,
            SessionSource.JSONL: read_jsonl}


def session_files(root: Path, problems: list[SourceProblem]) -> list[Path]:
    """Every *.jsonl under `root`, sorted; symlinks are followed only when they stay inside it. A
    link out of the folder, a dangling link and anything but a regular file (a FIFO, a socket) are
    skipped as problems, never opened (opening a FIFO would wait for a writer)."""
    if not root.is_dir():
        why = _not_readable(root, None)  # named on the command line: followed wherever it points
        if why:
            problems.append(SourceProblem(path=str(root), reason=why))
            return []
        return [root]
    base = root.resolve()
    found = []
    def unreadable(e: OSError) -> None:
        problems.append(SourceProblem(path=str(e.filename or root), reason=f"cannot list: {e.strerror or e}"))

    for folder, dirs, names in os.walk(root, followlinks=False, onerror=unreadable):
        dirs.sort()
        for name in names:
            p = Path(folder) / name
            if not name.endswith(".jsonl"):
                continue
            why = _not_readable(p, base)
            if why:
                problems.append(SourceProblem(path=str(p), reason=why))
            else:
                found.append(p)
    return sorted(found)


def _not_readable(p: Path, base: Path | None) -> str | None:
    """Why `p` is skipped (a symlink out of `base`, dangling or looping; not a regular file), or None."""
    try:
        if p.is_symlink():
            target = p.resolve()
            if not p.exists():
                return "dangling symlink, skipped"
            if base is not None and not target.is_relative_to(base):
                return "symlink out of the folder, not followed"
        mode = p.stat().st_mode
    except (OSError, RuntimeError) as e:  # RuntimeError: a symlink loop (Python 3.11)
        return f"cannot follow: {getattr(e, 'strerror', None) or e}"
    if not stat.S_ISREG(mode):
        kind = "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else \
            "a folder" if stat.S_ISDIR(mode) else "a device or other special file"
        return f"not a regular file ({kind}), skipped"
    return None


def _when(ts: str | None) -> datetime | None:
    if not ts:
        return None
    try:
        d = datetime.fromisoformat(ts)
    except ValueError:
        return None
    return d if d.tzinfo else d.replace(tzinfo=UTC)


def read_sessions(source: SessionSource | str, path: Path, since: datetime | None = None,
                  ) -> tuple[list[Transcript], list[SourceProblem]]:
    """The transcripts in `path` (a file, or a folder walked for *.jsonl) and the problems met.
    `since` keeps sessions that started at or after it (file mtime when a session has no time)."""
    try:
        kind = SessionSource(source)
    except ValueError:
        valid = ", ".join(s.value for s in SessionSource)
        raise SourceError(f"unknown session source {source!r}; valid sources: {valid}") from None
    path = Path(path)
    if not path.exists():
        raise SourceError(f"{path}: no such file or folder to read sessions from")
    if since is not None and since.tzinfo is None:
        since = since.replace(tzinfo=UTC)
    problems: list[SourceProblem] = []
    out: list[Transcript] = []
    for file in session_files(path, problems):
        before = len(problems)
        transcripts = _READERS[kind](file, problems)
        if not transcripts and len(problems) == before:
            problems.append(SourceProblem(path=str(file), reason="no messages"))
        for t in transcripts:
            if since is not None:
                start = _when(t.started)
                if start is None:
                    try:
                        start = datetime.fromtimestamp(file.stat().st_mtime, UTC)
                    except OSError:
                        start = None
                if start is None or start < since:
                    continue
            out.append(t)
    return out, problems


def detect_source(path: Path) -> SessionSource | None:
    """The format of one JSONL file from its first object lines (None: not one we read)."""
    try:
        with path.open("rb") as fh:
            for _, raw in zip(range(20), raw_lines(fh, MAX_FILE_BYTES)):
                try:
                    obj = loads_capped(raw)  # bytes: a UTF-8 byte-order mark is allowed
                except ValueError:
                    continue
                if not isinstance(obj, dict):
                    continue
                if "payload" in obj and obj.get("type") in {"session_meta", "response_item", "event_msg", "turn_context"}:
                    return SessionSource.CODEX
                if "sessionId" in obj or ("message" in obj and "uuid" in obj):
                    return SessionSource.CLAUDE_CODE
                if "role" in obj or ("session_id" in obj and "meta" in obj):
                    return SessionSource.JSONL
                if {"id", "instructions"} <= set(obj) or obj.get("record_type") == "state":
                    return SessionSource.CODEX  # a rollout from before session_meta
    except OSError:
        return None
    return None


def read_transcripts(source: str, path: Path, since: datetime | None = None) -> tuple[list[Transcript], list[SourceProblem]]:
    """Transcripts under `path` (a file or a folder) in `source` format, or `auto`: each file's own."""
    if not path.exists():
        raise SourceError(f"no such file or folder: {path}")
    if source != "auto":
        return read_sessions(source, path, since)
    problems: list[SourceProblem] = []
    found: list[Transcript] = []
    for f in session_files(path, problems):
        kind = detect_source(f)
        if kind is None:
            problems.append(SourceProblem(path=str(f), reason="not a Claude Code, Codex or generic JSONL session"))
            continue
        got, probs = read_sessions(kind, f, since)
        found += got
        problems += probs
    return found, problems


__all__ = ["MAX_FILE_BYTES", "MAX_TEXT_CHARS", "detect_source", "read_sessions", "read_transcripts",
           "session_files"]
