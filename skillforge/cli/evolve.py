"""`skillforge evolve`: run the evolve graph, one skill, a batch or a Postgres worker, and show a
run's summary (`skillforge runs` is in cli/runs.py, `skillforge review` in cli/review.py). Everything a model or a person wrote is printed
literally, with its control characters shown as escapes (cli/output.py)."""

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

from skillforge.cli.budget import (BATCH_OPTS, BatchCallsOpt, BatchTokensOpt, BudgetCallsOpt, BudgetTokensOpt,
                                  batch_lines, budget_caps, set_batch_caps, spend_line)
from skillforge.cli.common import WorkspaceOpt, nonempty_path, pasteable
from skillforge.cli.output import json_safe, plain, safe, styled
from skillforge.config import Workspace
from skillforge.errors import SkillForgeError
from skillforge.state.cliopts import MAX_CONCURRENCY

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
out = Console(width=None if sys.stdout.isatty() else 160, highlight=False)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 160, highlight=False)

EXIT = {"PUBLISHED": 0, "PENDING_REVIEW": 0, "SUGGESTED": 0, "NO_FAILURES": 0, "AUDITED": 0,
        "NO_IMPROVEMENT": 3, "REJECTED": 3, "CANCELLED": 3, "BUDGET": 4, "RUNNING": 4, "FAILED": 5}
"""Every command that ends by showing a run (evolve, review approve|reject|rebase, runs cancel)
exits with its status's code. 0: the run ended as designed (published, waiting for a person,
suggested, nothing to do); 3: nothing published (nothing improved, rejected, cancelled); 4: paused
or unfinished (budget, killed): resume it; 5: failed. A refusal (a named error) is 2."""

STAGES = ("collect", "analyze", "propose", "check", "validate", "decide", "review", "publish", "suggest")


def _runner(ws: Workspace):  # noqa: ANN202 - langgraph is imported only by commands that need it
    from skillforge.runners.evolve import Runner

    return Runner(ws)


def require_models(ws: Workspace) -> None:
    """Every role an evolve run calls must be configured before the run starts (nothing is written)."""
    from skillforge.evaluation.compare import require_roles
    from skillforge.llm.client import build_llm
    from skillforge.state.llm import Role

    require_roles(build_llm(ws), (Role.EXECUTOR, Role.JUDGE, Role.PROPOSER))


def print_one_json(data: object) -> None:
    """One line of JSON on stdout (C0 controls escaped by json, DEL and C1 by json_safe)."""
    typer.echo(json_safe(json.dumps(data, ensure_ascii=False, default=str)))


def _num(value: object) -> str:
    return f"{value:.3f}" if isinstance(value, float) else "-" if value is None else str(value)


def score_line(name: str, s: dict[str, object]) -> str:
    """`selection: REVIEW, improvement WIN, score 0.750 vs live 0.250 on 14 cases` (scores to 3 places),
    then the primary endpoint's wins / losses / ties when recorded (`; primary objective +6 -2 =8`)."""
    counts = ""
    if s.get("primary_wins") is not None:
        counts = (f"; primary {s.get('primary') or 'effect'} +{s['primary_wins']} -{s.get('primary_losses')} "
                  f"={s.get('primary_ties')}")
    return (f"{name}: {s['verdict']}, improvement {s['improvement']}, score {_num(s.get('score'))} vs live "
            f"{_num(s.get('baseline_score'))} on {s['cases']} cases{counts}")


