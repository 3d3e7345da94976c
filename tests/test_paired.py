"""The paired statistics (rules/paired.py) at their edges, and the whole decision under simulation:
a judge that answers at random must not make a no-op a WIN or a LOSS, and a real effect must show."""

from __future__ import annotations

import random

import pytest

from skillforge.evaluation.compare import conclude
from skillforge.rules.paired import (ALPHA, PRIMARY, bootstrap_ci, classify, holm_adjusted, mde, min_cases,
                                     paired_evidence, sign_test, wilson_lower)
from skillforge.rules.pairwise import combine_orders
from skillforge.state.evaluate import Case, CaseResult, Execution, SideCheck
from skillforge.state.result import PAIRED_DIMENSIONS, Outcome

LABELS = ("A", "B", "tie")
JUDGED = ("overall", "task", "robustness", "readability")


def deltas(wins: int, losses: int, ties: int, size: float = 1.0) -> list[float]:
    return [size] * wins + [-size] * losses + [0.0] * ties


def all_dims(values: list[float]) -> dict[str, list[float]]:
    return {dim: list(values) for dim in PAIRED_DIMENSIONS}


def test_nine_of_ten_discordant_wins_is_a_one_sided_5_percent_win_and_eight_is_not():
    p_win, p_loss = sign_test(9, 1)
    assert p_win == pytest.approx(11 / 1024) and p_win < ALPHA and p_loss == pytest.approx(1023 / 1024)
    assert sign_test(8, 2)[0] == pytest.approx(56 / 1024) and 56 / 1024 > ALPHA       # 0.0547: not yet
    ev = paired_evidence({PRIMARY: deltas(9, 1, 14)})[PRIMARY]
    assert (ev.wins, ev.losses, ev.ties, ev.outcome) == (9, 1, 14, Outcome.WIN)
    assert ev.p_value == pytest.approx(11 / 1024, abs=1e-6)
    assert paired_evidence({PRIMARY: deltas(8, 2, 14)})[PRIMARY].outcome is Outcome.INCONCLUSIVE
    assert paired_evidence({PRIMARY: deltas(1, 9, 14)})[PRIMARY].outcome is Outcome.LOSS


def test_no_discordant_case_is_inconclusive_with_p_1():
    assert sign_test(0, 0) == (1.0, 1.0)
    ev = paired_evidence(all_dims(deltas(0, 0, 24)))
    assert all(e.outcome is Outcome.INCONCLUSIVE and e.p_value == 1.0 and e.ci == (0.0, 0.0) for e in ev.values())
    with pytest.raises(ValueError):
        sign_test(-1, 2)


def test_the_smallest_deciding_n_comes_from_the_sign_test():
    n = min_cases()
    assert n == 5 and 0.5 ** n <= ALPHA < 0.5 ** (n - 1)
    assert paired_evidence({PRIMARY: deltas(5, 0, 0)})[PRIMARY].outcome is Outcome.WIN
    assert paired_evidence({PRIMARY: deltas(4, 0, 0)})[PRIMARY].outcome is Outcome.INCONCLUSIVE
    assert min_cases(0.01) == 7


def test_a_move_below_the_tie_margin_is_a_tie_never_a_decision():
    # efficiency moving by 0.001 on every case (one token more): 24 ties, not 24 losses
    assert classify([-0.001] * 24) == (0, 0, 24)
    ev = paired_evidence({PRIMARY: [-0.001] * 24})[PRIMARY]
    assert ev.outcome is Outcome.INCONCLUSIVE and ev.mean == pytest.approx(-0.001)
    assert classify([0.05, -0.05, 0.049]) == (1, 1, 1)


