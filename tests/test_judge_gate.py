"""A gate that knows its judge (issue 24, part 3; rules/endpoint.py): when the run's judge flip rate
is at or above JUDGE_NOISE_FLIP_RATE, the judged dimensions are reported and do not decide, and the
primary endpoint is the objective checks (pass -> fail / fail -> pass per case, the same sign test).

The bars, through the real decision path of an evaluation run (`judge_case`: objective checks, both
judge orders, `combine_orders`; then `conclude`: measure, endpoint, paired evidence, ratchet), with a
scripted judge that flips a coin for every label of every order:

- a real objective fix (the candidate passes checks the live release fails on most cases) gives
  `improvement: WIN` with primary objective in >= 9 of 10 seeds;
- a no-op (the same objective outcome on both sides) is never a WIN and DECLINED in <= 1 of 20.

Then the rule at its edges, the ratchet with each endpoint, and what the CLI / JSON / HTML say."""

from __future__ import annotations

import json
import random

import pytest
from langchain_core.messages import BaseMessage

from skillforge.evaluation.compare import conclude, judge_case, measure, paired_deltas
from skillforge.evaluation.judge import Judgement
from skillforge.evaluation.report import render_report
from skillforge.llm.client import LLM
from skillforge.llm.config import resolve_all
from skillforge.rules.endpoint import JUDGE_DEPENDENT, JUDGE_NOISE_FLIP_RATE, OBJECTIVE, primary_endpoint
from skillforge.rules.paired import PRIMARY, min_cases, paired_evidence
from skillforge.rules.provenance import new_nonce
from skillforge.rules.ratchet import RatchetInput, ratchet
from skillforge.state.evaluate import Case, CaseResult, Execution, Expectation
from skillforge.state.llm import Role
from skillforge.state.result import PAIRED_DIMENSIONS, DimensionScores, EvalResult, Outcome, RatchetVerdict
from skillforge.testing.fake_chat import ScriptedChatModel

ENV = {"SKILLFORGE_LLM_MODEL": "fake-exec", "SKILLFORGE_JUDGE_MODEL": "fake-judge"}
SKILL = "table-booking"
N_CASES = 24
FIX_SEEDS = 10
NOOP_SEEDS = 20
PASSING = "Your table is booked: booking confirmed for two."
FAILING = "I could not find a table, please try another restaurant."


def coin_judge(seed: int) -> LLM:
    """A judge that answers A or B at random for every dimension of every call (both orders): its
    two orders agree on half the cases, so its flip rate is about 0.5."""
    rng = random.Random(seed)

    def answer(messages: list[BaseMessage]) -> Judgement:  # noqa: ARG001 - a coin reads nothing
        return Judgement(**{dim: rng.choice("AB") for dim in ("overall", "task", "robustness", "readability")},
                         reason="coin")

    return LLM(resolve_all(env=ENV), {Role.JUDGE: ScriptedChatModel.responding(answer)})


def execution(passes: bool) -> Execution:
    return Execution(answer=PASSING if passes else FAILING, skills_loaded=[SKILL], prompt_tokens=100,
                     completion_tokens=20, nonce=new_nonce(b"run-nonce"))


def run(seed: int, *, fix: bool, n: int = N_CASES) -> EvalResult:
    """One evaluation run of `n` cases judged by a coin. `fix`: the live release passes the
    objective checks on ~20 % of the cases and the candidate on ~90 %; otherwise both sides have the
    same objective outcome on every case (~90 % pass): a no-op as far as the checks can tell."""
    rng = random.Random(10_000 + seed)
    llm = coin_judge(seed)
    results: list[CaseResult] = []
    for i in range(n):
        case = Case(id=f"c{i:02d}", skill=SKILL, query=f"book a table for two, request {i}",
                    expect=Expectation(must_include=["booking confirmed"], must_not_include=["could not"]))
        if fix:
            old_ok, new_ok = rng.random() < 0.2, rng.random() < 0.9
        else:
            old_ok = new_ok = rng.random() < 0.9
        results.append(judge_case(case, execution(old_ok), execution(new_ok), llm))
    return conclude({"run_id": f"coin-{seed}", "skill": SKILL, "eval_set": "t"}, None, None, results)


