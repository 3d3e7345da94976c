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

from skillforge.cli.common import WorkspaceOpt, nonempty_path
from skillforge.cli.output import json_safe, plain, safe, styled
from skillforge.cli.route_compare import ForceOpt, check_coverage, guard, measure_current, share_option
from skillforge.config import Workspace
from skillforge.errors import SkillForgeError

CasesOpt = Annotated[Path, typer.Option("--cases", parser=nonempty_path, help='JSONL of {"query": ..., "expected": skill name or null}.')]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
NoLlmOpt = Annotated[bool, typer.Option("--no-llm", help="Stop after the embed layer even if a router model is set.")]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="Read nothing from the LLM response cache; fresh answers replace the stored ones.")]
MaybeCasesOpt = Annotated[Path | None, typer.Option("--cases", parser=nonempty_path, help='JSONL of {"query": ..., "expected": skill name or null}.')]
MinRejectOpt = Annotated[float | None, typer.Option(
    "--min-reject", parser=share_option,
    help="Hold at least this share of NONE queries unanswered (e.g. 0.8), then answer as many in-scope ones right as possible.")]
NoBankOpt = Annotated[bool, typer.Option("--no-bank", help="Do not use the shipped out-of-scope bank as NONE cases.")]
console = Console(width=None if sys.stdout.isatty() else 160)


class RouteGroup(TyperGroup):
    """`skillforge route "query"` runs the hidden `query` command; `route eval|calibrate|fit|reset`
    the others. The global options (cli/global_opts.py: -w/--workspace, --json) may also come
    between `route` and a subcommand (`route -w WS eval ...`): they move to just after its name,
    so the subcommand's word is never routed (and logged) as a query."""

    def parse_args(self, ctx, args):  # noqa: ANN001, ANN201 - click's signature
        from skillforge.cli.global_opts import global_option

        at = 0
        while at < len(args) and (found := global_option(args[at])) is not None:
            at += 2 if found[1] else 1
        if at < len(args) and args[at] in self.commands and args[at] != "query":
            args = [args[at], *args[:at], *args[at + 1:]]
        elif args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["query", *args]
        return super().parse_args(ctx, args)


NO_LLM = "the LLM layer off (--no-llm)"
"""The reason's words for an uncertain query when the command was told not to ask the router model."""


class SkillsFolderError(SkillForgeError):
    """`--skills DIR` that is missing, not a folder, or holds no valid skill."""


route_app = typer.Typer(cls=RouteGroup, no_args_is_help=True,
                        help='Route a query to a skill: `skillforge route "query"`; eval, calibrate, fit.')


def _context(workspace: Path | None, skills: Path | None = None, *, use_llm: bool = True, no_cache: bool = False,
             auto_head: bool = True):  # noqa: ANN202
    """A RouteContext over the workspace's published skills, or over a folder of skills (--skills);
    `auto_head` False for calibrate and fit, which calibrate the cosine scorer or train a head."""
    from skillforge.context import route_context

    ws = Workspace.open(workspace)
    ctx = route_context(ws, use_llm=use_llm, no_cache=no_cache, auto_head=auto_head) if skills is None else \
        _folder_context(ws, skills, use_llm=use_llm, no_cache=no_cache)
    if not use_llm:
        ctx.llm_off = NO_LLM
    return ws, ctx


