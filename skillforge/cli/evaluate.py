"""`skillforge evaluate`: is a candidate release better than the current one, and safe to publish?
Exit codes are a CI gate: 0 PASS, 3 REVIEW, 4 DECLINED, 5 INVALID, 6 BUDGET (2 a named error). With
--aa (the live release against itself): 0 no false alarm, 4 a false alarm (a WIN or LOSS), 5 INVALID.
Every request is counted in the workspace's request ledger under the run id; the estimate is printed
before the first request, and --budget-calls / --budget-tokens are hard caps (cli/budget.py)."""

from __future__ import annotations

import json
import logging
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from pydantic import ValidationError
from rich.progress import MofNCompleteColumn, Progress, TimeElapsedColumn

from skillforge.cli.budget import BudgetCallsOpt, BudgetTokensOpt, budget_caps, preflight, report as budget_report, \
    resume_hint, spend_line, stop_at_budget
from skillforge.cli import interrupt
from skillforge.cli.common import Services, WorkspaceOpt
from skillforge.cli.output import json_safe, plain, safe
from skillforge.config import Workspace
from skillforge.llm.config import MAX_CONCURRENCY
from skillforge.errors import ReportPathError, SkillForgeError, SourceError, UnknownRelease, UnknownRun
from skillforge.skill.tree import read_tree
from skillforge.state.evaluate import ExecutionMode
from skillforge.state.result import EvalVerdict, Outcome

EXIT = {EvalVerdict.PASS: 0, EvalVerdict.REVIEW: 3, EvalVerdict.DECLINED: 4, EvalVerdict.INVALID: 5}
AA_FALSE_ALARM_EXIT = 4
CHECKPOINT_FILE = "evaluate.sqlite"
err = Console(stderr=True)
log = logging.getLogger(__name__)


class StoredRunError(SkillForgeError):
    """A stored run that --rejudge cannot use: its meta.json or its case outputs are unreadable."""


def _release_text(svc, skill: str, ref: str) -> tuple[str, str | None]:  # noqa: ANN001
    """(SKILL.md text, release id) of a path (folder or file) or a release of the skill."""
    if not ref.strip():
        raise SourceError("an empty skill reference: give a folder, a SKILL.md, a version or a release id")
    path = Path(ref)
    if not path.exists() and ("/" in ref or ref.endswith(".md")):
        raise SourceError(f"{ref}: no such file or folder")
    if path.exists():
        from skillforge.skill import file as skillfile

        if path.is_dir():  # skilltree: a SKILL.md that is a link (leaving the folder) is refused
            tree = read_tree(path)
            if "SKILL.md" not in tree:
                raise SourceError(f"{path} is not a skill folder (no SKILL.md)")
            file, raw = path / "SKILL.md", tree["SKILL.md"].data
        elif path.is_file():
            file, raw = path, path.read_bytes()
        else:
            raise SourceError(f"{path} is not a skill folder (no SKILL.md)")
        text = skillfile.decode(raw, str(file))
        parsed = skillfile.parse(text, str(file))  # a bad candidate is named by its path, not '<text>'
        if parsed.name != skill:
            raise SourceError(f"{file}: its name is {parsed.name!r}, not {skill!r}: only a version of "
                              f"{skill} can be evaluated against it")
        return text, None
    rel = svc.store.find_release(skill, ref)
    if rel.commit_hash is None:
        raise UnknownRelease(f"release {rel.release_id} has no commit")
    return svc.repo.read(rel.commit_hash, f"{rel.skill_path}/SKILL.md").decode("utf-8"), rel.release_id