def test_a_coin_flipping_judge_with_a_real_objective_fix_is_a_win_on_the_objective_endpoint():
    runs = [run(seed, fix=True) for seed in range(FIX_SEEDS)]
    wins = [r.improvement is Outcome.WIN and r.primary == OBJECTIVE for r in runs]
    print(f"objective fix, coin judge, {FIX_SEEDS} seeds: improvement WIN with primary objective in {sum(wins)}; "
          f"flip rates {[r.measured.flips / r.measured.judged_cases for r in runs]}; "
          f"objective +/- {[(r.evidence['objective'].wins, r.evidence['objective'].losses) for r in runs]}; "
          f"effect {[r.evidence['effect'].outcome.value for r in runs]}; verdicts {[r.verdict.value for r in runs]}")
    assert sum(wins) >= 9
    assert all(r.primary_reason and r.primary_reason.startswith("primary: objective (judge flip rate ") for r in runs
               if r.primary == OBJECTIVE)


def test_a_coin_flipping_judge_with_a_no_op_is_never_a_win_and_rarely_declined():
    runs = [run(seed, fix=False) for seed in range(NOOP_SEEDS)]
    declined = [r.verdict.value for r in runs].count("DECLINED")
    print(f"no-op, coin judge, {NOOP_SEEDS} seeds: improvement WIN {[r.improvement for r in runs].count(Outcome.WIN)}, "
          f"DECLINED {declined}, primary {[r.primary for r in runs].count(OBJECTIVE)} objective; "
          f"verdicts {[r.verdict.value for r in runs]}")
    assert all(r.improvement is not Outcome.WIN for r in runs)
    assert declined <= 1
    assert [r.primary for r in runs].count(OBJECTIVE) >= NOOP_SEEDS - 1  # the coin is recognised as noise
    assert all(r.evidence["objective"].wins == r.evidence["objective"].losses == 0 for r in runs)


def test_too_few_objective_discordant_cases_are_inconclusive_never_a_win():
    """4 fixes of 24 (p = 1/16 > 0.05) under a coin judge: INCONCLUSIVE, whatever the judged
    dimensions show; one more fix (5 of 24, p = 1/32) is a WIN."""
    for fixed, expected in ((min_cases() - 1, Outcome.INCONCLUSIVE), (min_cases(), Outcome.WIN)):
        llm = coin_judge(7)
        results = []
        for i in range(N_CASES):
            case = Case(id=f"c{i:02d}", skill=SKILL, query=f"book {i}", expect=Expectation(must_include=["booking confirmed"]))
            results.append(judge_case(case, execution(i >= fixed), execution(True), llm))
        r = conclude({"run_id": f"few-{fixed}", "skill": SKILL, "eval_set": "t"}, None, None, results)
        assert r.primary == OBJECTIVE and r.evidence["objective"].wins == fixed and r.evidence["objective"].losses == 0
        assert r.improvement is expected, (fixed, r.improvement)


# ---- the pure rule at its edges ------------------------------------------------------------------

@pytest.mark.parametrize("flips,judged,primary", [
    (3, 10, OBJECTIVE),   # exactly at the threshold: noise
    (6, 20, OBJECTIVE),
    (2, 10, PRIMARY),     # just below
    (5, 17, PRIMARY),     # 0.294
    (9, 20, OBJECTIVE),
    (20, 20, OBJECTIVE),
    (0, 20, PRIMARY),
    (0, 0, PRIMARY),      # nothing judged (all forfeits / no evidence): the judge decided nothing
])
def test_the_primary_endpoint_follows_the_judge_flip_rate(flips, judged, primary):
    e = primary_endpoint(flips, judged)
    assert e.primary == primary and e.judge_decides is (primary == PRIMARY)
    assert e.undecided == (() if primary == PRIMARY else JUDGE_DEPENDENT)
    assert e.reason.startswith(f"primary: {primary} (")


def test_the_reason_says_it_in_one_line():
    assert JUDGE_NOISE_FLIP_RATE == 0.30
    assert primary_endpoint(9, 20).reason.startswith("primary: objective (judge flip rate 0.45 ≥ 0.30, 9 of 20 judged")
    assert primary_endpoint(3, 25).reason == "primary: effect (judge flip rate 0.12 < 0.30, 3 of 25 judged cases flipped)"
    assert "no case was judged" in primary_endpoint(0, 0).reason
    assert primary_endpoint(0, 0).flip_rate is None and primary_endpoint(3, 10).flip_rate == 0.3
    for bad in ((-1, 3), (4, 3), (0, -1)):
        with pytest.raises(ValueError):
            primary_endpoint(*bad)


