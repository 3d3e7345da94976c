"""`skillforge evolve`, `skillforge runs` and `skillforge review`: run the evolve graph, list and
show runs, and answer an L2 review from any process."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress, TimeElapsedColumn
from rich.table import Table

from skillforge.cli.budget import BudgetCallsOpt, BudgetTokensOpt, budget_caps, spend_line
from skillforge.cli.common import WorkspaceOpt
from skillforge.config import Workspace
from skillforge.errors import SkillForgeError
from skillforge.llm.config import MAX_CONCURRENCY

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
out = Console(width=None if sys.stdout.isatty() else 160, highlight=False)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 160, highlight=False)

EXIT = {"PUBLISHED": 0, "PENDING_REVIEW": 0, "SUGGESTED": 0, "NO_FAILURES": 0, "AUDITED": 0,
        "NO_IMPROVEMENT": 3, "REJECTED": 3, "BUDGET": 4, "RUNNING": 4, "FAILED": 5}
"""0: the run ended as designed (published, waiting for a person, suggested, nothing to do);
3: nothing improved; 4: paused or unfinished (budget, killed): resume it; 5: failed."""

STAGES = ("collect", "analyze", "propose", "check", "validate", "decide", "review", "publish", "suggest")


def _runner(ws: Workspace):  # noqa: ANN202 - langgraph is imported only by commands that need it
    from skillforge.cli.evolve_run import Runner

    return Runner(ws)


def _require_models(ws: Workspace) -> None:
    """Every role an evolve run calls must be configured before the run starts (nothing is written)."""
    from skillforge.evaluation import require_roles
    from skillforge.llm.client import build_llm
    from skillforge.state.llm import Role

    require_roles(build_llm(ws), (Role.EXECUTOR, Role.JUDGE, Role.PROPOSER))


def _show(summary: dict[str, object], as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(summary, ensure_ascii=False, default=str))
        return
    out.print(f"[bold]{summary['status']}[/bold]  {escape(str(summary['skill']))} (run {summary['run_id']}, "
              f"{summary['rounds']} round(s))")
    budget = summary.get("budget")
    if isinstance(budget, dict):
        out.print(f"  {spend_line(budget, budget.get('caps'))}")  # type: ignore[arg-type]
    if summary.get("message"):
        out.print(f"  {escape(str(summary['message']))}")
    rc = summary.get("root_cause")
    if isinstance(rc, dict):
        out.print(f"  root cause: {rc['category']}: {escape(str(rc['summary']))}")
    cands = summary.get("candidates") or []
    if cands:
        t = Table("candidate", "kind", "claimed", "computed", "verdict", "rejected by")
        for c in cands:  # type: ignore[union-attr]
            t.add_row(c["id"], c["kind"], f"L{c['claimed_level']}" if c["claimed_level"] else "-",
                      f"L{c['computed_level']}" if c["computed_level"] else "-", c["verdict"], c["rejected_by"] or "")
        out.print(t)
    for name in ("selection", "holdout"):
        s = summary.get(name)
        if isinstance(s, dict) and s:
            out.print(f"  {name}: {s['verdict']}, improvement {s['improvement']}, score "
                      f"{s.get('score')} vs live {s.get('baseline_score')} on {s['cases']} cases")
    status, run_id = summary["status"], summary["run_id"]
    if status == "PENDING_REVIEW":
        out.print(f"  waiting for a person: skillforge review show {run_id}\n"
                  f"  then: skillforge review approve {run_id} --comment \"...\"  (or: review reject {run_id})")
    elif status in ("BUDGET", "RUNNING"):
        out.print(f"  resume: skillforge evolve --resume {run_id} [--budget-calls N]")
    for key in ("suggestion", "failure_report"):
        if summary.get(key):
            out.print(f"  {key.replace('_', ' ')}: {escape(str(summary[key]))}")


def _progress(label: str):  # noqa: ANN202
    progress = Progress(*Progress.get_default_columns(), TimeElapsedColumn(), console=err, transient=True)
    task = progress.add_task(label, total=len(STAGES))

    def advance(node: str) -> None:
        progress.update(task, advance=1, description=f"{label}: {node}")
        if not err.is_interactive:  # a pipe or a log: rich draws no bar there, so one line per stage
            err.print(f"evolve {label}: {node} done, {progress.tasks[0].elapsed or 0:.0f} s elapsed", markup=False)
    return progress, advance


def evolve(skill: Annotated[str | None, typer.Argument(help="The skill to evolve.")] = None,
           mode: Annotated[str, typer.Option(help="autonomous | fix_only | audit_only")] = "autonomous",
           max_rounds: Annotated[int, typer.Option(help="Reflection rounds (at most 2 is the default).")] = 2,
           budget_calls: BudgetCallsOpt = None,
           budget_tokens: BudgetTokensOpt = None,
           resume: Annotated[str | None, typer.Option(help="Continue a killed or paused run (or a batch).")] = None,
           all_skills: Annotated[bool, typer.Option("--all", help="Every published skill, one run each.")] = False,
           max_concurrency: Annotated[int, typer.Option(min=1, max=MAX_CONCURRENCY,
                                                        help="Skills evolved at once with --all.")] = 2,
           worker: Annotated[bool, typer.Option("--worker", help="Share the batch with other processes through "
                                                "SKILLFORGE_CHECKPOINT_URL: --all --worker starts one, "
                                                "--resume BATCH --worker joins it.")] = False,
           as_json: JsonOpt = False, workspace: WorkspaceOpt = None) -> None:
    """Turn a skill's failures into a gated release: L1 publishes, L2 waits for review, L3 is a suggestion."""
    from skillforge.state.evolve import EvolveMode

    ws = Workspace.open(workspace)
    try:
        mode_value = EvolveMode(mode)
    except ValueError:
        raise SkillForgeError(f"--mode must be one of {', '.join(m.value for m in EvolveMode)}, got {mode!r}") from None
    caps = budget_caps(budget_calls, budget_tokens)
    _require_models(ws)
    if worker:
        return _work(ws, None if all_skills else resume, mode_value, max_rounds, caps, max_concurrency, as_json)
    runner = _runner(ws)
    if resume and resume.startswith("batch-"):
        return _batch(ws, runner, None, mode_value, max_rounds, caps, max_concurrency, as_json, resume)
    if all_skills:
        return _batch(ws, runner, None, mode_value, max_rounds, caps, max_concurrency, as_json, None)
    progress, advance = _progress(resume or skill or "evolve")
    with progress:
        if resume:
            summary = runner.resume(resume, caps=caps, on_update=advance)
        else:
            if skill is None:
                raise SkillForgeError("give SKILL, --all, or --resume RUN")
            summary = runner.start(skill, mode=mode_value, max_rounds=max_rounds, caps=caps, on_update=advance)
    _show(summary, as_json)
    raise typer.Exit(EXIT.get(str(summary["status"]), 5))


