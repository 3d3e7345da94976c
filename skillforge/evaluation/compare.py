"""Evaluation services: run one case on both sides, check it objectively, judge it in both orders,
and turn case results into dimension scores. The graph (graphs/evaluate.py) wires these."""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence

from skillforge.errors import BudgetExceeded, InvalidLLMOutput, LLMError, LLMNotConfigured
from skillforge.evaluation.executor import Executor, SkillUnderTest
from skillforge.evaluation.judge import judge_once
from skillforge.llm.client import LLM
from skillforge.rules.execution import CaseCall, case_call, failure_kind, forfeit_verdicts, forfeiting_side, side_failure
from skillforge.rules.injection import injection_verdicts, judge_address
from skillforge.rules.pairwise import candidate_share, combine_orders
from skillforge.rules.endpoint import primary_endpoint
from skillforge.rules.paired import min_cases, paired_evidence
from skillforge.rules.provenance import check_provenance, new_nonce
from skillforge.rules.ratchet import RatchetInput, ratchet
from skillforge.rules.structure import structure_score
from skillforge.skill.file import check_text
from skillforge.state.evaluate import (JUDGED_DIMENSIONS, Case, CaseResult, Execution, ExecutionFailure, ExecutionMode,
                                       PairVerdict, SideCheck)
from skillforge.state.llm import Role
from skillforge.state.result import (NOT_LOOKED_UP, PAIRED_DIMENSIONS, SCORED_DIMENSIONS, DimensionScores, EvalResult,
                                     EvalVerdict, JudgeCalibration, Measured)

INVALID_RUN_RATE = 0.20
"""More than this share of INVALID cases makes the whole run INVALID (fail closed)."""
MIN_VALID_CASES = min_cases()
"""Fewer valid cases than this and no sign-test outcome can be significant: the run is INVALID."""


RUN_ROLES = (Role.EXECUTOR, Role.JUDGE)
"""The roles an evaluation calls (a --rejudge only the judge)."""


def require_roles(llm: LLM, roles: Sequence[Role] = RUN_ROLES) -> None:
    """LLMNotConfigured, naming every missing role, unless each of `roles` has a model: checked
    before the first case, so a run without models writes nothing."""
    missing = [r.value for r in roles if r not in llm.configs or not llm.configs[r].configured]
    if missing:
        raise LLMNotConfigured(f"no model for role(s) {', '.join(missing)}: set SKILLFORGE_LLM_MODEL and "
                               "SKILLFORGE_LLM_BASE_URL (or SKILLFORGE_<ROLE>_*), or run `skillforge llm serve`; "
                               "nothing was run or written")


def expectation_check(case: Case, answer: str) -> tuple[bool, str]:
    """(passed, why not): every must_include fact present and no must_not_include one (case-insensitive)."""
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
    with llm.one_case():
        old = executor.run(case, baseline, new_nonce(os.urandom(8)), baseline_release)
        new = executor.run(case, candidate, new_nonce(os.urandom(8)), candidate_release)
        return judge_case(case, old, new, llm)


def judge_case(case: Case, old: Execution, new: Execution, llm: LLM) -> CaseResult:
    """Checks and both judge orders for stored executions (also what --rejudge reruns). What the
    executions allow is `case_call`'s: an infrastructure failure or two failed agents make the case
    INVALID; a case where neither side loaded the skill under test is a tie on every dimension,
    marked no_evidence; a side whose agent alone failed forfeits (it loses every dimension). The
    judge is asked only when both sides answered and neither answer addresses it (rules/injection.py):
    a side whose answer does loses every judged dimension, both sides doing so tie, and the case is
    not judged (no flip, not in the flip rate's denominator)."""
    result = CaseResult(case=case, baseline=old, candidate=new, length_diff=len(new.answer) - len(old.answer),
                        checks={"baseline": objective_check(case, old), "candidate": objective_check(case, new)},
                        unexercised=[side for side, run in (("baseline", old), ("candidate", new))
                                     if case.skill not in run.skills_loaded],
                        budget_refused=ExecutionFailure.BUDGET in (old.failure, new.failure))
    call = case_call(side_failure(old.error, old.failure), side_failure(new.error, new.failure),
                     loaded=(case.skill in old.skills_loaded, case.skill in new.skills_loaded))
    if call is CaseCall.INVALID:
        result.invalid, result.error = True, f"execution: {old.error or new.error}"
        return result
    if call is CaseCall.NO_EVIDENCE:
        result.no_evidence = True
        result.verdicts = dict.fromkeys(JUDGED_DIMENSIONS, PairVerdict.TIE)
        return result
    loser = forfeiting_side(call)
    if loser is not None:
        result.forfeit, result.verdicts = loser, forfeit_verdicts(loser)
        return result
    result.injection = {side: found for side, run in (("baseline", old), ("candidate", new))
                        if (found := judge_address(run.answer))}
    if result.injection:  # an answer that talks to the judge is never shown to it
        result.verdicts = injection_verdicts(result.injection)
        return result
    try:
        first = judge_once(llm, case, old.answer, new.answer)
        second = judge_once(llm, case, new.answer, old.answer)
    except LLMError as e:
        result.invalid, result.error = True, f"judge: {type(e).__name__}: {e}"[:500]
        result.budget_refused = isinstance(e, BudgetExceeded)
        cause = e.__context__
        result.judge_failure = failure_kind(isinstance(e, InvalidLLMOutput), type(cause).__name__ if cause else None,
                                            refused=result.budget_refused)
        return result
    result.orders = [first, second]
    result.verdicts, result.flipped = combine_orders(first, second)
    result.invalid = any(v is PairVerdict.INVALID for v in result.verdicts.values())
    return result


