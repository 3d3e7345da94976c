"""The evaluate driver: is a candidate release better than the current one, and safe to publish?

`run_evaluation` builds a run (the two sides, the set and the mode, or with `resume` a crashed run's
checkpoint thread), checks the estimate against the run's caps before the first request, streams
the evaluate graph (its checkpointer is `checkpoint.checkpointer_for(ws, "evaluate.sqlite")`, with
durability `sync`; its record node writes what a rejudge needs, runs/traces/<run>.meta.json), then the
HTML report. It returns `Finished`, or `BudgetStop` when the run stopped at its caps (resumable: the
finished cases are in the checkpoint). What it tells a person on the way goes to a `Watcher` (the
CLI prints it: cli/evaluate.py). Every request is counted in the workspace's request ledger under
the run id. The rejudge of a stored run is runners/rejudge.py.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from skillforge.config import Workspace
from skillforge.errors import ReportPathError, SkillForgeError, SourceError, UnknownRelease, UnknownRun
from skillforge.library.services import Services
from skillforge.runners import interrupt
from skillforge.runners.budget import next_step, preflight, report as budget_report
from skillforge.runners.watcher import Watcher
from skillforge.skill.tree import read_tree
from skillforge.state.evaluate import ExecutionMode

if TYPE_CHECKING:
    from skillforge.state.result import EvalResult
    from skillforge.llm.ledger import RunBudget
    from skillforge.state.evaluate import CaseResult, SkillSide
    from skillforge.state.llm import BudgetCaps

CHECKPOINT_FILE = "evaluate.sqlite"


@dataclass(frozen=True)
class Finished:
    """A run that reached its verdict: its result, its cases' results and what it spent (`budget`)."""

    result: EvalResult
    results: list[CaseResult]
    budget: dict[str, object]


@dataclass(frozen=True)
class BudgetStop:
    """A run stopped at its budget (a result, not an error): why, the cases done of `total`, and
    `next_step`, the command that goes on."""

    ledger: RunBudget
    reason: str
    skill: str
    eval_set: str
    done: int
    total: int
    next_step: str


def _release_text(svc, skill: str, ref: str) -> tuple[str, str | None]:  # noqa: ANN001
    """(SKILL.md text, release id) of a path (folder or file) or a release of the skill."""
    if not ref.strip():
        raise SourceError("an empty skill reference: give a folder, a SKILL.md, a version or a release id")
    path = Path(ref)
    if not path.exists() and ("/" in ref or ref.endswith(".md")):
        raise SourceError(f"{ref}: no such file or folder")
    if path.exists() or path.is_symlink():
        from skillforge.skill import file as skillfile
        from skillforge.skill.tree import skill_source

        folder = skill_source(path, any_name=True)  # a linked folder or SKILL.md is refused, as by validate and publish
        if path.is_dir():  # read_tree: a link leaving the folder is refused
            file, raw = folder / "SKILL.md", read_tree(folder)["SKILL.md"].data
        else:
            file, raw = path, path.read_bytes()
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


def _files_of(svc, skill: str, ref: str):  # noqa: ANN001, ANN202
    """The signature (path -> (mode, blob id)) of every file of one side, read as `_release_text`
    reads its SKILL.md: a folder from disk, a release from its git tree. None for a side given as a
    lone SKILL.md file: it has no other files to compare."""
    from skillforge.skill.tree import signature

    path = Path(ref)
    if path.exists() or path.is_symlink():
        return signature(read_tree(path)) if path.is_dir() else None
    rel = svc.store.find_release(skill, ref)
    return signature(svc.repo.tree_at(rel.commit_hash, rel.skill_path, missing_ok=True)) if rel.commit_hash else {}


def not_evaluated(svc, skill: str, old: SkillSide, new: SkillSide) -> list[str]:  # noqa: ANN001
    """The files outside SKILL.md that differ between the sides, described ("scripts/rotate.py
    changed"): an evaluation runs only SKILL.md. A side with no skill has no files; a side given as a
    lone SKILL.md is compared on nothing else."""
    from skillforge.rules.skillfiles import file_changes

    before = {} if old.text is None else _files_of(svc, skill, old.label)
    after = _files_of(svc, skill, new.label)
    if before is None or after is None:
        return []
    return [c.describe() for c in file_changes(before, after)]


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


def finished(ws: Workspace, result, results, report: Path | None,  # noqa: ANN001
             budget: dict[str, object]) -> Finished:
    """The run's result, with the HTML report written to `report` first (when given)."""
    from skillforge.evaluation.report import render_report

    if report is not None:
        from skillforge.safewrite import write_text_atomic

        write_text_atomic(report, render_report(result, results, latest_aa(ws, result.skill)))
    return Finished(result, results, budget)