def _folder_context(ws: Workspace, skills: Path, *, use_llm: bool, no_cache: bool):  # noqa: ANN202
    """A RouteContext over the valid skills of the folder `skills` (route eval --skills)."""
    from skillforge.skill import file as skillfile
    from skillforge.context import RouteContext, router_llm
    from skillforge.routing.embedding import VECTORS_FILE, VectorCache, get_embedder
    from skillforge.routing.index import RouteIndex

    if not skills.is_dir():
        raise SkillsFolderError(f"--skills {skills}: {'not a folder' if skills.exists() else 'no such folder'}")
    report = skillfile.scan(skills.resolve(), skills.resolve())
    if not report.skills:
        raise SkillsFolderError(f"--skills {skills}: no valid SKILL.md in it"
                                + (f" ({len(report.errors)} refused, the first: {report.errors[0]})" if report.errors else ""))
    for e in report.errors:
        Console(stderr=True).print(styled(("skipped", "yellow"), " ", e))
    from skillforge.routing.defaults import apply_auto

    index = RouteIndex.build([s.skill for s in report.skills.values()], get_embedder(),
                             cache=VectorCache(ws.runs_dir / VECTORS_FILE), ws=ws)
    apply_auto(ws, index)
    return RouteContext(index=index, llm=router_llm(ws, use_llm=use_llm, no_cache=no_cache), router_log=ws.router_log)


@route_app.command("query", hidden=True)
def route_query(query: Annotated[str, typer.Argument(help="The user's query.")],
                candidates: Annotated[str | None, typer.Option(help="Comma-separated skill names to choose from.")] = None,
                workspace: WorkspaceOpt = None, as_json: JsonOpt = False, no_llm: NoLlmOpt = False,
                no_cache: NoCacheOpt = False) -> None:
    """Route one query: the chosen skill (or NONE), the layer that decided, scores and latency."""
    names = [c.strip() for c in candidates.split(",") if c.strip()] if candidates is not None else None
    if names == []:
        raise SkillForgeError(f"--candidates {candidates!r} names no skill: give comma-separated skill names")
    ws, ctx = _context(workspace, use_llm=not no_llm, no_cache=no_cache)
    _refuse_retired(ws, [n for n in names or () if n not in ctx.index.cards])
    from skillforge.graphs.route import router_for

    state = router_for(ctx)(query, ctx, names)
    if as_json:
        typer.echo(json_safe(state.model_dump_json()))
        return
    console.print(styled((state.chosen or "NONE", "bold"), f"  (layer: {state.hit_layer.value if state.hit_layer else 'none'})"))
    console.print(plain(f"reason: {state.reason}"))
    if state.top_k:
        console.print(plain("top-k: " + ", ".join(f"{n} {state.scores.get('embed', {}).get(n, 0):.3f}" for n in state.top_k)))
    console.print(plain("latency ms: " + ", ".join(f"{k} {v:.1f}" for k, v in state.latency_ms.items())))


def _refuse_retired(ws: Workspace, unknown: list[str]) -> None:
    """SkillRetired for the first of `unknown` (--candidates names the index lacks) that is RETIRED,
    with the way back; an unknown name that never was a skill is left to the router's UnknownSkill."""
    from skillforge.errors import SkillRetired
    from skillforge.library.splitlinks import workspace_retired

    gone = [n for n in unknown if n in set(workspace_retired(ws))] if unknown else []
    if gone:
        raise SkillRetired(f"--candidates: skill '{gone[0]}' is RETIRED (out of the index and the router), so no "
                           f"query routes to it: leave it out, or bring it back with `skillforge release revert {gone[0]}`")


PAIRS_SHOWN = 5
"""How many confusion pairs the text output of `route eval` lists (--json: all)."""

EvalCasesOpt = Annotated[Path, typer.Option(
    "--cases", parser=nonempty_path, help='JSONL of {"query": ..., "expected": skill name or null, "candidates": [skill names] (optional)}.')]