def show_summary(summary: dict[str, object], as_json: bool) -> None:
    """A run as `--json` (one line) or for a person: status, root cause, candidates, scores, next step."""
    if as_json:
        print_one_json(summary)
        return
    from skillforge.runners.reader import pause_message

    out.print(styled((str(summary["status"]), "bold"), f"  {summary['skill']} (run {summary['run_id']}, "
                     f"{summary['rounds']} round(s))"), soft_wrap=True)
    budget = summary.get("budget")
    if isinstance(budget, dict):
        out.print(plain(f"  {spend_line(budget, budget.get('caps'))}"), soft_wrap=True)  # type: ignore[arg-type]
    pending = summary.get("pending")
    if summary["status"] == "BUDGET" and isinstance(pending, dict) and pending.get("reason"):
        out.print(plain(f"  paused: {pending['reason']}"), soft_wrap=True)  # the estimate, or the cap reached
    if summary.get("message") and summary["message"] != pause_message(summary):  # else said below, line by line
        out.print(plain(f"  {summary['message']}"), soft_wrap=True)
    for note in summary.get("proposer_notes") or []:  # type: ignore[attr-defined]
        if str(note).split(": ", 1)[-1] != summary.get("message"):  # said once
            out.print(plain(f"  proposer: {note}"), soft_wrap=True)
    rc = summary.get("root_cause")
    if isinstance(rc, dict):
        out.print(plain(f"  root cause: {rc['category']}: {rc['summary']}"), soft_wrap=True)
    cands = summary.get("candidates") or []
    if cands:
        t = Table("candidate", "kind", "claimed", "computed", "verdict", "rejected by", "rationale")
        for c in cands:  # type: ignore[union-attr]
            t.add_row(*map(plain, (c["id"], c["kind"] if c["kind"] == "FIX" else f"{c['kind']} {c['target']}",
                                   f"L{c['claimed_level']}" if c["claimed_level"] else "-",
                                   f"L{c['computed_level']}" if c["computed_level"] else "-", c["verdict"],
                                   c["rejected_by"] or "", str(c.get("rationale") or "")[:80])))
        out.print(t)
    for name in ("selection", "holdout", "final_audit"):
        s = summary.get(name)
        if isinstance(s, dict) and s:
            out.print(plain(f"  {score_line(name, s)}"), soft_wrap=True)
    if summary.get("audit_warning"):
        out.print(styled(("  warning: ", "bold red"), str(summary["audit_warning"])), soft_wrap=True)
    status, run_id = summary["status"], summary["run_id"]
    if status == "PENDING_REVIEW":
        step = summary.get("review_next")
        step = step if isinstance(step, dict) else {}
        if step.get("warning"):
            out.print(styled(("  warning: ", "bold red"), str(step["warning"])), soft_wrap=True)
        then = step.get("then") or f"skillforge review approve {run_id} --comment \"...\"  (or: review reject {run_id})"
        out.print(plain(pasteable(f"  waiting for a person: skillforge review show {run_id}\n  then: {then}")),
                  soft_wrap=True)
    elif status == "BUDGET" and summary.get("next"):
        step = str(summary["next"])
        b = budget if isinstance(budget, dict) else {}
        held = f"{b.get('tokens', 0)} tokens spent + {b.get('reserved_tokens', 0)} reserved by requests with no usage"
        more = (" (N: more than the batch's runs spent together; what was answered comes from the cache)"
                if " --batch-budget-" in step else
                f" (N: more than the {held}; what was answered comes from the cache)" if step.endswith("--budget-tokens N")
                else f" (N: more than the {b.get('paid')} paid; what was answered comes from the cache)"
                if step.endswith(" N") else "")  # QA 38 F3: a token cap's N is tokens
        out.print(plain(pasteable(f"  next: {step}{more}\n  (or close it: skillforge runs cancel {run_id})")),
                  soft_wrap=True)
    elif status in ("BUDGET", "RUNNING"):
        out.print(plain(pasteable(f"  resume: skillforge evolve --resume {run_id} [--budget-calls N]  "
                                  f"(or close it: skillforge runs cancel {run_id})")), soft_wrap=True)
    for key in ("suggestion", "failure_report"):
        if summary.get(key) and str(summary[key]) not in str(summary.get("message") or ""):  # said once
            out.print(plain(f"  {key.replace('_', ' ')}: {summary[key]}"), soft_wrap=True)


def progress_of(label: str):  # noqa: ANN201
    """A transient progress bar on stderr, advanced by the name of each node that finishes; where stderr
    is not a terminal (a pipe, a log) rich draws no bar, so one line per stage instead."""
    progress = Progress(*Progress.get_default_columns(), TimeElapsedColumn(), console=err, transient=True)
    task = progress.add_task(escape(safe(label)), total=len(STAGES))  # descriptions are markup

    def advance(node: str) -> None:
        if node.startswith("__"):  # LangGraph's own updates (__interrupt__): a pause, not a stage done
            return
        progress.update(task, advance=1, description=escape(safe(f"{label}: {node}")))
        if not err.is_interactive:
            err.print(plain(f"evolve {label}: {node} done, {progress.tasks[0].elapsed or 0:.0f} s elapsed"))
    return progress, advance


