"""Nodes of the evaluate graph: load_cases -> run_case (one per case, fanned out with Send) ->
measure -> record. Each reads the state and the EvalContext and returns what changed."""

from __future__ import annotations

import difflib
import threading
from collections.abc import Collection, Mapping, Sequence
from functools import lru_cache
from pathlib import Path

from langgraph.runtime import Runtime
from langgraph.types import Send

from skillforge.context import EvalContext
from skillforge.evaluation.datasets import DatasetError, cases_for
from skillforge.errors import BudgetExceeded, UnknownSkill
from skillforge.evaluation.compare import conclude, require_roles
from skillforge.evaluation.compare import run_case as run_one
from skillforge.evaluation.executor import SkillUnderTest
from skillforge.journal import append_jsonl, encoded_line
from skillforge.state.evaluate import (Case, CaseResult, CaseTask, EvalSet, ExecutionFailure, ExecutionMode, SkillSide,
                                       Unexercised)
from skillforge.state.evaluate_graph import EvalState
from skillforge.state.result import EvalResult


def load_cases(state: EvalState, runtime: Runtime[EvalContext]) -> dict[str, object]:
    """Reads skill, eval_set. Writes cases: the set's cases for the skill, checked against the
    candidate's declared tools. DatasetError for an unknown set, no cases, or an undeclared tool;
    LLMNotConfigured (before any case runs) when the executor or judge has no model."""
    ctx = EvalContext.of(runtime)
    require_roles(ctx.llm)
    known = set(ctx.others) | {c.skill for s in ctx.sets.values() for c in s.cases}
    if state.candidate.text is not None:
        known.add(_side(state.candidate).skill.name)  # a new skill's candidate
    cases = cases_to_run(ctx.sets, state.eval_set, state.skill, state.candidate, known=known)
    if ctx.traces_dir is not None:  # a run that records claims its id first (a typo above keeps it free)
        from skillforge.evaluation.stored import claim_evaluation
        from skillforge.evolution.preflight import graph_thread

        claim_evaluation(ctx.traces_dir, state.run_id, graph_thread(), run_meta(state))
    return {"cases": cases}


def cases_to_run(sets: Mapping[str, EvalSet], eval_set: str, skill: str, candidate: SkillSide,
                 known: Collection[str] | None = None) -> list[Case]:
    """The set's cases for the skill, checked against the candidate's declared tools (the CLI calls
    it before it starts a run, so these named errors leave no checkpoint thread behind). With
    `known` (the skill names the workspace has), a skill that has no cases and is none of them is
    UnknownSkill with the closest names, as evolve says it, not "the set has no cases"."""
    if eval_set not in sets:
        have = ", ".join(sorted(sets))
        raise DatasetError(f"no evaluation set '{eval_set}'; have: {have}" if have else
                           f"no evaluation set '{eval_set}': this workspace has none. Sets are JSON files in the "
                           "workspace's evaluation_sets/ (format: docs/cli.md, 'Sets'); `skills import` copies skills "
                           "only, and the checkout's evaluation_sets/ holds the example skills' sets to copy in")
    cases = cases_for(sets[eval_set], skill)
    if not cases and known is not None and skill not in known:
        raise UnknownSkill(skill, difflib.get_close_matches(skill, sorted(known), n=3, cutoff=0.5))
    if not cases:
        raise DatasetError(f"set '{eval_set}' has no cases for skill '{skill}'")
    declared = set(_side(candidate).skill.dependencies) if candidate.text else set()
    for case in cases:
        unknown = sorted(set(case.fixtures) - declared)
        if declared and unknown:
            raise DatasetError(f"case '{case.id}' has fixtures for tools the skill does not declare: {unknown}")
    return cases


def fan_out(state: EvalState) -> list[Send] | str:
    """One run_case per case not finished yet (a resumed run skips what is done)."""
    done = {r.case.id for r in state.results}
    return [Send("run_case", CaseTask(case=c, baseline=state.baseline, candidate=state.candidate, mode=state.mode))
            for c in state.cases if c.id not in done] or "measure"


_parse_lock = threading.Lock()


def _side(side: SkillSide) -> SkillUnderTest:
    """The side's SKILL.md parsed: once per text and release, not once per case (the fanned-out
    cases of an evaluation, and the evaluations of an evolve round, share it)."""
    assert side.text is not None
    with _parse_lock:  # two cases running at once wait for one parse, not two
        return _parsed(side.text, side.release_id)


