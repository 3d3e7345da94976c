"""Output to a pipe that the reader closed (`skillforge ... | head -1`) is dropped, not fatal.

Without this, the first write after the reader went away raises BrokenPipeError: click turns it into
exit code 1 (so `evaluate`'s verdict code 3, 4 or 5 is lost), or Python reports it while flushing at
exit (code 120). With it, the stream is pointed at /dev/null the first time a write or flush meets a
closed pipe, and the command runs to its end and exits with its own code.
"""

from __future__ import annotations

import os
import sys
from typing import Any, BinaryIO, TextIO


class PipeSafe:
    """A stream that diverts itself to /dev/null on BrokenPipeError; everything else passes. Its
    `buffer` (the binary stream under a text one: `skills show` writes a SKILL.md's exact bytes
    there) is wrapped the same way."""

    def __init__(self, stream: TextIO | BinaryIO) -> None:
        self._stream = stream
        self._buffer: PipeSafe | None = None

    def write(self, data: Any) -> int:
        try:
            return self._stream.write(data)
        except BrokenPipeError:
            self._divert()
            return len(data)

    @property
    def buffer(self) -> PipeSafe:
        if self._buffer is None:
            self._buffer = PipeSafe(self._stream.buffer)  # type: ignore[union-attr]
        return self._buffer

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._divert()

    def _divert(self) -> None:
        """Point the stream's descriptor at /dev/null: its buffered text and all later text go there."""
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self._stream.fileno())
        finally:
            os.close(devnull)
        try:
            self._stream.flush()
        except (BrokenPipeError, ValueError):  # pragma: no cover - a buffer that cannot be flushed is dropped
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def reopen_closed() -> None:
    """Give a standard descriptor that the caller closed (`skillforge ... >&-`) to /dev/null.
    Python then has sys.stdout None (rich's consoles failed at import with a traceback), and the
    next file opened would take descriptor 1: a stray write to "stdout" would land in it, say in
    the SQLite store. Called when the CLI package is imported, before anything is opened."""
    for fd, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        null = os.open(os.devnull, os.O_RDWR)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, mode, encoding="utf-8", errors="replace", closefd=False))


def install() -> None:
    """Wrap sys.stdout and sys.stderr (once)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, PipeSafe):
            setattr(sys, name, PipeSafe(stream))


def flush() -> None:
    """Flush both streams now, while a closed pipe can still be diverted (not in Python's exit)."""
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()
