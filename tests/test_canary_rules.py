"""The canary rules (rules/canary.py), pure: bucketing, the rate tests, and the verdict."""

from __future__ import annotations

import random
import uuid

import pytest

from skillforge.rules.canary import (DEFAULT_MIN_SESSIONS, MIN_ARM_N, bucket, compare, decide, in_canary,
                                     offline_problem, parse_share, rate_stat, regressions, token_stat, valid_limits)
from skillforge.rules.paired import ALPHA
from skillforge.state.canary import ArmCounts, CanaryAction

SKILL, CANARY = "news-digest", str(uuid.UUID(int=7))


def test_ten_thousand_sessions_in_a_ten_percent_canary_give_ten_percent() -> None:
    ids = [str(uuid.UUID(int=random.Random(1).getrandbits(128) + i)) for i in range(10_000)]
    share = sum(in_canary(SKILL, CANARY, 0.10, sid) for sid in ids) / len(ids)
    assert 0.09 <= share <= 0.11, share
    seq = sum(in_canary(SKILL, CANARY, 0.10, f"session-{i}") for i in range(10_000)) / 10_000
    assert 0.09 <= seq <= 0.11, seq  # sequential ids too


def test_the_same_id_always_gets_the_same_answer_and_no_id_never_the_canary() -> None:
    for sid in (f"s{i}" for i in range(500)):
        assert in_canary(SKILL, CANARY, 0.3, sid) == in_canary(SKILL, CANARY, 0.3, sid)
        assert bucket(SKILL, CANARY, sid) == bucket(SKILL, CANARY, sid)
    for missing in (None, "", "   ", "\t"):
        assert not in_canary(SKILL, CANARY, 0.5, missing)


def test_each_canary_draws_its_own_sessions() -> None:
    """The canary's release id is in the key: two canaries of one skill share about share^2 of the
    sessions, not all of them (nobody is in every canary)."""
    other = str(uuid.UUID(int=8))
    ids = [f"s{i}" for i in range(10_000)]
    a = {s for s in ids if in_canary(SKILL, CANARY, 0.1, s)}
    b = {s for s in ids if in_canary(SKILL, other, 0.1, s)}
    assert len(a & b) < 0.3 * len(a)


@pytest.mark.parametrize(("text", "share"), [("10%", 0.1), ("10", 0.1), (" 2.5 % ", 0.025), ("50%", 0.5),
                                             ("0%", None), ("-5%", None), ("51%", None), ("nan", None),
                                             ("inf", None), ("ten", None), ("", None)])
def test_parse_share(text: str, share: float | None) -> None:
    assert parse_share(text) == share


def test_limits() -> None:
    assert valid_limits(100, 168.0) is None
    for bad in ((0, 1.0), (True, 1.0), (1.5, 1.0), (1, 0), (1, float("nan")), (1, -2)):
        assert valid_limits(*bad) is not None


def test_a_doubled_negative_rate_is_evidence_and_equal_rates_are_not() -> None:
    # 200 canary sessions: the time-uniform p of 40/100 against 180/900 is 0.032 (one look's was 0.0015)
    worse = rate_stat("negative_feedback", 80, 200, 360, 1800, 0.05, 0.1)
    assert worse.p_value is not None and worse.p_value < 0.01 and worse.diff == pytest.approx(0.2)
    lo, hi = worse.ci  # type: ignore[misc]
    assert lo > 0.05 and lo < 0.2 < hi
    same = rate_stat("negative_feedback", 20, 100, 180, 900, 0.05, 0.1)
    assert same.p_value is not None and same.p_value > 0.5
    small = rate_stat("negative_feedback", MIN_ARM_N - 1, MIN_ARM_N - 1, 0, 100, 0.05, 0.1)
    assert small.p_value is None  # too few sessions to test, however bad they look


def test_mde_and_needed_shrink_with_sessions() -> None:
    few = rate_stat("tool_error", 1, 20, 18, 180, 0.05, 0.1)
    many = rate_stat("tool_error", 10, 200, 180, 1800, 0.05, 0.1)
    assert few.mde is not None and many.mde is not None and many.mde < few.mde
    assert few.needed > many.needed >= 0


def test_tokens_use_a_relative_threshold() -> None:
    rng = random.Random(3)
    live = [int(rng.gauss(1000, 100)) for _ in range(300)]
    same = [int(rng.gauss(1000, 100)) for _ in range(40)]
    costly = [int(rng.gauss(1500, 100)) for _ in range(40)]
    assert token_stat(same, live, 0.2).p_value > 0.5  # type: ignore[operator]
    assert token_stat(costly, live, 0.2).p_value < 0.001  # type: ignore[operator]
    assert token_stat(costly[:3], live, 0.2).p_value is None


def arms(c_sessions: int, l_sessions: int, c_bad: int = 0, l_bad: int = 0) -> tuple[ArmCounts, ArmCounts]:
    return (ArmCounts(sessions=c_sessions, with_verdict=c_sessions, bad=c_bad),
            ArmCounts(sessions=l_sessions, with_verdict=l_sessions, bad=l_bad))


