"""`skillforge runs`: list, show, cancel, prune and redact evolve runs (moved out of cli/evolve.py,
which was at its size limit)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from skillforge.cli.common import WorkspaceOpt, login_name
from skillforge.cli.evolve import EXIT, JsonOpt, _runner, err, out, print_one_json, show_summary
from skillforge.cli.output import plain
from skillforge.cli.runs_prune import runs_prune
from skillforge.cli.runs_redact import runs_redact
from skillforge.config import Workspace


runs_app = typer.Typer(no_args_is_help=True, help="Evolve runs: list, show, cancel and prune.")


@runs_app.command("list")
def runs_list(as_json: JsonOpt = False, workspace: WorkspaceOpt = None) -> None:
    """Every evolve run of the workspace, oldest first."""
    from skillforge.runners.reader import RunReader

    reader = RunReader(Workspace.open(workspace))
    rows = reader.rows()
    if reader.elsewhere:  # runs made with a Postgres checkpointer are not listed without its URL (QA 36 F6)
        err.print(plain(f"note: listing the runs in {reader.where}{reader.elsewhere}"), soft_wrap=True)
    if as_json:
        print_one_json(rows)
        return
    t = Table("run", "kind", "skill", "status", "started")
    for r in rows:
        t.add_row(*map(plain, (r["run_id"], r["kind"], r["skill"], r["status"], r["started_at"])))
    out.print(t)


@runs_app.command("show")
def runs_show(run_id: Annotated[str, typer.Argument(help="The run id.")], as_json: JsonOpt = False,
              workspace: WorkspaceOpt = None) -> None:
    """One run: status, root cause, candidates and why each stopped (with rationale and leak
    findings in --json), scores, the review answer, release."""
    from skillforge.runners.reader import RunReader

    summary = RunReader(Workspace.open(workspace)).summary(run_id)
    show_summary(summary, as_json)
    review = summary.get("review")
    if not as_json and isinstance(review, dict):
        out.print(plain(f"  answered: {review['action']} by {review['reviewer'] or 'someone'} "
                        f"at {review['answered_at'] or '?'}: {review['comment']}"), soft_wrap=True)


@runs_app.command("cancel")
def runs_cancel(run_id: Annotated[str, typer.Argument(help="The run id.")],
                comment: Annotated[str, typer.Option(help="Why (kept with the run).")] = "",
                as_json: JsonOpt = False, workspace: WorkspaceOpt = None) -> None:
    """Close an open run (killed, paused at its budget, waiting for review): CANCELLED, nothing
    published, and the skill may be evolved again (exit 3, as for a rejected run). A run another
    process is driving now is refused at once, naming that process (exit 2)."""
    summary = _runner(Workspace.open(workspace)).cancel(run_id, comment=comment, by=login_name())
    show_summary(summary, as_json)
    raise typer.Exit(EXIT.get(str(summary["status"]), 5))


runs_app.command("prune")(runs_prune)  # cli/runs_prune.py
runs_app.command("redact")(runs_redact)  # cli/runs_redact.py


__all__ = ["runs_app"]
