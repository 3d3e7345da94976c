"""Evaluation services: run one case on both sides, check it objectively, judge it in both orders,
and turn case results into dimension scores. The graph (graphs/evaluate.py) wires these."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, Field

from skillforge.errors import LLMError
from skillforge.executor import Executor, SkillUnderTest
from skillforge.judge import judge_once
from skillforge.llm.client import LLM
from skillforge.rules.pairwise import candidate_share, combine_orders
from skillforge.rules.provenance import check_provenance, new_nonce
from skillforge.rules.ratchet import DimensionScores, RatchetInput, RatchetResult, ratchet
from skillforge.rules.structure import structure_score
from skillforge.skillfile import check_text
from skillforge.state.evaluate import (DIMENSIONS, Case, CaseResult, Execution, ExecutionMode, PairVerdict, SideCheck,
                                       Unexercised)

INVALID_RUN_RATE = 0.20
"""More than this share of INVALID cases makes the whole run INVALID (fail closed)."""


def expectation_check(case: Case, answer: str) -> tuple[bool, str]:
    text = answer.casefold()
    missing = [f for f in case.expect.must_include if f.casefold() not in text]
    present = [f for f in case.expect.must_not_include if f.casefold() in text]
    if not missing and not present:
        return True, ""
    return False, "; ".join(filter(None, [f"missing {missing}" if missing else "",
                                          f"states forbidden {present}" if present else ""]))


def objective_check(case: Case, run: Execution) -> SideCheck:
    """Expectations and provenance of one answer. A failed execution fails both."""
    if run.error:
        return SideCheck(expect_pass=False, provenance_ok=False, reason=f"execution failed: {run.error}")
    expect_ok, why = expectation_check(case, run.answer)
    prov = check_provenance(run.answer, [*run.tool_responses, case.query], run.nonce)
    return SideCheck(expect_pass=expect_ok, provenance_ok=prov.ok, reason="; ".join(filter(None, [why, prov.reason])))


def run_case(case: Case, baseline: Mapping[str, SkillUnderTest], candidate: Mapping[str, SkillUnderTest],
             baseline_release: str | None, candidate_release: str | None, llm: LLM,
             mode: ExecutionMode = ExecutionMode.BEHAVIOUR) -> CaseResult:
    """Execute both sides in `mode` (each with a fresh nonce), check them, judge in both orders."""
    executor = Executor(llm, mode=mode)
    old = executor.run(case, baseline, new_nonce(os.urandom(8)), baseline_release)
    new = executor.run(case, candidate, new_nonce(os.urandom(8)), candidate_release)
    return judge_case(case, old, new, llm)


def judge_case(case: Case, old: Execution, new: Execution, llm: LLM) -> CaseResult:
    """Checks and both judge orders for stored executions (also what --rejudge reruns). A case where
    neither side loaded the skill under test is a tie on every dimension, marked no_evidence, and
    the judge is not asked."""
    result = CaseResult(case=case, baseline=old, candidate=new, length_diff=len(new.answer) - len(old.answer),
                        checks={"baseline": objective_check(case, old), "candidate": objective_check(case, new)},
                        unexercised=[side for side, run in (("baseline", old), ("candidate", new))
                                     if case.skill not in run.skills_loaded])
    if old.error or new.error:
        result.invalid, result.error = True, f"execution: {old.error or new.error}"
        return result
    if len(result.unexercised) == 2:
        result.no_evidence = True
        result.verdicts = dict.fromkeys(DIMENSIONS, PairVerdict.TIE)
        return result
    try:
        first = judge_once(llm, case, old.answer, new.answer)
        second = judge_once(llm, case, new.answer, old.answer)
    except LLMError as e:
        result.invalid, result.error = True, f"judge: {type(e).__name__}: {e}"[:500]
        return result
    result.orders = [first, second]
    result.verdicts, result.flipped = combine_orders(first, second)
    result.invalid = any(v is PairVerdict.INVALID for v in result.verdicts.values())
    return result


class Measured(BaseModel):
    """Dimension scores of both sides and the run's objective metrics."""

    old: DimensionScores
    new: DimensionScores
    valid_cases: int
    invalid_cases: int
    invalid_rate: float
    flip_rate: float
    p0_flips: list[str] = Field(default_factory=list)
    p0_pass: dict[str, bool] = Field(default_factory=dict)
    tokens: dict[str, int] = Field(default_factory=dict)
    latency_ms: dict[str, float] = Field(default_factory=dict)
    mean_length_diff: float = 0.0


