"""`runs redact`: the lines written before redaction on write, redacted in place.

Since QA 28 F2 runs/router.jsonl keeps a query and a reason redacted (nodes/route.logged_query,
registry.use), and since redact32 the events files keep a comment or reason redacted
(events.stored_text). Lines written before stay as typed, in the live log, in the archives `runs
prune` made (runs/archive/router-*.jsonl.gz) and in runs/events/{public,private}.jsonl. This
rewrites each file that holds such a line with the same redaction (rules/redact.redact, so a line
reads as if written today; no cut), and leaves every other line byte for byte:
- a line that is not a JSON object (torn by a killed writer, corrupt) is kept as it is and counted;
- a file is replaced whole, atomically: a temp file beside it (`.NAME.redact.tmp`, the file's own
  mode), fsynced, `os.replace`d, its folder fsynced; a kill leaves the old file or the new one;
- the router log: the lines present at the start are redacted without its lock (a `route` goes on
  appending), then the log's own lock (journal.open_locked, which every appender takes) is held
  while the tail written meanwhile is redacted and the file replaced; an appender that waited for
  it opens the new file, so no line is lost. The archive lock is held throughout, so no `runs
  prune` moves lines meanwhile (and a prune killed earlier is finished first, logarchive.recover);
- the events files: under the events lock (runs/events/.lock) that every append takes, so no
  feedback is written meanwhile. effective.json holds no text (seqs, outcomes, counts); it is
  rebuilt anyway when the public file changed, so it is the projection of what is on disk.
A dry run reads the same lines and counts, changing nothing. Counts only: never a secret.
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from collections import Counter
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from skillforge.config import Workspace
from skillforge.errors import RouterLogError
from skillforge.journal import fsync_folder, open_locked
from skillforge.rules.redact import redact
from skillforge.safewrite import exclusive, not_writable, write_bytes_atomic

ROUTER_FIELDS = ("query", "reason")
"""What the router log redacts on write (a route's query and reason, a use_skill's reason)."""
EVENT_FIELDS = ("comment", "reason")
"""What the events files redact on write (a feedback's comment, a use's or tool error's reason)."""


@dataclass
class FileRedaction:
    """One file: how many lines changed (or would), by kind of secret, and the lines kept as they
    were because they are not a JSON object."""

    path: str
    lines: int = 0
    changed: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    malformed: int = 0
    unreadable: str | None = None
    """Why an archive could not be read (it is left as it is)."""

    def as_json(self) -> dict[str, object]:
        return {"path": self.path, "lines": self.lines, "changed_lines": self.changed,
                "redactions": dict(sorted(self.kinds.items())), "malformed_lines": self.malformed,
                "unreadable": self.unreadable}


@dataclass
class RedactReport:
    dry_run: bool
    files: list[FileRedaction] = field(default_factory=list)

    @property
    def changed(self) -> int:
        return sum(f.changed for f in self.files)

    def as_json(self) -> dict[str, object]:
        kinds: Counter[str] = Counter()
        for f in self.files:
            kinds.update(f.kinds)
        return {"dry_run": self.dry_run, "changed_lines": self.changed, "redactions": dict(sorted(kinds.items())),
                "malformed_lines": sum(f.malformed for f in self.files), "files": [f.as_json() for f in self.files]}


def redact_line(raw: bytes, fields: tuple[str, ...], report: FileRedaction) -> bytes:
    """`raw` (one line, with its newline if it has one) with the text `fields` redacted; the same
    bytes when nothing in it changes. A line that is not a JSON object is counted as malformed and
    redacted as text, whole, when it holds a secret shape."""
    body = raw.rstrip(b"\n")
    if not body.strip():
        return raw
    report.lines += 1
    try:
        obj = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        obj = None
    if not isinstance(obj, dict):  # kept and counted; a secret in it is redacted as text (QA 35 M2: a torn
        report.malformed += 1      # line with a password stayed while the run said "nothing to redact")
        text, n = redact(body.decode("utf-8", errors="replace"))
        if not n:
            return raw
        report.changed += 1
        report.kinds.update(n)
        return text.encode("utf-8", errors="replace") + raw[len(body):]
    found: Counter[str] = Counter()
    for name in fields:
        value = obj.get(name)
        if isinstance(value, str):
            obj[name], n = redact(value)
            found.update(n)
    if not found:
        return raw
    report.changed += 1
    report.kinds.update(found)
    try:
        data = json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: escaped, as journal.append_jsonl writes it
        data = json.dumps(obj, ensure_ascii=True).encode("ascii")
    return data + raw[len(body):]


def redact_bytes(data: bytes, fields: tuple[str, ...], report: FileRedaction) -> bytes:
    return b"".join(redact_line(line, fields, report) for line in data.splitlines(keepends=True))


def _read_fd(fd: int, start: int, end: int | None = None) -> bytes:
    parts, pos = [], start
    while end is None or pos < end:
        chunk = os.pread(fd, 1 << 20 if end is None else min(1 << 20, end - pos), pos)
        if not chunk:
            break
        parts.append(chunk)
        pos += len(chunk)
    return b"".join(parts)


def _replace(path: Path, data: bytes) -> None:
    """`data` written to a temp file beside `path` (its mode kept), fsynced, renamed over it; the folder fsynced."""
    write_bytes_atomic(path, data)
    fsync_folder(path.parent)


def _redact_router_log(ws: Workspace, dry_run: bool) -> FileRedaction:
    path = ws.router_log
    report = FileRedaction(str(path.relative_to(ws.root)))
    read_fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        first = os.fstat(read_fd)
        head = _read_fd(read_fd, 0, first.st_size)
        done = head.rfind(b"\n") + 1  # a last line without its newline is read again under the lock
        out = redact_bytes(head[:done], ROUTER_FIELDS, report)
    finally:
        os.close(read_fd)
    if dry_run:
        redact_bytes(head[done:], ROUTER_FIELDS, report)
        return report
    lock_fd = open_locked(path)  # what every appender takes: none writes until the log is replaced
    try:
        if os.fstat(lock_fd).st_ino != first.st_ino:
            raise RouterLogError(f"{path} was replaced while `runs redact` read it; nothing was changed: run it again")
        out += redact_bytes(_read_fd(lock_fd, done), ROUTER_FIELDS, report)
        if report.changed:
            _replace(path, out)
    finally:
        os.close(lock_fd)
    return report


def _redact_archive(ws: Workspace, path: Path, dry_run: bool) -> FileRedaction:
    report = FileRedaction(str(path.relative_to(ws.root)))
    try:
        with gzip.open(path, "rb") as f:
            data = f.read()
    except (EOFError, gzip.BadGzipFile, zlib.error) as e:  # kept as it is, and said
        report.unreadable = f"not a whole gzip file ({e})"
        return report
    out = redact_bytes(data, ROUTER_FIELDS, report)
    if report.changed and not dry_run:
        buf = gzip.compress(out, mtime=0)
        _replace(path, buf)
    return report


def _redact_events(ws: Workspace, dry_run: bool) -> list[FileRedaction]:
    from skillforge.events.log import EventLog
    from skillforge.events.projection import rebuild

    events = EventLog(ws)
    reports: list[FileRedaction] = []
    if not events.dir.exists():
        return reports
    with nullcontext() if dry_run else exclusive(events.lock_path, "the events lock "):
        for path in (events.public_path, events.private_path):
            if not path.exists():
                continue
            report = FileRedaction(str(path.relative_to(ws.root)))
            out = redact_bytes(path.read_bytes(), EVENT_FIELDS, report)
            if report.changed and not dry_run:
                _replace(path, out)
            reports.append(report)
        public_changed = any(r.changed for r in reports if r.path.endswith(events.public_path.name))
        if not dry_run and public_changed and events.effective_path.exists():
            rebuild(events)
    return reports


def redact_logs(ws: Workspace, *, dry_run: bool = False) -> RedactReport:
    """Redact the router log, its archives and the events files in place (see the module
    docstring); with `dry_run`, only count what would change (no lock taken, nothing written)."""
    from skillforge.library.health import ARCHIVE_DIR
    from skillforge.library.logarchive import archive_lock, recover

    report = RedactReport(dry_run)
    folder = ws.runs_dir / ARCHIVE_DIR
    try:
        with nullcontext() if dry_run else archive_lock(ws):
            if not dry_run:
                recover(ws)  # a prune killed half way: its lines in exactly one place first
            if ws.router_log.exists():
                report.files.append(_redact_router_log(ws, dry_run))
            for path in sorted(folder.glob("router-*.jsonl.gz")) if folder.exists() else []:
                report.files.append(_redact_archive(ws, path, dry_run))
        report.files += _redact_events(ws, dry_run)
    except OSError as e:  # a full disk, a read-only runs/: the file being rewritten is as it was
        raise not_writable(ws.runs_dir, e, "", ": every file not yet rewritten is as it was; run `runs redact` "
                           "again") from None
    return report