@lru_cache(maxsize=16)
def _parsed(text: str, release_id: str | None) -> SkillUnderTest:
    """SkillUnderTest.from_text, remembered (a pure function of its arguments; the result is frozen)."""
    return SkillUnderTest.from_text(text, release_id)


def _skills(ctx: EvalContext, skill: str, side: SkillSide, mode: ExecutionMode) -> dict[str, SkillUnderTest]:
    """The side's version of the skill under test (or nothing), plus, in disclosure mode, the other
    published skills (behaviour mode shows only the skill under test: a shorter prompt)."""
    others = ctx.others if mode is ExecutionMode.DISCLOSURE else {}
    skills = {name: s for name, s in others.items() if name != skill}
    if side.text is not None:
        skills[skill] = _side(side)
    return skills


def run_case(task: CaseTask, runtime: Runtime[EvalContext]) -> dict[str, object]:
    """Reads one case, both sides and the mode. Writes results += [CaseResult]: both executions
    (fresh nonces), objective checks, the judge in both orders and the combined verdicts. A request
    the budget refused is no evidence: BudgetExceeded stops the run and the case stays unfinished
    (a resume runs it again, with what it was answered before from the cache)."""
    ctx = EvalContext.of(runtime)
    skill = task.case.skill
    result = run_one(task.case, _skills(ctx, skill, task.baseline, task.mode),
                     _skills(ctx, skill, task.candidate, task.mode), task.baseline.release_id,
                     task.candidate.release_id, ctx.llm, task.mode)
    refused = budget_refusal(result)
    if refused is not None:
        raise BudgetExceeded(f"case '{task.case.id}': {refused}"[:500])
    return {"results": [result]}


def budget_refusal(result: CaseResult) -> str | None:
    """The error of a case that stopped because a request was refused by the budget (the executor
    and the judge mark it `budget_refused`; an execution's failure is BUDGET), or None."""
    if not result.budget_refused:
        return None
    refused = [run.error for run in (result.baseline, result.candidate) if run.failure is ExecutionFailure.BUDGET]
    return next(filter(None, refused), None) or (result.error or "").removeprefix("judge: ")


def measure_node(state: EvalState, runtime: Runtime[EvalContext]) -> dict[str, object]:
    """Reads results and the context's judge calibration. Writes result: INVALID above the INVALID
    rate (the ratchet is not consulted), else the ratchet's PASS / REVIEW / DECLINED, with the
    dimensions a calibration put below a floor reported and not deciding."""
    ctx = EvalContext.of(runtime)
    order = {c.id: i for i, c in enumerate(state.cases)}
    results = sorted(state.results, key=lambda r: order.get(r.case.id, 0))
    base = {"run_id": state.run_id, "skill": state.skill, "eval_set": state.eval_set, "kind": state.kind,
            "baseline_release": state.baseline.release_id, "candidate_release": state.candidate.release_id,
            "mode": state.mode, "unexercised": Unexercised.of(results)}
    result = conclude(base, state.baseline.text, state.candidate.text, results, ctx.judge_calibration)
    return {"result": with_not_evaluated(result, state.not_evaluated)}


def with_not_evaluated(result: EvalResult, not_evaluated: Sequence[str]) -> EvalResult:
    """`result` naming the files outside SKILL.md that no case ran, its PASS capped at REVIEW
    (rules/skillfiles.py `cap_verdict`)."""
    if not not_evaluated:
        return result
    from skillforge.rules.skillfiles import cap_verdict

    verdict, why = cap_verdict(result.verdict, not_evaluated)
    return result.model_copy(update={"verdict": verdict, "not_evaluated": list(not_evaluated),
                                     "reasons": [*result.reasons, *([why] if why else [])]})


def record(state: EvalState, runtime: Runtime[EvalContext]) -> dict[str, object]:
    """Reads result and results. Writes one trace line per case to runs/traces/<run>.jsonl, one line
    to runs/evaluations.jsonl, and what a rejudge needs to runs/traces/<run>.meta.json (record_result)."""
    ctx = EvalContext.of(runtime)
    if ctx.evaluations_log is not None and state.result is not None:
        from skillforge.evolution.preflight import graph_thread

        record_result(ctx.evaluations_log, ctx.traces_dir, state.result, state.results, meta=run_meta(state),
                      forget=graph_thread() is None)  # never resumed: a failed record leaves its id free
    return {}


