"""`skillforge judge label` (a person labels stored output pairs blind) and `skillforge judge
calibrate` (the configured judge measured against those labels)."""

from __future__ import annotations

import typer

from skillforge.cli.judge_calibrate import calibrate, status
from skillforge.cli.judge_label import label

judge_app = typer.Typer(no_args_is_help=True,
                        help="Label output pairs blind, and calibrate the judge against the labels.")
judge_app.command("label")(label)
judge_app.command("calibrate")(calibrate)
judge_app.command("status")(status)