def _sides(svc, skill: str, candidate: str, baseline: str | None):  # noqa: ANN001, ANN202
    from skillforge.state.evaluate import SkillSide

    cand_text, cand_id = _release_text(svc, skill, candidate)
    if baseline == "none":
        return SkillSide(text=None, label="no skill"), SkillSide(text=cand_text, release_id=cand_id, label=candidate)
    if baseline is None:
        current = svc.registry.get(skill).release
        baseline = current.release_id
    base_text, base_id = _release_text(svc, skill, baseline)
    return (SkillSide(text=base_text, release_id=base_id, label=baseline),
            SkillSide(text=cand_text, release_id=cand_id, label=candidate))


def _saver(ws: Workspace):  # noqa: ANN202
    from skillforge.runners.checkpoint import checkpointer_for

    return checkpointer_for(ws, CHECKPOINT_FILE)


def check_report_path(report: Path) -> None:
    """ReportPathError unless `report` can be written as a file: checked before the run, so a bad
    path never throws away a finished evaluation. Leaves no file behind."""
    if report.is_dir():
        raise ReportPathError(f"--report {report} is a folder; give a file path such as {report / 'report.html'}")
    from skillforge.safewrite import refusal

    if (why := refusal(report)) is not None:  # a device, FIFO or socket (opening a FIFO would hang)
        raise ReportPathError(f"--report {report} cannot be written: {why}")
    existed = report.exists()
    try:
        with report.open("a", encoding="utf-8"):
            pass
    except OSError as e:
        raise ReportPathError(f"--report {report} cannot be written: {e.strerror or e}") from None
    if not existed:
        report.unlink(missing_ok=True)


def latest_aa(ws: Workspace, skill: str) -> dict[str, object] | None:
    """The newest A/A self-check of `skill` in runs/evaluations.jsonl (the noise floor), if any."""
    from skillforge.journal import read_jsonl

    lines = [x for x in read_jsonl(ws.evaluations_log) if x.get("kind") == "aa" and x.get("skill") == skill]
    return lines[-1] if lines else None


def _print(result, report: Path | None) -> None:  # noqa: ANN001
    m = result.measured
    console = Console(width=None if sys.stdout.isatty() else 160, markup=False, highlight=False)

    def out_print(line: str) -> None:  # user data (skill names, reasons) printed literally, controls neutralised
        console.print(plain(line))
    out_print(f"{result.verdict}  {result.skill} on {result.eval_set} (run {result.run_id})"
              + (f"  improvement: {result.improvement.value}" if result.improvement else ""))
    if result.false_alarm is not None:
        out_print(f"  A/A self-check: judge flip rate {m.flip_rate:.1%}, false alarm: "
                  + ("YES (" + ", ".join(f"{k} {e.outcome.value}" for k, e in result.evidence.items()
                                         if e.outcome is not Outcome.INCONCLUSIVE) + ")" if result.false_alarm else "none"))
    for reason in result.reasons:
        out_print(f"  - {reason}")
    for dim, e in result.evidence.items():
        out_print(f"  {dim:<11} {e.outcome.value:<12} +{e.wins} -{e.losses} ={e.ties}  p {e.p_value:.3g} "
                  f"(adj {e.p_adjusted:.3g})  mean {e.mean:+.3f} CI [{e.ci[0]:+.3f}, {e.ci[1]:+.3f}]  MDE {e.mde:.3f}")
    if m is not None:
        out_print(f"  scores old→new: task {m.old.task:.3f}→{m.new.task:.3f}, robustness {m.old.robustness:.3f}→"
                  f"{m.new.robustness:.3f}, readability {m.old.readability:.3f}→{m.new.readability:.3f}, "
                  f"efficiency {m.old.efficiency:.3f}→{m.new.efficiency:.3f}")
        out_print(f"  flip rate {m.flip_rate:.1%}, INVALID {m.invalid_rate:.1%}, tokens {m.tokens}, "
                  f"traces runs/traces/{result.run_id}.jsonl" + (f", report {report}" if report else ""))
    if result.unexercised is not None:
        u = result.unexercised
        out_print(f"  mode {result.mode}; skill not loaded in {u.executions.get('baseline', 0)} baseline / "
                  f"{u.executions.get('candidate', 0)} candidate executions; {u.cases} case(s) loaded by "
                  "neither side (ties, no evidence)")