@route_app.command("eval")
def route_eval(cases: EvalCasesOpt, skills: Annotated[Path | None, typer.Option(parser=nonempty_path, help="Route over this folder of skills instead of the published ones.")] = None,
               workspace: WorkspaceOpt = None, as_json: JsonOpt = False, no_llm: NoLlmOpt = False,
               no_cache: NoCacheOpt = False,
               show_curve: Annotated[bool, typer.Option("--curve", help="Also the answered-right / rejected trade-off over the embed threshold.")] = False) -> None:
    """Operating point (in-scope answered right, NONE rejected), top-1 of the ranking, recall@3,
    NONE precision/recall, layer shares, latency per layer, worst confusions, confused pairs of
    skills (with not_for hints); `--curve` adds the trade-off curve. Query vectors are embedded
    in batches and cached in runs/vectors.db."""
    from skillforge.routing.eval import curve, load_eval_cases, summarize, with_query_vectors

    ws, ctx = _context(workspace, skills, use_llm=not no_llm, no_cache=no_cache)
    # over a --skills folder, the labels are checked against its skills alone
    labelled = load_eval_cases(cases, ctx.index.names, *(_labels(ws) if skills is None else (None, ())))
    ctx.source = "route eval"  # logged like every decision, marked so traffic stats can leave it out
    from skillforge.graphs.route import reaches_embed, router_for

    pools = [None if c.candidates is None else list(c.candidates) for c in labelled]
    scored = [c.query for c, pool in zip(labelled, pools, strict=True) if reaches_embed(c.query, ctx, pool)]
    with Console(stderr=True).status(f"embedding {len(scored)} queries (cached ones are read)…"):
        ctx.index = prepared = with_query_vectors(ctx.index, scored)  # those the keywords leave undecided
    route = router_for(ctx)
    results = [(c, route(c.query, ctx, pool)) for c, pool in zip(labelled, pools, strict=True)]
    report = summarize(results, {name: card.description for name, card in ctx.index.cards.items()})
    report["router"] = {"embedder": ctx.index.embedder.name, "scorer": ctx.index.scorer.value,
                        "thresholds": ctx.index.thresholds.model_dump(mode="json"), "llm": ctx.llm is not None}
    report["query_vectors"] = prepared.query_vectors
    if show_curve:
        report["curve"] = curve(results, ctx.index.thresholds.margin)
    if as_json:
        typer.echo(json_safe(json.dumps(report, ensure_ascii=False)))
        return
    table = Table("metric", "value")
    op = report["operating_point"]
    table.add_row("in-scope answered right", f"{op['answered_right']} (of {op['in_scope']})")  # type: ignore[index]
    table.add_row("NONE rejected", f"{op['rejected']} (of {op['none']})")  # type: ignore[index]
    table.add_row("top1 (ranked first, any threshold)", plain(report["top1"]))
    for key in ("recall_at_1", "recall_at_3", "none_precision", "none_recall", "accuracy"):
        table.add_row(key, plain(report[key]))
    table.add_row("layer_share", plain(json.dumps(report["layer_share"])))
    band = report["llm_band"]
    if band["cases"]:  # type: ignore[index]
        table.add_row("router model's band", plain(
            f"{band['cases']} cases: the model right {band['llm_right']}, top-1 alone {band['top1_right']}, "  # type: ignore[index]
            f"NONE alone {band['none_right']} (gain {band['gain']:+d})"))  # type: ignore[index]
    guard = band.get("guard") or {}  # type: ignore[union-attr]
    if guard.get("not_asked") or guard.get("picks_vetoed"):
        table.add_row("band's NONE guard", plain(
            f"{guard['not_asked']} kept NONE without asking the model, {guard['picks_vetoed']} of its picks made NONE; "
            f"right {guard['right']} of {guard['not_asked'] + guard['picks_vetoed']}"))
    for layer, p in report["latency_ms"].items():  # type: ignore[union-attr]
        table.add_row(plain(f"latency {layer} p50/p95 ms"), plain(f"{p['p50']} / {p['p95']}"))
    console.print(table)
    console.print(plain(f"{len(labelled)} queries; scorer {ctx.index.scorer.value}, embedder {ctx.index.embedder.name}, "
                        f"{threshold_origin(ctx.index.thresholds)} thresholds"))
    qv = prepared.query_vectors
    console.print(plain(f"query vectors: {qv['embedded']} of {qv['queries']} distinct queries embedded in {qv['seconds']} s, "
                        "the rest read from the cache (latency embed: scoring only)"))
    for c in report["worst_confusions"]:  # type: ignore[union-attr]
        console.print(plain(f"  {c['count']}x expected {c['expected'] or 'NONE'} -> got {c['chosen'] or 'NONE'}"))
    pairs: list[dict] = report["confusion_pairs"]  # type: ignore[assignment]
    if pairs:
        console.print(plain(f"confused pairs (one skill ranked first on a case of the other; top {min(len(pairs), PAIRS_SHOWN)} "
                            f"of {len(pairs)}):"))
        for p in pairs[:PAIRS_SHOWN]:
            console.print(plain(f"  {p['total']}x {p['a']} <-> {p['b']} ({p['a']} -> {p['b']} {p['a_to_b']}, "
                                f"{p['b']} -> {p['a']} {p['b_to_a']}; {p['share']} of their "
                                f"{p['a_cases'] + p['b_cases']} in-scope cases)"))
            if p["hint"]:
                console.print(plain(f"    hint: {p['hint']}"))
    if show_curve and not report["curve"]:
        console.print(plain("no curve: no case reached the embed layer (the keywords decided every one, or nothing "
                            "could be routed), so no embed threshold changes an answer"))
    elif show_curve:
        curve_table = Table("embed threshold", "in-scope answered right", "NONE rejected",
                            title="rule + embed, no LLM: accept when the top score clears the threshold")
        points = report["curve"]
        for i, point in enumerate(points):  # type: ignore[arg-type]
            # the last point sits just above the highest score (answer nothing): shown as such, not
            # as a second row with the same 4-decimal threshold
            label = (f"> {points[i - 1]['threshold']:.4f}" if i == len(points) - 1 and i
                     and point["threshold"] - points[i - 1]["threshold"] < 1e-4 else f"{point['threshold']:.4f}")
            curve_table.add_row(label, str(point["answered_right"]), str(point["rejected"]))
        console.print(curve_table)


