"""QA 26 N2, N13 (rule side): a promotion rests on at least one measured rate whose bound rules out a
worsening (tool errors over sessions, feedback over verdicts; nothing measured holds and says so),
and signed percentages are shown with the digits they need ("-0.3%", never "-0%")."""

from __future__ import annotations

import pytest

from skillforge.rules.canary import compare, decide, evidence, measured, promotion_gap, signed_pct
from skillforge.state.canary import ArmCounts, CanaryAction

KW = {"age_hours": 1.0, "max_age_hours": 24.0}


def _rate(comparison, name: str):  # type: ignore[no-untyped-def]
    return next(r for r in comparison.rates if r.name == name)


def test_no_feedback_and_no_tool_error_rests_on_the_tool_error_bound() -> None:
    comparison = compare(ArmCounts(sessions=161), ArmCounts(sessions=139), 0.5)  # the QA's case A
    assert measured(_rate(comparison, "tool_error")) and not measured(_rate(comparison, "negative_feedback"))
    assert [e.split(" <=")[0] for e in evidence(comparison)] == ["tool_error"]
    verdict = decide(comparison, [], min_sessions=100, **KW)
    assert verdict.action is CanaryAction.PROMOTE
    assert "tool_error <= +0.0" in verdict.reasons[0]
    assert "not measured (no verdict): negative_feedback, correction" in verdict.reasons[0]


def test_nothing_measured_holds_and_says_so_then_is_reaped() -> None:
    comparison = compare(ArmCounts(sessions=6), ArmCounts(sessions=7), 0.5)  # --min-sessions 5, no verdict
    assert not evidence(comparison)
    verdict = decide(comparison, [], min_sessions=5, **KW)
    assert verdict.action is CanaryAction.HOLD and "no signal was measured" in verdict.reasons[0]
    assert "no feedback verdict in either arm" in verdict.reasons[0]
    reaped = decide(comparison, [], min_sessions=5, age_hours=30.0, max_age_hours=24.0)
    assert reaped.action is CanaryAction.ROLLBACK and reaped.reaped
    assert reaped.reasons[0].startswith("reaped: 30.0 h old") and "no signal was measured" in reaped.reasons[0]


def test_a_measured_rate_whose_bound_is_not_yet_below_the_threshold_holds() -> None:
    comparison = compare(ArmCounts(sessions=20), ArmCounts(sessions=20), 0.5)  # 0 of 20: bound about +0.18
    gap = promotion_gap(comparison)
    assert gap is not None and gap.startswith("no measured signal rules out") and "tool_error: upper bound +0.18" in gap
    assert decide(comparison, [], min_sessions=20, **KW).action is CanaryAction.HOLD
    enough = compare(ArmCounts(sessions=90), ArmCounts(sessions=90), 0.5)  # 0 of 90 is a measurement (+0.045)
    assert promotion_gap(enough) is None
    assert decide(enough, [], min_sessions=20, **KW).action is CanaryAction.PROMOTE


def test_feedback_with_verdicts_is_measured_even_without_a_bad_one() -> None:
    c = ArmCounts(sessions=150, with_verdict=150)
    comparison = compare(c, ArmCounts(sessions=150, with_verdict=150), 0.5)
    assert measured(_rate(comparison, "negative_feedback")) and measured(_rate(comparison, "correction"))
    names = [e.split(" <=")[0] for e in evidence(comparison)]
    assert names == ["negative_feedback", "tool_error", "correction"]
    assert "not measured" not in decide(comparison, [], min_sessions=100, **KW).reasons[0]


def test_tokens_alone_are_not_the_evidence() -> None:
    tokens = [1000] * 5
    comparison = compare(ArmCounts(sessions=5, tokens=tokens), ArmCounts(sessions=5, tokens=tokens), 0.5)
    assert not measured(_rate(comparison, "tokens")) and not evidence(comparison)
    assert decide(comparison, [], min_sessions=5, **KW).action is CanaryAction.HOLD


def test_a_signal_with_events_still_has_to_be_ruled_out() -> None:
    c = ArmCounts(sessions=120, with_verdict=120, bad=36)
    verdict = decide(compare(c, ArmCounts(sessions=120, with_verdict=120, bad=24), 0.5), [], min_sessions=100, **KW)
    assert verdict.action is CanaryAction.HOLD and "do not yet rule out" in verdict.reasons[0]


@pytest.mark.parametrize(("x", "shown"), [(-0.003, "-0.3%"), (-0.12, "-12%"), (0.0, "0%"), (-1e-9, "0%"),
                                          (0.2, "+20%"), (0.0004, "+0.04%"), (-0.00004, "-0.004%")])
def test_signed_percentages_never_read_minus_zero(x: float, shown: str) -> None:
    assert signed_pct(x) == shown


def test_a_token_bound_near_zero_is_shown_with_its_digits() -> None:
    live = [1000 + (i % 7) for i in range(400)]
    canary = [1000 + (i % 7) - (i % 2) for i in range(400)]
    verdict = decide(compare(ArmCounts(sessions=400, tokens=canary), ArmCounts(sessions=400, tokens=live), 0.5), [],
                     min_sessions=100, **KW)
    assert verdict.action is CanaryAction.PROMOTE and "-0%" not in verdict.reasons[0] and "tokens <= " in verdict.reasons[0]
