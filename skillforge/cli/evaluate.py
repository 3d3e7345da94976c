"""`skillforge evaluate`: is a candidate release better than the current one, and safe to publish?
Exit codes are a CI gate: 0 PASS, 3 REVIEW, 4 DECLINED, 5 INVALID, 6 BUDGET (2 a named error). With
--aa (the live release against itself): 0 no false alarm, 4 a false alarm (a WIN or LOSS), 5 INVALID.
Every request is counted in the workspace's request ledger under the run id; the estimate is printed
before the first request, and --budget-calls / --budget-tokens are hard caps (cli/budget.py).
This module parses the options and shows the outcome; the driver is runners/evaluate.py (the
rejudge of a stored run: runners/rejudge.py)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import MofNCompleteColumn, Progress, TimeElapsedColumn

from skillforge.cli.budget import BudgetCallsOpt, BudgetTokensOpt, budget_caps, spend_line, stop_at_budget
from skillforge.cli.common import WorkspaceOpt, one_of, pasteable
from skillforge.cli.output import json_safe, plain, safe
from skillforge.config import Workspace
from skillforge.errors import SkillForgeError
from skillforge.runners.watcher import Watcher
from skillforge.state.cliopts import MAX_CONCURRENCY, EvalVerdict, ExecutionMode

if TYPE_CHECKING:  # the driver is imported by the command that runs it
    from skillforge.runners.evaluate import BudgetStop, Finished

EXIT = {EvalVerdict.PASS: 0, EvalVerdict.REVIEW: 3, EvalVerdict.DECLINED: 4, EvalVerdict.INVALID: 5}
AA_FALSE_ALARM_EXIT = 4
err = Console(stderr=True)


class _Shown(Watcher):
    """The driver's notes on stderr, and a transient progress bar over the cases."""

    def say(self, line: str) -> None:
        err.print(plain(pasteable(line)), soft_wrap=True)

    @contextmanager
    def running(self, label: str) -> Iterator[None]:
        with Progress(*Progress.get_default_columns(), MofNCompleteColumn(), TimeElapsedColumn(), console=err,
                      transient=True) as progress:
            self.progress = progress
            self.task = progress.add_task(escape(safe(label)), total=None)  # descriptions are markup
            yield

    def cases(self, total: int) -> None:
        self.progress.update(self.task, total=total)

    def case_done(self) -> None:
        self.progress.advance(self.task)
        if not err.is_interactive:  # a pipe or a log: rich draws no bar there, so one line per case
            t = self.progress.tasks[0]
            err.print(f"case {t.completed:.0f} of {t.total or 0:.0f} done, {t.elapsed or 0:.0f} s elapsed")


def _print(result, report: Path | None) -> None:  # noqa: ANN001
    from skillforge.rules.endpoint import JUDGE_NOISE_FLIP_RATE
    from skillforge.state.result import Outcome, aa_outcome

    m = result.measured
    console = Console(width=None if sys.stdout.isatty() else 160, markup=False, highlight=False)

    def out_print(line: str) -> None:  # user data (skill names, reasons) printed literally, controls neutralised
        console.print(plain(line))
    if result.false_alarm is not None and result.verdict is not EvalVerdict.INVALID:  # an A/A decides no release
        alarms = [f"{k} {e.outcome.value}" for k, e in result.evidence.items() if e.outcome is not Outcome.INCONCLUSIVE]
        out_print(f"{aa_outcome(result.false_alarm, alarms)}  {result.skill} on {result.eval_set} (run {result.run_id})")
        if m is not None and m.judged_cases and m.flip_rate >= JUDGE_NOISE_FLIP_RATE:  # QA 34 F4: a coin, not a judge
            out_print(f"  but the judge flipped on {m.flips} of {m.judged_cases} case(s) judged in both orders (flip rate "
                      f"{m.flip_rate:.0%} >= {JUDGE_NOISE_FLIP_RATE:.0%}): its verdicts decide nothing, here or in A/B runs")
    else:
        out_print(f"{result.verdict}  {result.skill} on {result.eval_set} (run {result.run_id})"
                  + (f"  improvement: {result.improvement.value}" if result.improvement else ""))
    if result.primary_reason:  # which endpoint decided: effect, or objective when the judge was noise
        out_print(f"  {result.primary_reason}")
    if result.judge_calibration is not None:  # per judged dimension: gated, reported only, or uncalibrated
        out_print(f"  {result.judge_calibration.line}")
    if result.false_alarm is not None:
        out_print(f"  A/A self-check: judge flip rate {m.flip_rate:.1%}, false alarm: "
                  + ("YES (" + ", ".join(f"{k} {e.outcome.value}" for k, e in result.evidence.items()
                                         if e.outcome is not Outcome.INCONCLUSIVE) + ")" if result.false_alarm else "none"))
    for reason in result.reasons:
        out_print(f"  - {reason}")
    if result.not_evaluated:  # no case runs scripts/ or references/: said even when the verdict was not PASS
        out_print(f"  not evaluated ({len(result.not_evaluated)} file(s) outside SKILL.md differ from the baseline's): "
                  + ", ".join(result.not_evaluated))
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