def _say_held_out(th) -> None:  # noqa: ANN001
    """One stderr line: the cross-fitted rates with their 95 % intervals (rules.crossfit)."""
    held = th.held_out
    if not held:
        typer.echo("held-out rates: not measured (too few cases to hold a fold out)", err=True)
        return
    parts = []
    for key, label in (("answered_right", "in-scope answered right"), ("rejected_own", "your NONE rejected"),
                       ("rejected_bank", "bank NONE rejected")):
        r = held[key]
        if r["n"]:
            parts.append(f"{label} {r['share']:.3f} (95% CI {r['ci95'][0]:.3f}-{r['ci95'][1]:.3f}, n {r['n']})")
    floor = (f"; to hold --min-reject {th.min_reject:g} out of fold the thresholds hold {th.fitted_min_reject:.3f} "
             "in sample" if th.min_reject is not None and th.fitted_min_reject is not None
             and th.fitted_min_reject > th.min_reject + 1e-9 else "")
    typer.echo(f"held out ({held['folds']} folds, thresholds fitted without each): " + "; ".join(parts) + floor, err=True)


def _labels(ws: Workspace) -> tuple[dict[str, dict[str, str]], list[str]]:
    """What labelled queries over the published skills are read with, beside the live skills: the
    cases a split's children took (labelled with the child) and the skills RETIRED now (a label
    naming one is refused as retired, with the way back)."""
    from skillforge.evaluation.datasets import route_relabels
    from skillforge.library.splitlinks import workspace_retired

    return route_relabels(ws), workspace_retired(ws)


def _say_band(th) -> None:  # noqa: ANN001
    """One stderr line: the router model's band and its NONE guard (rules/band.py), when there is one."""
    if th.llm_none_ratio is None or th.rejected is None or th.llm_low is None or th.llm_high is None:
        return
    from skillforge.rules.band import NONE_SLACK

    typer.echo(f"with a router model: top scores {th.llm_low:.3f}-{th.llm_high:.3f} go to it, and it may answer a "
               f"skill only at {th.llm_none_ratio:.3g} x NONE's share or more (the band's NONE guard: on these "
               f"cases NONE rejected stays at {th.rejected - NONE_SLACK:.3f} or more even if the model never says NONE)",
               err=True)