def test_verdicts() -> None:
    kw = {"age_hours": 1.0, "min_sessions": 100, "max_age_hours": 24.0}
    hold = decide(compare(*arms(50, 450, 10, 90), 0.1), [], **kw)
    assert hold.action is CanaryAction.HOLD and hold.sessions_needed == 50
    promote = decide(compare(*arms(800, 7200, 160, 1440), 0.1), [], **kw)  # 400 / 3 600: bound +0.061, holds
    assert promote.action is CanaryAction.PROMOTE
    unproven = decide(compare(*arms(120, 1080, 24, 216), 0.1), [], **kw)  # equal, but +0.05 not ruled out yet
    assert unproven.action is CanaryAction.HOLD and "do not yet rule out" in unproven.reasons[0]
    back = decide(compare(*arms(120, 1080, 48, 216), 0.1), [], **kw)
    assert back.action is CanaryAction.ROLLBACK and "negative_feedback" in back.reasons[0]
    assert f"<= {ALPHA}" in back.reasons[0]
    reaped = decide(compare(*arms(50, 450, 10, 90), 0.1), [], **{**kw, "age_hours": 30.0})
    assert reaped.action is CanaryAction.ROLLBACK and reaped.reaped and "reaped: 30.0 h old" in reaped.reasons[0]
    offline = decide(compare(*arms(120, 1080, 24, 216), 0.1), [], **kw, offline="its offline evaluation is DECLINED")
    assert offline.action is CanaryAction.ROLLBACK


def test_a_p0_or_holdout_regression_rolls_back_at_once() -> None:
    cases = [{"run_id": "r1", "case_id": "p0-1", "p0": True, "eval_set": "p0", "baseline_passed": True,
              "candidate_passed": False},
             {"run_id": "r1", "case_id": "h-1", "p0": False, "eval_set": "holdout", "baseline_passed": True,
              "candidate_passed": False},
             {"run_id": "r1", "case_id": "d-1", "p0": False, "eval_set": "dev", "baseline_passed": True,
              "candidate_passed": False},
             {"run_id": "r1", "case_id": "h-2", "p0": False, "eval_set": "holdout", "baseline_passed": False,
              "candidate_passed": False}]
    found = regressions(cases)
    assert [(r.case_id, r.why) for r in found] == [("p0-1", "p0"), ("h-1", "holdout")]
    v = decide(compare(*arms(5, 45), 0.1), found, age_hours=0.1, min_sessions=DEFAULT_MIN_SESSIONS, max_age_hours=24)
    assert v.action is CanaryAction.ROLLBACK and "p0 case p0-1" in v.reasons[0]


def test_offline_problem() -> None:
    assert offline_problem(None) is None
    assert offline_problem({"kind": "manual", "note": "no evaluation run"}) is None
    assert offline_problem({"verdict": "PASS"}) is None
    assert "DECLINED" in (offline_problem({"verdict": "declined"}) or "")


def simulate_looks(seed: int, *, sessions: int = 2000, looks: int = 10, share: float = 0.1,
                   bad: float = 0.2, tool_error: float = 0.1, correction: float = 0.05) -> bool:
    """Equal rates on both arms, the rules asked after every `sessions / looks` sessions (a cron
    job peeking): True when any look rolls back."""
    rng = random.Random(seed)
    c, l = ArmCounts(), ArmCounts()
    for i in range(sessions):
        arm = c if rng.random() < share else l
        arm.sessions += 1
        arm.with_verdict += 1
        arm.bad += rng.random() < bad
        arm.tool_error_sessions += rng.random() < tool_error
        arm.corrected += rng.random() < correction
        if (i + 1) % (sessions // looks) == 0:
            v = decide(compare(c, l, share), [], age_hours=1, min_sessions=10**6, max_age_hours=10**6)
            if v.action is CanaryAction.ROLLBACK:
                return True
    return False


def test_equal_rates_seldom_roll_back_even_when_looked_at_often() -> None:
    """200 seeds x 10 looks at equal rates: the false-rollback rate stays under ALPHA."""
    false = sum(simulate_looks(seed) for seed in range(200))
    assert false / 200 <= ALPHA, false


def test_a_rate_difference_ci_stays_within_minus_one_and_one_and_a_tiny_p_is_not_zero():
    """QA: `canary status` showed a 90% CI upper bound of +1.017 for a difference of proportions, and `p 0`."""
    from skillforge.rules.canary import rate_stat, shown_p

    r = rate_stat("negative_feedback", 60, 60, 0, 60, threshold=0.05, share=0.5)
    assert r.ci is not None and -1.0 <= r.ci[0] <= r.ci[1] <= 1.0 and r.ci[1] == 1.0
    assert r.p_value is not None and shown_p(r.p_value) == "<0.0001"
    assert shown_p(0.0123) == "0.0123" and shown_p(None) == "-"