def _show(outcome: Finished | BudgetStop, as_json: bool, report: Path | None) -> NoReturn:
    """Show what the driver returned (a run stopped at its budget, or a result), exit with its code."""
    from skillforge.runners.evaluate import BudgetStop

    if isinstance(outcome, BudgetStop):
        stop_at_budget(outcome.ledger, outcome.reason, outcome.skill, outcome.eval_set, outcome.done, outcome.total,
                       as_json, outcome.next_step)
    _finish(outcome.result, as_json, report, outcome.budget)


def _finish(result, as_json: bool, report: Path | None,  # noqa: ANN001
            budget: dict[str, object] | None = None) -> NoReturn:
    """Show the result (and the run's `budget`: paid, cached, refused), exit with its code."""
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
                 parser=one_of(ExecutionMode), metavar="[behaviour|disclosure]", help="behaviour (the default): the skill loaded up front (what its instructions do); disclosure: "
                      "index + use_skill (does the agent pick it).")] = None,
             concurrency: Annotated[int | None, typer.Option(
                 min=1, max=MAX_CONCURRENCY, help="Cases run at once (default 4; 2 against the embedded local model).")] = None,
             as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
             report: Annotated[Path | None, typer.Option(help="Write a static HTML report here.")] = None,
             resume: Annotated[str | None, typer.Option(help="Resume a crashed run by its id.")] = None,
             rejudge: Annotated[str | None, typer.Option(help="Re-run only the judge on a past run's stored outputs.")] = None,
             no_cache: Annotated[bool, typer.Option("--no-cache", help="Read nothing from the LLM response cache; fresh answers replace the stored ones.")] = False,
             aa: Annotated[bool, typer.Option("--aa", help="A/A self-check: the live release against itself "
                                                            "(the judge's flip rate and false alarms; no cache).")] = False,
             budget_calls: BudgetCallsOpt = None, budget_tokens: BudgetTokensOpt = None,
             workspace: WorkspaceOpt = None) -> None:
    """Run baseline and candidate on every case of a set, judge in both orders, decide on the paired evidence."""
    from skillforge.rules.ids import IdKind
    from skillforge.runners.evaluate import check_report_path, run_evaluation
    from skillforge.runners.rejudge import rejudge_run
    from skillforge.state.ids import require_id

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
        _show(rejudge_run(ws, rejudge, no_cache=no_cache, report=report, skill=skill, caps=caps, watcher=_Shown()),
              as_json, report)
    _show(run_evaluation(ws, skill, candidate=candidate, baseline=baseline, eval_set=eval_set, mode=mode,
                         concurrency=concurrency, resume=resume, no_cache=no_cache, aa=aa, caps=caps, report=report,
                         watcher=_Shown()), as_json, report)
