"""`skillforge mcp`: serve the workspace's skills to agents over MCP (stdio, or HTTP on loopback).

The SDK is imported when the command runs, never when the CLI starts."""

from __future__ import annotations

from typing import Annotated

import typer

from skillforge.cli.common import WorkspaceOpt
from skillforge.config import Workspace


def mcp(workspace: WorkspaceOpt = None,
        http: Annotated[int | None, typer.Option("--http", metavar="PORT", min=1, max=65535,
                                                 help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio.")] = None,
        host: Annotated[str, typer.Option(help="The address for --http; loopback only.")] = "127.0.0.1",
        no_llm: Annotated[bool, typer.Option("--no-llm", help="Route without the LLM layer even if a router model is set.")] = False) -> None:
    """Serve skills_index, route, use_skill and record_feedback over MCP (stdio by default).
    Loads the skills, router and embedder once; a newly published release is picked up on the next call."""
    from skillforge.cli.main import package_version
    from skillforge.mcp.server import check_loopback, serve  # the mcp SDK: only for this command

    check_loopback(host)
    serve(Workspace.open(workspace), http_port=http, host=host, use_llm=not no_llm, version=package_version())
