"""What the CLI's command modules share: the consoles, the common options, opening a workspace's
services, and the one way to fail with a message."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console

from skillforge.cli.output import json_safe, styled
from skillforge.config import WORKSPACE_ENV, Workspace
from skillforge.library.gitrepo import SkillsRepo
from skillforge.library.registry import SkillRegistry, verify_history
from skillforge.library.releases import ReleaseStateMachine
from skillforge.library.store import Store

# Piped output is read by people and scripts alike: do not squeeze tables to 80 columns.
out = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 160)


def nonempty_path(value: str) -> Path:
    """A path given on the command line; "" is refused (Path("") would be the current folder)."""
    if not value.strip():
        raise typer.BadParameter("an empty path; use '.' for the current folder")
    return Path(value)


WorkspaceOpt = Annotated[Path | None, typer.Option("--workspace", "-w", envvar=WORKSPACE_ENV, parser=nonempty_path,
                                                   metavar="PATH",
                                                   help="Workspace folder (default: current directory).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
ForceOpt = Annotated[bool, typer.Option("--force", help="Overwrite unpublished edits in the skill folder after "
                                                         "saving them under runs/backups/.")]


@dataclass
class Services:
    """What a command needs, opened on first use."""

    ws: Workspace

    @cached_property
    def store(self) -> Store:
        return Store(self.ws.db_path)

    @cached_property
    def repo(self) -> SkillsRepo:
        repo = SkillsRepo(self.ws.skills_dir)
        verify_history(self.store, repo)  # HistoryLost, once, for every command that reads releases
        return repo

    @cached_property
    def machine(self) -> ReleaseStateMachine:
        return ReleaseStateMachine(self.ws, self.store, self.repo)

    @cached_property
    def registry(self) -> SkillRegistry:
        return SkillRegistry.load(self.ws, self.store, self.repo)


def services(workspace: Path | None) -> Services:
    return Services(Workspace.open(workspace))


def print_json(data: object) -> None:
    """Indented JSON on stdout, written as is (no markup, no re-parsing; C1 controls escaped as JSON)."""
    sys.stdout.write(json_safe(json.dumps(data, ensure_ascii=False, indent=2, default=str)) + "\n")


def fail(message: str, code: int = 2) -> NoReturn:
    err.print(styled(("error:", "red"), " ", message), soft_wrap=True)
    raise typer.Exit(code)
