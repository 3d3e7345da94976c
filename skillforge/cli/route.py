"""`skillforge route ...`: route a query, evaluate, calibrate and fit the router."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from typer.core import TyperGroup

from skillforge.cli.output import json_safe, plain, styled
from skillforge.config import WORKSPACE_ENV, Workspace

WorkspaceOpt = Annotated[Path | None, typer.Option("--workspace", "-w", envvar=WORKSPACE_ENV,
                                                   help="Workspace folder (default: current directory).")]
CasesOpt = Annotated[Path, typer.Option("--cases", help='JSONL of {"query": ..., "expected": skill name or null}.')]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
NoLlmOpt = Annotated[bool, typer.Option("--no-llm", help="Stop after the embed layer even if a router model is set.")]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="Bypass the LLM response cache.")]
console = Console(width=None if sys.stdout.isatty() else 160)


class RouteGroup(TyperGroup):
    """`skillforge route "query"` runs the hidden `query` command; `route eval|calibrate|fit` the others."""

    def parse_args(self, ctx, args):  # noqa: ANN001, ANN201 - click's signature
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["query", *args]
        return super().parse_args(ctx, args)


route_app = typer.Typer(cls=RouteGroup, no_args_is_help=True,
                        help='Route a query to a skill: `skillforge route "query"`; eval, calibrate, fit.')


def _context(workspace: Path | None, skills: Path | None = None, *, use_llm: bool = True, no_cache: bool = False):  # noqa: ANN202
    """A RouteContext over the workspace's published skills, or over a folder of skills (--skills)."""
    from skillforge import skillfile
    from skillforge.context import RouteContext, route_context
    from skillforge.routing.embedding import VECTORS_FILE, VectorCache, get_embedder
    from skillforge.llm.client import build_llm
    from skillforge.routing.index import RouteIndex
    from skillforge.state.llm import Role

    ws = Workspace.open(workspace)
    if skills is None:
        return ws, route_context(ws, use_llm=use_llm, no_cache=no_cache)
    report = skillfile.scan(skills.resolve(), skills.resolve())
    for e in report.errors:
        Console(stderr=True).print(styled(("skipped", "yellow"), " ", e))
    index = RouteIndex.build([s.skill for s in report.skills.values()], get_embedder(),
                             cache=VectorCache(ws.runs_dir / VECTORS_FILE), ws=ws)
    llm = build_llm(ws, no_cache=no_cache) if use_llm else None
    llm = llm if llm is not None and llm.configs[Role.ROUTER].configured else None
    return ws, RouteContext(index=index, llm=llm, router_log=ws.router_log)


@route_app.command("query", hidden=True)
def route_query(query: Annotated[str, typer.Argument(help="The user's query.")],
                candidates: Annotated[str | None, typer.Option(help="Comma-separated skill names to choose from.")] = None,
                workspace: WorkspaceOpt = None, as_json: JsonOpt = False, no_llm: NoLlmOpt = False,
                no_cache: NoCacheOpt = False) -> None:
    """Route one query: the chosen skill (or NONE), the layer that decided, scores and latency."""
    from skillforge.graphs.route import route

    _, ctx = _context(workspace, use_llm=not no_llm, no_cache=no_cache)
    names = [c.strip() for c in candidates.split(",") if c.strip()] if candidates else None
    state = route(query, ctx, names)
    if as_json:
        typer.echo(json_safe(state.model_dump_json()))
        return
    console.print(styled((state.chosen or "NONE", "bold"), f"  (layer: {state.hit_layer.value if state.hit_layer else 'none'})"))
    console.print(plain(f"reason: {state.reason}"))
    if state.top_k:
        console.print(plain("top-k: " + ", ".join(f"{n} {state.scores.get('embed', {}).get(n, 0):.3f}" for n in state.top_k)))
    console.print(plain("latency ms: " + ", ".join(f"{k} {v:.1f}" for k, v in state.latency_ms.items())))


@route_app.command("eval")
def route_eval(cases: CasesOpt, skills: Annotated[Path | None, typer.Option(help="Route over this folder of skills instead of the published ones.")] = None,
               workspace: WorkspaceOpt = None, as_json: JsonOpt = False, no_llm: NoLlmOpt = False,
               no_cache: NoCacheOpt = False) -> None:
    """Recall@1/@3, NONE precision/recall, layer shares, latency per layer, worst confusions."""
    from skillforge.graphs.route import route
    from skillforge.routing.eval import summarize
    from skillforge.routing.fit import load_cases

    _, ctx = _context(workspace, skills, use_llm=not no_llm, no_cache=no_cache)
    labelled = load_cases(cases, ctx.index.names)
    ctx.source = "route eval"  # logged like every decision, marked so traffic stats can leave it out
    results = [(c, route(c.query, ctx)) for c in labelled]
    report = summarize(results)
    report["router"] = {"embedder": ctx.index.embedder.name, "scorer": ctx.index.scorer.value,
                        "thresholds": ctx.index.thresholds.model_dump(mode="json"), "llm": ctx.llm is not None}
    if as_json:
        typer.echo(json_safe(json.dumps(report, ensure_ascii=False)))
        return
    table = Table("metric", "value")
    for key in ("recall_at_1", "recall_at_3", "none_precision", "none_recall", "accuracy"):
        table.add_row(key, plain(report[key]))
    table.add_row("layer_share", plain(json.dumps(report["layer_share"])))
    for layer, p in report["latency_ms"].items():  # type: ignore[union-attr]
        table.add_row(plain(f"latency {layer} p50/p95 ms"), plain(f"{p['p50']} / {p['p95']}"))
    console.print(table)
    console.print(plain(f"{len(labelled)} queries; scorer {ctx.index.scorer.value}, embedder {ctx.index.embedder.name}, "
                        f"{'calibrated' if ctx.index.thresholds.calibrated else 'default'} thresholds"))
    for c in report["worst_confusions"]:  # type: ignore[union-attr]
        console.print(plain(f"  {c['count']}x expected {c['expected'] or 'NONE'} -> got {c['chosen'] or 'NONE'}"))


@route_app.command("calibrate")
def route_calibrate(cases: CasesOpt, workspace: WorkspaceOpt = None, as_json: JsonOpt = False) -> None:
    """Fit the rule margin and the embed HIGH/LOW/MARGIN thresholds on labelled queries."""
    from skillforge.routing import fit as route_fit

    ws, ctx = _context(workspace, use_llm=False)
    th = route_fit.calibrate(ws, ctx.index, route_fit.load_cases(cases, ctx.index.names))
    typer.echo(th.model_dump_json(indent=None if as_json else 2))


@route_app.command("fit")
def route_fit_cmd(cases: CasesOpt, workspace: WorkspaceOpt = None, as_json: JsonOpt = False) -> None:
    """Train the scoring head (skills' examples + labelled queries) and calibrate its thresholds."""
    from skillforge.routing import fit as route_fit

    ws, ctx = _context(workspace, use_llm=False)
    with Console(stderr=True).status("fitting the scoring head…"):
        head, th = route_fit.fit(ws, ctx.index, route_fit.load_cases(cases, ctx.index.names))
    out = {"labels": len(head.labels), "thresholds": th.model_dump(mode="json")}
    typer.echo(json.dumps(out) if as_json else json.dumps(out, indent=2))