def _batch(ws: Workspace, runner, skills, mode, max_rounds, caps, concurrency: int,  # noqa: ANN001
           as_json: bool, batch_id: str | None) -> None:
    """One run per skill, `concurrency` at a time; a failing skill does not stop the others."""
    from skillforge.cli.evolve_run import new_run_id, read_batch, run_batch, write_batch
    from skillforge.registry import SkillRegistry

    if batch_id is None:
        names = skills or SkillRegistry.load(ws).names()
        batch_id = new_run_id("all", kind="batch")
        runs = {name: new_run_id(name) for name in names}
        write_batch(ws, batch_id, runs)
    else:
        runs = read_batch(ws, batch_id)

    with Progress(console=err, transient=True) as progress:
        task = progress.add_task(f"batch {batch_id}", total=len(runs))
        results = run_batch(runner, runs, mode=mode, max_rounds=max_rounds, caps=caps, concurrency=concurrency,
                            on_done=lambda _: progress.advance(task))
    summary = {"batch_id": batch_id, "runs": [{k: r.get(k) for k in ("run_id", "skill", "status", "release_id",
                                                                       "message")} for r in results]}
    if as_json:
        typer.echo(json.dumps(summary, ensure_ascii=False, default=str))
    else:
        t = Table("skill", "status", "run", "note")
        for r in summary["runs"]:
            t.add_row(escape(str(r["skill"])), str(r["status"]), str(r["run_id"]), escape(str(r.get("message") or ""))[:80])
        out.print(t)
        out.print(f"batch {batch_id}: resume with skillforge evolve --resume {batch_id}")
    bad = [r for r in results if r.get("status") in ("FAILED", "BUDGET", "RUNNING")]
    raise typer.Exit(4 if bad else 0)


