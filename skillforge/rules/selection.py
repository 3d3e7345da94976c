"""Selection, confirmation and the graded release route of evolution candidates (pure).

- A candidate passes the visible sets when the gate says `improvement: WIN` on the targeted
  failures, with no LOSS and no P0 flip anywhere, and (for a metadata edit) the routing gate holds.
- Only the selected one runs on holdout; it must show no LOSS there **and** a point estimate that
  improves on the run's primary endpoint (`rules/endpoint.py`: the effect score, or the objective
  checks when the judge was noise): more holdout cases won than lost, and a gain (a higher mean
  effect score than the live release; a positive mean objective delta). An INVALID run, an all-tie
  holdout, a holdout too small to decide anything, or a missing estimate fail closed. Both
  conditions are reported (`HoldoutCheck.summary`). (No LOSS alone let a candidate that lost 9 and
  won 5 of 16 holdout cases pass.)
- The release route follows the level: L1 publish, L2 review, L3 suggest; in fix_only mode a
  candidate that is not a FIX is a suggestion; a candidate judged by its proposer's own model is
  never published without a person.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from skillforge.rules.paired import PRIMARY, min_cases
from skillforge.state.evolve import Candidate, CandidateKind, EvolveMode, SetScore
from skillforge.state.result import EvalVerdict, Outcome

BLOCKING_VERDICTS = frozenset({EvalVerdict.DECLINED, EvalVerdict.INVALID})
MIN_HOLDOUT_GAIN = 0.0
"""The candidate's mean effect score on holdout must exceed the live release's by more than this."""


class ReleaseRoute(StrEnum):
    PUBLISH = "publish"
    REVIEW = "review"
    SUGGEST = "suggest"


def visible_pass(selection: SetScore | None, routing: SetScore | None) -> tuple[bool, str]:
    """(passed, why not). Missing evidence blocks."""
    if selection is None:
        return False, "no selection evaluation"
    if selection.verdict in BLOCKING_VERDICTS:
        return False, f"selection verdict {selection.verdict}: {'; '.join(selection.reasons)[:300]}"
    if selection.p0_flips:
        return False, f"P0 flip on {', '.join(selection.p0_flips)}"
    if selection.losses:
        return False, f"LOSS on {', '.join(selection.losses)}"
    if selection.improvement is not Outcome.WIN:
        return False, f"improvement {selection.improvement} on the targeted failures (a WIN is required)"
    if routing is not None and routing.verdict is not EvalVerdict.PASS:
        return False, f"routing: {'; '.join(routing.reasons)[:300]}"
    return True, ""


@dataclass(frozen=True)
class HoldoutCheck:
    """The holdout confirmation of the selected candidate: both of its conditions, reported apart."""

    holds: bool
    improves: bool
    """The point estimate on the primary endpoint improves (more wins than losses, and a gain)."""
    no_loss: bool
    """No dimension with evidence of loss and no P0 flip."""
    why: str
    """Why it does not hold (the first condition that failed); "" when it holds."""
    summary: str
    """Both conditions in one line, for the run's notes and the review file."""


def _estimate(holdout: SetScore) -> tuple[str, int | None, int | None, int | None, float | None, str]:
    """(endpoint, wins, losses, ties, gain, what the gain is) on the holdout's primary endpoint. The
    effect score's gain is the candidate's mean effect score minus the live release's; another
    endpoint's (objective) is its mean per-case delta. A score from before the primary was recorded
    per run is on the effect score, with the effect counts."""
    endpoint = holdout.primary or PRIMARY
    if holdout.primary_wins is not None:
        wins, losses, ties = holdout.primary_wins, holdout.primary_losses, holdout.primary_ties
    elif endpoint == PRIMARY:
        wins, losses, ties = holdout.effect_wins, holdout.effect_losses, holdout.effect_ties
    else:
        wins = losses = ties = None
    if endpoint == PRIMARY:
        gain = (None if holdout.score is None or holdout.baseline_score is None
                else holdout.score - holdout.baseline_score)
        shown = ("" if gain is None else
                 f"score {holdout.score:.3f} vs live {holdout.baseline_score:.3f}")
    else:
        gain = holdout.primary_mean
        shown = "" if gain is None else f"mean delta {gain:+.3f}"
    return endpoint, wins, losses, ties, gain, shown


def estimate_of(score: SetScore) -> tuple[str, int | None, int | None, int | None, float | None, str]:
    """(endpoint, wins, losses, ties, gain, what the gain is) of a holdout or final_audit score on
    the run's primary endpoint (see `_estimate`)."""
    return _estimate(score)


