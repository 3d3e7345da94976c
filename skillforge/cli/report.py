"""`skillforge report SKILL --html FILE`: a skill's release history and lineage as one static page."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from skillforge.cli.common import WorkspaceOpt, nonempty_path
from skillforge.cli.output import one_line, plain
from skillforge.config import Workspace


def existing_folder(value: str) -> Path:
    """A --reports folder: "" is refused (not the current folder), and so is one that is not there
    (a typo would silently leave every evaluation report out of the page)."""
    path = nonempty_path(value)
    if not path.is_dir():
        raise typer.BadParameter(f"{value}: {'not a folder' if path.exists() else 'no such folder'}")
    return path


def report(skill: Annotated[str, typer.Argument(help="The skill whose history to draw.")],
           html: Annotated[Path, typer.Option("--html", parser=nonempty_path, metavar="FILE", help="Write the page here.")],
           reports: Annotated[list[Path] | None, typer.Option("--reports", parser=existing_folder, metavar="DIR",
                                                           help="Folders to look in for evaluation reports "
                                                                "(default: runs/reports and the page's folder).")] = None,
           workspace: WorkspaceOpt = None) -> None:
    """Write the release history, lineage DAG (SVG), evaluations and diffs of SKILL as static HTML."""
    from rich.console import Console

    from skillforge.library.lineage import check_output, write_report

    target = check_output(html)  # NotWritable before any work
    ws = Workspace.open(workspace)
    path = write_report(ws, skill, target, report_dirs=[Path(p).resolve() for p in reports] if reports else None)
    Console().print(plain(f"wrote {one_line(path)}"))
