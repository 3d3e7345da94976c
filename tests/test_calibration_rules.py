"""The judge-calibration statistics (rules/calibration.py), on hand-computed examples and the edge
cases: no judgement, one pair, all ties (kappa's 0/0), failed judgements, one repeat."""

from __future__ import annotations

import pytest

from skillforge.rules.calibration import (AGREEMENT_FLOOR, KAPPA_FLOOR, MAX_INVALID_SHARE, NO_INTERVAL, PairRuns,
                                          both_orders, calibrate_dimension, calibrate_dimensions, calibrated_status,
                                          cohen_kappa, confusion, dimension_statuses, judge_changes, kappa_interval,
                                          self_preference, wilson_interval)
from skillforge.state.calibration import CalibrationRecord, DimensionStatus

SWAP = {"A": "B", "B": "A", "tie": "tie"}


def runs_of(person: list[str], a_first: list[list[str | None]], b_first: list[list[str | None]],
            dim: str = "task") -> list[PairRuns]:
    """One PairRuns per pair: the person's choice and the judge's raw labels per repeat (None: failed)."""
    return [PairRuns({dim: p}, tuple(None if x is None else {dim: x} for x in one),
                     tuple(None if x is None else {dim: x} for x in two))
            for p, one, two in zip(person, a_first, b_first, strict=True)]


def faithful(person: list[str], repeats: int = 1) -> list[PairRuns]:
    """A judge that gives the person's choice in both orders, every repeat."""
    return runs_of(person, [[p] * repeats for p in person], [[SWAP[p]] * repeats for p in person])


BALANCED = ["A", "B", "tie"] * 10


# ---- intervals ---------------------------------------------------------------------------------
def test_wilson_interval_matches_known_values_and_edges():
    lo, hi = wilson_interval(0.5, 100)
    assert (round(lo, 4), round(hi, 4)) == (0.4038, 0.5962)
    lo, hi = wilson_interval(1.0, 40)
    assert hi == 1.0 and 0.90 < lo < 0.92
    assert wilson_interval(0.0, 40)[0] == 0.0
    assert wilson_interval(0.3, 0) == (0.0, 1.0)  # nothing observed: nothing known


# ---- kappa -------------------------------------------------------------------------------------
def test_kappa_on_a_hand_computed_example():
    # p_o = 4/6; marginals person (2, 2, 2), judge (2, 3, 1): p_e = 12/36; kappa = (2/3 - 1/3) / (2/3)
    person = ["A", "A", "B", "B", "tie", "tie"]
    judge = ["A", "B", "B", "B", "tie", "A"]
    assert cohen_kappa(person, judge) == pytest.approx(0.5)
    assert cohen_kappa(person, person) == pytest.approx(1.0)


def test_kappa_of_an_opposite_judge_is_negative():
    person = ["A", "B"] * 10
    assert cohen_kappa(person, [SWAP[p] for p in person]) == pytest.approx(-1.0)


def test_kappa_is_defined_as_zero_where_the_formula_is_zero_over_zero():
    # all ties on both sides: expected agreement 1, observed 1 -> a constant judge, no skill shown
    assert cohen_kappa(["tie"] * 12, ["tie"] * 12) == 0.0
    assert cohen_kappa([], []) == 0.0
    # the person says tie everywhere, the judge A everywhere: p_o = p_e = 0
    assert cohen_kappa(["tie"] * 5, ["A"] * 5) == 0.0


def test_confusion_ignores_labels_outside_the_three_choices():
    assert sum(confusion([("A", "A"), ("A", "INVALID"), ("maybe", "B")])) == 1


def test_kappa_interval_is_deterministic_and_brackets_the_estimate():
    person = BALANCED
    judge = [p if i % 5 else SWAP[p] if p != "tie" else "A" for i, p in enumerate(person)]
    groups = [[(p, j)] for p, j in zip(person, judge, strict=True)]
    lo, hi = kappa_interval(groups)
    assert (lo, hi) == kappa_interval(groups)  # fixed seed: the same judgements, the same interval
    assert lo < cohen_kappa(person, judge) < hi and hi - lo > 0.1


def test_kappa_interval_needs_two_pairs():
    assert kappa_interval([[("A", "A"), ("A", "A"), ("A", "A")]]) == NO_INTERVAL
    assert kappa_interval([[("A", "A")], []]) == NO_INTERVAL  # a pair with no valid judgement does not count
    assert kappa_interval([]) == NO_INTERVAL


# ---- both orders -------------------------------------------------------------------------------
@pytest.mark.parametrize(("a_first", "b_first", "expected"), [
    ("A", "B", ("A", False)),      # the person's A first: A; their B first: B = the person's A again
    ("B", "A", ("B", False)),
    ("tie", "tie", ("tie", False)),
    ("A", "A", ("tie", True)),     # always the first shown: the orders disagree -> tie, a flip
    ("A", "tie", ("tie", True)),   # a side in one order, a tie in the other: a flip (combine_orders)
    ("A", "maybe", (None, False)),
])
def test_both_orders_in_the_persons_frame(a_first, b_first, expected):
    assert both_orders({"task": a_first}, {"task": b_first}, "task") == expected


# ---- one dimension -----------------------------------------------------------------------------
def test_a_faithful_judge_agrees_fully_and_gates():
    d = calibrate_dimension("task", faithful(BALANCED, repeats=3))
    assert (d.pairs, d.judgements, d.invalid) == (30, 90, 0)
    assert d.agreement == 1.0 and d.kappa == pytest.approx(1.0) and d.kappa_ci[0] > 0.9
    assert d.flip_rate_orders == 0.0 and d.flip_rate_repeats == 0.0
    assert d.position_bias == pytest.approx(0.5)  # A and B each chosen first-shown half the time
    assert d.status is DimensionStatus.GATED


