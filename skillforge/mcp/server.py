"""The MCP server: the official SDK's MCPServer with four tools over an AgentSurface.

The SDK owns the protocol (JSON-RPC framing, stdio, streamable HTTP; stdio.py only answers the
lines its stdio transport cannot read); this module only declares the tools. All their work runs
on one worker thread, which also loaded the surface: the store's
SQLite connection stays on the thread that opened it, calls are served one at a time, and the
event loop stays free for the protocol while a route runs. A SkillForgeError (an unknown skill, a
bad outcome or session id) becomes a tool error (`isError`) with its message; the server carries on.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, TypeVar

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import StrictBool, StrictInt, ValidationError

from skillforge.config import Workspace
from skillforge.errors import SkillForgeError
from skillforge.mcp.stdio import serve_stdio
from skillforge.mcp.surface import AgentSurface, FeedbackAnswer, Outcome, RouteAnswer, SkillBody

log = logging.getLogger(__name__)
T = TypeVar("T")

NAME = "skillforge"
INSTRUCTIONS = """SkillForge serves this workspace's skills: instructions for tasks, loaded on demand.
For a user's request, call route(query): it names the skill to use, or null when none fits.
Call use_skill(name, reason, session_id) to get that skill's instructions and follow them; keep one
session_id per conversation. skills_index lists every skill if you want to choose yourself. When
the task is done, call record_feedback(session_id, skill, outcome) with good, bad or neutral."""


class Worker:
    """One thread that owns the AgentSurface: loads it, then runs every tool call on it."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="skillforge-mcp")
        self.surface: AgentSurface | None = None

    def load(self, factory: Callable[[], AgentSurface]) -> AgentSurface:
        self.surface = self._pool.submit(factory).result()
        return self.surface

    async def run(self, fn: Callable[[AgentSurface], T]) -> T:
        """`fn(surface)` on the worker thread; a SkillForgeError becomes a ToolError (isError)."""
        surface = self.surface
        assert surface is not None, "Worker.load first"
        try:
            return await asyncio.wrap_future(self._pool.submit(fn, surface))
        except SkillForgeError as e:
            raise ToolError(str(e)) from e

    def close(self) -> None:
        if self.surface is not None:
            self._pool.submit(self.surface.close).result()
        self._pool.shutdown(wait=True)


class SkillForgeServer(MCPServer):
    """The SDK's server, with arguments that fail a tool's schema told in one line per field
    ("route: bad arguments: query: field required") instead of pydantic's report, which repeats
    the caller's whole arguments and a link per field; and an argument the tool does not take
    refused by name (the SDK drops it silently: `release` given to record_feedback was ignored)."""

    async def call_tool(self, name, arguments, context=None):  # type: ignore[no-untyped-def]
        tool = next((t for t in await self.list_tools() if t.name == name), None)
        if tool is not None and isinstance(arguments, dict):
            accepted = list((tool.input_schema or {}).get("properties") or {})
            unknown = [str(k) for k in arguments if k not in accepted]
            if unknown:
                raise ToolError(unknown_arguments_message(name, unknown, accepted))
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as e:
            if isinstance(e, UnexpectedToolError) or not isinstance(e.__cause__, ValidationError):
                raise
            raise ToolError(argument_message(name, e.__cause__)) from e.__cause__