def threshold_origin(th) -> str:  # noqa: ANN001
    """calibrated, auto (measured on the skills' examples and the bank) or default."""
    return "calibrated" if th.calibrated else ("auto" if th.origin == "auto" else "default")


def _bank(ctx, cases, use_bank: bool):  # noqa: ANN001, ANN202
    """The out-of-scope bank minus what the skills and the labelled in-scope queries cover."""
    if not use_bank:
        return None
    from skillforge.routing.bank import select_bank

    in_scope = [(c.query, c.expected) for c in cases if c.expected is not None]
    with Console(stderr=True).status("checking the out-of-scope bank against the skills…"):
        sel = select_bank(ctx.index, in_scope, ctx.index.embed_texts([q for q, _ in in_scope]),
                          exclude=[c.query for c in cases])
    by = ", ".join(f"{n} {why}" for why, n in sel.summary()["bank_dropped_by"].items())  # type: ignore[union-attr]
    typer.echo(f"out-of-scope bank: {len(sel.kept)} queries used as NONE, {len(sel.dropped)} dropped as covered "
               f"by the skills ({by})", err=True)
    for item, why, skill in sel.dropped[:5]:
        typer.echo(safe(f"  dropped ({why.value}, {skill}): {item.query}"), err=True)
    return sel


@route_app.command("calibrate")
def route_calibrate(cases: MaybeCasesOpt = None, workspace: WorkspaceOpt = None, as_json: JsonOpt = False,
                    min_reject: MinRejectOpt = None, no_bank: NoBankOpt = False, force: ForceOpt = False,
                    undo: Annotated[bool, typer.Option("--undo", help="Put back what the last calibrate, fit or reset replaced (after a first fit: the auto head).")] = False) -> None:
    """Fit the rule margin and the embed HIGH/LOW/MARGIN thresholds on labelled queries (needs at
    least 10 in-scope and 5 NONE ones), the shipped out-of-scope bank adding NONE cases."""
    from skillforge.routing import fit as route_fit
    from skillforge.routing.index import (Scorer, load_head, load_thresholds, save_thresholds,
                                          undo_thresholds)
    from skillforge.routing.undo import undo_fit, undo_reset

    given = [flag for flag, set_ in (("--cases", cases is not None), ("--min-reject", min_reject is not None),
                                     ("--no-bank", no_bank), ("--force", force)) if set_]
    if undo and given:
        raise SkillForgeError(f"--undo puts back the stored thresholds and fits nothing: drop {', '.join(given)}")
    ws, ctx = _context(workspace, use_llm=False, auto_head=False)
    if undo:
        embedder = ctx.index.embedder.name
        restored = undo_reset(ws, embedder)
        refit = undo_fit(ws, embedder) if restored is None else None
        if refit is not None:  # the last change was `route fit`: its head and head thresholds swapped back
            th = load_thresholds(ws, embedder, Scorer.HEAD)
            typer.echo(f"{refit[0]} route fit: {', '.join(refit[1])} of {embedder} put back", err=True)
        elif restored is None:
            th = undo_thresholds(ws, embedder, ctx.index.scorer)
        else:  # the last change was `route reset`: all it replaced is back, the head included
            scorer = Scorer.HEAD if load_head(ws, embedder, ctx.index.cards) is not None else Scorer.COSINE
            th = load_thresholds(ws, embedder, scorer)
            stale = "scoring head" in restored and scorer is Scorer.COSINE  # load_head warned why
            typer.echo(f"undid route reset: {', '.join(restored)} of {embedder} put back; routing with the "
                       f"{scorer.value} scorer" + (" (the head put back is stale, see the warning)" if stale else ""),
                       err=True)
        typer.echo(th.model_dump_json(indent=None if as_json else 2))
        _, now = _context(workspace, use_llm=False)  # what `route` reads from now on (an automatic head too)
        used = now.index.thresholds
        typer.echo(f"put back the {th.scorer.value} thresholds of {embedder}; `route` now scores with the "
                   f"{now.index.scorer.value} scorer{' of the auto head' if used.origin == 'auto' and now.index.head else ''} "
                   f"(HIGH {used.high:.3f}, LOW {used.low:.3f})", err=True)
        return
    if cases is None:
        raise route_fit.CasesError("route calibrate needs --cases FILE.jsonl (or --undo)")
    labelled = route_fit.load_cases(cases, ctx.index.names, *_labels(ws))
    route_fit.check_enough(labelled)
    bank = _bank(ctx, labelled, not no_bank)
    current = measure_current(workspace, ctx, labelled)
    check_coverage(current, labelled, ctx.index.names, force)
    with Console(stderr=True).status("calibrating, and cross-fitting to measure the rates on held-out folds…"):
        th = route_fit.calibrate(None, ctx.index, labelled, bank=bank, min_reject=min_reject)
    _say_held_out(th)
    _say_band(th)
    guard(current, th, force)
    save_thresholds(ws, th)
    typer.echo(th.model_dump_json(indent=None if as_json else 2))


