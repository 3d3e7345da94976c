"""The ratchet at its edges: evidence of loss declines, a point estimate never does; the P0 veto,
the objective floor, the REVIEW moves, improvement, and the structure exemption."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from skillforge.rules.paired import wilson_lower
from skillforge.rules.ratchet import (
    EFFECT_WEIGHT,
    GATED,
    MOVE_LIMIT,
    PASS_FLOOR,
    STRUCTURE_WEIGHT,
    RatchetInput,
    RatchetResult,
    effect_score,
    ratchet,
    total_score,
)
from skillforge.state.result import PAIRED_DIMENSIONS, DimensionScores, Evidence, Outcome, RatchetVerdict

BASE = {"task": 0.9, "robustness": 0.8, "readability": 0.5, "efficiency": 0.5}
N = 24


def scores(**changes: float) -> DimensionScores:
    return DimensionScores(**{**BASE, **changes})


def ev(outcome: Outcome = Outcome.INCONCLUSIVE) -> Evidence:
    wins, losses = {Outcome.WIN: (9, 0), Outcome.LOSS: (0, 9), Outcome.INCONCLUSIVE: (2, 2)}[outcome]
    p = 0.002 if outcome is not Outcome.INCONCLUSIVE else 0.69
    sign = {Outcome.WIN: 1, Outcome.LOSS: -1, Outcome.INCONCLUSIVE: 0}[outcome]
    return Evidence(wins=wins, losses=losses, ties=N - wins - losses, p_value=p, p_adjusted=p,
                    ci=(0.1 * sign - 0.05, 0.1 * sign + 0.05), mean=0.1 * sign, outcome=outcome, mde=0.25)


def evidence(**outcomes: Outcome) -> dict[str, Evidence]:
    return {dim: ev(outcomes.get(dim, Outcome.INCONCLUSIVE)) for dim in PAIRED_DIMENSIONS}


def run(new: DimensionScores | None = None, old: DimensionScores | None = None, old_structure: float = 0.7,
        new_structure: float = 0.7, p0_flips: tuple[str, ...] = (), outcomes: dict[str, Outcome] | None = None,
        passes: int = N, old_passes: int = N, n: int = N) -> RatchetResult:
    return ratchet(RatchetInput(old=old or scores(), new=new or scores(), old_structure=old_structure,
                                new_structure=new_structure, evidence=evidence(**(outcomes or {})),
                                objective_passes=(passes, n), old_objective_passes=old_passes, p0_flips=p0_flips))


def test_constants_are_the_designed_ones():
    assert (MOVE_LIMIT, PASS_FLOOR, EFFECT_WEIGHT, STRUCTURE_WEIGHT) == (0.10, 0.5, 0.8, 0.2)
    assert GATED == ("task", "robustness", "effect", "objective")


def test_effect_and_total_scores():
    s = DimensionScores(task=1.0, robustness=0.5, readability=0.5, efficiency=0.0)
    assert effect_score(s) == 0.5
    assert total_score(s, 1.0) == pytest.approx(0.8 * 0.5 + 0.2 * 1.0)
    assert total_score(s, 0.0) == pytest.approx(0.4)


def test_a_no_op_passes_and_is_no_improvement():
    result = run()
    assert result.verdict is RatchetVerdict.PASS and result.reasons == ()
    assert result.improvement is Outcome.INCONCLUSIVE
    assert result.old_effect == result.new_effect and result.old_total == result.new_total


@pytest.mark.parametrize("dim", ["task", "robustness", "readability", "efficiency"])
def test_a_point_estimate_a_hair_lower_is_not_a_regression(dim):
    # the old rule declined efficiency -0.001 (effect and total regressed by more than 1e-9)
    result = run(new=scores(**{dim: BASE[dim] - 0.001}))
    assert result.new_effect < result.old_effect and result.new_total < result.old_total
    assert result.verdict is RatchetVerdict.PASS and result.reasons == ()


@pytest.mark.parametrize("dim", GATED)
def test_evidence_of_loss_on_a_gated_dimension_declines(dim):
    result = run(outcomes={dim: Outcome.LOSS})
    assert result.verdict is RatchetVerdict.DECLINED
    (reason,) = result.reasons
    assert reason.startswith(f"evidence of loss on {dim}: LOSS, 0 win(s) / 9 loss(es) / 15 tie(s), p 0.002")
    assert "CI [-0.150, -0.050]" in reason


@pytest.mark.parametrize("dim", ["readability", "efficiency"])
def test_a_loss_on_a_dimension_outside_the_gate_does_not_decline(dim):
    result = run(outcomes={dim: Outcome.LOSS})
    assert result.verdict is RatchetVerdict.PASS and result.reasons == ()


def test_one_p0_flip_vetoes_whatever_the_evidence_says():
    wins = {dim: Outcome.WIN for dim in PAIRED_DIMENSIONS}
    better = scores(task=0.95, robustness=0.85, readability=0.55, efficiency=0.55)
    result = run(new=better, new_structure=0.75, p0_flips=("weather-p0-03",), outcomes=wins)
    assert result.improvement is Outcome.WIN
    assert result.verdict is RatchetVerdict.DECLINED
    assert result.reasons == ("1 P0 case(s) went from pass to fail: weather-p0-03",)


def test_many_p0_flips_are_counted_and_the_first_named():
    ids = tuple(f"p0-{i}" for i in range(8))
    (reason,) = run(p0_flips=ids).reasons
    assert reason.startswith("8 P0 case(s)") and "p0-0, p0-1" in reason and "(+3 more)" in reason


def test_two_sides_that_fail_every_objective_check_never_pass():
    result = run(passes=0, old_passes=0)
    assert result.verdict is RatchetVerdict.DECLINED
    assert result.reasons == ("objective pass rate 0/24: its Wilson lower bound 0.00 is below the floor 0.50",)


def test_the_floor_holds_at_its_edge():
    # 24 cases: 17 passes (71 %) have a lower bound of 0.541, 16 (67 %) of 0.499: below the floor
    edge = next(k for k in range(N + 1) if wilson_lower(k, N) >= PASS_FLOOR)
    assert wilson_lower(edge - 1, N) < PASS_FLOOR <= wilson_lower(edge, N)
    assert run(passes=edge, old_passes=edge).verdict is RatchetVerdict.PASS
    below = run(passes=edge - 1, old_passes=edge - 1)
    assert below.verdict is RatchetVerdict.DECLINED and "below the floor" in below.reasons[0]


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
    assert result.verdict is RatchetVerdict.PASS and result.reasons == ()


def test_a_move_down_asks_for_review_not_decline():
    result = run(new=scores(efficiency=0.4, readability=0.6))
    assert result.verdict is RatchetVerdict.REVIEW
    assert "efficiency fell 0.100 (0.500 -> 0.400) >= 0.10" in result.reasons
    assert "readability rose 0.100 (0.500 -> 0.600) >= 0.10" in result.reasons


def test_effect_and_objective_pass_rate_moves_ask_for_review():
    up = scores(task=1.0, robustness=0.9, readability=0.6, efficiency=0.6)       # each +0.10
    assert any(r.startswith("effect score rose 0.100") for r in run(new=up).reasons)
    result = run(passes=24, old_passes=21)   # 87.5 % -> 100 %
    assert result.verdict is RatchetVerdict.REVIEW
    assert result.reasons == ("objective pass rate rose 0.125 (0.875 -> 1.000) >= 0.10",)


def test_a_real_improvement_is_a_win_and_big_moves_still_ask_for_review():
    up = scores(task=1.0, readability=0.75)
    result = run(new=up, outcomes={"effect": Outcome.WIN, "task": Outcome.WIN})
    assert result.improvement is Outcome.WIN and result.verdict is RatchetVerdict.REVIEW
    assert run(outcomes={"effect": Outcome.LOSS}).improvement is Outcome.LOSS


@pytest.mark.parametrize("old_structure,new_structure", [(0.7, 0.65), (1.0, 0.0), (0.8, 0.7)])
def test_a_structure_only_drop_never_declines(old_structure, new_structure):
    result = run(old_structure=old_structure, new_structure=new_structure)
    assert result.new_total < result.old_total and result.verdict is not RatchetVerdict.DECLINED
    large = old_structure - new_structure >= MOVE_LIMIT - 1e-9
    assert result.verdict is (RatchetVerdict.REVIEW if large else RatchetVerdict.PASS)


def test_declined_outranks_review_and_its_reasons_come_first():
    result = run(new=scores(task=0.8, readability=0.65), outcomes={"task": Outcome.LOSS})
    assert result.verdict is RatchetVerdict.DECLINED
    assert result.reasons[0].startswith("evidence of loss on task")
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
    for old, new in ((bad, 0.5), (0.5, bad)):
        with pytest.raises(ValueError, match="structure"):
            RatchetInput(old=scores(), new=scores(), old_structure=old, new_structure=new, evidence=evidence(),
                         objective_passes=(N, N))


def test_missing_evidence_and_impossible_pass_counts_are_refused():
    partial = {k: v for k, v in evidence().items() if k != "robustness"}
    with pytest.raises(ValueError, match="robustness"):
        RatchetInput(old=scores(), new=scores(), old_structure=0.5, new_structure=0.5, evidence=partial,
                     objective_passes=(N, N))
    with pytest.raises(ValueError, match="objective passes"):
        RatchetInput(old=scores(), new=scores(), old_structure=0.5, new_structure=0.5, evidence=evidence(),
                     objective_passes=(N + 1, N))


def test_ratchet_is_deterministic():
    inp = RatchetInput(old=scores(), new=scores(task=0.84, readability=0.7), old_structure=0.6, new_structure=0.9,
                       evidence=evidence(task=Outcome.LOSS), objective_passes=(20, N), p0_flips=("a", "b"))
    first = ratchet(inp)
    assert all(ratchet(inp) == first for _ in range(20))


unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
dims = st.builds(DimensionScores, task=unit, robustness=unit, readability=unit, efficiency=unit)
outcome = st.sampled_from(list(Outcome))


@given(old=dims, new=dims, old_structure=unit, new_structure=unit,
       flips=st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=4))
def test_any_p0_flip_declines(old, new, old_structure, new_structure, flips):
    result = ratchet(RatchetInput(old=old, new=new, old_structure=old_structure, new_structure=new_structure,
                                  evidence=evidence(), objective_passes=(N, N), p0_flips=tuple(flips)))
    assert result.verdict is RatchetVerdict.DECLINED


@given(old=dims, new=dims, old_structure=unit, new_structure=unit,
       outcomes=st.fixed_dictionaries({d: st.sampled_from([Outcome.WIN, Outcome.INCONCLUSIVE]) for d in GATED}))
def test_without_evidence_of_loss_no_score_change_declines(old, new, old_structure, new_structure, outcomes):
    result = ratchet(RatchetInput(old=old, new=new, old_structure=old_structure, new_structure=new_structure,
                                  evidence=evidence(**outcomes), objective_passes=(N, N)))
    assert result.verdict is not RatchetVerdict.DECLINED


def test_a_dropped_or_reworded_constraint_asks_a_person_whatever_the_scores():
    """QA 40: a candidate without its Constraints section won on the judge; only its structure score
    hinted. Dropping a guard is a person's call: REVIEW, never PASS, and never DECLINED for it alone."""
    win = {"task": Outcome.WIN, "effect": Outcome.WIN}
    clean = ratchet(RatchetInput(old=scores(), new=scores(), old_structure=0.7, new_structure=0.7,
                                 evidence=evidence(**win), objective_passes=(N, N), old_objective_passes=N))
    assert clean.verdict is RatchetVerdict.PASS
    dropped = ratchet(RatchetInput(old=scores(), new=scores(), old_structure=0.7, new_structure=0.7,
                                   evidence=evidence(**win), objective_passes=(N, N), old_objective_passes=N,
                                   dropped_constraints=("- Never book without the user's confirmation.",)))
    assert dropped.verdict is RatchetVerdict.REVIEW and dropped.improvement is Outcome.WIN
    assert any("drops or rewords 1 line(s)" in r and "Never book" in r for r in dropped.reasons), dropped.reasons
    declined = ratchet(RatchetInput(old=scores(), new=scores(), old_structure=0.7, new_structure=0.7,
                                    evidence=evidence(task=Outcome.LOSS), objective_passes=(N, N),
                                    old_objective_passes=N, dropped_constraints=("- x",)))
    assert declined.verdict is RatchetVerdict.DECLINED  # the worst reason still wins