def _work(ws: Workspace, batch_id: str | None, mode, max_rounds, caps, concurrency: int,  # noqa: ANN001
          as_json: bool) -> None:
    """This process as a worker of a shared batch (a new one when `batch_id` is None)."""
    from skillforge.cli.batch_claims import batch_rows, register, work_batch
    from skillforge.cli.evolve_run import new_run_id, write_batch
    from skillforge.graphs.checkpoint import CHECKPOINT_URL_ENV, checkpoint_url
    from skillforge.registry import SkillRegistry

    url = checkpoint_url()
    if url is None:
        raise SkillForgeError(f"--worker needs a shared database: set {CHECKPOINT_URL_ENV}=postgresql://...")
    if batch_id is None:
        batch_id = new_run_id("all", kind="batch")
        runs = {name: new_run_id(name) for name in SkillRegistry.load(ws).names()}
        register(url, batch_id, runs, ws.workspace_id)
        write_batch(ws, batch_id, runs)
        err.print(f"batch {batch_id}: other workers join with skillforge evolve --resume {batch_id} --worker")
    elif not batch_id.startswith("batch-"):
        raise SkillForgeError(f"--worker joins a batch: --resume batch-..., got {batch_id!r}")
    with Progress(console=err, transient=True) as progress:
        task = progress.add_task(f"worker of {batch_id}", total=None)
        mine = work_batch(_runner(ws), url, batch_id, mode=mode, max_rounds=max_rounds, caps=caps,
                          concurrency=concurrency, on_done=lambda _: progress.advance(task))
    rows = batch_rows(url, batch_id, ws.workspace_id)
    summary = {"batch_id": batch_id, "runs": [{k: r.get(k) for k in ("run_id", "skill", "status", "release_id",
                                                                       "message", "worker", "attempt")} for r in mine],
               "batch": [{k: str(v) if v is not None else None for k, v in r.items()} for r in rows]}
    if as_json:
        typer.echo(json.dumps(summary, ensure_ascii=False, default=str))
    else:
        t = Table("skill", "claim", "result", "worker", "claims", "run")
        for r in rows:
            t.add_row(escape(str(r["skill"])), str(r["status"]), str(r["result"] or ""), str(r["worker"] or ""),
                      str(r["attempts"]), str(r["run_id"]))
        out.print(t)
    left = [r for r in rows if r["status"] != "DONE"]
    bad = [r for r in mine if r.get("status") in ("FAILED", "BUDGET", "RUNNING")]
    raise typer.Exit(4 if bad or left else 0)


runs_app = typer.Typer(no_args_is_help=True, help="Evolve runs: list and show.")
review_app = typer.Typer(no_args_is_help=True, help="Answer L2 reviews: list, show, approve, reject.")