@route_app.command("fit")
def route_fit_cmd(cases: CasesOpt, workspace: WorkspaceOpt = None, as_json: JsonOpt = False,
                  min_reject: MinRejectOpt = None, no_bank: NoBankOpt = False) -> None:
    """Train the scoring head (skills' examples + labelled queries + the out-of-scope bank as
    NONE) and calibrate its thresholds out of fold (needs 10 in-scope and 5 NONE labelled queries)."""
    from skillforge.routing import fit as route_fit

    ws, ctx = _context(workspace, use_llm=False, auto_head=False)
    labelled = route_fit.load_cases(cases, ctx.index.names, *_labels(ws))
    route_fit.check_enough(labelled, "route fit")
    bank = _bank(ctx, labelled, not no_bank)
    current = measure_current(workspace, ctx, labelled)
    with Console(stderr=True).status("fitting the scoring head…"):
        head, th = route_fit.fit(None, ctx.index, labelled, bank=bank, min_reject=min_reject)
    _say_held_out(th)
    _say_band(th)
    guard(current, th, False, refuse=False)
    route_fit.save_fit(ws, head, th)
    out = {"labels": len(head.labels), "thresholds": th.model_dump(mode="json"),
           "bank": bank.summary() if bank is not None else None}
    typer.echo(json.dumps(out, ensure_ascii=False) if as_json else json.dumps(out, ensure_ascii=False, indent=2))


class ResetNotConfirmed(SkillForgeError):
    """`route reset` without --yes: it might be a query that happens to be the word "reset"."""


@route_app.command("reset")
def route_reset(workspace: WorkspaceOpt = None, as_json: JsonOpt = False,
                yes: Annotated[bool, typer.Option("--yes", help="Really reset (it is not a query to route).")] = False) -> None:
    """Back to uncalibrated routing, no fitted head (`route calibrate --undo` undoes it); needs --yes.
    Uncalibrated, the workspace routes by its auto head (trained on the skills' examples)."""
    from skillforge.routing.embedding import get_embedder
    from skillforge.routing.index import reset_routing

    if not yes:
        raise ResetNotConfirmed(
            "route reset replaces the calibrated thresholds and the fitted head with the defaults "
            "(`skillforge route calibrate --undo` puts them back): run `skillforge route reset --yes`. "
            "To route the word as a query: `skillforge route -- reset`")
    ws = Workspace.open(workspace)
    embedder = get_embedder().name
    done = reset_routing(ws, embedder)
    if as_json:
        typer.echo(json.dumps({"embedder": embedder, "reset": done}))
    else:
        console.print(f"reset {', '.join(done)} of {embedder}: uncalibrated again (routing by the auto head trained "
                      "on the skills' examples, or the defaults below 10 examples)" if done
                      else f"nothing to reset: {embedder} already routes with the defaults", highlight=False, markup=False)
