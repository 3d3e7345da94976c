"""The canary's time-uniform bounds (rules/canary.py): however often `canary tick` looks, a canary
worse by exactly the threshold is promoted (or rolled back) in at most ALPHA of the runs."""

from __future__ import annotations

import math
import random

import pytest

from skillforge.rules.canary import (MIN_ARM_N, TAU_PER_THRESHOLD, TIGHTEST_AT, U_STAR, Z_STAR, anytime_p, boundary, compare,
                                     decide, rate_stat, upper_bound)
from skillforge.rules.paired import ALPHA
from skillforge.state.canary import ArmCounts, CanaryAction

Z_FIXED = 1.6448536269514722  # the one-sided 95 % quantile of one look


def _log_m(z: float, u: float) -> float:
    a = u / (1 + u)
    return math.log(2 / math.sqrt(1 + u)) + z * z * a / 2 + math.log(0.5 * math.erfc(-z * math.sqrt(a) / math.sqrt(2)))


@pytest.mark.parametrize("u", [0.05, 0.5, 1.0, U_STAR, 30.0, 1e3, 1e6])
def test_the_boundary_is_where_the_mixture_reaches_one_over_alpha(u: float) -> None:
    z = boundary(u)
    assert _log_m(z, u) == pytest.approx(math.log(1 / ALPHA), abs=1e-6)
    assert _log_m(z, u) >= math.log(1 / ALPHA) - 1e-12  # never below: conservative
    assert anytime_p(z, u) == pytest.approx(ALPHA, rel=1e-5)
    assert z > Z_FIXED  # wider than one look's bound, at every information
    assert anytime_p(z + 0.5, u) < anytime_p(z, u) < anytime_p(z - 0.5, u) <= 1.0


def test_the_tightest_point() -> None:
    assert 2.6 < Z_STAR < 2.9 and all(boundary(U_STAR * f) > Z_STAR for f in (0.5, 0.9, 1.1, 2.0))
    assert anytime_p(0.0, 1.0) == 1.0 and anytime_p(-3.0, 1.0) == 1.0 and 0 < anytime_p(60.0, 5.0) < 1e-300 + 1e-200
    se = TIGHTEST_AT * 0.05 / Z_STAR  # the bound is narrowest where its radius is TIGHTEST_AT thresholds
    assert boundary((TAU_PER_THRESHOLD * 0.05 / se) ** 2) * se == pytest.approx(TIGHTEST_AT * 0.05)
    se = 0.05 / 2.88  # at one threshold: 2.88 standard errors
    assert boundary((TAU_PER_THRESHOLD * 0.05 / se) ** 2) == pytest.approx(2.88, abs=0.005)


def test_the_bound_shrinks_with_sessions_and_is_wider_than_one_look() -> None:
    widths = []
    for n in (10, 20, 50, 100, 200, 500, 1000, 3000, 10_000, 100_000, 10 ** 7):
        r = rate_stat("negative_feedback", n // 5, n, 9 * n // 5, 9 * n, 0.05, 0.1)  # 20 % in both, 10 % share
        pc, pl = (n // 5 + 1) / (n + 2), (9 * n // 5 + 1) / (9 * n + 2)
        se = math.sqrt(pc * (1 - pc) / (n + 2) + pl * (1 - pl) / (9 * n + 2))
        assert r.ci is not None and r.ci[1] - (pc - pl) > Z_FIXED * se
        widths.append(r.ci[1] - r.ci[0])
    assert widths == sorted(widths, reverse=True) and len(set(widths)) == len(widths)


def test_edge_cases_keep_their_behaviour() -> None:
    for c_ev, c_n, l_ev, l_n in ((0, 50, 0, 50), (50, 50, 50, 50), (0, 50, 50, 50), (3, 3, 0, 3)):
        r = rate_stat("tool_error", c_ev, c_n, l_ev, l_n, 0.05, 0.5)
        assert r.ci is not None and -1.0 <= r.ci[0] < r.ci[1] <= 1.0
        assert (r.p_value is None) == (c_n < MIN_ARM_N)
    empty = rate_stat("negative_feedback", 0, 0, 10, 100, 0.05, 0.1)
    assert empty.ci is None and empty.p_value is None and upper_bound(empty) is None and empty.needed > 0
    assert rate_stat("negative_feedback", 0, 0, 0, 0, 0.05, 0.1).ci is None
    none = decide(compare(ArmCounts(), ArmCounts(sessions=500), 0.1), [], age_hours=1.0, min_sessions=100,
                  max_age_hours=24.0)
    assert none.action is CanaryAction.HOLD


def test_many_looks_at_a_canary_worse_by_the_threshold_promote_it_in_at_most_alpha_of_runs() -> None:
    """400 runs, 0.25 bad against 0.20 (worse by exactly the 0.05 threshold), 50 % share, the rules'
    bound looked at every 25 sessions from 200 to 3 000: the time-uniform bound promotes in at
    most 5 % of runs (and rolls back in at most 5 %); one look's bound, asked as often, far more."""
    runs, promoted, rolled_back, fixed = 400, 0, 0, 0
    for seed in range(runs):
        rng = random.Random(seed)
        n, bad = [0, 0], [0, 0]
        hit_fixed = False
        for i in range(1, 3001):
            arm = rng.random() < 0.5
            n[arm] += 1
            bad[arm] += rng.random() < (0.25 if arm else 0.20)
            if i % 25 or i < 200:
                continue
            r = rate_stat("negative_feedback", bad[1], n[1], bad[0], n[0], 0.05, 0.5)
            if not hit_fixed:
                pc, pl = (bad[1] + 1) / (n[1] + 2), (bad[0] + 1) / (n[0] + 2)
                se = math.sqrt(pc * (1 - pc) / (n[1] + 2) + pl * (1 - pl) / (n[0] + 2))
                hit_fixed = pc - pl + Z_FIXED * se < 0.05
            if (b := upper_bound(r)) is not None and b < 0.05:
                promoted += 1
                break
            if r.p_value is not None and r.p_value <= ALPHA:
                rolled_back += 1
                break
        fixed += hit_fixed
    assert promoted <= ALPHA * runs, promoted
    assert rolled_back <= ALPHA * runs, rolled_back
    assert fixed > 3 * ALPHA * runs, fixed  # the check has teeth: one look's bound, asked 113 times


def test_a_bound_next_to_its_threshold_never_reads_as_equal_to_it() -> None:
    """QA 31 F6: a promotion reason said `negative_feedback <= +0.050` for a bound of 0.0496 (the rule
    is strictly below the threshold): a bound that rounds to its threshold's text gets a fourth decimal."""
    from skillforge.rules.canary import _amount

    assert _amount(0.0496, "negative_feedback", 0.05) == "+0.0496"
    assert _amount(0.0504, "negative_feedback", 0.05) == "+0.0504"
    assert _amount(0.031, "negative_feedback", 0.05) == "+0.031"
