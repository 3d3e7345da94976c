"""QA 23 F3/F14: the canary rules leave signals with no events out of Holm, promote only when the
data rule out a worsening beyond the threshold, and show a reaped age that compares with its limit."""

from __future__ import annotations

import random

from skillforge.rules.canary import age_text, compare, decide, has_events, not_ruled_out, upper_bound
from skillforge.state.canary import ArmCounts, CanaryAction, RateStat

KW = {"age_hours": 1.0, "min_sessions": 100, "max_age_hours": 24.0}


def feedback(c_n: int, c_bad: int, l_n: int, l_bad: int, **extra: int) -> tuple[ArmCounts, ArmCounts]:
    return (ArmCounts(sessions=c_n, with_verdict=c_n, bad=c_bad, **extra), ArmCounts(sessions=l_n, with_verdict=l_n,
                                                                                      bad=l_bad))


def rate(comparison, name: str) -> RateStat:  # type: ignore[no-untyped-def]
    return next(r for r in comparison.rates if r.name == name)


def test_signals_with_no_events_in_either_arm_are_left_out_of_holm() -> None:
    # the QA's promoted example at twice the sessions (37/112 against 21/128: time-uniform p 0.21, held)
    comparison = compare(*feedback(224, 74, 256, 42), 0.5)
    bad, tool, corr = rate(comparison, "negative_feedback"), rate(comparison, "tool_error"), rate(comparison, "correction")
    assert not has_events(tool) and not has_events(corr) and tool.p_adjusted is None and corr.p_adjusted is None
    assert bad.p_adjusted == bad.p_value and bad.p_value is not None and bad.p_value < 0.05
    verdict = decide(comparison, [], **KW)
    assert verdict.action is CanaryAction.ROLLBACK and "negative_feedback" in verdict.reasons[0]


def test_an_event_in_one_arm_only_keeps_the_signal_in_the_family() -> None:
    c, live = feedback(200, 40, 200, 40)
    live.tool_error_sessions = 1
    comparison = compare(c, live, 0.5)
    assert has_events(rate(comparison, "tool_error")) and rate(comparison, "tool_error").p_adjusted is not None
    bad = rate(comparison, "negative_feedback")
    assert bad.p_adjusted is not None and bad.p_value is not None and bad.p_adjusted >= bad.p_value


def test_a_worse_canary_that_fires_nothing_is_held_not_promoted() -> None:
    comparison = compare(*feedback(120, 36, 120, 24), 0.5)  # 0.30 vs 0.20: not significant beyond +0.05
    bad = rate(comparison, "negative_feedback")
    assert bad.p_adjusted is not None and bad.p_adjusted > 0.05
    verdict = decide(comparison, [], **KW)
    assert verdict.action is CanaryAction.HOLD and verdict.sessions_needed == 0
    assert "do not yet rule out" in verdict.reasons[0] and "negative_feedback (upper bound +" in verdict.reasons[0]


def test_at_its_maximum_age_an_unproven_canary_is_reaped_with_the_reason() -> None:
    verdict = decide(compare(*feedback(120, 36, 120, 24), 0.5), [], **{**KW, "age_hours": 30.0})
    assert verdict.action is CanaryAction.ROLLBACK and verdict.reaped
    assert verdict.reasons[0].startswith("reaped: 30.0 h old (maximum 24 h)")
    assert "do not rule out a worsening beyond the threshold on negative_feedback" in verdict.reasons[0]
    assert verdict.reasons[0].count("reaped:") == 1


def test_a_clearly_better_canary_promotes_and_names_its_bounds() -> None:
    verdict = decide(compare(*feedback(240, 24, 240, 48), 0.5), [], **KW)  # at 120 each: bound +0.030
    assert verdict.action is CanaryAction.PROMOTE and "negative_feedback <= -" in verdict.reasons[0]


def test_the_bound_must_lie_strictly_below_the_threshold() -> None:
    comparison = compare(*feedback(800, 160, 7200, 1440), 0.1)
    bad = rate(comparison, "negative_feedback")
    at = bad.model_copy(update={"threshold": upper_bound(bad)})
    assert not_ruled_out(comparison.model_copy(update={"rates": [at]}))
    assert not not_ruled_out(comparison)


def test_no_events_at_all_give_no_evidence_either_way() -> None:
    c, live = ArmCounts(sessions=150), ArmCounts(sessions=150)
    assert decide(compare(c, live, 0.5), [], **KW).action is CanaryAction.PROMOTE


def test_a_signal_with_events_but_an_arm_under_ten_holds() -> None:
    c, live = feedback(150, 0, 150, 10)
    c.with_verdict, c.bad = 5, 1
    verdict = decide(compare(c, live, 0.5), [], **KW)
    assert verdict.action is CanaryAction.HOLD and "fewer than 10 observations" in verdict.reasons[0]


def test_tokens_need_their_relative_bound_below_the_threshold() -> None:
    rng = random.Random(3)
    live_tokens = [int(rng.gauss(1000, 100)) for _ in range(300)]
    same = [int(rng.gauss(1000, 100)) for _ in range(150)]
    pricier = [int(rng.gauss(1150, 100)) for _ in range(150)]  # +15 %: under the 20 % threshold, bound above it?
    c, live = ArmCounts(sessions=150, tokens=same), ArmCounts(sessions=300, tokens=live_tokens)
    assert decide(compare(c, live, 0.33), [], **KW).action is CanaryAction.PROMOTE
    few = ArmCounts(sessions=150, tokens=same[:3])
    assert decide(compare(few, live, 0.33), [], **KW).action is CanaryAction.HOLD
    bound = upper_bound(rate(compare(ArmCounts(sessions=150, tokens=pricier), live, 0.33), "tokens"))
    assert bound is not None and 0.15 < bound < 0.2


def test_a_reaped_age_is_shown_with_enough_digits_to_compare_with_its_limit() -> None:
    assert age_text(0.000556, 0.0003) == "0.001 h"
    assert age_text(0.00031, 0.0003) == "0.0003 h"
    assert age_text(30.04, 24.0) == "30.0 h"
    assert age_text(168.04, 168.0) == "168.0 h"
    verdict = decide(compare(*feedback(1, 0, 1, 0), 0.5), [], **{**KW, "age_hours": 0.000556,
                                                                    "max_age_hours": 0.0003})
    assert verdict.reasons[0].startswith("reaped: 0.001 h old (maximum 0.0003 h)")