def case_progress(progress: Progress, label: str):  # noqa: ANN201
    """What the runner gives each finished case of the evaluations inside a run (validation, holdout,
    final audit): the bar's description says it; where stderr is not a terminal, one line per case."""
    def case(what: str, done: int, total: int) -> None:
        elapsed = (progress.tasks[0].elapsed or 0) if progress.tasks else 0
        progress.update(progress.task_ids[0], description=escape(safe(f"{label}: {what}: case {done} of {total}")))
        if not err.is_interactive:
            err.print(plain(f"evolve {label}: {what}: case {done} of {total} done, {elapsed:.0f} s elapsed"))
    return case


def evolve(skill: Annotated[str | None, typer.Argument(help="The skill to evolve.")] = None,
           mode: Annotated[str | None, typer.Option(help="autonomous (default) | fix_only | audit_only")] = None,
           max_rounds: Annotated[int | None, typer.Option(help="Reflection rounds (at most 2, the default).")] = None,
           budget_calls: BudgetCallsOpt = None,
           budget_tokens: BudgetTokensOpt = None,
           batch_calls: BatchCallsOpt = None,
           batch_tokens: BatchTokensOpt = None,
           resume: Annotated[str | None, typer.Option(help="Continue a killed or paused run (or a batch).")] = None,
           all_skills: Annotated[bool, typer.Option("--all", help="Every published skill, one run each (--budget-calls and --budget-tokens cap each run; "
                                                               "--batch-budget-calls and --batch-budget-tokens the batch).")] = False,
           max_concurrency: Annotated[int, typer.Option(min=1, max=MAX_CONCURRENCY,
                                                        help="Skills evolved at once with --all.")] = 2,
           worker: Annotated[bool, typer.Option("--worker", help="Share the batch with other processes through "
                                                "SKILLFORGE_CHECKPOINT_URL: --all --worker starts one, "
                                                "--resume BATCH --worker joins it.")] = False,
           from_sessions: Annotated[Path | None, typer.Option(
               "--from-sessions", parser=nonempty_path,
               help="With --all: harvest these agent transcripts first (nothing is auto-accepted), then evolve "
                    "only the skills with reviewed failures.")] = None,
           source: Annotated[str, typer.Option("--source", help="With --from-sessions: claude-code, codex, jsonl "
                                                                "or auto.")] = "auto",
           as_json: JsonOpt = False, workspace: WorkspaceOpt = None) -> None:
    """Turn a skill's failures into a gated release: L1 publishes, L2 waits for review, L3 is a suggestion."""
    from skillforge.state.evolve import MAX_ROUNDS, EvolveMode

    from skillforge.llm.config import evolve_settings

    ws = Workspace.open(workspace)
    evolve_settings(ws)  # a bad proposer/neighbours/canary setting: exit 2 before any run (QA 42 F1)
    try:
        mode_value = EvolveMode(mode or EvolveMode.AUTONOMOUS)
    except ValueError:
        raise SkillForgeError(f"--mode must be one of {', '.join(m.value for m in EvolveMode)}, got {mode!r}") from None
    if resume:
        _refuse_with_resume(ws, resume, skill, mode is not None, max_rounds is not None, all_skills)
    rounds = MAX_ROUNDS if max_rounds is None else max_rounds
    caps = budget_caps(budget_calls, budget_tokens)
    batch_caps = budget_caps(batch_calls, batch_tokens, BATCH_OPTS)
    if batch_caps is not None and not (all_skills or (resume or "").startswith("batch-")):
        raise SkillForgeError("--batch-budget-calls and --batch-budget-tokens cap a batch: give them with --all "
                              "or --resume BATCH (--budget-calls caps one run)")
    if from_sessions is not None:
        if not all_skills or resume or worker or skill:
            raise SkillForgeError("--from-sessions PATH is the nightly loop: give it with --all (no SKILL, "
                                  "--resume or --worker)")
        require_models(ws)
        return _nightly(ws, _runner(ws), from_sessions, source, mode_value, rounds, caps, max_concurrency, as_json,
                        batch_caps)
    if resume and not resume.startswith("batch-") and not worker:
        _show_if_finished(ws, resume, as_json)  # a closed run is shown as it ended: it needs no model (QA 42 F9)
    require_models(ws)
    if worker:
        return _work(ws, None if all_skills else resume, mode_value, rounds, caps, max_concurrency, as_json,
                     batch_caps)
    runner = _runner(ws)
    if resume and resume.startswith("batch-"):
        return _batch(ws, runner, None, mode_value, rounds, caps, max_concurrency, as_json, resume,
                      batch_caps=batch_caps)
    if all_skills:
        return _batch(ws, runner, None, mode_value, rounds, caps, max_concurrency, as_json, None,
                      batch_caps=batch_caps)
    progress, advance = progress_of(resume or skill or "evolve")
    runner.on_case = case_progress(progress, resume or skill or "evolve")
    with progress:
        if resume:
            summary = runner.resume(resume, caps=caps, on_update=advance)
        else:
            if skill is None:
                raise SkillForgeError("give SKILL, --all, or --resume RUN")
            summary = runner.start(skill, mode=mode_value, max_rounds=rounds, caps=caps, on_update=advance)
    show_summary(summary, as_json)
    raise typer.Exit(EXIT.get(str(summary["status"]), 5))