def holdout_check(holdout: SetScore | None) -> HoldoutCheck:
    """The selected candidate's confirmation on holdout: a valid run of at least `min_cases()`
    cases, **no LOSS** (no dimension with evidence of loss, no P0 flip) **and** a point estimate
    that **improves** on the run's primary endpoint (`holdout.primary`: the effect score, or the
    objective checks when the judge was noise): more wins than losses, and a gain above
    MIN_HOLDOUT_GAIN (a higher effect score than the live release's; for the objective checks a
    positive mean delta). Ties never confirm; a missing estimate fails closed. Both conditions are
    reported, whichever failed."""
    if holdout is None:
        return HoldoutCheck(False, False, False, "no holdout evaluation", "holdout: not run: nothing confirmed")
    no_loss = not (holdout.p0_flips or holdout.losses)
    loss_text = ("yes" if no_loss else f"no (LOSS on {', '.join(holdout.losses + holdout.p0_flips)})")
    endpoint, wins, losses, ties, gain, shown = _estimate(holdout)
    counts = f"{wins} win(s) / {losses} loss(es) / {ties if ties is not None else '?'} tie(s)"
    known = wins is not None and losses is not None and gain is not None
    improves = known and wins > losses and gain > MIN_HOLDOUT_GAIN  # type: ignore[operator]
    estimate = (f"{counts}, {shown}" if known else "not recorded")
    summary = (f"holdout on {endpoint} ({holdout.cases} case(s), verdict {holdout.verdict}): point estimate improves: "
               f"{'yes' if improves else 'no'} ({estimate}); no LOSS: {loss_text}"
               + (f" [{holdout.primary_reason}]" if holdout.primary_reason else ""))
    why = ""
    if holdout.verdict in BLOCKING_VERDICTS:
        why = f"holdout verdict {holdout.verdict}: {'; '.join(holdout.reasons)[:300]}"
    elif holdout.cases < min_cases():
        why = f"holdout has {holdout.cases} case(s): at least {min_cases()} are needed to confirm anything"
    elif not no_loss:
        why = f"holdout LOSS on {', '.join(holdout.losses + holdout.p0_flips)}"
    elif not known:
        why = f"holdout has no point estimate on the primary endpoint ({endpoint}): cannot confirm"
    elif wins <= losses:  # type: ignore[operator]
        why = f"holdout {endpoint}: {counts}; the candidate must win more holdout cases than it loses"
    elif not improves:
        why = f"holdout {endpoint} {shown} ({counts}): no improvement"
    return HoldoutCheck(holds=not why, improves=improves, no_loss=no_loss, why=why, summary=summary)


def holdout_holds(holdout: SetScore | None) -> tuple[bool, str]:
    """(holds, why not) of `holdout_check`."""
    check = holdout_check(holdout)
    return check.holds, check.why


def _margin(c: Candidate) -> float:
    s = c.validation.get("selection")
    if s is None or s.score is None or s.baseline_score is None:
        return float("-inf")
    return s.score - s.baseline_score


def select(candidates: Sequence[Candidate]) -> Candidate | None:
    """The best of the candidates that passed the visible sets: largest selection margin, then the
    lowest level (less risk), then the first proposed."""
    ok = list(candidates)
    if not ok:
        return None
    return sorted(ok, key=lambda c: (-_margin(c), c.level or 3, c.id))[0]


def release_route(level: int | None, kind: CandidateKind, mode: EvolveMode, *,
                  self_graded: bool = False) -> ReleaseRoute:
    """L1 publish, L2 review, L3 (or unknown) suggest; fix_only turns non-FIX into a suggestion.
    When the judge is the proposer's own model (`self_graded`), nothing publishes without a person:
    L1 goes to review too."""
    if mode is EvolveMode.FIX_ONLY and kind is not CandidateKind.FIX:
        return ReleaseRoute.SUGGEST
    if level == 1:
        return ReleaseRoute.REVIEW if self_graded else ReleaseRoute.PUBLISH
    if level == 2:
        return ReleaseRoute.REVIEW
    return ReleaseRoute.SUGGEST


def needs_vet(route: ReleaseRoute, level: int | None, kind: CandidateKind) -> bool:
    """Whether the chosen candidate must pass the L1 vet (evolution/vet.py) first: an L1 FIX about
    to publish without a person."""
    return route is ReleaseRoute.PUBLISH and level == 1 and kind is CandidateKind.FIX


def vetted_route(route: ReleaseRoute, safe: bool) -> ReleaseRoute:
    """The route after the L1 vet: a publish the vet did not find safe waits for a person; the vet
    never takes a person away."""
    return route if safe or route is not ReleaseRoute.PUBLISH else ReleaseRoute.REVIEW