def test_an_always_first_judge_has_position_bias_one_and_flips_every_time():
    d = calibrate_dimension("task", runs_of(BALANCED, [["A"] * 2] * 30, [["A"] * 2] * 30))
    assert d.position_bias == 1.0 and d.position_bias_ci[1] == 1.0 and d.position_bias_ci[0] > 0.85
    assert d.flip_rate_orders == 1.0 and d.flip_rate_repeats == 0.0
    # every both-order choice is a tie: it agrees on the person's ties only, and kappa is 0
    assert d.agreement == pytest.approx(1 / 3) and d.kappa == pytest.approx(0.0)
    assert d.status is DimensionStatus.REPORTED


def test_all_ties_is_kappa_zero_no_position_bias_and_reported():
    d = calibrate_dimension("task", faithful(["tie"] * 20, repeats=2))
    assert d.agreement == 1.0 and d.kappa == 0.0 and d.position_bias is None and d.position_bias_ci is None
    assert d.status is DimensionStatus.REPORTED


def test_one_pair_has_no_kappa_interval_and_cannot_gate():
    d = calibrate_dimension("task", faithful(["A"], repeats=3))
    assert d.pairs == 1 and d.judgements == 3 and d.kappa_ci == NO_INTERVAL
    assert d.status is DimensionStatus.REPORTED


def test_failed_judgements_are_invalid_never_agreement():
    person = BALANCED
    runs = faithful(person, repeats=2)
    # the first 4 pairs: one order failed on every repeat
    broken = [PairRuns(r.person, r.a_first, (None, None)) for r in runs[:4]] + runs[4:]
    d = calibrate_dimension("task", broken)
    assert d.invalid == 8 and d.judgements == 52 and d.agreement == 1.0
    assert d.status is DimensionStatus.GATED  # 8 of 60 failed: below the ceiling
    many = [PairRuns(r.person, (None, None), r.b_first) for r in runs[:8]] + runs[8:]
    d = calibrate_dimension("task", many)
    assert d.invalid / (d.invalid + d.judgements) > MAX_INVALID_SHARE and d.status is DimensionStatus.REPORTED
    none = calibrate_dimension("task", [PairRuns(r.person, (None,), (None,)) for r in runs])
    assert (none.judgements, none.invalid, none.agreement) == (0, 30, 0.0)
    assert none.status is DimensionStatus.REPORTED


def test_flip_rate_across_repeats_counts_each_order_whose_label_changed():
    person = ["A"] * 10
    a_first = [["A", "A", "tie"] if i < 3 else ["A"] * 3 for i in range(10)]
    d = calibrate_dimension("task", runs_of(person, a_first, [["B"] * 3] * 10))
    assert d.flip_rate_repeats == pytest.approx(3 / 20)
    assert d.flip_rate_orders == pytest.approx(3 / 30)  # the repeats where A-first said tie
    single = calibrate_dimension("task", runs_of(person, [["tie"]] * 10, [["B"]] * 10))
    assert single.flip_rate_repeats == 0.0  # one repeat: nothing to change


def test_dimensions_without_any_label_are_left_out():
    runs = [PairRuns({"task": "A", "readability": "tie"}, ({"task": "A", "readability": "tie"},),
                     ({"task": "B", "readability": "tie"},))]
    assert set(calibrate_dimensions(runs)) == {"task", "readability"}


def test_status_needs_both_floors_and_kappa_above_chance():
    ci = (0.5, 0.9)
    assert calibrated_status(0.7, ci, 0.8, 90, 0) is DimensionStatus.GATED
    assert calibrated_status(KAPPA_FLOOR - 0.01, ci, 0.8, 90, 0) is DimensionStatus.REPORTED
    assert calibrated_status(0.7, ci, AGREEMENT_FLOOR - 0.01, 90, 0) is DimensionStatus.REPORTED
    assert calibrated_status(0.7, (-0.1, 0.9), 0.8, 90, 0) is DimensionStatus.REPORTED
    assert calibrated_status(0.7, ci, 0.8, 0, 0) is DimensionStatus.REPORTED


# ---- fingerprint and self-preference -----------------------------------------------------------
def record(**kw: object) -> CalibrationRecord:
    base = {"fingerprint": "f1", "model": "judge-a", "endpoint": "http://h/v1", "prompt_sha": "p", "rubric_sha": "r",
            "created_at": "2026-01-01T00:00:00+00:00", "repeats": 3, "pairs": 0, "dimensions": {}}
    return CalibrationRecord.model_validate(base | kw)


def test_judge_changes_says_what_changed():
    r = record()
    assert judge_changes(r, "judge-a", "http://h/v1/", "p", "r") == []  # a trailing slash is the same endpoint
    assert judge_changes(r, "judge-b", "http://h/v1", "p", "r") == ["model judge-a \u2192 judge-b"]
    assert judge_changes(r, "judge-a", "http://h/v1", "p2", "r2") == ["prompt changed", "rubric changed"]
    assert judge_changes(r, "judge-a", "http://other/v1", "p", "r")[0].startswith("endpoint changed")


def test_a_record_of_another_fingerprint_leaves_every_dimension_uncalibrated():
    assert set(dimension_statuses(record(), "f2").values()) == {DimensionStatus.UNCALIBRATED}


def test_self_preference_is_the_same_model_at_the_same_endpoint():
    judge = ("http://h/v1", "m")
    assert self_preference(judge, {"executor": ("http://h/v1", "m"), "proposer": ("http://h/v1", "p")}) == \
        {"executor": True, "proposer": False}
    assert self_preference(("http://h/v1", None), {"executor": ("http://h/v1", None)}) == {"executor": False}
