"""Selection, confirmation and the graded release route of evolution candidates (pure).

- A candidate passes the visible sets when the gate says `improvement: WIN` on the targeted
  failures, with no LOSS and no P0 flip anywhere, and (for a metadata edit) the routing gate holds.
- Only the selected one runs on holdout; it must show no LOSS there and a point estimate that
  improves on the primary endpoint (`rules.paired.PRIMARY`, the effect score): more holdout cases
  won than lost, and a higher mean effect score than the live release. An INVALID run, an all-tie
  holdout, a holdout too small to decide anything, or a missing estimate fail closed. (No LOSS
  alone let a candidate that lost 9 and won 5 of 16 holdout cases pass.)
- The release route follows the level: L1 publish, L2 review, L3 suggest; in fix_only mode a
  candidate that is not a FIX is a suggestion; a candidate judged by its proposer's own model is
  never published without a person.
"""

from __future__ import annotations

from collections.abc import Sequence
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


def holdout_holds(holdout: SetScore | None) -> tuple[bool, str]:
    """The selected candidate's confirmation on holdout: a valid run of at least `min_cases()`
    cases, no LOSS or P0 flip, and a point estimate that improves on the primary endpoint (more
    wins than losses, and a higher effect score than the live release's). Ties never confirm."""
    if holdout is None:
        return False, "no holdout evaluation"
    if holdout.verdict in BLOCKING_VERDICTS:
        return False, f"holdout verdict {holdout.verdict}: {'; '.join(holdout.reasons)[:300]}"
    if holdout.cases < min_cases():
        return False, f"holdout has {holdout.cases} case(s): at least {min_cases()} are needed to confirm anything"
    if holdout.p0_flips or holdout.losses:
        return False, f"holdout LOSS on {', '.join(holdout.losses + holdout.p0_flips)}"
    wins, losses, ties = holdout.effect_wins, holdout.effect_losses, holdout.effect_ties
    if wins is None or losses is None or holdout.score is None or holdout.baseline_score is None:
        return False, f"holdout has no point estimate on the primary endpoint ({PRIMARY}): cannot confirm"
    counts = f"{wins} win(s) / {losses} loss(es) / {ties if ties is not None else '?'} tie(s)"
    if wins <= losses:
        return False, f"holdout {PRIMARY}: {counts}; the candidate must win more holdout cases than it loses"
    if holdout.score - holdout.baseline_score <= MIN_HOLDOUT_GAIN:
        return False, (f"holdout {PRIMARY} score {holdout.score:.3f} vs live {holdout.baseline_score:.3f} ({counts}): "
                       "no improvement")
    return True, ""


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
