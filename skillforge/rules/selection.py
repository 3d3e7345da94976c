"""Selection, confirmation and the graded release route of evolution candidates (pure).

- A candidate passes the visible sets when the gate says `improvement: WIN` on the targeted
  failures, with no LOSS and no P0 flip anywhere, and (for a metadata edit) the routing gate holds.
- Only the selected one runs on holdout; it must show no LOSS there (and an INVALID holdout run
  fails closed).
- The release route follows the level: L1 publish, L2 review, L3 suggest; in fix_only mode a
  candidate that is not a FIX is a suggestion; a candidate judged by its proposer's own model is
  never published without a person.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from skillforge.state.evolve import Candidate, CandidateKind, EvolveMode, SetScore

BLOCKING_VERDICTS = frozenset({"DECLINED", "INVALID"})


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
    if selection.improvement != "WIN":
        return False, f"improvement {selection.improvement} on the targeted failures (a WIN is required)"
    if routing is not None and routing.verdict != "PASS":
        return False, f"routing: {'; '.join(routing.reasons)[:300]}"
    return True, ""


def holdout_holds(holdout: SetScore | None) -> tuple[bool, str]:
    """The selected candidate's confirmation: no LOSS and a valid run on holdout."""
    if holdout is None:
        return False, "no holdout evaluation"
    if holdout.verdict in BLOCKING_VERDICTS:
        return False, f"holdout verdict {holdout.verdict}: {'; '.join(holdout.reasons)[:300]}"
    if holdout.p0_flips or holdout.losses:
        return False, f"holdout LOSS on {', '.join(holdout.losses + holdout.p0_flips)}"
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