def run_evaluation(ws: Workspace, skill: str | None, *, candidate: str | None = None, baseline: str | None = None,
                   eval_set: str | None = None, mode: ExecutionMode | None = None, concurrency: int | None = None,
                   resume: str | None = None, no_cache: bool = False, aa: bool = False, caps: BudgetCaps | None = None,
                   report: Path | None = None, watcher: Watcher | None = None) -> Finished | BudgetStop:
    """Run baseline and candidate on every case of a set, judge in both orders, decide on the paired
    evidence (a new run, an A/A self-check with `aa`, or the crashed run `resume`)."""
    from skillforge.context import eval_context
    from skillforge.evaluation.compare import require_roles
    from skillforge.state.result import EvalKind
    from skillforge.runners.checkpoint import refuse_foreign, run_thread
    from skillforge.graphs.evaluate import build_evaluate_graph
    from skillforge.errors import BudgetExceeded
    from skillforge.llm.client import build_llm
    from skillforge.llm.ledger import RequestLedger, RunBudget
    from skillforge.nodes.evaluate import cases_to_run
    from skillforge.rules.evolve_budget import estimate_evaluation
    from skillforge.state.evaluate_graph import EvalState
    from skillforge.state.llm import BudgetCaps

    watcher = watcher or Watcher()
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
    llm = build_llm(ws, no_cache=no_cache or aa, store=not aa, ledger=RunBudget(ledger, run_id, caps))
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
                             mode=mode or ExecutionMode.BEHAVIOUR, not_evaluated=[] if aa else not_evaluated(svc, skill, old, new))
        todo = cases_to_run(ctx.sets, eval_set, skill, new)  # its named errors before the run has a checkpoint
        too_few(eval_set, skill, len(todo))
        done, where = set(), (skill, eval_set, state_in.mode)
    disclosure = where[2] is ExecutionMode.DISCLOSURE
    if not resume and not aa and old.text is not None and old.text == new.text:
        watcher.say(f"note: the candidate's SKILL.md is the same text as the baseline's ({old.label}): this run can "
                    "only measure the judge's noise, as `skillforge evaluate SKILL --aa` does, and cannot find "
                    "an improvement")
    refused = preflight(llm.ledger, estimate_evaluation(len(todo), disclosure), watcher.say)
    if refused is not None:  # nothing was sent
        return BudgetStop(llm.ledger, refused, where[0], where[1], len(done), len(done) + len(todo),
                          next_step(llm.ledger, estimate_evaluation(len(todo), disclosure), run_id if resume else None)
                          + (" (with --no-cache)" if no_cache and not resume else " --no-cache" if no_cache else ""))
    ledger.set_caps(run_id, caps)
    if not resume:
        watcher.say(f"run {run_id} (if it stops: skillforge evaluate --resume {run_id})")
    # >= 2: checkpoint writes of finished cases share the pool; with 1 they queue behind the running
    # case and a crash would lose them
    cfg = {"configurable": {"thread_id": run_thread(saver, ws, run_id)}, "max_concurrency": max(2, concurrency)}
    try:
        with watcher.running(f"evaluating {run_id}"), interrupt.stopping(
                llm.stop, f"skillforge evaluate --resume {run_id}"):
            if resume:  # load_cases ran before the stop: its count never comes again ("case 1 of 0")
                watcher.cases(len(todo))
            for update in graph.stream(state_in, cfg, context=ctx, stream_mode="updates", durability="sync"):
                if "load_cases" in update:
                    watcher.cases(len(update["load_cases"]["cases"]))
                if "run_case" in update and not _replayed(update["run_case"], done):
                    watcher.case_done()
    except BudgetExceeded as e:  # a result to show, resumable: the finished cases are in the checkpoint
        at = EvalState.model_validate(graph.get_state(cfg).values)
        total = len(at.cases) or len(todo)
        return BudgetStop(llm.ledger, str(e), where[0], where[1], len(at.results), total,  # --no-cache kept: the
                          next_step(llm.ledger, estimate_evaluation(total - len(at.results), disclosure, worst=True),
                                    run_id)
                          + (" --no-cache" if no_cache else ""))  # cases left must not read the answers it replaces
    final = EvalState.model_validate(graph.get_state(cfg).values)
    if final.result is None:
        raise SkillForgeError(f"run {run_id} did not finish; resume it with --resume {run_id}")
    return finished(ws, final.result, final.results, report, budget_report(llm.ledger.totals(), caps))


def too_few(eval_set: str, skill: str, n: int) -> None:
    """DatasetError, before anything is sent, when the set has fewer cases for the skill than the
    sign test needs to decide anything (QA 34 F5): such a run could only end INVALID, after paying
    for every case."""
    from skillforge.evaluation.compare import MIN_VALID_CASES
    from skillforge.evaluation.datasets import DatasetError

    if n < MIN_VALID_CASES:
        raise DatasetError(f"set '{eval_set}' has {n} case(s) for '{skill}': the sign test needs at least "
                           f"{MIN_VALID_CASES} valid cases to decide anything, so the run could only end INVALID. "
                           f"Nothing was sent. Add cases (evaluation_sets/README.md), or use a set that has them")


def _replayed(update: object, done: set[str]) -> bool:
    """A resumed stream replays the updates of the cases finished before the stop: those are not
    cases this run finishes (the progress would count past its total)."""
    results = update.get("results") if isinstance(update, dict) else None
    ids = [getattr(getattr(r, "case", None), "id", None) for r in results or ()]
    return bool(ids) and all(i in done for i in ids)


def _same_skill(given: str | None, stored: object, run: str) -> None:
    """SKILL may be repeated with --resume/--rejudge RUN, but must be the run's own."""
    if given is not None and given != stored:
        raise SkillForgeError(f"run '{run}' evaluated '{stored}', not '{given}': drop SKILL or give that run's id")


__all__ = ["CHECKPOINT_FILE", "BudgetStop", "Finished", "Watcher", "check_report_path", "latest_aa", "run_evaluation"]