def _finish(ws: Workspace, result, results, as_json: bool, report: Path | None,  # noqa: ANN001
            budget: dict[str, object] | None = None) -> None:
    """Show the result (and the run's `budget`: paid, cached, refused), exit with its code."""
    from skillforge.evaluation.report import render_report

    if report is not None:
        from skillforge.safewrite import write_text_atomic

        write_text_atomic(report, render_report(result, results, latest_aa(ws, result.skill)))
    if as_json:
        shown = json.loads(result.model_dump_json()) | ({"budget": budget} if budget is not None else {})
        typer.echo(json_safe(json.dumps(shown, ensure_ascii=False)))
    else:
        _print(result, report)
        if budget is not None:
            typer.echo(f"  {spend_line(budget, budget.get('caps'))}")  # type: ignore[arg-type]
    if result.false_alarm is not None and result.verdict is not EvalVerdict.INVALID:
        raise typer.Exit(AA_FALSE_ALARM_EXIT if result.false_alarm else 0)
    raise typer.Exit(EXIT.get(result.verdict, 5))


def evaluate(skill: Annotated[str | None, typer.Argument(help="The skill to evaluate.")] = None,
             candidate: Annotated[str | None, typer.Option(help="Candidate: a skill folder, a SKILL.md, or a release id/version.")] = None,
             baseline: Annotated[str | None, typer.Option(help="Baseline release (default: current), or 'none' for no skill.")] = None,
             eval_set: Annotated[str | None, typer.Option("--set", help="Evaluation set name (default: dev).")] = None,
             mode: Annotated[ExecutionMode | None, typer.Option(
                 help="behaviour (the default): the skill loaded up front (what its instructions do); disclosure: "
                      "index + use_skill (does the agent pick it).")] = None,
             concurrency: Annotated[int | None, typer.Option(
                 min=1, max=MAX_CONCURRENCY, help="Cases run at once (default 4; 2 against the embedded local model).")] = None,
             as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
             report: Annotated[Path | None, typer.Option(help="Write a static HTML report here.")] = None,
             resume: Annotated[str | None, typer.Option(help="Resume a crashed run by its id.")] = None,
             rejudge: Annotated[str | None, typer.Option(help="Re-run only the judge on a past run's stored outputs.")] = None,
             no_cache: Annotated[bool, typer.Option("--no-cache", help="Bypass the LLM response cache.")] = False,
             aa: Annotated[bool, typer.Option("--aa", help="A/A self-check: the live release against itself "
                                                            "(the judge's flip rate and false alarms; no cache).")] = False,
             budget_calls: BudgetCallsOpt = None, budget_tokens: BudgetTokensOpt = None,
             workspace: WorkspaceOpt = None) -> None:
    """Run baseline and candidate on every case of a set, judge in both orders, decide on the paired evidence."""
    from skillforge.context import eval_context
    from skillforge.evaluation.compare import require_roles
    from skillforge.runners.checkpoint import refuse_foreign, run_thread
    from skillforge.graphs.evaluate import build_evaluate_graph
    from skillforge.errors import BudgetExceeded
    from skillforge.llm.client import build_llm
    from skillforge.llm.ledger import RequestLedger, RunBudget
    from skillforge.nodes.evaluate import cases_to_run
    from skillforge.rules.evolve_budget import estimate_evaluation
    from skillforge.rules.ids import IdKind
    from skillforge.state.evaluate_graph import EvalState
    from skillforge.state.ids import require_id
    from skillforge.state.llm import BudgetCaps
    from skillforge.state.result import EvalKind

    ws = Workspace.open(workspace)
    caps = budget_caps(budget_calls, budget_tokens)
    if eval_set is not None and not eval_set.strip():
        raise SkillForgeError("--set needs a set name (dev, repair, holdout, final_audit...); it was empty")
    if aa and (candidate or baseline or resume or rejudge):
        raise SkillForgeError("--aa runs the live release against itself: give SKILL --aa without "
                              "--candidate, --baseline, --resume or --rejudge")
    stored = {"--candidate": candidate, "--baseline": baseline, "--set": eval_set, "--mode": mode}
    if rejudge:
        stored |= {"--resume": resume, "--concurrency": concurrency}
    ignored = [flag for flag, value in stored.items() if value is not None]
    if (resume or rejudge) and ignored:
        flag = "--rejudge" if rejudge else "--resume"
        raise SkillForgeError(f"{flag} RUN takes its skill, sides, set and mode from the stored run: "
                              f"drop {', '.join(ignored)}")
    if report is not None:
        check_report_path(report)
    for run in filter(None, (resume, rejudge)):
        require_id(IdKind.RUN, run)  # it names files under runs/traces/: never a path
    if rejudge:
        _rejudge(ws, rejudge, no_cache, as_json, report, skill, caps)
    svc = Services(ws)
    if not resume:
        if skill is None or (candidate is None and not aa):
            raise SkillForgeError("give SKILL and --candidate, or SKILL --aa (or --resume RUN / --rejudge RUN)")
        svc.registry.get(skill)  # UnknownSkill with the closest names
        live = svc.registry.get(skill).release.release_id if aa else None
        old, new = _sides(svc, skill, live or candidate, live or baseline)  # a bad candidate is named first
    if resume:
        run_id = resume
    else:
        run_id = f"{skill}-{'aa-' if aa else ''}{datetime.now(UTC):%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"
    ledger = RequestLedger.of_workspace(ws.runs_dir)
    caps = caps or ledger.caps(run_id) or BudgetCaps()  # a resumed run keeps its caps unless given new ones
    llm = build_llm(ws, no_cache=no_cache or aa, ledger=RunBudget(ledger, run_id, caps))
    require_roles(llm)  # before anything is run or written
    ctx = eval_context(ws, llm)
    if concurrency is None:
        from skillforge.llm.config import default_concurrency

        concurrency = default_concurrency(ctx.llm.configs)
    saver = _saver(ws)
    graph = build_evaluate_graph(checkpointer=saver)
    if resume:
        state_in = None
        saved = graph.get_state({"configurable": {"thread_id": run_thread(saver, ws, resume)}}).values
        if not saved:
            refuse_foreign(saver, ws, resume, "evaluation run")  # another workspace's, in a shared database
            raise UnknownRun(f"no evaluation run '{resume}' to resume in {ws.checkpoints_dir / CHECKPOINT_FILE}")
        _same_skill(skill, saved.get("skill"), resume)
        at = EvalState.model_validate(saved)
        done = {r.case.id for r in at.results}
        todo = [c for c in at.cases or cases_to_run(ctx.sets, at.eval_set, at.skill, at.candidate) if c.id not in done]
        where = (at.skill, at.eval_set, at.mode)
    else:
        kind = EvalKind.AA if aa else EvalKind.AB
        eval_set = eval_set or "dev"
        state_in = EvalState(run_id=run_id, skill=skill, eval_set=eval_set, kind=kind, baseline=old, candidate=new,
                             mode=mode or ExecutionMode.BEHAVIOUR)
        todo = cases_to_run(ctx.sets, eval_set, skill, new)  # its named errors before the run has a checkpoint
        done, where = set(), (skill, eval_set, state_in.mode)
    disclosure = where[2] is ExecutionMode.DISCLOSURE
    refused = preflight(llm.ledger, estimate_evaluation(len(todo), disclosure), err)
    if refused is not None:  # nothing was sent
        needed = llm.ledger.calls + estimate_evaluation(len(todo), disclosure).calls
        stop_at_budget(llm.ledger, refused, where[0], where[1], len(done), len(done) + len(todo), as_json,
                       resume_hint(run_id, needed) if resume else
                       f"run it again with --budget-calls {needed} or more, or on a smaller set")
    ledger.set_caps(run_id, caps)
    if not resume:
        err.print(plain(f"run {run_id} (if it stops: skillforge evaluate --resume {run_id})"), soft_wrap=True)
    # >= 2: checkpoint writes of finished cases share the pool; with 1 they queue behind the running
    # case and a crash would lose them
    cfg = {"configurable": {"thread_id": run_thread(saver, ws, run_id)}, "max_concurrency": max(2, concurrency)}
    try:
        with Progress(*Progress.get_default_columns(), MofNCompleteColumn(), TimeElapsedColumn(), console=err,
                      transient=True) as progress, interrupt.stopping(llm.stop):
            task = progress.add_task(escape(safe(f"evaluating {run_id}")), total=None)  # descriptions are markup
            for update in graph.stream(state_in, cfg, context=ctx, stream_mode="updates", durability="sync"):
                if "load_cases" in update:
                    progress.update(task, total=len(update["load_cases"]["cases"]))
                if "run_case" in update:
                    progress.advance(task)
                    if not err.is_interactive:  # a pipe or a log: rich draws no bar there, so one line per case
                        t = progress.tasks[0]
                        err.print(f"case {t.completed:.0f} of {t.total or 0:.0f} done, {t.elapsed or 0:.0f} s elapsed")
    except BudgetExceeded as e:  # a result to show, resumable: the finished cases are in the checkpoint
        at = EvalState.model_validate(graph.get_state(cfg).values)
        total = len(at.cases) or len(todo)
        needed = llm.ledger.calls + estimate_evaluation(total - len(at.results), disclosure).calls
        stop_at_budget(llm.ledger, str(e), where[0], where[1], len(at.results), total, as_json,
                       resume_hint(run_id, needed))
    final = EvalState.model_validate(graph.get_state(cfg).values)
    if final.result is None:
        raise SkillForgeError(f"run {run_id} did not finish; resume it with --resume {run_id}")
    _write_meta(ws, final)
    _finish(ws, final.result, final.results, as_json, report, budget_report(llm.ledger.totals(), caps))


