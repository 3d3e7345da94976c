"""Output to a pipe that the reader closed (`skillforge ... | head -1`) is dropped, not fatal.

Without this, the first write after the reader went away raises BrokenPipeError: click turns it into
exit code 1 (so `evaluate`'s verdict code 3, 4 or 5 is lost), or Python reports it while flushing at
exit (code 120). With it, the stream is pointed at /dev/null the first time a write or flush meets a
closed pipe, and the command runs to its end and exits with its own code.

Output that cannot be written for another reason (`> /dev/full`, a full disk, an I/O error) is
`OutputLost`: a named error (exit 2), not an internal one, and the stream is diverted the same way
so that Python's own flush at exit does not fail a second time.
"""

from __future__ import annotations

import errno
import os
import sys
from typing import Any, BinaryIO, TextIO

from skillforge.errors import OutputLost

LOST = {errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EFBIG}
"""Write errors that mean the output is gone (everything else is left to surface as it is)."""


class PipeSafe:
    """A stream that diverts itself to /dev/null on BrokenPipeError; everything else passes. Its
    `buffer` (the binary stream under a text one: `skills show` writes a SKILL.md's exact bytes
    there) is wrapped the same way."""

    def __init__(self, stream: TextIO | BinaryIO, name: str = "standard output") -> None:
        self._stream = stream
        self._name = name
        self._buffer: PipeSafe | None = None

    def write(self, data: Any) -> int:
        try:
            return self._stream.write(data)
        except BrokenPipeError:
            self._divert()
            return len(data)
        except OSError as e:
            self._lost(e)
            raise

    @property
    def buffer(self) -> PipeSafe:
        if self._buffer is None:
            self._buffer = PipeSafe(self._stream.buffer, self._name)  # type: ignore[union-attr]
        return self._buffer

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._divert()
        except OSError as e:
            self._lost(e)
            raise

    def _lost(self, e: OSError) -> None:
        """Raise OutputLost for a write error that means the output is gone, after diverting."""
        if e.errno in LOST:
            self._divert()
            raise OutputLost(f"cannot write to {self._name}: {e.strerror or e}") from None

    def _divert(self) -> None:
        """Point the stream's descriptor at /dev/null: its buffered text and all later text go there."""
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self._stream.fileno())
        finally:
            os.close(devnull)
        try:
            self._stream.flush()
        except (OSError, ValueError):  # pragma: no cover - a buffer that cannot be flushed is dropped
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
            setattr(sys, name, PipeSafe(stream, f"standard {'output' if name == 'stdout' else 'error'}"))


def flush() -> None:
    """Flush both streams now, while a closed pipe can still be diverted (not in Python's exit)."""
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()
