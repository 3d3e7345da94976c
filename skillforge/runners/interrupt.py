"""How a run's worker threads learn of a Ctrl-C.

Work in other threads (an evaluation's cases, an evolve run's nodes) cannot receive SIGINT, so a
driver registers a stop function with `stopping()` for as long as it runs; whatever handles SIGINT
(the CLI's handler, cli/interrupt.py) calls `stop_all()` before it raises in the main thread. From
then on the run's LLM sends no new request: the threads end at their next call instead of finishing
their cases.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

_stops: list[Callable[[], None]] = []


@contextmanager
def stopping(stop: Callable[[], None]) -> Iterator[None]:
    """Call `stop` (it must only set a flag) when a Ctrl-C is raised during the block, before the
    main thread unwinds: how the threads of a run learn that it is over."""
    _stops.append(stop)
    try:
        yield
    finally:
        _stops.remove(stop)


def stop_all() -> None:
    """Call the stop function of every run in progress (from a SIGINT handler)."""
    for stop in list(_stops):
        stop()


__all__ = ["stop_all", "stopping"]
