"""EventLog: the append-only files runs/events/public.jsonl and private.jsonl.

An append takes the workspace's events lock (`flock` on runs/events/.lock), which is what makes the
sequence number one counter across both files: the next seq is one more than the highest in either
file's tail, read under that lock. The line itself is written by `journal.append_jsonl` (whole
record or nothing, a torn line left by a killed writer is never glued onto, a full disk is
NotWritable), which fsyncs it (`durable=True`) before the event is returned: an event the caller
saw acknowledged survives kill -9 and a power cut. The kernel drops the lock when a writer dies.

Reading is split by audience: `read_public()` is the only reader of events and returns public ones
only (anything that builds a prompt, a report or a harvested case goes through it); private events
are only counted (`counts()`). A line that is not a whole event is skipped, logged and counted.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import ValidationError

from skillforge.config import Workspace
from skillforge.errors import EventError, WorkspaceError, given
from skillforge.journal import append_jsonl, utc_now
from skillforge.safewrite import exclusive, not_writable
from skillforge.state.events import Event, EventCounts, EventKind, EventRead

log = logging.getLogger(__name__)
EVENTS_DIR = "events"
"""runs/events/ holds public.jsonl, private.jsonl, effective.json and the lock file."""
TAIL_CHUNK = 8192
"""Bytes read from a file's end to find its highest seq (doubled until a whole event is found)."""


def workspace_of(ws: Workspace | str | os.PathLike[str]) -> Workspace:
    """`ws`, or the workspace at the folder `ws` names, opened as the CLI's `-w DIR` opens it (a
    WorkspaceError when it is not one): the events API takes either. Anything else is EventError."""
    if isinstance(ws, Workspace):
        return ws
    if isinstance(ws, str | os.PathLike) and str(ws).strip():
        return Workspace.open(ws)
    raise EventError(f"the workspace must be a Workspace (skillforge.config.Workspace.open(path)) or a workspace "
                     f"folder's path, got {given(ws)}")


class EventLog:
    """The events of one workspace (a Workspace, or the path of its folder)."""

    def __init__(self, ws: Workspace | str | os.PathLike[str]) -> None:
        ws = workspace_of(ws)
        self.ws = ws
        self.dir = ws.runs_dir / EVENTS_DIR
        self.public_path = self.dir / "public.jsonl"
        self.private_path = self.dir / "private.jsonl"
        self.effective_path = self.dir / "effective.json"
        self.lock_path = self.dir / ".lock"

    # ---- writing ----------------------------------------------------------------------------
    def append(self, event: Event) -> Event:
        """Give `event` the next seq and the time, append it to its file (private.jsonl when
        `event.private`), fsync, and return it as written."""
        path = self.private_path if event.private else self.public_path
        with self._locked():
            seq = max(_tail_seq(self.public_path), _tail_seq(self.private_path)) + 1
            written = event.model_copy(update={"seq": seq, "at": utc_now()})
            record = {"ts": written.at, **written.model_dump(mode="json", exclude={"at"}, exclude_none=True)}
            append_jsonl(path, record, durable=True)
        return written

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with exclusive(self.lock_path, "the events lock "):
            yield

    # ---- reading ----------------------------------------------------------------------------
    def read_public(self) -> EventRead:
        """Every whole public event, in seq order, and how many lines were skipped."""
        events, skipped = _read(self.public_path)
        return EventRead(events=[e for e in events if not e.private], skipped_lines=skipped)

    def served(self, session_id: str, skill: str) -> list[Event]:
        """The skill_used events of `session_id` for `skill`, in seq order: what `read_public` would
        give for them, without parsing the other lines. A line is parsed only when its bytes hold
        "skill_used" and the session id as a JSON string holds it (either encoding a writer uses),
        so a feedback's check of its session costs a scan of the file's bytes, not a model per
        event (0.6 s at 50 000 events before)."""
        try:
            data = self.public_path.read_bytes()
        except FileNotFoundError:
            return []
        except OSError as e:
            raise WorkspaceError(f"cannot read {self.public_path}: {e.strerror or e}") from None
        needles = {json.dumps(session_id, ensure_ascii=False)[1:-1].encode("utf-8"),
                   json.dumps(session_id)[1:-1].encode("ascii")}
        found = []
        for line in data.split(b"\n"):
            if b"skill_used" not in line or not any(n in line for n in needles):
                continue
            e = _parse(line)
            if (e is not None and e.seq is not None and not e.private and e.kind is EventKind.SKILL_USED
                    and e.session_id == session_id and e.skill == skill):
                found.append(e)
        return sorted(found, key=lambda e: e.seq or 0)

    def counts(self, skill: str | None = None) -> EventCounts:
        """How many events each file holds (the only view of private events); with `skill`, only
        that skill's events are counted (the skipped lines and the last seq are the files')."""
        public, skipped_public = _read(self.public_path)
        private, skipped_private = _read(self.private_path)
        seqs = [e.seq for e in (*public, *private) if e.seq is not None]
        if skill is not None:
            public, private = [e for e in public if e.skill == skill], [e for e in private if e.skill == skill]
        return EventCounts(public=sum(not e.private for e in public),
                           private=len(private) + sum(e.private for e in public),
                           skipped_lines=skipped_public + skipped_private, last_seq=max(seqs, default=0))

    def lookup(self, seq: int) -> Event | None:
        """The event numbered `seq` in either file, for checking a correction's target; a private
        one comes without its comment and reason."""
        for path in (self.public_path, self.private_path):
            events, _ = _read(path, quiet=True)
            for e in events:
                if e.seq == seq:
                    return e.model_copy(update={"comment": None, "reason": None}) if e.private else e
        return None


