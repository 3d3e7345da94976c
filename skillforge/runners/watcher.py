"""What a driver tells whoever runs it on the way (`Watcher`; `CaseCounter`, an evolve run's cases):
its own module, free of the drivers' imports, so that the CLI can define how it shows a run without
importing the run's machinery."""

from __future__ import annotations

from collections.abc import Callable, Iterator
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


CaseWatch = Callable[[str, int, int], None]
"""(what is evaluated: `<stage> <candidate> on <set>`, cases done, cases in all), once per finished case."""


class CaseCounter:
    """Counts the cases of the evaluation subgraphs an evolve run's nodes invoke, from the parent's
    stream (`subgraphs=True`, modes updates and values): a subgraph's values name what it evaluates
    (candidate label and set), its `load_cases` update starts a count, each `run_case` update is one
    case done."""

    def __init__(self, watch: CaseWatch) -> None:
        self.watch = watch
        self.labels: dict[str, str] = {}
        self.counts: dict[str, list[int]] = {}

    def event(self, ns: tuple[str, ...], mode: str, data: object) -> None:
        key = ns[0]
        if mode == "values":
            values = data if isinstance(data, dict) else {}
            side, eval_set = values.get("candidate"), values.get("eval_set")
            label = getattr(side, "label", None) or (side.get("label") if isinstance(side, dict) else None)
            if eval_set:
                self.labels[key] = f"{key.split(':')[0]} {label or 'candidate'} on {eval_set}"
            return
        if not isinstance(data, dict):
            return
        if "load_cases" in data:
            self.counts[key] = [0, len((data["load_cases"] or {}).get("cases", []))]
        if "run_case" in data and key in self.counts:
            count = self.counts[key]
            count[0] += 1
            self.watch(self.labels.get(key, key.split(":")[0]), count[0], count[1])