def unknown_arguments_message(tool: str, unknown: list[str], accepted: list[str]) -> str:
    """`tool: unknown argument(s) release: it takes session_id, skill, outcome, ...` (names cut to 60
    characters: they are the caller's text)."""
    said = ", ".join(repr(u[:60]) for u in unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
    takes = ", ".join(accepted) if accepted else "no arguments"
    return f"{tool}: unknown argument{'s' if len(unknown) > 1 else ''} {said}: it takes {takes}"


def argument_message(tool: str, error: ValidationError) -> str:
    """`tool: bad arguments: FIELD: what is wrong; ...`, in the order pydantic found them."""
    parts = []
    for err in error.errors(include_url=False, include_input=False):
        field = ".".join(str(p) for p in err.get("loc", ())) or "arguments"
        msg = str(err.get("msg", "invalid"))
        parts.append(f"{field}: {msg[:1].lower()}{msg[1:]}")
    return f"{tool}: bad arguments: " + "; ".join(parts)


def build_server(worker: Worker, version: str = "") -> MCPServer:
    """The MCPServer with exactly the four tools, each a thin call into the worker's surface."""
    server: MCPServer = SkillForgeServer(NAME, version=version, instructions=INSTRUCTIONS)
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    @server.tool(annotations=read_only)
    async def skills_index() -> str:
        """The skills you can load: name, description and when to use each (bodies come from use_skill)."""
        return await worker.run(lambda s: s.index())

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, idempotent_hint=True, open_world_hint=False))
    async def route(query: str) -> RouteAnswer:
        """Which skill should handle the user's request: its name, or null (NONE) when no skill fits,
        with the deciding layer, the reason and the scores. Pass the user's request as written."""
        return await worker.run(lambda s: s.route(query))

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, open_world_hint=False))
    async def use_skill(name: str, reason: str, session_id: str) -> Annotated[CallToolResult, SkillBody]:
        """Load a skill: the instructions (body) of the release served to this session, with the
        release id. `reason`: why you load it; `session_id`: one id you keep for this conversation
        (feedback refers to it; a canary release is served by it)."""
        got = await worker.run(lambda s: s.use_skill(name, reason, session_id))
        head = f"skill {got.name}, release {got.release_id} (version {got.version})\n\n"
        return CallToolResult(content=[TextContent(type="text", text=head + got.body)],
                              structured_content=got.model_dump(mode="json"))

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, open_world_hint=False))
    async def record_feedback(session_id: str, skill: str, outcome: Outcome, comment: str | None = None,
                              private: StrictBool = False, tokens: StrictInt | None = None) -> FeedbackAnswer:
        """How a skill you used worked out: outcome good, bad or neutral, and optionally a short
        comment on what went wrong or right. `private`: the comment may hold the user's data, keep
        it out of anything shown to models. `tokens`: what this session spent with the skill, if known.
        Call use_skill for the skill in this session first: feedback is about the release it served."""
        return await worker.run(lambda s: s.feedback(session_id, skill, outcome, comment, private, tokens))

    return server


class HostRefused(SkillForgeError):
    """`--host` that is not a loopback address: the server has no authentication."""


def check_loopback(host: str) -> str:
    """`host` if it is localhost or a loopback address; HostRefused otherwise."""
    if host == "localhost":
        return host
    try:
        if ipaddress.ip_address(host).is_loopback:
            return host
    except ValueError:
        pass
    raise HostRefused(f"--host {host}: the MCP server has no authentication, so it listens on loopback only "
                      "(127.0.0.1, ::1 or localhost)")


def serve(ws: Workspace, *, http_port: int | None = None, host: str = "127.0.0.1", use_llm: bool = True,
          version: str = "") -> None:
    """Load the workspace once, then serve MCP on stdio (default) or streamable HTTP at
    http://HOST:PORT/mcp until the client leaves (stdin closed) or the process is stopped."""
    host = check_loopback(host)
    worker = Worker()
    try:
        surface = worker.load(lambda: AgentSurface(ws, use_llm=use_llm))
        log.info("skillforge mcp: %d skills loaded from %s", len(surface.registry.skills), ws.root)
        server = build_server(worker, version)
        if http_port is None:
            anyio.run(serve_stdio, server)
        else:
            asyncio.run(_serve_http(server, host, http_port))
    finally:
        worker.close()


async def _serve_http(server: MCPServer, host: str, port: int) -> None:
    """The SDK's streamable HTTP app under uvicorn, logging through `logging` (stderr), no access log."""
    import uvicorn

    app = server.streamable_http_app(host=host)
    config = uvicorn.Config(app, host=host, port=port, log_config=None, access_log=False, log_level="warning")
    await uvicorn.Server(config).serve()