def test_zero_judged_cases_count_in_measure_and_keep_the_effect_endpoint():
    """Forfeits and no-evidence cases are not judged: they are not in the flip rate's denominator."""
    case = Case(id="c", skill=SKILL, query="q", expect=Expectation(must_include=["booking confirmed"]))
    unexercised = Execution(answer=PASSING, nonce=new_nonce(b"run-nonce"))  # the skill never loaded on either side: no evidence, no judge
    llm = coin_judge(0)
    results = [judge_case(case.model_copy(update={"id": f"c{i}"}), unexercised, unexercised, llm) for i in range(6)]
    m = measure(results)
    assert m.judged_cases == 0 and m.valid_cases == 6 and all(r.no_evidence for r in results)
    e = primary_endpoint(m.flips, m.judged_cases)
    assert e.primary == PRIMARY and "no case was judged" in e.reason
    r = conclude({"run_id": "none-judged", "skill": SKILL, "eval_set": "t"}, None, None, results)
    assert r.verdict == "INVALID" and "only 0 of 6 valid case(s) loaded the skill" in r.reasons[0]  # QA 34 F1b


# ---- the ratchet with each endpoint --------------------------------------------------------------

SCORES = DimensionScores(task=0.5, robustness=0.5, readability=0.5, efficiency=0.5)


def decide(ev: dict[str, object], endpoint) -> object:  # noqa: ANN001
    return ratchet(RatchetInput(old=SCORES, new=SCORES, old_structure=0.8, new_structure=0.8, evidence=ev,
                                objective_passes=(24, 24), old_objective_passes=24, endpoint=endpoint))


def test_a_noisy_judge_s_loss_does_not_decline_and_an_objective_loss_still_does():
    judged_loss = paired_evidence({**{d: [0.0] * 24 for d in PAIRED_DIMENSIONS},
                                   "task": [-1.0] * 12 + [0.0] * 12, "effect": [-1.0] * 12 + [0.0] * 12},
                                  primary=OBJECTIVE)
    assert judged_loss["task"].outcome is Outcome.LOSS and judged_loss["effect"].outcome is Outcome.LOSS
    noisy = decide(judged_loss, primary_endpoint(12, 24))
    assert noisy.verdict is RatchetVerdict.PASS and noisy.improvement is Outcome.INCONCLUSIVE
    assert noisy.primary == OBJECTIVE and noisy.primary_reason.startswith("primary: objective (judge flip rate 0.50")
    reliable = decide(paired_evidence({**{d: [0.0] * 24 for d in PAIRED_DIMENSIONS},
                                       "task": [-1.0] * 12 + [0.0] * 12, "effect": [-1.0] * 12 + [0.0] * 12}),
                      primary_endpoint(2, 24))
    assert reliable.verdict is RatchetVerdict.DECLINED and reliable.improvement is Outcome.LOSS  # unchanged
    objective_loss = paired_evidence({**{d: [0.0] * 24 for d in PAIRED_DIMENSIONS},
                                      "objective": [-1.0] * 8 + [0.0] * 16}, primary=OBJECTIVE)
    declined = ratchet(RatchetInput(old=SCORES, new=SCORES, old_structure=0.8, new_structure=0.8,
                                    evidence=objective_loss, objective_passes=(16, 24), old_objective_passes=24,
                                    endpoint=primary_endpoint(12, 24)))
    assert declined.verdict is RatchetVerdict.DECLINED and declined.improvement is Outcome.LOSS
    assert any("evidence of loss on objective" in r for r in declined.reasons)


def test_zero_objective_discordance_under_a_noisy_judge_is_inconclusive_even_when_the_judge_says_win():
    """Every case passes (or has no check) on both sides: the objective endpoint is all ties, so a
    judged 'WIN' from a noisy judge is no improvement."""
    ev = paired_evidence({**{d: [1.0] * 20 + [0.0] * 4 for d in PAIRED_DIMENSIONS}, "objective": [0.0] * 24},
                         primary=OBJECTIVE)
    result = decide(ev, primary_endpoint(10, 24))
    assert ev["objective"].outcome is Outcome.INCONCLUSIVE and result.improvement is Outcome.INCONCLUSIVE
    assert all(ev[d].outcome is Outcome.INCONCLUSIVE for d in JUDGE_DEPENDENT)  # no WIN past a failed primary


