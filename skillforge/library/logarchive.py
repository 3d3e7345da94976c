"""Archiving old router log lines (`runs prune`).

runs/router.jsonl gets a line for every route decision and use_skill load, from the CLI and from
agents through MCP, so it only grows; `skills health`, `skills suggest` and `canary tick` read it
whole. `runs prune --older-than DAYS` moves the lines written before the horizon (rules/prune.py
`log_horizon`: the cutoff, or an open canary's start when earlier) to
runs/archive/router-<time>.jsonl.gz, byte for byte and in their order, and keeps the newest route
hit and use_skill load of each skill among them in runs/archive/router-uses.json, which
`skills health` reads beside the live log (so `days_since_last_use` reads the same).

Queries and reasons are redacted when a line is written (nodes/route.logged_query, registry.use);
lines written before that (QA 28 F2) may hold raw text, and a prune archives them as they are: it
never rewrites a line (its readers, `skills suggest`, redact what they show).

Appenders are never stopped for the copy: the lines present when the prune starts are sorted
without the log's lock; only the tail written meanwhile is copied under it, then the new file
replaces the log. An appender that waited for the lock opens the new file (journal.open_locked).

Kill -9 anywhere leaves every line in exactly one place:
1. the kept lines go to runs/.router.jsonl.compact, the moved ones to a pending archive named with
   that file's inode, both fsynced;
2. the archived uses are saved (taking a use twice is harmless: the newest wins);
3. the compacted file replaces the log; 4. the pending archive gets its final name.
A later prune finds a pending archive: when the log is the file of its inode, step 3 happened and
the archive is kept; otherwise the log still holds those lines and the pending archive goes.
"""

from __future__ import annotations

import gzip
import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from skillforge.config import Workspace
from skillforge.errors import RouterLogError
from skillforge.journal import fsync_folder, open_locked
from skillforge.library.health import ARCHIVE_DIR, archived_uses, parse_ts, save_archived_uses, use_event
from skillforge.rules.health import UseEvent, latest_uses
from skillforge.rules.prune import line_goes
from skillforge.safewrite import exclusive, not_writable

COMPACT = ".router.jsonl.compact"
PENDING = re.compile(r"^\.(router-[0-9TZ]+(?:-\d+)?\.jsonl\.gz)\.(\d+)\.pending$")
TS = re.compile(rb'^\{"ts": "([^"]+)"')
"""append_jsonl writes `ts` first; a line that does not start so is parsed whole."""
CHUNK = 1 << 20


@dataclass
class LogArchive:
    """What a prune moved (or, dry, would move) out of runs/router.jsonl."""

    horizon: datetime | None
    lines: int = 0
    bytes: int = 0
    kept: int = 0
    archive: str | None = None
    """The archive file, relative to the workspace (None: nothing moved)."""
    uses: list[UseEvent] = field(default_factory=list)

    def as_json(self) -> dict[str, object]:
        return {"horizon": self.horizon.isoformat() if self.horizon else None, "lines": self.lines,
                "bytes": self.bytes, "kept_lines": self.kept, "archive": self.archive}


def line_time(raw: bytes) -> datetime | None:
    """The `ts` of a whole router log line, or None (not JSON, no readable time)."""
    m = TS.match(raw)
    if m is not None:
        return parse_ts(m.group(1).decode("utf-8", "replace"))
    try:
        obj = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return parse_ts(obj.get("ts")) if isinstance(obj, dict) else None


class _Sorter:
    """Sends each whole line to the kept file or the archive (None outputs: only counts)."""

    def __init__(self, horizon: datetime | None, kept: BinaryIO | None, moved: BinaryIO | None) -> None:
        self.horizon, self.kept_out, self.moved_out = horizon, kept, moved
        self.report = LogArchive(horizon)
        self.moved_uses: list[UseEvent] = []

    def line(self, raw: bytes) -> None:
        if raw.endswith(b"\n") and line_goes(line_time(raw), self.horizon):
            self.report.lines += 1
            self.report.bytes += len(raw)
            if self.moved_out is not None:
                self.moved_out.write(raw)
                if b'"chosen": null' in raw and b"use_skill" not in raw:
                    return  # a NONE decision (as append_jsonl writes it): no use to keep
                try:
                    obj = json.loads(raw)
                except (json.JSONDecodeError, UnicodeDecodeError):
                    obj = None
                event = use_event(obj) if isinstance(obj, dict) else None
                if event is not None:
                    self.moved_uses.append(event)
            return
        self.report.kept += 1
        if self.kept_out is not None:
            self.kept_out.write(raw)


def _lines(fd: int, start: int, end: int | None) -> Iterator[tuple[bytes, int]]:
    """(line, offset after it) of the bytes from `start` up to `end` (None: the end of the file);
    with an `end`, a last line without its newline is left for later."""
    pos, rest, rest_at = start, b"", start
    while end is None or pos < end:
        chunk = os.pread(fd, CHUNK if end is None else min(CHUNK, end - pos), pos)
        if not chunk:
            break
        pos += len(chunk)
        buf, i = rest + chunk, 0
        while (j := buf.find(b"\n", i)) >= 0:
            yield buf[i:j + 1], rest_at + j + 1
            i = j + 1
        rest, rest_at = buf[i:], rest_at + i
    if rest and end is None:
        yield rest, pos