def case_scores(r: CaseResult) -> tuple[dict[str, float], dict[str, float]]:
    """(baseline, candidate) scores of one valid case: task = half the judge's share, half the
    objective pass; robustness and readability = the judge's shares; efficiency = the token ratio
    (the candidate gets t_old / (t_old + t_new)), all of it to the side that answered when the other
    forfeits; effect = their mean; objective = 1 pass, 0 fail.
    A case where neither side loaded the skill (`no_evidence`) scores the candidate's objective as the
    baseline's: it is no evidence either way."""
    judge = {dim: candidate_share(r.verdicts[dim]) for dim in ("task", "robustness", "readability")}
    t_old, t_new = r.baseline.tokens, r.candidate.tokens
    eff = t_old / (t_old + t_new) if t_old + t_new else 0.5
    if r.forfeit:  # an execution with no answer is never the cheaper one, however few tokens it used
        eff = 0.0 if r.forfeit == "candidate" else 1.0
    passed = {"baseline": float(r.checks["baseline"].passed), "candidate": float(r.checks["candidate"].passed)}
    if r.no_evidence:  # neither side loaded the skill: an objective tie too, never evidence
        passed["candidate"] = passed["baseline"]
    old = {"task": 0.5 * (1 - judge["task"]) + 0.5 * passed["baseline"], "robustness": 1 - judge["robustness"],
           "readability": 1 - judge["readability"], "efficiency": 1 - eff}
    new = {"task": 0.5 * judge["task"] + 0.5 * passed["candidate"], "robustness": judge["robustness"],
           "readability": judge["readability"], "efficiency": eff}
    for side, scores in (("baseline", old), ("candidate", new)):
        scores["effect"] = sum(scores[d] for d in SCORED_DIMENSIONS) / len(SCORED_DIMENSIONS)
        scores["objective"] = passed[side]
    return old, new


def paired_deltas(results: Sequence[CaseResult]) -> dict[str, list[float]]:
    """Per dimension, one candidate-minus-baseline delta per valid case (the paired outcomes)."""
    deltas: dict[str, list[float]] = {dim: [] for dim in PAIRED_DIMENSIONS}
    for r in results:
        if r.invalid:
            continue
        old, new = case_scores(r)
        for dim in PAIRED_DIMENSIONS:
            deltas[dim].append(new[dim] - old[dim])
    return deltas


def measure(results: Sequence[CaseResult]) -> Measured:
    """Mean per-case scores of the valid cases (`case_scores`), the INVALID and flip rates, P0
    flips, objective pass counts, tokens and latency."""
    valid = [r for r in results if not r.invalid]
    n = len(valid)
    sums = {k: [0.0, 0.0] for k in SCORED_DIMENSIONS}
    for r in valid:
        old, new = case_scores(r)
        for k in SCORED_DIMENSIONS:
            sums[k][0] += old[k]
            sums[k][1] += new[k]
    mean = {k: (v[0] / n if n else 0.0, v[1] / n if n else 0.0) for k, v in sums.items()}
    p0 = [r for r in results if r.case.p0]
    flips = sum(r.flipped for r in valid)
    return Measured(
        old=DimensionScores(**{k: round(v[0], 6) for k, v in mean.items()}),
        new=DimensionScores(**{k: round(v[1], 6) for k, v in mean.items()}),
        valid_cases=n, invalid_cases=len(results) - n,
        invalid_rate=round((len(results) - n) / len(results), 4) if results else 1.0,
        flip_rate=round(flips / n, 4) if n else 0.0, flips=flips,
        judged_cases=sum(1 for r in valid if len(r.orders) == 2 or r.flipped),
        objective_passes={side: sum(case_scores(r)[k]["objective"] == 1.0 for r in valid if checked(r.case))
                          for k, side in ((0, "baseline"), (1, "candidate"))},
        objective_cases=sum(1 for r in valid if checked(r.case)), no_evidence=sum(r.no_evidence for r in valid),
        forfeits={side: ids for side in ("baseline", "candidate")
                  if (ids := [r.case.id for r in valid if r.forfeit == side])},
        p0_flips=[r.case.id for r in p0 if r.checks["baseline"].passed and not r.checks["candidate"].passed
                  and not r.no_evidence],
        p0_pass={r.case.id: r.checks["candidate"].passed for r in p0},
        tokens={"baseline": sum(r.baseline.tokens for r in results), "candidate": sum(r.candidate.tokens for r in results)},
        latency_ms={"baseline": round(sum(r.baseline.latency_ms for r in results), 1),
                    "candidate": round(sum(r.candidate.latency_ms for r in results), 1)},
        mean_length_diff=round(sum(r.length_diff for r in valid) / n, 1) if n else 0.0)