# ---- a reliable judge: nothing changes -----------------------------------------------------------

def reliable_run(seed: int) -> tuple[EvalResult, list[CaseResult]]:
    """The existing bar (tests/test_paired.py): a judge that prefers the candidate in both orders on
    half the cases and ties the rest (flip rate 0), with both sides passing every check."""
    rng = random.Random(seed)
    prefer = [rng.random() < 0.5 for _ in range(N_CASES)]
    calls = iter(range(10 ** 6))

    def answer(messages: list[BaseMessage]) -> Judgement:  # noqa: ARG001 - the cases are judged in turn
        case, order = divmod(next(calls), 2)
        label = ("B" if order == 0 else "A") if prefer[case] else "tie"
        return Judgement(overall=label, task=label, robustness=label, readability=label, reason="steady")

    llm = LLM(resolve_all(env=ENV), {Role.JUDGE: ScriptedChatModel.responding(answer)})
    results = [judge_case(Case(id=f"c{i:02d}", skill=SKILL, query=f"q{i}",
                               expect=Expectation(must_include=["booking confirmed"])),
                          execution(True), execution(True), llm) for i in range(N_CASES)]
    return conclude({"run_id": f"steady-{seed}", "skill": SKILL, "eval_set": "t"}, None, None, results), results


def test_a_reliable_judge_keeps_the_effect_endpoint_and_its_verdicts():
    for seed in range(5):
        r, results = reliable_run(seed)
        assert r.measured.flips == 0 and r.measured.judged_cases == N_CASES and r.primary == PRIMARY
        assert r.primary_reason == f"primary: effect (judge flip rate 0.00 < 0.30, 0 of {N_CASES} judged cases flipped)"
        assert r.improvement is r.evidence[PRIMARY].outcome is Outcome.WIN
        assert r.evidence == paired_evidence(paired_deltas(results))  # the evidence as before the rule
        m = r.measured
        before = ratchet(RatchetInput(old=m.old, new=m.new, old_structure=0.0, new_structure=0.0,
                                      evidence=r.evidence, objective_passes=(m.objective_passes["candidate"], 24),
                                      old_objective_passes=m.objective_passes["baseline"]))
        assert (r.verdict.value, r.reasons) == (before.verdict.value, list(before.reasons))


# ---- what a person and a program read ------------------------------------------------------------

def test_the_primary_endpoint_is_in_the_json_the_text_and_the_html(capsys):
    from skillforge.cli.evaluate import _print  # noqa: PLC0415
    noisy = run(0, fix=True)
    dumped = json.loads(noisy.model_dump_json())
    assert dumped["primary"] == OBJECTIVE and dumped["primary_reason"].startswith("primary: objective (judge flip rate")
    _print(noisy, None)
    out = capsys.readouterr().out
    assert "  primary: objective (judge flip rate " in out and "≥ 0.30" in out
    page = render_report(noisy, [])
    assert "improvement (objective)" in page and "primary: objective (judge flip rate" in page


def test_a_noisy_judge_s_point_estimate_moves_ask_no_review_and_objective_moves_still_do():
    ties = paired_evidence({d: [0.0] * 24 for d in PAIRED_DIMENSIONS}, primary=OBJECTIVE)
    moved = DimensionScores(task=0.7, robustness=0.3, readability=0.7, efficiency=0.5)

    def verdict(endpoint, passes: int = 24):  # noqa: ANN001, ANN202
        return ratchet(RatchetInput(old=SCORES, new=moved, old_structure=0.8, new_structure=0.8, evidence=ties,
                                    objective_passes=(passes, 24), old_objective_passes=24, endpoint=endpoint))

    assert verdict(primary_endpoint(2, 24)).verdict is RatchetVerdict.REVIEW  # a reliable judge: as before
    assert verdict(primary_endpoint(12, 24)).verdict is RatchetVerdict.PASS
    assert verdict(primary_endpoint(12, 24), passes=21).verdict is RatchetVerdict.REVIEW  # pass rate fell 0.125
