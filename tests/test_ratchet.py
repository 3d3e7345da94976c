"""The ratchet at its edges: every rule, its threshold from both sides, and the structure exemption."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from skillforge.rules.ratchet import (
    DROP_LIMIT,
    EFFECT_WEIGHT,
    MOVE_LIMIT,
    STRUCTURE_WEIGHT,
    DimensionScores,
    RatchetInput,
    RatchetResult,
    RatchetVerdict,
    effect_score,
    ratchet,
    total_score,
)

BASE = {"task": 0.9, "robustness": 0.8, "readability": 0.5, "efficiency": 0.5}


def scores(**changes: float) -> DimensionScores:
    return DimensionScores(**{**BASE, **changes})


def run(new: DimensionScores | None = None, old: DimensionScores | None = None, old_structure: float = 0.7,
        new_structure: float = 0.7, p0_flips: tuple[str, ...] = ()) -> RatchetResult:
    return ratchet(RatchetInput(old=old or scores(), new=new or scores(), old_structure=old_structure,
                                new_structure=new_structure, p0_flips=p0_flips))


def reasons_about(result: RatchetResult, word: str) -> list[str]:
    return [r for r in result.reasons if r.startswith(word)]


def test_constants_are_the_designed_ones():
    assert (DROP_LIMIT, MOVE_LIMIT, EFFECT_WEIGHT, STRUCTURE_WEIGHT) == (0.05, 0.10, 0.8, 0.2)


def test_effect_and_total_scores():
    s = DimensionScores(task=1.0, robustness=0.5, readability=0.5, efficiency=0.0)
    assert effect_score(s) == 0.5
    assert total_score(s, 1.0) == pytest.approx(0.8 * 0.5 + 0.2 * 1.0)
    assert total_score(s, 0.0) == pytest.approx(0.4)


def test_equal_scores_pass_without_reasons():
    result = run()
    assert result.verdict is RatchetVerdict.PASS
    assert result.reasons == ()
    assert result.old_effect == result.new_effect == effect_score(scores())
    assert result.old_total == result.new_total


def test_total_regression_of_one_millionth_declines_with_readable_numbers():
    # task -4e-6 -> effect -1e-6 -> total -0.8e-6; task -5e-6 -> total -1e-6
    result = run(new=scores(task=0.9 - 5e-6))
    assert result.verdict is RatchetVerdict.DECLINED
    assert result.old_total - result.new_total == pytest.approx(1e-6)
    total = reasons_about(result, "total score regressed")
    assert total and "0.0000010" in total[0]      # not rounded away to "0.000"
    assert reasons_about(result, "effect score regressed")
    assert not reasons_about(result, "task dropped")


def test_effect_regression_declines_even_when_structure_lifts_the_total():
    # readability -0.04: effect -0.01, total -0.008; structure +0.05: total +0.01
    result = run(new=scores(readability=0.46), new_structure=0.75)
    assert result.new_total > result.old_total
    assert result.verdict is RatchetVerdict.DECLINED
    assert reasons_about(result, "effect score regressed 0.010 (0.675 -> 0.665)")
    assert not reasons_about(result, "total score")


@pytest.mark.parametrize("dim,old,new", [("task", 0.9, 0.85), ("robustness", 0.8, 0.75)])
def test_drop_of_exactly_the_limit_declines(dim, old, new):
    # readability rises by the same amount, so the effect score holds and only the drop rule fires
    result = run(new=scores(**{dim: new, "readability": 0.5 + (old - new)}))
    assert result.verdict is RatchetVerdict.DECLINED
    assert result.reasons == (f"{dim} dropped 0.050 ({old:.3f} -> {new:.3f}) >= 0.05",)


@pytest.mark.parametrize("dim,old,new", [("task", 0.9, 0.851), ("robustness", 0.8, 0.751)])
def test_drop_just_below_the_limit_does_not_decline(dim, old, new):
    result = run(new=scores(**{dim: new, "readability": 0.5 + (old - new)}))
    assert not reasons_about(result, f"{dim} dropped")
    assert result.verdict is RatchetVerdict.PASS


@pytest.mark.parametrize("dim", ["readability", "efficiency"])
def test_large_drop_of_other_dimensions_is_not_a_drop_rule(dim):
    # they still lower the effect score, which declines on its own
    result = run(new=scores(**{dim: 0.4}))
    assert result.verdict is RatchetVerdict.DECLINED
    assert not reasons_about(result, f"{dim} dropped")
    assert reasons_about(result, "effect score regressed")


def test_reason_carries_the_numbers():
    result = run(new=scores(task=0.838))
    assert "task dropped 0.062 (0.900 -> 0.838) >= 0.05" in result.reasons


def test_one_p0_flip_declines_whatever_the_averages_say():
    better = scores(task=0.95, robustness=0.85, readability=0.55, efficiency=0.55)
    result = run(new=better, new_structure=0.75, p0_flips=("weather-p0-03",))
    assert result.new_effect > result.old_effect and result.new_total > result.old_total
    assert result.verdict is RatchetVerdict.DECLINED
    assert result.reasons == ("1 P0 case(s) went from pass to fail: weather-p0-03",)


def test_many_p0_flips_are_counted_and_the_first_named():
    ids = tuple(f"p0-{i}" for i in range(8))
    (reason,) = run(p0_flips=ids).reasons
    assert reason.startswith("8 P0 case(s)") and "p0-0, p0-1" in reason and "(+3 more)" in reason


@pytest.mark.parametrize("dim", ["task", "robustness", "readability", "efficiency"])
def test_move_of_exactly_the_limit_up_asks_for_review(dim):
    old = DimensionScores(task=0.5, robustness=0.5, readability=0.5, efficiency=0.5)
    result = run(old=old, new=old.model_copy(update={dim: 0.6}))     # 0.6 - 0.5 == 0.0999999...
    assert result.verdict is RatchetVerdict.REVIEW
    assert result.reasons == (f"{dim} rose 0.100 (0.500 -> 0.600) >= 0.10",)


@pytest.mark.parametrize("dim", ["task", "robustness", "readability", "efficiency"])
def test_move_just_below_the_limit_passes(dim):
    old = DimensionScores(task=0.5, robustness=0.5, readability=0.5, efficiency=0.5)
    result = run(old=old, new=old.model_copy(update={dim: 0.599}))
    assert result.verdict is RatchetVerdict.PASS
    assert result.reasons == ()


def test_a_move_down_asks_for_review_too():
    # efficiency -0.10 balanced by readability +0.10: effect holds, both moves need review
    result = run(new=scores(efficiency=0.4, readability=0.6))
    assert result.verdict is RatchetVerdict.REVIEW
    assert "efficiency fell 0.100 (0.500 -> 0.400) >= 0.10" in result.reasons
    assert "readability rose 0.100 (0.500 -> 0.600) >= 0.10" in result.reasons


def test_effect_score_move_asks_for_review():
    up = scores(task=0.99, robustness=0.89, readability=0.59, efficiency=0.59)   # each +0.09, effect +0.09
    assert run(new=up).verdict is RatchetVerdict.PASS
    up = scores(task=1.0, robustness=0.9, readability=0.6, efficiency=0.6)       # each +0.10
    result = run(new=up)
    assert result.verdict is RatchetVerdict.REVIEW
    assert reasons_about(result, "effect score rose 0.100")


def test_improvement_in_all_passes_when_small():
    result = run(new=scores(task=0.92, robustness=0.82, readability=0.52, efficiency=0.52), new_structure=0.72)
    assert result.verdict is RatchetVerdict.PASS
    assert result.new_total > result.old_total


@pytest.mark.parametrize("old_structure,new_structure", [(0.7, 0.65), (0.7, 0.61), (1.0, 0.0), (0.8, 0.7)])
def test_a_structure_only_drop_never_declines(old_structure, new_structure):
    result = run(old_structure=old_structure, new_structure=new_structure)
    assert result.new_total < result.old_total
    assert result.verdict is not RatchetVerdict.DECLINED
    large = old_structure - new_structure >= MOVE_LIMIT - 1e-9
    assert result.verdict is (RatchetVerdict.REVIEW if large else RatchetVerdict.PASS)
    assert any("from structure alone; structure never blocks" in r for r in result.reasons)
    if large:
        assert reasons_about(result, "structure score fell")


def test_structure_rise_of_the_limit_asks_for_review():
    result = run(old_structure=0.5, new_structure=0.6)
    assert result.verdict is RatchetVerdict.REVIEW
    assert result.reasons == ("structure score rose 0.100 (0.500 -> 0.600) >= 0.10",)


def test_declined_outranks_review_and_its_reasons_come_first():
    result = run(new=scores(task=0.8, readability=0.65))     # task -0.10 (drop and move), readability +0.15
    assert result.verdict is RatchetVerdict.DECLINED
    assert result.reasons[0].startswith("task dropped")
    assert any(r.startswith("readability rose") for r in result.reasons)
    assert any(r.startswith("task fell") for r in result.reasons)


@pytest.mark.parametrize("bad", [-0.01, 1.01, 2.0, -1.0, math.nan, math.inf])
def test_dimension_scores_refuse_values_outside_0_1(bad):
    with pytest.raises(ValidationError):
        scores(task=bad)
    with pytest.raises(ValidationError):
        scores(efficiency=bad)


def test_dimension_scores_accept_the_bounds_and_are_frozen():
    s = DimensionScores(task=0.0, robustness=1.0, readability=0, efficiency=1)
    with pytest.raises(ValidationError):
        s.task = 0.5  # type: ignore[misc]


@pytest.mark.parametrize("bad", [-0.1, 1.1, math.nan])
def test_structure_scores_outside_0_1_are_refused(bad):
    with pytest.raises(ValueError):
        RatchetInput(old=scores(), new=scores(), old_structure=bad, new_structure=0.5, p0_flips=())
    with pytest.raises(ValueError):
        RatchetInput(old=scores(), new=scores(), old_structure=0.5, new_structure=bad, p0_flips=())


def test_ratchet_is_deterministic():
    inp = RatchetInput(old=scores(), new=scores(task=0.84, readability=0.7), old_structure=0.6,
                       new_structure=0.9, p0_flips=("a", "b"))
    first = ratchet(inp)
    assert all(ratchet(inp) == first for _ in range(20))
    assert ratchet(RatchetInput(**{f: getattr(inp, f) for f in inp.__dataclass_fields__})) == first


unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
dims = st.builds(DimensionScores, task=unit, robustness=unit, readability=unit, efficiency=unit)


@given(old=dims, new=dims, old_structure=unit, new_structure=unit,
       flips=st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=4))
def test_any_p0_flip_declines(old, new, old_structure, new_structure, flips):
    result = ratchet(RatchetInput(old=old, new=new, old_structure=old_structure, new_structure=new_structure,
                                  p0_flips=tuple(flips)))
    assert result.verdict is RatchetVerdict.DECLINED


@given(old=dims, gains=st.tuples(unit, unit, unit, unit, unit), old_structure=unit)
def test_never_declined_when_new_dominates_old(old, gains, old_structure):
    names = ("task", "robustness", "readability", "efficiency")
    new = DimensionScores(**{n: min(1.0, getattr(old, n) + g) for n, g in zip(names, gains)})
    new_structure = min(1.0, old_structure + gains[4])
    result = ratchet(RatchetInput(old=old, new=new, old_structure=old_structure, new_structure=new_structure,
                                  p0_flips=()))
    assert result.verdict is not RatchetVerdict.DECLINED


@given(old=dims, old_structure=unit, new_structure=unit)
def test_structure_alone_never_declines(old, old_structure, new_structure):
    result = ratchet(RatchetInput(old=old, new=old, old_structure=old_structure, new_structure=new_structure))
    assert result.verdict is not RatchetVerdict.DECLINED
