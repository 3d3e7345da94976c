"""`skillforge runs prune`: what ended runs no longer need, removed (runners/prune.py does it;
rules/prune.py decides)."""

from __future__ import annotations

import math
from typing import Annotated

import typer

from skillforge.cli.common import JsonOpt, WorkspaceOpt, out, print_json
from skillforge.cli.output import plain
from skillforge.config import Workspace
from skillforge.errors import BadArgument

EXIT_BUSY = 4
"""The rows went, but a file stayed busy (another process) and its space was not given back: run again."""


def runs_prune(older_than: Annotated[float, typer.Option("--older-than", metavar="DAYS",
                                                         help="Prune runs that ended more than DAYS days ago.")],
               dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would go, change nothing.")] = False,
               as_json: JsonOpt = False, workspace: WorkspaceOpt = None) -> None:
    """Remove what runs that ended more than DAYS ago no longer need: an ended evolve run keeps only
    its last checkpoint (runs show still shows it), an ended evaluation's checkpoints go (its verdict
    and traces stay in runs/), with their request-ledger rows (totals stay) and cache answers older
    than DAYS (unless an open run began before them); runs/router.jsonl's lines older than DAYS move
    to runs/archive/ (the last use of each skill is kept for skills health); then VACUUM. Open runs
    (running, killed and resumable, paused at budget or review) and runs of a skill with a PREPARING
    release or an open canary are never touched. Exit 4 when a file was busy and its space is not
    yet given back."""
    from skillforge.rules.prune import MAX_DAYS
    from skillforge.runners.prune import prune_runs

    if not math.isfinite(older_than) or not 0 <= older_than <= MAX_DAYS:
        raise BadArgument(f"--older-than must be a number of days between 0 and {MAX_DAYS}, got {older_than}")
    report = prune_runs(Workspace.open(workspace), older_than, dry_run=dry_run)
    data = report.as_json()
    if as_json:
        print_json(data)
    else:
        verb = "would remove" if dry_run else "removed"
        runs = len(data["evolve_runs"]) + len(data["evaluate_runs"])  # type: ignore[arg-type]
        out.print(plain(f"{verb}: {runs} ended run(s) ({len(data['evolve_runs'])} evolve kept to their last "  # type: ignore[arg-type]
                        f"checkpoint, {len(data['evaluate_runs'])} evaluate), {report.checkpoint_rows} checkpoint "  # type: ignore[arg-type]
                        f"rows ({report.checkpoint_bytes} bytes), {report.ledger_rows} ledger rows, "
                        f"{report.cache_rows} cache rows ({report.cache_bytes} bytes)"), soft_wrap=True)
        routed = report.router_log
        if routed is not None and (routed.lines or routed.kept):
            where = f" to {routed.archive}" if routed.archive else ""
            out.print(plain(f"  runs/router.jsonl: {routed.lines} line(s) ({routed.bytes} bytes) "
                            f"{'would move' if dry_run else 'moved'}{where}, {routed.kept} kept"), soft_wrap=True)
        for why, ids in data["kept"].items():  # type: ignore[union-attr]
            out.print(plain(f"  kept ({why}): {len(ids)}"))
        for name, size in report.files.items():
            after = f" -> {size['after']}" if "after" in size else ""
            out.print(plain(f"  {name}: {size['before']}{after} bytes"))
        for name in report.busy:
            out.print(plain(f"  {name}: busy (another process); its space comes back at the next prune"))
    raise typer.Exit(EXIT_BUSY if report.busy else 0)