def test_seeded_bootstrap_is_deterministic_and_brackets_the_mean():
    rng = random.Random(3)
    values = [rng.choice([-1.0, 0.0, 0.0, 1.0, 0.5]) for _ in range(30)]
    first = bootstrap_ci(values, seed=11)
    assert all(bootstrap_ci(values, seed=11) == first for _ in range(5))
    assert bootstrap_ci(values, seed=12) != first
    mean = sum(values) / len(values)
    assert first[0] <= mean <= first[1] and first[0] < first[1]
    assert paired_evidence(all_dims(values)) == paired_evidence(all_dims(values))


def test_holm_adjusts_step_down_and_monotone():
    adj = holm_adjusted({"a": 0.01, "b": 0.04, "c": 0.03, "d": 0.5})
    assert adj == pytest.approx({"a": 0.04, "c": 0.09, "b": 0.09, "d": 0.5})


def test_loss_is_family_wise_over_all_dimensions():
    # Holm over 6: the smallest p must reach 0.05 / 6. 6 of 6 losses (1/64) do not, 7 of 7 (1/128) do
    one = {dim: deltas(0, 0, 24) for dim in PAIRED_DIMENSIONS} | {"task": deltas(0, 6, 18)}
    assert paired_evidence(one)["task"].outcome is Outcome.INCONCLUSIVE
    assert paired_evidence(one)["task"].p_adjusted == pytest.approx(6 / 64, abs=1e-6)
    one["task"] = deltas(0, 7, 17)
    assert paired_evidence(one)["task"].outcome is Outcome.LOSS
    # step-down: once one dimension is rejected, the next is compared with 0.05 / 5
    every = all_dims(deltas(0, 8, 16))
    assert all(e.outcome is Outcome.LOSS for e in paired_evidence(every).values())


def test_reported_only_dimensions_leave_the_deciding_families():
    # under a noisy judge the four judged dimensions are reported only: an objective LOSS of 6 of 6
    # (1/64) is Holm over objective and efficiency (x2 = 0.031), not over all six (x6 = 0.094)
    judged = ("task", "robustness", "readability", PRIMARY)
    data = {dim: deltas(0, 0, 24) for dim in PAIRED_DIMENSIONS} | {"objective": deltas(0, 6, 18)}
    assert paired_evidence(data)["objective"].outcome is Outcome.INCONCLUSIVE
    ev = paired_evidence(data, primary="objective", reported=judged)
    assert ev["objective"].outcome is Outcome.LOSS and ev["objective"].p_adjusted == pytest.approx(2 / 64, abs=1e-6)
    # a reported dimension shows what the whole family gives it (never less conservative)
    data["task"] = deltas(0, 6, 18)
    ev = paired_evidence(data, primary="objective", reported=judged)
    assert ev["task"].p_adjusted == paired_evidence(data, primary="objective")["task"].p_adjusted
    # and a reported dimension never lets another one win without the primary
    data = {dim: deltas(0, 0, 24) for dim in PAIRED_DIMENSIONS} | {"efficiency": deltas(10, 0, 14)}
    assert paired_evidence(data, primary="objective", reported=judged)["efficiency"].outcome is Outcome.INCONCLUSIVE
    with pytest.raises(ValueError, match="cannot be reported only"):
        paired_evidence(data, primary="objective", reported=("objective",))


def test_win_is_a_fixed_sequence_the_primary_first():
    # the primary keeps its full 5 %; the others may only win once the primary has
    data = {dim: deltas(0, 0, 24) for dim in PAIRED_DIMENSIONS} | {"readability": deltas(10, 0, 14)}
    ev = paired_evidence(data)
    assert ev["readability"].outcome is Outcome.INCONCLUSIVE and ev["readability"].p_adjusted == 1.0
    data[PRIMARY] = deltas(5, 0, 19)
    ev = paired_evidence(data)
    assert ev[PRIMARY].outcome is Outcome.WIN and ev["readability"].outcome is Outcome.WIN