def _show_if_finished(ws: Workspace, run_id: str, as_json: bool) -> None:
    """Show `run_id` and exit with its status's code when it has ended; nothing when it is open."""
    from skillforge.rules.runs import is_open
    from skillforge.runners.reader import RunReader

    reader = RunReader(ws)
    state, pending = reader.read(run_id)
    if pending is not None or is_open(state.status):
        return
    summary = reader.summary(run_id)
    show_summary(summary, as_json)
    raise typer.Exit(EXIT.get(str(summary["status"]), 5))


def _refuse_with_resume(ws: Workspace, resume: str, skill: str | None, mode_given: bool, rounds_given: bool,
                        all_skills: bool) -> None:
    """`--resume RUN` continues the stored run with its own skill and options: anything given that
    it would ignore is refused (as `evaluate --resume` does)."""
    from skillforge.runners.reader import RunReader
    from skillforge.rules.runs import resume_conflicts

    run_skill = None if resume.startswith("batch-") else RunReader(ws).read(resume)[0].skill
    bad = resume_conflicts(skill=skill, run_skill=run_skill, mode_given=mode_given, max_rounds_given=rounds_given,
                           all_skills=all_skills)
    if bad:
        what = "batch" if run_skill is None else "run"
        raise SkillForgeError(f"--resume {resume} continues the stored {what} with its own skill and options: "
                              f"drop {', '.join(bad)}")


def _nightly(ws: Workspace, runner, path: Path, source: str, mode, max_rounds, caps,  # noqa: ANN001
             concurrency: int, as_json: bool, batch_caps) -> None:  # noqa: ANN001
    """harvest -> (nothing auto-accepted) -> evolve each skill with reviewed failures -> summary."""
    from skillforge.cli.sessions import check_source, harvest_lines
    from skillforge.evolution.harvest import skills_to_evolve
    from skillforge.sessions.harvest import harvest
    from skillforge.sessions.staging import pending

    report = harvest(ws, check_source(source), path).as_dict()
    waiting = len(pending(ws))
    names = skills_to_evolve(ws)
    head = {"harvest": report, "waiting_for_review": waiting, "evolved": names}
    lines = [*harvest_lines(report), f"{waiting} staged cases wait for a person: skillforge cases review"]
    if not names:
        lines.append("no skill has reviewed failures of its live release: nothing to evolve")
        if as_json:
            print_one_json({**head, "batch_id": None, "runs": []})
        else:
            for line in lines:
                out.print(plain(line), soft_wrap=True)
        raise typer.Exit(0)
    lines.append(f"evolving {len(names)} skills with reviewed failures: {', '.join(names)}")
    _batch(ws, runner, names, mode, max_rounds, caps, concurrency, as_json, None, head=head, lines=lines,
           batch_caps=batch_caps)


def batch_table(runs: list[dict[str, object]]) -> Table:
    """A batch's summary: one row per run, its note whole and wrapped to the console (it was cut at
    80 characters, mid-word: QA qa10a F16 'in reviewed session c')."""
    t = Table("skill", "status", "run")
    t.add_column("note", overflow="fold")
    for r in runs:
        t.add_row(*map(plain, (str(r["skill"]), str(r["status"]), str(r["run_id"] or "-"), str(r.get("message") or ""))))
    return t


