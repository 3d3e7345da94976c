"""`skillforge llm ...`: endpoint status per role, and the embedded local model server."""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from skillforge.cli.common import WorkspaceOpt, one_of
from skillforge.cli.output import json_safe, plain, safe, styled
from skillforge.config import Workspace
from skillforge.errors import LLMError
from skillforge.rules.roles import LLMCommand, Need, role_blocks, role_need
from skillforge.state.cliopts import Role

if TYPE_CHECKING:  # the role configs (pydantic) are read by the commands that need them
    from skillforge.llm.config import RoleConfig

llm_app = typer.Typer(no_args_is_help=True, help="LLM endpoints by role, and the embedded local model.")
PING_MAX_TOKENS = 8
PING_TIMEOUT_S = 30.0


def _endpoint(cfg: RoleConfig) -> str | None:
    """The endpoint a role would call; None for a role with no endpoint or model (it calls nothing:
    showing the OpenAI default there read as if calls would go to OpenAI)."""
    return cfg.identity[0] if cfg.configured else None


def ping(cfg: RoleConfig) -> dict[str, object]:
    """One tiny uncached call: does the role's endpoint answer, and how fast."""
    row: dict[str, object] = {"role": cfg.role.value, "source": cfg.source, "base_url": _endpoint(cfg),
                              "model": cfg.model, "ok": False, "latency_ms": None, "error": None}
    if not cfg.configured:
        row["error"] = "not configured"
        return row
    from skillforge.llm.client import LLM  # langchain + openai: imported only by commands that call a model

    quick = dataclasses.replace(cfg, max_tokens=PING_MAX_TOKENS, max_retries=0, timeout=min(cfg.timeout, PING_TIMEOUT_S))
    try:
        answer = LLM({cfg.role: quick}).text(cfg.role, [("user", "Reply with the single word OK.")], use_cache=False)
        row.update(ok=True, latency_ms=round(answer.latency_ms, 1))
    except LLMError as e:
        # The row is shared by every role on this endpoint and model (they are pinged once), and the
        # table already shows model and endpoint: drop the "role 'router' (m at url): " prefix.
        msg = str(e).removeprefix(f"role '{cfg.role.value}' ({cfg.model} at {cfg.identity[0]}): ")
        row["error"] = msg if "cut at the token cap" not in msg else None
        row["ok"] = "cut at the token cap" in msg  # it answered, only longer than the ping allows
    return row


@llm_app.command("status")
def status(workspace: WorkspaceOpt = None, as_json: Annotated[bool, typer.Option("--json")] = False,
           for_command: Annotated[LLMCommand | None, typer.Option(
               "--for", parser=one_of(LLMCommand), metavar="[evolve|evaluate|route]", help="Check only the roles this command uses (evolve: executor, judge, proposer; evaluate: "
                             "executor, judge; route: the router, if configured). Default: every command.")] = None,
           ) -> None:
    """Each role's endpoint and model, whether it answers, its latency, and whether the command needs it.
    Exit 1 only when a role the command needs is not configured or does not answer."""
    from skillforge.llm.config import workspace_configs

    ws = Workspace.open(workspace)
    configs = workspace_configs(ws)
    seen: dict[tuple[str | None, str | None], dict[str, object]] = {}
    rows = []
    for role in Role:
        cfg = configs[role]
        need = role_need(for_command, role)
        if need is Need.UNUSED:  # never pinged: a command that does not call it cannot fail on it
            row = {"role": role.value, "source": cfg.source, "base_url": _endpoint(cfg), "model": cfg.model,
                   "ok": None, "latency_ms": None, "error": None}
        else:
            if cfg.identity not in seen or not cfg.configured:
                seen[cfg.identity] = ping(cfg)
            row = {**seen[cfg.identity], "role": role.value, "source": cfg.source}
        blocks = role_blocks(need, cfg.configured, row["ok"])  # type: ignore[arg-type]
        rows.append({**row, "need": need.value, "blocks": blocks})
    if as_json:
        typer.echo(json_safe(json.dumps(rows, ensure_ascii=False)))
    else:
        table = Table("role", "needed", "model", "endpoint", "source", "answers", "latency ms")
        for r in rows:
            if r["ok"] is None:
                answers = plain(f"not checked: {for_command.value if for_command else 'nothing'} does not use it")
            elif r["ok"]:
                answers = styled(("yes", "green"))
            else:
                answers = styled(("no", "red" if r["blocks"] else "yellow"), f": {r['error']}" if r["error"] else "")
            table.add_row(*map(plain, (r["role"], r["need"], r["model"] or "-", r["base_url"] or "-", r["source"])), answers,
                          plain(r["latency_ms"] or "-"))
        Console(width=160).print(table)
    if any(r["blocks"] for r in rows):
        raise typer.Exit(1)


@llm_app.command("serve")
def serve(workspace: WorkspaceOpt = None,
          n_ctx: Annotated[int, typer.Option(help="Context window (>= 4096).")] = 8192,
          threads: Annotated[int | None, typer.Option(min=1, help="CPU threads (default: one per idle core, at least 1).")] = None,
          prompt_cache: Annotated[bool, typer.Option(help="llama.cpp's multi-state prompt cache.")] = True) -> None:
    """Start the embedded model (llama.cpp server on 127.0.0.1), or report the one already running."""
    from skillforge.llm import local_server

    ws = Workspace.open(workspace)
    with Console(stderr=True).status("assembling, verifying and starting the local model…"):
        info = local_server.serve(ws, n_ctx=max(n_ctx, 4096), n_threads=threads, prompt_cache=prompt_cache)
    typer.echo(safe(f"local model {info.model} at {info.url} (pid {info.pid})"))


@llm_app.command("stop")
def stop(workspace: WorkspaceOpt = None) -> None:
    """Stop this workspace's embedded model server."""
    from skillforge.llm import local_server

    stopped = local_server.stop(Workspace.open(workspace))
    typer.echo("stopped the local model server" if stopped else "no local model server was running")
