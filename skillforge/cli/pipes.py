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