@runs_app.command("list")
def runs_list(as_json: JsonOpt = False, workspace: WorkspaceOpt = None) -> None:
    """Every evolve run of the workspace, oldest first."""
    runner = _runner(Workspace.open(workspace))
    rows = []
    for run_id in runner.run_ids():
        s = runner.summary(run_id)
        rows.append({"run_id": run_id, "kind": "evolve", "skill": s["skill"], "status": s["status"],
                     "started_at": s["started_at"]})
    rows.sort(key=lambda r: str(r["started_at"]))
    if as_json:
        typer.echo(json.dumps(rows, ensure_ascii=False))
        return
    t = Table("run", "kind", "skill", "status", "started")
    for r in rows:
        t.add_row(r["run_id"], r["kind"], escape(str(r["skill"])), str(r["status"]), str(r["started_at"]))
    out.print(t)


@runs_app.command("show")
def runs_show(run_id: Annotated[str, typer.Argument(help="The run id.")], as_json: JsonOpt = False,
              workspace: WorkspaceOpt = None) -> None:
    """One run: status, root cause, candidates and why each stopped, scores, release."""
    _show(_runner(Workspace.open(workspace)).summary(run_id), as_json)


@review_app.command("list")
def review_list(as_json: JsonOpt = False, workspace: WorkspaceOpt = None) -> None:
    """Runs waiting for a person."""
    runner = _runner(Workspace.open(workspace))
    rows = [s for s in (runner.summary(r) for r in runner.run_ids()) if s["status"] == "PENDING_REVIEW"]
    if as_json:
        typer.echo(json.dumps([{k: s[k] for k in ("run_id", "skill", "started_at")} for s in rows], ensure_ascii=False))
        return
    for s in rows:
        out.print(f"{s['run_id']}  {escape(str(s['skill']))}  (skillforge review show {s['run_id']})")
    if not rows:
        out.print("no run waits for a review")


@review_app.command("show")
def review_show(run_id: Annotated[str, typer.Argument(help="The run id.")], as_json: JsonOpt = False,
                workspace: WorkspaceOpt = None) -> None:
    """The pending candidate: its diff, level, rationale and scores (selection, holdout, final_audit)."""
    s = _runner(Workspace.open(workspace)).summary(run_id)
    pending = s.get("pending")
    if not isinstance(pending, dict) or pending.get("kind") != "review":
        raise SkillForgeError(f"run {run_id} is not waiting for a review (status {s['status']})")
    if as_json:
        typer.echo(json.dumps(pending, ensure_ascii=False, default=str))
        return
    out.print(f"[bold]{escape(str(pending['skill']))}[/bold] candidate {pending['candidate']} at L{pending['level']}")
    out.print(f"rationale: {escape(str(pending['rationale']))}")
    for name, score in dict(pending["scores"]).items():  # type: ignore[arg-type]
        out.print(f"  {name}: {score['verdict']}, improvement {score['improvement']}, score {score.get('score')} "
                  f"vs live {score.get('baseline_score')} ({score['cases']} cases)")
    typer.echo(str(pending["diff"]))


def _answer(run_id: str, action: str, comment: str, as_json: bool, workspace: Path | None) -> None:
    import getpass

    from skillforge.state.evolve import ReviewAction

    runner = _runner(Workspace.open(workspace))
    summary = runner.answer_review(run_id, ReviewAction(action), comment=comment, reviewer=getpass.getuser())
    _show(summary, as_json)
    raise typer.Exit(EXIT.get(str(summary["status"]), 5) if action == "approve" else 0)


@review_app.command("approve")
def review_approve(run_id: Annotated[str, typer.Argument(help="The run id.")],
                   comment: Annotated[str, typer.Option(help="Why.")] = "", as_json: JsonOpt = False,
                   workspace: WorkspaceOpt = None) -> None:
    """Publish the pending candidate (through the release state machine)."""
    _answer(run_id, "approve", comment, as_json, workspace)


@review_app.command("reject")
def review_reject(run_id: Annotated[str, typer.Argument(help="The run id.")],
                  comment: Annotated[str, typer.Option(help="Why.")] = "", as_json: JsonOpt = False,
                  workspace: WorkspaceOpt = None) -> None:
    """Publish nothing; archive the candidate with the comment in runs/failures/<run>.md."""
    _answer(run_id, "reject", comment, as_json, workspace)
