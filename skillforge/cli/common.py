"""What the CLI's command modules share: the consoles, the common options, opening a workspace's
services (library/services.py), and the one way to fail with a message."""

from __future__ import annotations

import difflib
import json
import os
import re
import shlex
import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from rich.console import Console

from skillforge.cli.output import json_safe, styled
from skillforge.config import WORKSPACE_ENV, Workspace

if TYPE_CHECKING:  # the library is imported by the command that opens it, not to build the CLI
    from skillforge.library.services import Services

# Piped output is read by people and scripts alike: do not squeeze tables to 80 columns.
out = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 160)


def nonempty_path(value: str) -> Path:
    """A path given on the command line; "" is refused (Path("") would be the current folder)."""
    if not value.strip():
        raise typer.BadParameter("an empty path; use '.' for the current folder")
    return Path(value)


def one_of(choices: type[StrEnum]) -> Callable[[str], StrEnum]:
    """A parser for an option whose value is one of an enum's: a typo is a usage error that lists
    them and offers the closest ("'evolv' is not one of evolve, evaluate, route; did you mean
    'evolve'?"), not the validator's "Value error, ..." wording."""
    def parse(value: str) -> StrEnum:
        try:
            return choices(value)
        except ValueError:
            names = [c.value for c in choices]
            close = difflib.get_close_matches(value, names, n=1)
            raise typer.BadParameter(f"{value!r} is not one of {', '.join(names)}"
                                     + (f"; did you mean {close[0]!r}?" if close else "")) from None
    return parse


_COMMAND = re.compile(r"skillforge (?:[^`()\n;,]|,(?! ))*")
"""A command in a message: up to a backtick, a parenthesis, a semicolon, a comma before a space
(", and start a new run": QA 43 M3) or the line's end."""


def pasteable(text: str) -> str:
    """`text` with `-w WS` added to each `skillforge ...` command in it, when a bare command would not
    find the workspace this process opened (it came from -w and is neither the current folder nor
    $SKILLFORGE_WORKSPACE): a next step copied into another terminal then works (QA pass 16 M1)."""
    root = Workspace.opened
    if root is None or Path(os.environ.get(WORKSPACE_ENV) or ".").expanduser().resolve() == root:
        return text
    flag = f" -w {shlex.quote(str(root))}"

    def add(m: re.Match[str]) -> str:
        cmd = m.group(0)
        bare = cmd.rstrip()
        return cmd if " -w " in f"{bare} " else bare + flag + cmd[len(bare):]
    return _COMMAND.sub(add, text)


WorkspaceOpt = Annotated[Path | None, typer.Option("--workspace", "-w", envvar=WORKSPACE_ENV, parser=nonempty_path,
                                                   metavar="PATH",
                                                   help="Workspace folder (default: current directory).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
ForceOpt = Annotated[bool, typer.Option("--force", help="Overwrite unpublished edits in the skill folder after "
                                                         "saving them under runs/backups/.")]

def checked_why(value: str) -> str:
    """`-m WHY` as given, or BadArgument (exit 2, before anything is done) when it holds a control,
    bidi or invisible character (rules/comment.py), named by code point."""
    from skillforge.errors import BadArgument
    from skillforge.rules.comment import comment_problem

    if problem := comment_problem(value):
        raise BadArgument(problem)
    return value


WhyOpt = Annotated[str, typer.Option("--comment", "-m", callback=checked_why,
                                     help="Why: recorded with the user's name in the release's 'triggered by' "
                                          "(`releases list`); one line of plain text.")]


def login_name() -> str:
    """Who runs the command: the login name, or `uid N` where there is none (a bare container with
    no LOGNAME/USER and no passwd entry, where getpass.getuser() raises)."""
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return f"uid {os.getuid()}"


def by_user(what: str, comment: str = "") -> str:
    """`cli publish by alice: fix the dump name`: who (the login name) and, if given, why."""
    why = " ".join(comment.split())[:200]
    return f"{what} by {login_name()}" + (f": {why}" if why else "")


def services(workspace: Path | None) -> Services:
    from skillforge.library.services import Services

    return Services(Workspace.open(workspace))


def print_json(data: object) -> None:
    """Indented JSON on stdout, written as is (no markup, no re-parsing; C1 controls escaped as JSON)."""
    sys.stdout.write(json_safe(json.dumps(data, ensure_ascii=False, indent=2, default=str)) + "\n")


def fail(message: str, code: int = 2) -> NoReturn:
    err.print(styled(("error:", "red"), " ", message), soft_wrap=True)
    raise typer.Exit(code)
