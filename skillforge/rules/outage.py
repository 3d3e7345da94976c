"""Whose endpoint failed during an evolve run, and what a run that ends without a candidate says of it.
Pure, no I/O.

"No candidate passed" reads as "evolution found nothing better". That is only true when the
candidates were measured: a candidate whose validation was INVALID because the judge's (or the
agent's) endpoint failed was never judged, and a round whose proposer was down proposed nothing.
The headline names both, so a person retries once the endpoint is back instead of concluding the
skill cannot be improved (QA 21 MESSAGE-2).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from skillforge.rules.execution import side_failure
from skillforge.state.evaluate import CaseResult, ExecutionFailure
from skillforge.state.evolve import Candidate, SetScore
from skillforge.state.result import EvalVerdict

ROLES = ("executor", "judge")


def unreachable(results: Sequence[CaseResult]) -> list[str]:
    """The roles ("executor", "judge") whose endpoint failed in at least one INVALID case: an
    INFRASTRUCTURE failure (down, timed out, not an OpenAI reply), not an unusable answer."""
    down: set[str] = set()
    for r in results:
        if not r.invalid:
            continue
        if r.judge_failure is ExecutionFailure.INFRASTRUCTURE:
            down.add("judge")
        if any(side_failure(side.error, side.failure) is ExecutionFailure.INFRASTRUCTURE
               for side in (r.baseline, r.candidate)):
            down.add("executor")
    return [role for role in ROLES if role in down]


def unjudged_stop(name: str, score: SetScore, results: Sequence[CaseResult]) -> str:
    """Why an evolve run stops (open, resumable) when its `name` evaluation came out INVALID because
    an endpoint failed: which roles, how many cases, the first error. A verdict on the candidate that
    its endpoint never gave would be archived as if measured, and the run would end NO_IMPROVEMENT."""
    roles = " and the ".join(f"{role}'s" for role in score.unreachable)
    down = [r for r in results if r.invalid and unreachable([r])]
    first = next((e for r in down for e in (r.error, r.baseline.error, r.candidate.error) if e), "")
    return (f"the {roles} endpoint{'s' if len(score.unreachable) > 1 else ''} failed during the {name} evaluation "
            f"({len(down)} of {len(results)} case(s) unanswered{': ' + ' '.join(first.split())[:200] if first else ''}): "
            "no verdict on the candidate")


def unjudged(validation: Mapping[str, SetScore]) -> list[str]:
    """The roles whose failed endpoint made one of a candidate's validations (set name -> score)
    INVALID; [] when every validation it had was measured (or it never reached validation)."""
    roles = {role for score in validation.values() if score.verdict is EvalVerdict.INVALID
             for role in score.unreachable}
    return [role for role in ROLES if role in roles]


def no_improvement(rounds: int, tried: Sequence[Candidate], proposer_notes: Sequence[str],
                   proposer_down: Sequence[int]) -> str:
    """The NO_IMPROVEMENT headline of a run of `rounds` rounds whose candidates were `tried` (every
    round's): a run without any names the proposer's last note; else "no candidate passed", with the
    candidates that could not be judged (and whose endpoint failed) and the rounds whose proposer
    was unavailable."""
    if not tried:
        last = proposer_notes[-1].split(": ", 1)[-1] if proposer_notes else "no note"
        return f"no candidate could be proposed in {rounds} round(s): {last}"
    out = f"no candidate passed in {rounds} round(s)"
    blind = [c for c in tried if unjudged(c.validation)]
    if blind:
        roles = [role for role in ROLES if any(role in unjudged(c.validation) for c in blind)]
        whose = " and the ".join(f"{role}'s" for role in roles) + (" endpoint" if len(roles) == 1 else " endpoints")
        out += (f"; {len(blind)} of {len(tried)} candidate(s) could not be judged: the {whose} failed "
                f"(INVALID, which says nothing about the candidate; run it again once the endpoint answers)")
    if proposer_down:
        out += f"; the proposer was unavailable in round(s) {', '.join(map(str, sorted(set(proposer_down))))}"
    return out


def stopped_open(run_id: str, error: BaseException) -> str:
    """What an evolve run that an endpoint stopped says: the error, and that the run stays open and
    goes on from its last finished step (answers already given come from the cache)."""
    return (f"stopped: {type(error).__name__}: {' '.join(str(error).split())[:400].rstrip('.')}. The run stays open (RUNNING, "
            f"nothing archived as tried): `skillforge evolve --resume {run_id}` goes on from its last finished step "
            "once the endpoint answers")
