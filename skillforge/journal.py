"""Append-only JSONL logs: router decisions, evaluations, per-case traces.

Each record is one line written whole under an exclusive `flock`, so concurrent writers never
interleave. A write the disk refuses (full, over quota, read-only, too large) is cut back to where
it began, so no half line is left, and becomes NotWritable naming the file and what to do: the
command can simply be run again (an evolve run resumed). A reader skips (and reports) a torn line
left by a killed writer, and the next record starts on a line of its own.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Mapping

from skillforge.safewrite import not_writable

log = logging.getLogger(__name__)
AGAIN = (", then run the command again (a stopped evolve run goes on with `skillforge evolve --resume RUN`; "
         "`skillforge runs list` shows its id)")
"""How to go on after a log write failed: nothing of the record was kept, so running again is safe."""

JsonRecord = Mapping[str, object]


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def encoded_line(record: JsonRecord) -> bytes:
    """One JSONL line of `record` (with a `ts` if it has none), as append_jsonl writes it."""
    line_obj = {"ts": utc_now(), **record}
    try:
        return (json.dumps(line_obj, ensure_ascii=False, default=str) + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (invalid UTF-8 in a query): escaped, still one JSON line
        return (json.dumps(line_obj, ensure_ascii=True, default=str) + "\n").encode("ascii")


def append_jsonl(path: Path, record: JsonRecord, *, durable: bool = False) -> dict[str, object]:
    """Append one record (with a `ts` if it has none) and return what was written. `durable`: the
    file (and, when this append created it, its folder's entry) is fsynced before returning, so an
    acknowledged record survives kill -9 and a power cut."""
    line_obj = {"ts": utc_now(), **record}
    data = encoded_line(line_obj)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        created = durable and not path.exists()
        fd = open_locked(path)
    except OSError as e:  # a folder where the log belongs, a read-only runs/, ...
        raise not_writable(path, e, "the log ", AGAIN) from None
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data  # a killed writer left a torn line: do not glue ours onto it
        _write_whole(fd, data, size, path)
        if durable:
            os.fsync(fd)
            if created:
                fsync_folder(path.parent)
    except OSError as e:  # a full disk, a quota, a file size limit, an I/O error
        raise not_writable(path, e, "the log ", AGAIN) from None
    finally:
        os.close(fd)  # closing releases the lock
    return line_obj


def open_locked(path: Path) -> int:
    """A descriptor of the log at `path` (created if missing), open for appending and holding its
    exclusive flock, which closing it releases. A log that `runs prune` replaced (its old lines
    archived) while this process waited for the lock is opened again, so that no record is
    written into the file that was replaced."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            held = os.fstat(fd)
            try:
                now = os.stat(path)
            except FileNotFoundError:
                now = None
        except BaseException:
            os.close(fd)
            raise
        if now is not None and (now.st_ino, now.st_dev) == (held.st_ino, held.st_dev):
            return fd
        os.close(fd)


def fsync_folder(folder: Path) -> None:
    dfd = os.open(folder, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def _write_whole(fd: int, data: bytes, size: int, path: Path) -> None:
    """Write all of `data` at the end of the file, or none of it: `write()` may take only part
    (a disk that fills up mid-record), so it is called until done, and when it fails the file is
    cut back to `size`, its length before, so that no half line is left."""
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view):]
    except OSError:
        if len(view) == len(data):
            raise  # nothing of it was written
        try:
            os.ftruncate(fd, size)
        except OSError as e:  # not a regular file (a device): readers skip a torn line anyway
            log.warning("%s: could not remove a partly written record: %s", path, e.strerror or e)
        raise


_BREAK = re.compile(r"\r\n|\r|\n")


def text_lines(text: str) -> list[str]:
    """The lines of a line-oriented file's text (JSONL, a list of queries), as a file is read line
    by line: broken at "\n", "\r\n" and "\r" only. Not `str.splitlines()`, which also breaks at
    U+2028, U+2029, U+0085, \v, \f and \x1c-\x1e: `append_jsonl` keeps those raw inside a JSON
    string (valid JSON), so splitting there tears a record in two. A leading byte-order mark (a
    file saved by an editor as "UTF-8 with BOM") is dropped; a last empty line is not a line."""
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = _BREAK.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def json_lines(path: Path) -> list[tuple[int, object]]:
    """(line number in the file, parsed JSON) of each non-blank line of a JSONL file; a line that is
    not JSON is warned about with its number and skipped (a torn write). Lines break at "\n" (and
    "\r\n", "\r") only, never at U+2028 and its kin (see text_lines); a leading BOM is dropped."""
    out: list[tuple[int, object]] = []
    with path.open("r", encoding="utf-8-sig", errors="replace") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                out.append((n, json.loads(line)))
            except json.JSONDecodeError:
                log.warning("%s:%d: skipped a line that is not JSON (torn write?)", path, n)
    return out


def read_jsonl(path: Path) -> list[dict[str, object]]:
    """Every whole record of a JSONL file; a torn or corrupt line is skipped with a warning."""
    if not path.exists():
        return []
    return [obj for _, obj in json_lines(path) if isinstance(obj, dict)]
