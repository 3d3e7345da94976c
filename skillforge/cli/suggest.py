"""`skillforge skills suggest`: clusters of the queries the router answered NONE, each proposed as a
new skill (with the `skills new` command to run) or refused as covered by the out-of-scope bank."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from skillforge.cli.common import JsonOpt, WorkspaceOpt, err, out, print_json
from skillforge.cli.output import plain, styled
from skillforge.config import Workspace
from skillforge.errors import BadArgument
from skillforge.state.cliopts import DEFAULT_WINDOW_DAYS

if TYPE_CHECKING:
    from skillforge.state.suggest import Suggestions


def suggest(window_days: Annotated[float, typer.Option("--window-days", help="Read NONE decisions of this many days.")] = DEFAULT_WINDOW_DAYS,
            min_size: Annotated[int | None, typer.Option("--min-size", show_default=False,
                                                         help="Smallest cluster, in distinct queries (default 8).")] = None,
            propose: Annotated[bool, typer.Option("--propose", help="Run `skills new` on each PROPOSE cluster: "
                                                  "draft, check, and leave it waiting for review.")] = False,
            workspace: WorkspaceOpt = None, as_json: JsonOpt = False) -> None:
    """Cluster the queries no skill answered (router log: CLI and MCP) and propose a new skill per
    cluster of at least --min-size queries; clusters of jokes, trivia or chit-chat are refused.
    With --propose, each proposed cluster goes through `skills new` (its drafts wait for review)."""
    from rich.progress import MofNCompleteColumn, Progress, TimeElapsedColumn

    # imported here: they import numpy, which no other command needs at the CLI's start
    from skillforge.library.suggest import scan
    from skillforge.rules.clusters import MIN_CLUSTER_SIZE
    from skillforge.rules.health import valid_window

    min_size = MIN_CLUSTER_SIZE if min_size is None else min_size
    if not valid_window(window_days):
        raise BadArgument(f"--window-days must be a positive number of days, not {window_days}")
    if min_size < 2:
        raise BadArgument(f"--min-size must be at least 2 distinct queries, not {min_size}")
    ws = Workspace.open(workspace)
    if not err.is_terminal:  # a pipe or a log: no bar to draw
        found = scan(ws, window_days=window_days, min_size=min_size)
    else:
        with Progress(*Progress.get_default_columns(), MofNCompleteColumn(), TimeElapsedColumn(), console=err,
                      transient=True) as bar:
            task = bar.add_task("embedding the unanswered queries", total=None)
            found = scan(ws, window_days=window_days, min_size=min_size,
                         progress=lambda done, total: bar.update(task, completed=done, total=total))
    runs = drafted(ws, found) if propose else None
    if as_json:
        print_json({**found.model_dump(mode="json"), **({"runs": runs} if runs is not None else {})})
    else:
        show(found)
        for r in runs or []:
            out.print(plain(f"{r['cluster']} -> {r.get('skill') or r.get('name')}: {r['status']}: {r['message']}"),
                      soft_wrap=True)
    if runs and any(r["status"] not in ("PENDING_REVIEW", "NO_IMPROVEMENT", "REFUSED") for r in runs):
        raise typer.Exit(4)


def drafted(ws: Workspace, found: Suggestions, runner: object | None = None) -> list[dict[str, object]]:
    """`skills new` on each PROPOSE cluster, one after another: its need, name and queries. A name
    taken meanwhile or an empty queries file is that cluster's REFUSED line, not the end of the rest."""
    from pathlib import Path

    from skillforge.cli.skills_new import read_queries
    from skillforge.errors import SkillForgeError
    from skillforge.runners.evolve import Runner
    from skillforge.state.suggest import SuggestStatus

    runner = runner or Runner(ws)
    runs: list[dict[str, object]] = []
    for k in found.clusters:
        if k.status is not SuggestStatus.PROPOSE or not k.need:
            continue
        try:
            queries = read_queries(Path(k.queries_file))[0] if k.queries_file else []  # a file suggest wrote itself
            with err.status(f"drafting a skill for cluster {k.id}…"):
                s = runner.capture(k.need, name=k.name, queries=queries)  # type: ignore[attr-defined]
            runs.append({"cluster": k.id, **{key: s.get(key) for key in ("run_id", "skill", "status", "message")}})
        except SkillForgeError as e:
            runs.append({"cluster": k.id, "name": k.name, "status": "REFUSED", "message": f"{type(e).__name__}: {e}"})
    return runs


def show(found: Suggestions) -> None:
    from skillforge.state.suggest import SuggestStatus

    c = found.counts
    if found.archived_before:
        err.print(plain(f"note: router log lines before {found.archived_before} were moved to runs/archive/ by "
                        "`runs prune`: the window reads only what came after"))
    if c.malformed:
        err.print(plain(f"skipped {c.malformed} of {c.lines} lines of {found.log} that are not router records"))
    if not c.in_window:
        why = "holds no line since `runs prune` archived the older ones" if not c.lines and found.archived_before \
            else "is empty (nothing routed since it was made)" if not c.lines and Path(found.log).exists() \
            else "does not exist yet (nothing routed)" if not c.lines else \
            f"holds no NONE decision in the last {found.window_days:g} days ({c.none_decisions} in all)"
        err.print(plain(f"nothing to suggest: {found.log} {why}"))
        return
    sources = ", ".join(f"{n} {s}" for s, n in c.by_source.items())
    out.print(plain(f"{c.in_window} NONE decisions in {found.window_days:g} days ({sources}), {c.distinct} distinct "
                    f"queries; clusters of at least {found.min_size}: {len(found.clusters)}"
                    + (f" ({c.clustered} most recent clustered)" if c.clustered < c.distinct else "")
                    + (f"; {c.eval_queries} on evaluation-set queries left out" if c.eval_queries else "")
                    + (f"; {c.held_out_copies} near-copies of held-out queries left out" if c.held_out_copies else "")))
    for k in found.clusters:
        colour = "green" if k.status is SuggestStatus.PROPOSE else "yellow"
        out.print()
        out.print(styled((k.status.value, colour), f" {k.id}: {k.size} queries, asked {k.occurrences} times "
                         f"({', '.join(f'{n} {s}' for s, n in k.sources.items())})"))
        out.print(plain(f"  {k.reason}"))
        for r in k.representatives:
            out.print(plain(f"  - {r}"))
        if k.command:
            out.print(plain(f"  next: {k.command}"), soft_wrap=True)
    if not found.clusters:
        out.print(plain(f"no cluster of {found.min_size} or more similar queries: nothing to propose"))
