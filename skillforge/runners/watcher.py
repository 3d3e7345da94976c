"""What a driver tells whoever runs it on the way (`Watcher`): its own module, free of the drivers'
imports, so that the CLI can define how it shows a run without importing the run's machinery."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


class Watcher:
    """What a driver tells whoever runs it, on the way (the CLI prints it); by default, nothing."""

    def say(self, line: str) -> None:
        """A line for a person: the estimate before the first request, the new run's id."""

    @contextmanager
    def running(self, label: str) -> Iterator[None]:
        """Around the stream of the graph (the CLI's progress bar)."""
        yield

    def cases(self, total: int) -> None:
        """The run has `total` cases."""

    def case_done(self) -> None:
        """One more case is finished."""