def test_dropped_constraints_are_the_baseline_guards_the_candidate_no_longer_holds():
    from skillforge.evaluation.compare import dropped_constraints

    skill = ("---\nname: demo-skill\ndescription: Books demo tables for a user who asks.\n---\n"
             "## Instructions\n- Ask for the date.\n\n## Constraints\n- Never book without confirmation.\n"
             "- Never share the card number.\n")
    assert dropped_constraints(skill, skill) == ()
    assert dropped_constraints(skill, skill.replace("- Ask for the date.", "- Ask for the date and time.")) == ()
    assert dropped_constraints(skill, skill.replace("- Never  share", "- Never share")) == ()
    gone = skill.split("## Constraints")[0]
    assert dropped_constraints(skill, gone) == ("- Never book without confirmation.", "- Never share the card number.")
    assert dropped_constraints(skill, skill.replace("Never book", "Book")) == ("- Never book without confirmation.",)
    assert dropped_constraints(skill, "not a skill file") == () and dropped_constraints(None, skill) == ()
    # markdown only rewords nothing (QA 43 M4): bullets, numbering, bold
    assert dropped_constraints(skill, skill.replace("- Never book", "* Never book").replace("- Never share",
                                                                                         "1. **Never share**")) == ()
    # a guard in a code fence or an HTML comment is no rule any more (QA 43 T3)
    fenced = skill.replace("- Never book without confirmation.\n", "```\n- Never book without confirmation.\n```\n")
    assert dropped_constraints(skill, fenced) == ("- Never book without confirmation.",)
    hidden = skill.replace("- Never share the card number.\n", "<!--\n- Never share the card number.\n-->\n")
    assert dropped_constraints(skill, hidden) == ("- Never share the card number.",)
    assert dropped_constraints(skill, skill.replace("Never share", "~~Never share~~")) == \
        ("- Never share the card number.",)
