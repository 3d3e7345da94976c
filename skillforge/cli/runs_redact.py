"""`skillforge runs redact`: router log lines and feedback comments written before redaction on
write, redacted in place (runners/redact_logs.py does it; rules/redact.py decides)."""

from __future__ import annotations

from typing import Annotated

import typer

from skillforge.cli.common import JsonOpt, WorkspaceOpt, out, print_json
from skillforge.cli.output import plain
from skillforge.config import Workspace


def runs_redact(dry_run: Annotated[bool, typer.Option("--dry-run", help="Count what would change, change nothing.")] = False,
                as_json: JsonOpt = False, workspace: WorkspaceOpt = None) -> None:
    """Redact, in place, what was stored before redaction on write: queries and reasons in
    runs/router.jsonl and the archives `runs prune` made (runs/archive/router-*.jsonl.gz), and
    comments and reasons in runs/events/public.jsonl and private.jsonl. Keys, tokens, credential
    values, emails, phone and card numbers become [REDACTED:<kind>], as in a line written today.
    Each file is replaced atomically under the lock its writers take, so a concurrent route or
    feedback loses nothing. A line that is not JSON is kept as it is and counted. Prints counts
    per file and kind, never a secret."""
    from skillforge.runners.redact_logs import redact_logs

    report = redact_logs(Workspace.open(workspace), dry_run=dry_run)
    if as_json:
        print_json(report.as_json())
        raise typer.Exit(0)
    verb = "would redact" if dry_run else "redacted"
    for f in report.files:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(f.kinds.items()))
        bad = f", {f.malformed} line(s) not JSON kept as they are" if f.malformed else ""
        if f.unreadable:
            out.print(plain(f"  {f.path}: left as it is: {f.unreadable}"), soft_wrap=True)
        elif f.changed or f.malformed:
            out.print(plain(f"  {f.path}: {verb} {f.changed} of {f.lines} line(s)"
                            + (f" ({kinds})" if kinds else "") + bad), soft_wrap=True)
    if not report.changed:
        out.print("nothing to redact")
    else:
        out.print(plain(f"{verb}: {report.changed} line(s) in {sum(1 for f in report.files if f.changed)} file(s)"))
