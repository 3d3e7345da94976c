"""Append-only JSONL logs: router decisions, evaluations, per-case traces.

Each record is one `write()` of one line under an exclusive `flock`, so concurrent writers never
interleave, and a reader skips (and reports) a torn last line left by a killed writer.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Mapping

from skillforge.errors import NotWritable

log = logging.getLogger(__name__)

JsonRecord = Mapping[str, object]


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def append_jsonl(path: Path, record: JsonRecord) -> dict[str, object]:
    """Append one record (with a `ts` if it has none) and return what was written."""
    line_obj = {"ts": utc_now(), **record}
    try:
        data = (json.dumps(line_obj, ensure_ascii=False, default=str) + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (invalid UTF-8 in a query): escaped, still one JSON line
        data = (json.dumps(line_obj, ensure_ascii=True, default=str) + "\n").encode("ascii")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    except OSError as e:  # a folder where the log belongs, a read-only runs/, ...
        raise NotWritable(f"cannot write the log {path}: {e.strerror or e}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data  # a killed writer left a torn line: do not glue ours onto it
        os.write(fd, data)
    finally:
        os.close(fd)  # closing releases the lock
    return line_obj


def read_jsonl(path: Path) -> list[dict[str, object]]:
    """Every whole record of a JSONL file; a torn or corrupt line is skipped with a warning."""
    if not path.exists():
        return []
    out = []
    with path.open("r", encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                log.warning("%s:%d: skipped a line that is not JSON (torn write?)", path, n)
                continue
            if isinstance(obj, dict):
                out.append(obj)
    return out
