"""How a run's worker threads learn of a Ctrl-C.

Work in other threads (an evaluation's cases, an evolve run's nodes) cannot receive SIGINT, so a
driver registers a stop function with `stopping()` for as long as it runs; whatever handles SIGINT
(the CLI's handler, cli/interrupt.py) calls `stop_all()` before it raises in the main thread. From
then on the run's LLM sends no new request: the threads end at their next call instead of finishing
their cases.

A driver may also name how its run goes on (`resume`): the handler keeps it, so the one line the CLI
prints on Ctrl-C says what to type next (QA 38 F8: a bare "interrupted" left a RUNNING run unnamed).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

_stops: list[tuple[Callable[[], None], str | None]] = []
_stopped: list[str] = []  # the `resume` of every run a Ctrl-C stopped, in order


@contextmanager
def stopping(stop: Callable[[], None], resume: str | None = None) -> Iterator[None]:
    """Call `stop` (it must only set a flag) when a Ctrl-C is raised during the block, before the
    main thread unwinds: how the threads of a run learn that it is over. `resume`, when given, is
    the command that goes on with the run; `stopped_runs()` returns it once a Ctrl-C stopped it."""
    entry = (stop, resume)
    _stops.append(entry)
    try:
        yield
    finally:
        _stops.remove(entry)


def stop_all() -> None:
    """Call the stop function of every run in progress (from a SIGINT handler) and keep how each
    goes on."""
    for stop, resume in list(_stops):
        stop()
        if resume is not None and resume not in _stopped:
            _stopped.append(resume)


def stopped_runs() -> list[str]:
    """The `resume` commands of the runs a Ctrl-C stopped in this process."""
    return list(_stopped)


__all__ = ["stop_all", "stopped_runs", "stopping"]