def checked(case: Case) -> bool:
    """Whether a case has an objective check of its answer: an expectation (must_include or
    must_not_include). Without one it passes by construction and never counts towards the floor."""
    return case.expect.checks


def side_structure(text: str | None) -> float:
    """The static structure score of a side's SKILL.md (0 for no skill or an unloadable file)."""
    if text is None:
        return 0.0
    skill, issues = check_text(text)
    return structure_score(skill, issues) if skill is not None else 0.0


_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_MARKER = re.compile(r"^(?:[-*+]|\d+[.)])\s+")


def _rules(lines: list[str]) -> list[str]:
    """The lines of Constraints sections that still read as rules: not inside an HTML comment or a
    code fence (QA 43 T3: a fenced guard is code, not a rule)."""
    out: list[str] = []
    fenced = False
    for line in _COMMENT.sub("", "\n".join(lines)).splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and line.strip():
            out.append(line)
    return out


def _rule_key(line: str) -> str:
    """A rule as compared: list marker, bold markers and white space aside (QA 43 M4: `- ` -> `* `
    or **bold** rewords nothing); strike-through and every word count."""
    return " ".join(_MARKER.sub("", line.strip()).replace("**", "").replace("__", "").split())


def dropped_constraints(baseline_text: str | None, candidate_text: str | None) -> tuple[str, ...]:
    """The lines of the baseline's Constraints (safety, permissions) sections that the candidate's do
    not hold as rules (`_rules`, compared by `_rule_key`): a guard dropped, reworded, commented out or
    fenced. None when either side does not load."""
    from skillforge.rules.levels import constraint_lines

    old, _ = check_text(baseline_text) if baseline_text is not None else (None, [])
    new, _ = check_text(candidate_text) if candidate_text is not None else (None, [])
    if old is None or new is None:
        return ()
    kept = {_rule_key(line) for line in _rules(constraint_lines(new))}
    return tuple(line for line in _rules(constraint_lines(old)) if _rule_key(line) not in kept)


def invalid_reason(m: Measured) -> str | None:
    """Why a run cannot tell, or None: more than INVALID_RUN_RATE of its cases INVALID, or fewer
    valid cases than the sign test needs to decide anything (MIN_VALID_CASES)."""
    total = m.valid_cases + m.invalid_cases
    if total == 0:
        return "no case was run: the run cannot tell"
    if m.invalid_rate > INVALID_RUN_RATE:
        return (f"{m.invalid_cases} of {total} cases INVALID ({m.invalid_rate:.0%} > {INVALID_RUN_RATE:.0%}): "
                "the run cannot tell")
    if m.valid_cases < MIN_VALID_CASES:
        return (f"only {m.valid_cases} valid case(s) of {total}: the sign test needs at least {MIN_VALID_CASES} "
                f"to decide anything, {MIN_VALID_CASES - m.valid_cases} missing: the run cannot tell")
    if (evidence := m.valid_cases - m.no_evidence) < MIN_VALID_CASES:  # QA 34 F1b: no side ran the skill
        return (f"only {evidence} of {m.valid_cases} valid case(s) loaded the skill on either side ({m.no_evidence} "
                f"had no evidence: neither side loaded it): the sign test needs at least {MIN_VALID_CASES}: "
                "the run cannot tell")
    return None


_VALIDATION_HEAD = re.compile(r"\d+ validation errors? for \S+$")


