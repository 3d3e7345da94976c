"""Ctrl-C (SIGINT) in the CLI: one line and exit code 130, never a traceback.

Outside critical sections, SIGINT raises `CtrlC`. It derives from BaseException (not
KeyboardInterrupt, which click would turn into "Aborted!" and exit 1), so `except Exception`
never swallows it, and cleanup written as `except BaseException: ...; raise` still runs.

A model call never turns it into a model error: the LLM client lets every BaseException that is not
an Exception through. Work in other threads (an evaluation's cases) cannot receive it, so a driver
registers a stop function with `runners.interrupt.stopping()`: the handler calls it before it
raises, and from then on the run's LLM sends no new request (the threads end at their next call
instead of finishing their cases).

Inside `deferred()` (publish, revert, import, watchdog), the first SIGINT is only recorded. The
release code asks `pending()` between its steps: before the commit it rolls back
(PublishInterrupted); once committed it completes. A second SIGINT aborts at once; whatever it
leaves (a PREPARING row, a half swap, staged files) the next begin_release recovers by itself.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType

from skillforge.runners.interrupt import stop_all, stopped_runs

EXIT_INTERRUPTED = 130


class CtrlC(BaseException):
    """SIGINT arrived outside a deferred section."""


@dataclass
class _State:
    deferring: int = 0
    pending: bool = False


_state = _State()


def _handler(signum: int, frame: FrameType | None) -> None:
    if _state.deferring and not _state.pending:
        _state.pending = True
        return
    stop_all()
    raise CtrlC()


def install() -> None:
    """Route SIGINT through this module (main thread only; a no-op elsewhere)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _handler)


def ignore_from_now() -> None:
    """Ignore SIGINT for the rest of the process: the command has finished and said so. Without
    this, a Ctrl-C during interpreter shutdown kills the process silently (exit -2) after, say,
    "published ..." was printed. (A Ctrl-C in the first milliseconds, while Python itself still
    starts up, is out of any program's hands.)"""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def pending() -> bool:
    """Whether a SIGINT was recorded inside the current deferred section."""
    return _state.pending


@contextmanager
def deferred() -> Iterator[None]:
    """Record the first SIGINT instead of raising it, for the duration of the block."""
    _state.deferring += 1
    try:
        yield
    finally:
        _state.deferring -= 1


def ended() -> str:
    """The line a Ctrl-C'd command ends with: "interrupted", and how each run it stopped goes on
    (the run stays open: a bare "interrupted" left the user to find its id, QA 38 F8)."""
    runs = stopped_runs()
    if not runs:
        return "interrupted"
    return "interrupted; the run stays open, go on with: " + runs[0]  # the outermost: a batch, not its run


def reset() -> None:
    """Forget a recorded SIGINT (after the command has reported it)."""
    _state.pending = False


__all__ = ["EXIT_INTERRUPTED", "CtrlC", "deferred", "ended", "ignore_from_now", "install", "pending", "reset"]