def measure(results: Sequence[CaseResult]) -> Measured:
    """task = half judge share, half objective pass; robustness and readability = judge shares;
    efficiency = the objective token ratio (fewer tokens for the same case scores higher)."""
    valid = [r for r in results if not r.invalid]
    n = len(valid)
    sums = {k: [0.0, 0.0] for k in ("task", "robustness", "readability", "efficiency")}
    for r in valid:
        for dim in ("robustness", "readability"):
            share = candidate_share(r.verdicts[dim])
            sums[dim][0] += 1 - share
            sums[dim][1] += share
        judge_new = candidate_share(r.verdicts["task"])
        obj_old = r.checks["baseline"].passed
        obj_new = obj_old if r.no_evidence else r.checks["candidate"].passed  # no evidence: an objective tie too
        sums["task"][0] += 0.5 * (1 - judge_new) + 0.5 * obj_old
        sums["task"][1] += 0.5 * judge_new + 0.5 * obj_new
        t_old, t_new = r.baseline.tokens, r.candidate.tokens
        eff_new = t_old / (t_old + t_new) if t_old + t_new else 0.5
        sums["efficiency"][0] += 1 - eff_new
        sums["efficiency"][1] += eff_new
    mean = {k: (v[0] / n if n else 0.0, v[1] / n if n else 0.0) for k, v in sums.items()}
    p0 = [r for r in results if r.case.p0]
    return Measured(
        old=DimensionScores(**{k: round(v[0], 6) for k, v in mean.items()}),
        new=DimensionScores(**{k: round(v[1], 6) for k, v in mean.items()}),
        valid_cases=n, invalid_cases=len(results) - n,
        invalid_rate=round((len(results) - n) / len(results), 4) if results else 1.0,
        flip_rate=round(sum(r.flipped for r in valid) / n, 4) if n else 0.0,
        p0_flips=[r.case.id for r in p0 if r.checks["baseline"].passed and not r.checks["candidate"].passed
                  and not r.no_evidence],
        p0_pass={r.case.id: r.checks["candidate"].passed for r in p0},
        tokens={"baseline": sum(r.baseline.tokens for r in results), "candidate": sum(r.candidate.tokens for r in results)},
        latency_ms={"baseline": round(sum(r.baseline.latency_ms for r in results), 1),
                    "candidate": round(sum(r.candidate.latency_ms for r in results), 1)},
        mean_length_diff=round(sum(r.length_diff for r in valid) / n, 1) if n else 0.0)


class EvalResult(BaseModel):
    """The answer of one evaluation: PASS / REVIEW / DECLINED, or INVALID when it cannot tell."""

    run_id: str
    skill: str
    eval_set: str
    verdict: str
    reasons: list[str] = Field(default_factory=list)
    baseline_release: str | None = None
    candidate_release: str | None = None
    structure: dict[str, float] = Field(default_factory=dict)
    measured: Measured | None = None
    ratchet: dict[str, float] = Field(default_factory=dict)
    mode: ExecutionMode | None = None
    """The execution mode of the run (None: a run from before modes existed)."""
    unexercised: Unexercised | None = None
    """Executions that never loaded the skill under test, and the no-evidence cases (ties)."""

    @classmethod
    def from_ratchet(cls, base: dict[str, object], rr: RatchetResult) -> EvalResult:
        return cls(**base, verdict=rr.verdict.value, reasons=list(rr.reasons),  # type: ignore[arg-type]
                   ratchet={"old_effect": rr.old_effect, "new_effect": rr.new_effect,
                            "old_total": rr.old_total, "new_total": rr.new_total})


def side_structure(text: str | None) -> float:
    """The static structure score of a side's SKILL.md (0 for no skill or an unloadable file)."""
    if text is None:
        return 0.0
    skill, issues = check_text(text)
    return structure_score(skill, issues) if skill is not None else 0.0


def conclude(base: dict[str, object], baseline_text: str | None, candidate_text: str | None,
             results: Sequence[CaseResult]) -> EvalResult:
    """Measure the case results and decide: INVALID above the INVALID rate (the ratchet is not
    consulted), else the ratchet's PASS / REVIEW / DECLINED."""
    m = measure(results)
    structure = {"baseline": side_structure(baseline_text), "candidate": side_structure(candidate_text)}
    full = {**base, "structure": structure, "measured": m}
    if m.invalid_rate > INVALID_RUN_RATE or m.valid_cases == 0:
        return EvalResult(**full, verdict="INVALID",  # type: ignore[arg-type]
                          reasons=[f"{m.invalid_cases} of {len(results)} cases INVALID "
                                   f"({m.invalid_rate:.0%} > {INVALID_RUN_RATE:.0%}): the run cannot tell"])
    rr = ratchet(RatchetInput(old=m.old, new=m.new, old_structure=structure["baseline"],
                              new_structure=structure["candidate"], p0_flips=tuple(m.p0_flips)))
    return EvalResult.from_ratchet(full, rr)
