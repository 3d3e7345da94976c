"""`skillforge skills use NAME [--session S]`: what the agents' use_skill tool serves, from the shell."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from skillforge.cli.common import JsonOpt, WorkspaceOpt, err, print_json, services
from skillforge.cli.output import plain, safe


def skills_use(name: str, reason: Annotated[str, typer.Option(help="Why the agent loads it (logged).")] = "cli",
               session: Annotated[str | None, typer.Option("--session", help="The agent's session id: recorded "
                                                           "(skill_used), and it decides whether a canary is served.")] = None,
               workspace: WorkspaceOpt = None, as_json: JsonOpt = False) -> None:
    """Print the body of the release `use_skill` gives this session: the live release, or the
    skill's canary for a session in its bucket (never without --session); stderr says which."""
    served = services(workspace).registry.use(name, reason, session)
    rel = served.release
    if as_json:
        print_json({"name": name, "release_id": rel.release_id, "version": rel.version, "arm": served.arm,
                    "canary": served.canary_id, "body": served.body})
        return
    err.print(plain(f"{name} {rel.version} (release {rel.release_id[:8]}, {served.arm or 'live'})"))
    sys.stdout.write(safe(served.body) if sys.stdout.isatty() else served.body)  # exact bytes for an agent or a pipe