def _parse(line: bytes) -> Event | None:
    try:
        obj = json.loads(line)
        return Event.model_validate(obj) if isinstance(obj, dict) else None
    except (ValueError, ValidationError):
        return None


def _tail_seq(path: Path) -> int:
    """The highest seq among the last events of `path` (0 when it has none). A last line with no
    newline counts too when it parses, so that a seq is never given twice."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return 0
    except OSError as e:
        raise not_writable(path, e, "the events log ") from None
    try:
        return _tail_seq_of(fd)
    except OSError as e:  # a folder where the log belongs, an I/O error
        raise not_writable(path, e, "the events log ") from None
    finally:
        os.close(fd)


def _tail_seq_of(fd: int) -> int:
    size = os.fstat(fd).st_size
    chunk = TAIL_CHUNK
    while True:
        start = max(0, size - chunk)
        lines = os.pread(fd, size - start, start).split(b"\n")
        if start:
            lines = lines[1:]  # the first piece may be the end of a longer line
        tail = _parse(lines[-1]) if lines and lines[-1].strip() else None
        last = next((e for e in map(_parse, reversed(lines[:-1])) if e is not None and e.seq is not None), None)
        seqs = [e.seq for e in (tail, last) if e is not None and e.seq is not None]
        if last is not None or not start:
            return max(seqs, default=0)
        chunk *= 2


def _read(path: Path, *, quiet: bool = False) -> tuple[list[Event], int]:
    """The whole events of `path` in file order, and how many lines were not one."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return [], 0
    except OSError as e:  # a folder where the file belongs, no permission
        raise WorkspaceError(f"cannot read {path}: {e.strerror or e}") from None
    events, skipped = [], 0
    lines = data.split(b"\n")
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        e = _parse(line)
        if e is None or e.seq is None:
            skipped += 1
            if not quiet:
                torn = n == len(lines) and not data.endswith(b"\n")
                log.warning("%s:%d: skipped a line that is not a whole event%s", path, n,
                            " (torn by a killed writer)" if torn else "")
            continue
        events.append(e)
    return events, skipped