def test_mde_for_the_n_at_hand():
    assert mde(20, 0.5) == pytest.approx(0.278, abs=1e-3)   # DESIGN.md: a 20-case set, MDE about 0.28
    assert mde(80, 0.5) == pytest.approx(mde(20, 0.5) / 2, abs=1e-3)
    assert mde(0, 0.5) == 1.0
    # all ties: no spread in the sample, the planning SD is used (never an MDE of 0)
    assert paired_evidence({PRIMARY: deltas(0, 0, 24)})[PRIMARY].mde == mde(24, 0.5)


def test_wilson_lower_bound():
    assert wilson_lower(0, 24) == 0.0 and wilson_lower(0, 0) == 0.0
    assert wilson_lower(24, 24) == pytest.approx(24 / (24 + 1.6448536 ** 2), abs=1e-6)
    assert wilson_lower(12, 24) == pytest.approx(0.3409, abs=1e-3)
    with pytest.raises(ValueError):
        wilson_lower(25, 24)


# ---- simulation of the whole decision (evaluation.conclude on synthetic case results) ----------
def case_result(i: int, first: dict[str, str], second: dict[str, str]) -> CaseResult:
    case = Case(id=f"c{i}", skill="s", query=f"q{i}")
    run = Execution(answer="fare 120", prompt_tokens=100, completion_tokens=20)
    verdicts, flipped = combine_orders(first, second)
    ok = SideCheck(expect_pass=True, provenance_ok=True)
    return CaseResult(case=case, baseline=run, candidate=run, checks={"baseline": ok, "candidate": ok},
                      orders=[first, second], verdicts=verdicts, flipped=flipped)


def random_judge(rng: random.Random) -> dict[str, str]:
    return {dim: rng.choice(LABELS) for dim in JUDGED}


def simulate(seed: int, n: int = 24, effect: bool = False):  # noqa: ANN201
    rng = random.Random(seed)
    results = []
    for i in range(n):
        if effect and rng.random() < 0.5:   # the candidate is really better here: both orders say so
            results.append(case_result(i, dict.fromkeys(JUDGED, "B"), dict.fromkeys(JUDGED, "A")))
        elif effect:
            results.append(case_result(i, dict.fromkeys(JUDGED, "tie"), dict.fromkeys(JUDGED, "tie")))
        else:
            results.append(case_result(i, random_judge(rng), random_judge(rng)))
    return conclude({"run_id": f"sim-{seed}", "skill": "s", "eval_set": "t"}, None, None, results)


SEEDS = 1000


def test_simulated_aa_with_a_random_judge_raises_few_false_alarms():
    """A no-op judged at random, 24 cases, 1000 seeds: the gate must not see a LOSS or a WIN."""
    runs = [simulate(seed) for seed in range(SEEDS)]
    declined = sum(r.verdict == "DECLINED" for r in runs) / SEEDS
    false_loss = sum(any(e.outcome is Outcome.LOSS for e in r.evidence.values()) for r in runs) / SEEDS
    false_win = sum(r.improvement is Outcome.WIN for r in runs) / SEEDS
    any_win = sum(any(e.outcome is Outcome.WIN for e in r.evidence.values()) for r in runs) / SEEDS
    print(f"A/A over {SEEDS} seeds: DECLINED {declined:.1%}, any LOSS {false_loss:.1%}, "
          f"improvement WIN {false_win:.1%}, any WIN {any_win:.1%}")
    assert false_loss <= 0.05 and declined <= 0.05 and false_win <= 0.05 and any_win <= 0.05
    assert all(r.verdict != "INVALID" for r in runs)


def test_simulated_real_effect_is_detected():
    """The judge prefers the candidate, in both orders, on half the cases and ties the rest."""
    runs = [simulate(seed, effect=True) for seed in range(200)]
    detected = sum(r.improvement is Outcome.WIN for r in runs) / len(runs)
    print(f"real effect over 200 seeds: improvement WIN {detected:.1%}")
    assert detected >= 0.95
    assert not any(r.verdict == "DECLINED" for r in runs)