def error_line(text: str, width: int = 200) -> str:
    """An error as one line, cut at `width`: its first line, and for a pydantic validation error
    ("1 validation error for Judgement", then a field and its problem a line each) the fields and
    problems too (`...: overall: Input should be 'A', 'B' or 'tie' [...]`), without pydantic's
    "For further information" links."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("For further information")]
    if not lines:
        return ""
    head, parts = lines[0], []
    if _VALIDATION_HEAD.search(head):
        for ln in lines[1:]:
            if ln[:1].isspace() and parts:
                parts[-1] += f": {ln.strip()}"
            else:
                parts.append(ln.strip())
    return (head + (": " + "; ".join(parts) if parts else ""))[:width]


def invalid_cause(results: Sequence[CaseResult], width: int = 200) -> str | None:
    """The most common error of the INVALID cases (its first line, cut at `width`; a validation
    error with its fields), so a run that failed for one reason (an unreachable endpoint, a missing
    model, a judge reply with a bad field) says which."""
    errors = Counter(error_line(r.error or r.baseline.error or r.candidate.error or "", width)
                     for r in results if r.invalid)
    errors.pop("", None)
    if not errors:
        return None
    error, n = errors.most_common(1)[0]
    return f"most common cause ({n} of {sum(1 for r in results if r.invalid)} INVALID cases): {error}"


def forfeit_reasons(results: Sequence[CaseResult]) -> list[str]:
    """One line per side that forfeited cases: how many, which, and its agent's most common error,
    e.g. 'candidate forfeited 2 of 6 cases (counted as its losses): no answer after 6 turns ...'."""
    lines = []
    for side in ("baseline", "candidate"):
        lost = [r for r in results if r.forfeit == side and not r.invalid]
        if lost:
            errors = Counter(error_line(getattr(r, side).error or "", 160) for r in lost)
            lines.append(f"{side} forfeited {len(lost)} of {len(results)} case(s) (its agent gave no usable answer; "
                         f"counted as its losses): {', '.join(r.case.id for r in lost[:5])}"
                         f"{' ...' if len(lost) > 5 else ''}; most common: {errors.most_common(1)[0][0]}")
    return lines


def injection_reasons(results: Sequence[CaseResult]) -> list[str]:
    """One line per side whose answers addressed the judge: how many cases, and which with what
    matched, e.g. 'candidate's answer addressed the judge in 1 of 6 case(s) (counted as its
    losses, not judged): c03 (dictates the verdict: "return A")'."""
    lines = []
    for side in ("baseline", "candidate"):
        flagged = [r for r in results if r.injection.get(side) and not r.invalid]
        if flagged:
            shown = "; ".join(f"{r.case.id} ({', '.join(r.injection[side][:2])})" for r in flagged[:5])
            lines.append(f"{side}'s answer addressed the judge in {len(flagged)} of {len(results)} case(s) (counted "
                         f"as its losses, not judged): {shown}{' ...' if len(flagged) > 5 else ''}")
    return lines


def conclude(base: dict[str, object], baseline_text: str | None, candidate_text: str | None,
             results: Sequence[CaseResult], calibration: JudgeCalibration | None = None) -> EvalResult:
    """Measure the case results and decide: INVALID when `invalid_reason` says so (the ratchet is
    not consulted), else the primary endpoint from the judge's flip rate and its `calibration`
    (rules/endpoint.py: a dimension below a calibration floor is reported, never decides; None: not
    looked up, every dimension UNCALIBRATED), the paired evidence with that endpoint first, and the
    ratchet's PASS / REVIEW / DECLINED. The result carries the calibration either way."""
    from skillforge.rules.calibration import ungated
    cal = calibration if calibration is not None else JudgeCalibration.unknown(NOT_LOOKED_UP)
    m = measure(results)
    structure = {"baseline": side_structure(baseline_text), "candidate": side_structure(candidate_text)}
    full = {**base, "structure": structure, "measured": m, "judge_calibration": cal}
    why = invalid_reason(m)
    if why is not None:
        cause = invalid_cause(results)
        return EvalResult(**full, verdict=EvalVerdict.INVALID,  # type: ignore[arg-type]
                          reasons=[why, *([cause] if cause else []), *forfeit_reasons(results),
                                   *injection_reasons(results)])
    endpoint = primary_endpoint(m.flips, m.judged_cases,
                                ungated={d: cal.notes.get(d, "") for d in ungated(cal.statuses)})
    evidence = paired_evidence(paired_deltas(results), primary=endpoint.primary, reported=endpoint.undecided)
    rr = ratchet(RatchetInput(old=m.old, new=m.new, old_structure=structure["baseline"],
                              new_structure=structure["candidate"], evidence=evidence,
                              objective_passes=(m.objective_passes["candidate"],
                                                m.valid_cases if m.objective_cases is None else m.objective_cases),
                              old_objective_passes=m.objective_passes["baseline"], p0_flips=tuple(m.p0_flips),
                              endpoint=endpoint, dropped_constraints=dropped_constraints(baseline_text, candidate_text)))
    out = EvalResult.from_ratchet(full, rr, evidence)
    out.reasons += forfeit_reasons(results) + injection_reasons(results)
    if not endpoint.judge_decides:  # QA 34 F4: a PASS whose judge was a coin says so where CI reads
        out.reasons.append(f"the judge's verdicts did not decide: it flipped on {endpoint.flips} of {endpoint.judged} "
                           "case(s) judged in both orders (a noisy judge); the objective checks did")
    return out