def _batch(ws: Workspace, runner, skills, mode, max_rounds, caps, concurrency: int,  # noqa: ANN001
           as_json: bool, batch_id: str | None, *, head: dict[str, object] | None = None,
           lines: list[str] | None = None, batch_caps=None) -> None:  # noqa: ANN001
    """One run per skill, `concurrency` at a time; a failing skill does not stop the others. The
    batch's caps (given now, or kept by the ledger from its start) hold all its runs together."""
    from skillforge.runners.batchfile import read_batch
    from skillforge.runners.evolve_batch import NOT_STARTED, batch_budget, new_batch, run_batch
    from skillforge.runners.interrupt import stopping

    if not as_json:
        for line in lines or ():
            out.print(plain(line), soft_wrap=True)
    if batch_id is None:
        batch_id, runs = new_batch(ws, skills, mode=mode, max_rounds=max_rounds)
    else:
        runs, mode, max_rounds = read_batch(ws, batch_id)  # runs not started yet get the batch's own options
    if batch_caps is not None:
        set_batch_caps(runner.ledger, batch_id, batch_caps)

    with Progress(console=err, transient=True) as progress, stopping(lambda: None,  # Ctrl-C names the batch
                                                                     f"skillforge evolve --resume {batch_id}"):
        task = progress.add_task(f"batch {batch_id}", total=len(runs))

        def done(r: dict[str, object]) -> None:
            progress.advance(task)
            if not err.is_interactive:  # no bar where stderr is a pipe or a log: one line per run
                err.print(plain(f"batch {batch_id}: {r.get('skill')} {r.get('status')}, "
                                f"{int(progress.tasks[0].completed)} of {len(runs)} done, "
                                f"{progress.tasks[0].elapsed or 0:.0f} s elapsed"))
        results = run_batch(runner, runs, mode=mode, max_rounds=max_rounds, caps=caps, concurrency=concurrency,
                            on_done=done, batch_id=batch_id)
    summary = {**(head or {}), "batch_id": batch_id,
               "runs": [{k: r.get(k) for k in ("run_id", "skill", "status", "release_id", "message")} for r in results],
               "batch_budget": batch_budget(runner.ledger, batch_id)}
    if as_json:
        print_one_json(summary)
    else:
        out.print(batch_table(summary["runs"]))
        for line in batch_lines(runner.ledger, batch_id):
            out.print(plain(line), soft_wrap=True)
    bad = [r for r in results if r.get("status") in ("FAILED", "BUDGET", "RUNNING", NOT_STARTED)]
    raise typer.Exit(4 if bad else 0)


def _work(ws: Workspace, batch_id: str | None, mode, max_rounds, caps, concurrency: int,  # noqa: ANN001
          as_json: bool, batch_caps) -> None:  # noqa: ANN001
    """This process as a worker of a shared batch (a new one when `batch_id` is None)."""
    from skillforge.runners.batch import batch_rows, work_batch
    from skillforge.runners.evolve_batch import NOT_STARTED, new_batch
    from skillforge.runners.checkpoint import CHECKPOINT_URL_ENV, checkpoint_url

    url = checkpoint_url()
    if url is None:
        raise SkillForgeError(f"--worker needs a shared database: set {CHECKPOINT_URL_ENV}=postgresql://...")
    if batch_id is None:
        batch_id, _ = new_batch(ws, mode=mode, max_rounds=max_rounds, url=url)
        err.print(f"batch {batch_id}: other workers join with skillforge evolve --resume {batch_id} --worker")
    elif not batch_id.startswith("batch-"):
        raise SkillForgeError(f"--worker joins a batch: --resume batch-..., got {batch_id!r}")
    runner = _runner(ws)
    if batch_caps is not None:
        set_batch_caps(runner.ledger, batch_id, batch_caps)
    with Progress(console=err, transient=True) as progress:
        task = progress.add_task(f"worker of {batch_id}", total=None)
        mine = work_batch(runner, url, batch_id, mode=mode, max_rounds=max_rounds, caps=caps,
                          concurrency=concurrency, on_done=lambda _: progress.advance(task))
    rows = batch_rows(url, batch_id, ws.workspace_id)
    summary = {"batch_id": batch_id, "runs": [{k: r.get(k) for k in ("run_id", "skill", "status", "release_id",
                                                                       "message", "worker", "attempt")} for r in mine],
               "batch": [{k: str(v) if v is not None else None for k, v in r.items()} for r in rows]}
    if as_json:
        print_one_json(summary)
    else:
        t = Table("skill", "claim", "result", "worker", "claims", "run")
        for r in rows:
            t.add_row(*map(plain, (r["skill"], r["status"], r["result"] or "", r["worker"] or "", r["attempts"],
                                   r["run_id"])))
        out.print(t)
    left = [r for r in rows if r["status"] != "DONE"]
    bad = [r for r in mine if r.get("status") in ("FAILED", "BUDGET", "RUNNING", NOT_STARTED)]
    raise typer.Exit(4 if bad or left else 0)