def _stamp(now: datetime) -> str:
    return now.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def _final_name(folder: Path, now: datetime) -> str:
    base, n = f"router-{_stamp(now)}", 1
    while (folder / f"{base}{'' if n == 1 else f'-{n}'}.jsonl.gz").exists():
        n += 1
    return f"{base}{'' if n == 1 else f'-{n}'}.jsonl.gz"


def recover(ws: Workspace) -> None:
    """Finish or undo what a killed prune left (see the module docstring); call under the archive lock."""
    folder, log_path = ws.runs_dir / ARCHIVE_DIR, ws.router_log
    try:
        live = os.stat(log_path).st_ino
    except FileNotFoundError:
        live = None
    for pending in sorted(folder.glob(".router-*.pending")) if folder.exists() else []:
        m = PENDING.match(pending.name)
        if m is None:
            continue
        if live is not None and int(m.group(2)) == live:
            os.replace(pending, folder / m.group(1))
        else:
            pending.unlink()
    (ws.runs_dir / COMPACT).unlink(missing_ok=True)
    if folder.exists():
        fsync_folder(folder)


@contextmanager
def archive_lock(ws: Workspace) -> Iterator[None]:
    """One prune archives at a time (runs/archive/.lock; the kernel drops it if the holder dies)."""
    with exclusive(ws.runs_dir / ARCHIVE_DIR / ".lock", "the archive lock "):
        yield


def archive_router_log(ws: Workspace, horizon: datetime | None, *, dry_run: bool = False,
                       now: datetime | None = None) -> LogArchive:
    """Move the router log's lines written before `horizon` to a new archive (see the module
    docstring); with `dry_run`, only count them."""
    log_path = ws.router_log
    if not log_path.exists() or horizon is None:
        return LogArchive(horizon, kept=0)
    if dry_run:
        sorter = _Sorter(horizon, None, None)
        fd = os.open(log_path, os.O_RDONLY)
        try:
            for raw, _ in _lines(fd, 0, None):
                sorter.line(raw)
        finally:
            os.close(fd)
        return sorter.report
    now = now or datetime.now(UTC)
    try:
        with archive_lock(ws):
            recover(ws)
            return _archive(ws, horizon, now)
    except OSError as e:  # a full disk, a read-only runs/: every line is still in the log
        raise not_writable(ws.runs_dir / ARCHIVE_DIR, e, "the router log archive ",
                           ": every line is still in runs/router.jsonl; run the prune again") from None


def _archive(ws: Workspace, horizon: datetime, now: datetime) -> LogArchive:
    log_path, folder = ws.router_log, ws.runs_dir / ARCHIVE_DIR
    compact = ws.runs_dir / COMPACT
    read_fd = os.open(log_path, os.O_RDONLY)
    try:
        first = os.fstat(read_fd)
        out_fd = os.open(compact, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, first.st_mode & 0o777)
        name = _final_name(folder, now)
        pending = folder / f".{name}.{os.fstat(out_fd).st_ino}.pending"
        os.fchmod(out_fd, first.st_mode & 0o777)  # the log's own mode, whatever the umask
        with os.fdopen(out_fd, "wb") as kept, open(pending, "wb") as moved_file, \
                gzip.GzipFile(filename="", mode="wb", fileobj=moved_file, mtime=0) as moved:
            sorter = _Sorter(horizon, kept, moved)
            done = 0
            for raw, after in _lines(read_fd, 0, first.st_size):  # no lock: appenders go on
                sorter.line(raw)
                done = after
            lock_fd = open_locked(log_path)  # the tail written meanwhile, under the lock
            try:
                if os.fstat(lock_fd).st_ino != first.st_ino:  # replaced behind our back: undo
                    raise RouterLogError(f"{log_path} was replaced while `runs prune` read it; nothing was "
                                         "archived: run the prune again")
                for raw, _ in _lines(lock_fd, done, None):
                    sorter.line(raw)
                moved.close()
                for f in (kept, moved_file):
                    f.flush()
                    os.fsync(f.fileno())
                report = sorter.report
                if report.lines:
                    report.uses = latest_uses([*archived_uses(ws)[0], *sorter.moved_uses])
                    save_archived_uses(ws, report.uses, horizon)
                    os.replace(compact, log_path)
                    fsync_folder(log_path.parent)
                    os.replace(pending, folder / name)
                    fsync_folder(folder)
                    report.archive = str((folder / name).relative_to(ws.root))
            finally:
                os.close(lock_fd)
    except BaseException:
        recover(ws)
        raise
    finally:
        os.close(read_fd)
    if not report.lines:
        recover(ws)
    return report