def run_meta(state: EvalState) -> dict[str, object]:
    """What --rejudge needs besides the traces: the skill texts of both sides, and the run's case ids
    (so a rejudge can tell how many of them it has)."""
    meta = {k: getattr(state, k) for k in ("run_id", "skill", "eval_set", "mode", "not_evaluated")} | {
        "kind": state.kind.value, "cases": [c.id for c in state.cases]}
    return meta | {"baseline": state.baseline.model_dump(mode="json"), "candidate": state.candidate.model_dump(mode="json")}


def record_result(evaluations_log: Path, traces_dir: Path | None, res: EvalResult, results: Sequence[CaseResult],
                  meta: dict[str, object] | None = None, *, forget: bool = False) -> None:
    """The evaluation's trace lines, (with `meta`) its meta file, then its line in runs/evaluations.jsonl
    (also for --rejudge): a trace or meta that cannot be written records no verdict (QA 38 F2, QA 39
    G1). The meta says `recorded` once the line is written, so a run recorded again by its own thread
    (a resume, an evolve validation re-run after a crash) replaces its files without a second line.
    `forget` (a run that is never resumed): a failed record removes what it wrote, so the id is free."""
    if res.measured is None:
        return
    from skillforge.errors import NotWritable
    from skillforge.evaluation.stored import was_recorded, write_meta
    from skillforge.safewrite import write_bytes_atomic

    paths = [traces_dir / f"{res.run_id}{ext}" for ext in (".jsonl", ".meta.json", ".claim")] if traces_dir else []
    recorded = meta is not None and traces_dir is not None and was_recorded(paths[1])
    try:
        if traces_dir is not None:  # written whole: a run re-recorded by its own thread replaces its cases
            write_bytes_atomic(paths[0], b"".join(encoded_line({
                "run_id": res.run_id, "mode": res.mode, **r.model_dump(mode="json"),
                "baseline_release": res.baseline_release, "candidate_release": res.candidate_release}) for r in results))
        if meta is not None and traces_dir is not None:
            write_meta(traces_dir, meta | {"recorded": recorded})
        if not recorded:
            append_jsonl(evaluations_log, result_line(res, results))
    except NotWritable:
        for path in paths if forget and not recorded else ():
            path.unlink(missing_ok=True)
        raise
    if meta is not None and traces_dir is not None and not recorded:
        write_meta(traces_dir, meta | {"recorded": True})


def result_line(res: EvalResult, results: Sequence[CaseResult]) -> dict[str, object]:
    """The evaluation's line in runs/evaluations.jsonl."""
    m = res.measured
    assert m is not None
    return {
        "run_id": res.run_id, "release_id": res.candidate_release, "baseline_release_id": res.baseline_release,
        "skill": res.skill, "eval_set": res.eval_set, "kind": res.kind.value, "verdict": res.verdict,
        "improvement": res.improvement.value if res.improvement else None, "false_alarm": res.false_alarm,
        "primary": res.primary, "primary_reason": res.primary_reason, "reasons": res.reasons,
        "judge_calibration": res.judge_calibration.model_dump(mode="json") if res.judge_calibration else None,
        "structure_score": res.structure.get("candidate"), "baseline_structure_score": res.structure.get("baseline"),
        "effect_score": res.ratchet.get("new_effect"), "baseline_effect_score": res.ratchet.get("old_effect"),
        "objective_metrics": {"tokens": m.tokens, "latency_ms": m.latency_ms, "efficiency": m.new.efficiency,
                              "mean_length_diff": m.mean_length_diff},
        "judge_verdicts": {r.case.id: {k: v.value for k, v in r.verdicts.items()} for r in results},
        "p0_pass": m.p0_pass, "flip_rate": m.flip_rate, "invalid_rate": m.invalid_rate,
        "mode": res.mode, "unexercised": res.unexercised.model_dump() if res.unexercised else None,
        "not_evaluated": res.not_evaluated,
        "scores": {"baseline": m.old.model_dump(), "candidate": m.new.model_dump()},
        "evidence": {k: e.model_dump(mode="json") for k, e in res.evidence.items()}}