def _same_skill(given: str | None, stored: object, run: str) -> None:
    """SKILL may be repeated with --resume/--rejudge RUN, but must be the run's own."""
    if given is not None and given != stored:
        raise SkillForgeError(f"run '{run}' evaluated '{stored}', not '{given}': drop SKILL or give that run's id")


def _write_meta(ws: Workspace, state) -> None:  # noqa: ANN001
    """What --rejudge needs besides the traces: the skill texts of both sides."""
    meta = {k: getattr(state, k) for k in ("run_id", "skill", "eval_set", "mode")} | {"kind": state.kind.value}
    _save_meta(ws, meta | {"baseline": state.baseline.model_dump(), "candidate": state.candidate.model_dump()})


def _save_meta(ws: Workspace, meta: dict) -> None:
    """runs/traces/<run_id>.meta.json."""
    from skillforge.safewrite import write_text_atomic  # a full disk is NotWritable, not an internal error

    write_text_atomic(ws.traces_dir / f"{meta['run_id']}.meta.json", json.dumps(meta, ensure_ascii=False))


def _rejudge(ws: Workspace, run: str, no_cache: bool, as_json: bool, report: Path | None,
             skill: str | None = None, caps=None) -> None:  # noqa: ANN001
    """Judge a stored run's outputs again, as a new run counted in the ledger under its own id;
    with `caps`, a refused judge request stops it at BUDGET (the judgements made so far are cached)."""
    from skillforge.evaluation.compare import conclude, judge_case, require_roles
    from skillforge.llm.ledger import RequestLedger, RunBudget
    from skillforge.nodes.evaluate import budget_refusal
    from skillforge.state.llm import BudgetCaps, Role
    from skillforge.journal import read_jsonl
    from skillforge.llm.client import build_llm
    from skillforge.nodes.evaluate import record_result
    from skillforge.state.evaluate import CaseResult, Unexercised

    meta_path = ws.traces_dir / f"{run}.meta.json"
    if not meta_path.exists():
        raise UnknownRun(f"no stored run '{run}' in {ws.traces_dir}")
    meta = _read_meta(meta_path)
    _same_skill(skill, meta["skill"], run)
    traces = ws.traces_dir / f"{run}.jsonl"
    if not traces.exists():
        raise StoredRunError(f"stored run '{run}' has no case outputs ({traces} is missing): nothing to rejudge")
    new_run = f"{run}-rejudge-{uuid.uuid4().hex[:4]}"
    llm = build_llm(ws, no_cache=no_cache, ledger=RunBudget(RequestLedger.of_workspace(ws.runs_dir), new_run,
                                                            caps or BudgetCaps()))
    require_roles(llm, [Role.JUDGE])
    stored, bad = {}, 0
    for n, line in enumerate(read_jsonl(traces), 1):
        try:
            r = CaseResult.model_validate({k: v for k, v in line.items() if k in CaseResult.model_fields})
        except ValidationError as e:
            bad += 1
            log.warning("%s: trace line %d is not a case's outputs (%s); skipped", traces, n,
                        str(e).splitlines()[0])
            continue
        stored[r.case.id] = r  # the last line of a case wins (a run can be rejudged more than once)
    if not stored:
        raise StoredRunError(f"stored run '{run}' has no usable case outputs in {traces}"
                             + (f" ({bad} line(s) not a case's outputs)" if bad else " (it is empty)"))
    err.print(plain(f"estimate: at most {2 * len(stored)} judge requests ({len(stored)} cases x 2 orders); "
                    f"cap {llm.ledger.caps.max_calls or 'none'}"), soft_wrap=True)
    with interrupt.stopping(llm.stop):
        results = [judge_case(r.case, r.baseline, r.candidate, llm) for r in stored.values()]
    refused = next(filter(None, map(budget_refusal, results)), None)
    if refused is not None:
        needed = llm.ledger.calls + 2 * sum(budget_refusal(r) is not None for r in results)
        stop_at_budget(llm.ledger, refused, meta["skill"], meta["eval_set"],
                       sum(budget_refusal(r) is None for r in results), len(results), as_json,
                       f"skillforge evaluate --rejudge {run} --budget-calls {needed} (what was judged comes "
                       "from the cache)")
    base = {"run_id": new_run, "skill": meta["skill"], "eval_set": meta["eval_set"], "kind": meta.get("kind", "ab"),
            "baseline_release": meta["baseline"].get("release_id"), "candidate_release": meta["candidate"].get("release_id"),
            "mode": ExecutionMode(meta.get("mode", ExecutionMode.DISCLOSURE)),  # runs before modes were disclosure
            "unexercised": Unexercised.of(results)}
    result = conclude(base, meta["baseline"].get("text"), meta["candidate"].get("text"), results)
    record_result(ws.evaluations_log, ws.traces_dir, result, results)
    _save_meta(ws, meta | {"run_id": new_run})  # so the rejudge can be rejudged
    _finish(ws, result, results, as_json, report, budget_report(llm.ledger.totals(), llm.ledger.caps))


def _read_meta(path: Path) -> dict:
    """A stored run's meta.json, checked: the skill, the set and both sides' texts."""
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise StoredRunError(f"{path} is unreadable ({str(e).splitlines()[0]}): cannot rejudge") from None
    if (not isinstance(meta, dict) or not isinstance(meta.get("skill"), str) or not isinstance(meta.get("eval_set"), str)
            or not all(isinstance(meta.get(side), dict) for side in ("baseline", "candidate"))):
        raise StoredRunError(f"{path} lacks the skill, the set or a side's text: cannot rejudge")
    return meta
