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
from skillforge.rules.selection import holdout_check, holdout_holds
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


# ---- issue 24: the holdout's primary endpoint is the run's (objective under a noisy judge) -------

def objective_holdout(won: int, lost: int, tied: int, **kw: object) -> SetScore:
    """A holdout run whose judge was noise: primary objective, while the (noisy) effect score leans
    the other way: more effect wins than losses and a higher mean effect score."""
    n = won + lost + tied
    return SetScore(**{"name": "holdout", "cases": n, "verdict": "PASS", "improvement": "INCONCLUSIVE",
                       "score": 0.60, "baseline_score": 0.50, "effect_wins": lost + 2, "effect_losses": won,
                       "effect_ties": max(0, tied - 2), "primary": "objective",
                       "primary_reason": "primary: objective (judge flip rate 0.45 ≥ 0.30, 7 of 16 judged cases flipped)",
                       "primary_wins": won, "primary_losses": lost, "primary_ties": tied,
                       "primary_mean": (won - lost) / n if n else 0.0, **kw})


@pytest.mark.parametrize("score,ok,says", [
    (objective_holdout(2, 4, 10), False, "holdout objective: 2 win(s) / 4 loss(es)"),  # below significance
    (objective_holdout(3, 3, 10), False, "must win more"),
    (objective_holdout(0, 0, 16), False, "must win more"),
    (objective_holdout(5, 1, 10), True, ""),
    (objective_holdout(5, 1, 10, losses=["objective"]), False, "LOSS on objective"),
    (objective_holdout(5, 1, 10, primary_wins=None), False, "no point estimate on the primary endpoint (objective)"),
    (objective_holdout(5, 1, 10, primary_mean=None), False, "no point estimate"),
])
def test_holdout_is_confirmed_on_the_run_s_primary_endpoint(score, ok, says):
    holds, why = holdout_holds(score)
    assert holds is ok and says in why, why


def test_the_holdout_check_reports_both_conditions():
    good = holdout_check(objective_holdout(5, 1, 10))
    assert good.holds and good.improves and good.no_loss and good.why == ""
    assert "point estimate improves: yes (5 win(s) / 1 loss(es) / 10 tie(s), mean delta +0.250)" in good.summary
    assert "no LOSS: yes" in good.summary and "holdout on objective" in good.summary
    assert "judge flip rate 0.45 ≥ 0.30" in good.summary
    worse = holdout_check(objective_holdout(2, 4, 10))
    assert not worse.holds and not worse.improves and worse.no_loss
    assert "point estimate improves: no (2 win(s) / 4 loss(es)" in worse.summary and "no LOSS: yes" in worse.summary
    lost = holdout_check(holdout(12, 2, 2, 0.70, 0.50, losses=["robustness"]))
    assert not lost.holds and lost.improves and not lost.no_loss
    assert "point estimate improves: yes" in lost.summary and "no LOSS: no (LOSS on robustness)" in lost.summary
    assert not holdout_check(None).holds and "not run" in holdout_check(None).summary


def test_a_noisy_judge_s_holdout_loser_is_stopped_through_the_real_gate():
    """16 holdout cases judged by a judge that agrees with itself, for the candidate, on 9 cases and
    flips on 7 (flip rate 0.44: noise). Objective checks: the candidate fixes 2 cases and breaks 4
    (not significant: no LOSS). The effect score leans to the candidate, so the old rule (effect wins
    > losses, higher effect score, no LOSS) confirmed it; on the primary endpoint it loses more than
    it wins, and is stopped."""
    from langchain_core.messages import BaseMessage  # noqa: PLC0415

    from skillforge.evaluation.compare import conclude, judge_case  # noqa: PLC0415
    from skillforge.evaluation.judge import Judgement  # noqa: PLC0415
    from skillforge.llm.client import LLM  # noqa: PLC0415
    from skillforge.llm.config import resolve_all  # noqa: PLC0415
    from skillforge.rules.provenance import new_nonce  # noqa: PLC0415
    from skillforge.state.evaluate import Case, Execution, Expectation  # noqa: PLC0415
    from skillforge.state.llm import Role  # noqa: PLC0415
    from skillforge.testing.fake_chat import ScriptedChatModel  # noqa: PLC0415

    calls = iter(range(10 ** 6))

    def judge(messages: list[BaseMessage]) -> Judgement:  # noqa: ARG001 - the cases are judged in turn
        case, order = divmod(next(calls), 2)
        label = ("B" if order == 0 else "A") if case < 9 else "B"  # agree on 9, flip on 7
        return Judgement(overall=label, task=label, robustness=label, readability=label, reason="r")

    llm = LLM(resolve_all(env={"SKILLFORGE_LLM_MODEL": "e", "SKILLFORGE_JUDGE_MODEL": "j"}),
              {Role.JUDGE: ScriptedChatModel.responding(judge)})

    def run(ok: bool) -> Execution:
        return Execution(answer="booking confirmed" if ok else "no table", skills_loaded=["s"], prompt_tokens=100,
                         completion_tokens=20, nonce=new_nonce(b"holdout"))

    outcomes = [(False, True)] * 2 + [(True, False)] * 4 + [(True, True)] * 10   # (live, candidate) passes
    results = [judge_case(Case(id=f"h{i:02d}", skill="s", query=f"q{i}",
                               expect=Expectation(must_include=["booking confirmed"])), run(old), run(new), llm)
               for i, (old, new) in enumerate(outcomes)]
    result = conclude({"run_id": "r-holdout-noisy", "skill": "s", "eval_set": "holdout"}, None, None, results)
    assert result.primary == "objective" and result.measured.flips == 7
    assert not [d for d, e in result.evidence.items() if e.outcome.value == "LOSS"]   # below significance
    score = score_of("holdout", result)
    assert (score.effect_wins or 0) > (score.effect_losses or 0) and score.score > score.baseline_score  # old rule: ok
    assert (score.primary, score.primary_wins, score.primary_losses) == ("objective", 2, 4)
    holds, why = holdout_holds(score)
    assert not holds and "holdout objective: 2 win(s) / 4 loss(es)" in why, why
