"""Holdout confirmation (`rules.selection.holdout_holds`): no LOSS is not enough, the point estimate
on the primary endpoint (effect) must improve (issue 21: a candidate that lost 9 and won 5 of 16
holdout cases passed "no LOSS"; only the pass-rate floor stopped it). The rule at its edges, then
the same QA case through the real gate (paired evidence, ratchet, score_of) with the floor out of
the way, so that nothing but this rule can stop it."""

from __future__ import annotations

import pytest

from skillforge.evolution.validate import score_of
from skillforge.rules.paired import PRIMARY, min_cases, paired_evidence
from skillforge.rules.ratchet import RatchetInput, ratchet
from skillforge.rules.selection import holdout_holds
from skillforge.state.evolve import SetScore
from skillforge.state.result import PAIRED_DIMENSIONS, DimensionScores, EvalResult, Measured


def holdout(won: int, lost: int, tied: int, mean: float, live: float, **kw: object) -> SetScore:
    return SetScore(**{"name": "holdout", "cases": won + lost + tied, "verdict": "PASS", "improvement": "INCONCLUSIVE",
                       "score": mean, "baseline_score": live, "effect_wins": won, "effect_losses": lost,
                       "effect_ties": tied, **kw})


@pytest.mark.parametrize("score,ok,says", [
    (holdout(5, 9, 2, 0.48, 0.52), False, "must win more holdout cases than it loses"),  # the QA case
    (holdout(5, 9, 2, 0.53, 0.52), False, "must win more"),      # big wins, more losses: the mean alone would pass
    (holdout(0, 0, 16, 0.50, 0.50), False, "must win more"),      # all ties: nothing confirmed
    (holdout(3, 3, 10, 0.55, 0.50), False, "must win more"),      # as many wins as losses
    (holdout(6, 5, 5, 0.50, 0.50), False, "no improvement"),      # more wins, equal mean
    (holdout(6, 5, 5, 0.49, 0.50), False, "no improvement"),      # more wins, lower mean (small wins, big losses)
    (holdout(1, 0, 4, 0.51, 0.50), True, ""),                     # tiny gain on a minimal holdout: confirmed
    (holdout(1, 0, 15, 0.503, 0.50), True, ""),                   # one win among ties
    (holdout(12, 2, 2, 0.70, 0.50, improvement="WIN"), True, ""),
    (holdout(12, 2, 2, 0.70, 0.50, verdict="REVIEW"), True, ""),  # a big move asks a person later, it holds here
    (holdout(12, 2, 2, 0.70, 0.50, losses=["robustness"]), False, "LOSS on robustness"),
    (holdout(12, 2, 2, 0.70, 0.50, p0_flips=["p0-1"]), False, "LOSS on p0-1"),
    (holdout(12, 2, 2, 0.70, 0.50, verdict="DECLINED"), False, "verdict DECLINED"),
    (holdout(12, 2, 2, 0.70, 0.50, verdict="INVALID"), False, "verdict INVALID"),
    (holdout(4, 0, 0, 0.90, 0.50), False, f"at least {min_cases()}"),  # too small to decide anything
    (holdout(0, 0, 0, 0.50, 0.50), False, "0 case(s)"),
    (holdout(12, 2, 2, 0.70, 0.50, effect_wins=None), False, "no point estimate"),  # not recorded: fail closed
    (holdout(12, 2, 2, 0.70, 0.50, score=None), False, "no point estimate"),
    (holdout(12, 2, 2, 0.70, 0.50, baseline_score=None), False, "no point estimate"),
    (None, False, "no holdout evaluation"),
])
def test_holdout_holds_only_when_the_primary_point_estimate_improves(score, ok, says):
    holds, why = holdout_holds(score)
    assert holds is ok and says in why, why


def _qa_result() -> EvalResult:
    """16 holdout cases: 5 effect wins of +0.25, 9 losses of -0.10, 2 ties; both sides pass every
    objective check (the floor holds) and no score moves 10 points. Mean effect delta +0.022."""
    effect = [0.25] * 5 + [-0.10] * 9 + [0.0] * 2
    deltas = {dim: (effect if dim == PRIMARY else [0.0] * 16) for dim in PAIRED_DIMENSIONS}
    evidence = paired_evidence(deltas)
    old = DimensionScores(task=0.5, robustness=0.5, readability=0.5, efficiency=0.5)
    gain = sum(effect) / len(effect)
    new = DimensionScores(task=0.5 + gain, robustness=0.5 + gain, readability=0.5 + gain, efficiency=0.5 + gain)
    rr = ratchet(RatchetInput(old=old, new=new, old_structure=0.8, new_structure=0.8, evidence=evidence,
                              objective_passes=(16, 16), old_objective_passes=16))
    measured = Measured(old=old, new=new, valid_cases=16, invalid_cases=0, invalid_rate=0.0, flip_rate=0.0,
                        objective_passes={"baseline": 16, "candidate": 16})
    return EvalResult.from_ratchet({"run_id": "r-holdout", "skill": "s", "eval_set": "holdout", "measured": measured},
                                   rr, evidence)


def test_the_qa_loser_passes_every_other_gate_and_is_stopped_by_this_rule():
    result = _qa_result()
    ev = result.evidence[PRIMARY]
    assert (ev.wins, ev.losses, ev.ties) == (5, 9, 2) and ev.outcome.value == "INCONCLUSIVE"  # no LOSS
    assert result.verdict == "PASS" and not [d for d, e in result.evidence.items() if e.outcome.value == "LOSS"]
    score = score_of("holdout", result)
    assert (score.effect_wins, score.effect_losses, score.effect_ties) == (5, 9, 2)
    assert score.score is not None and score.baseline_score is not None and score.score > score.baseline_score
    holds, why = holdout_holds(score)
    assert not holds and "5 win(s) / 9 loss(es) / 2 tie(s)" in why, why
