"""The rules of a review answer (pure): may a candidate still be published on the run's base, and
is this answer the run's answer, a repeat of it, or a contradiction?

- **Base.** A FIX candidate is a patch of the release that was live when its run began, and was
  validated against it. It may be published only while that release is still the live one: after
  a hand hotfix, a revert or another run's release it would silently undo them. A live release
  that serves the base's very files (a revert to the base) undoes nothing: it counts as the base.
  A run that recorded no base (from before the base was kept) fails closed.
- **One answer per run.** The first answer recorded for the pending question is the run's answer.
  The same answer again is a repeat (reported as the run stands, or carried out when the process
  that gave it died before the run took it); a different one contradicts it and is refused.
"""

from __future__ import annotations

from enum import StrEnum

from skillforge.state.evolve import ReviewAction


class BaseVerdict(StrEnum):
    CURRENT = "CURRENT"
    """The run's base is the live release."""
    MOVED = "MOVED"
    """Another release is live now."""
    UNKNOWN = "UNKNOWN"
    """The run recorded no base: it cannot be told, so it is refused."""
    GONE = "GONE"
    """The skill has no live release any more."""


def base_verdict(base_release_id: str | None, live_release_id: str | None, *,
                 same_bytes: bool = False) -> BaseVerdict:
    """Decide whether a candidate made on `base_release_id` may replace `live_release_id`.
    `same_bytes`: the live release serves the base's very files (its commit and folder, as a
    `release revert` to the base, or a retire and revert, leaves it): nothing would be undone."""
    if live_release_id is None:
        return BaseVerdict.GONE
    if not base_release_id:
        return BaseVerdict.UNKNOWN
    return BaseVerdict.CURRENT if base_release_id == live_release_id or same_bytes else BaseVerdict.MOVED


class AnswerVerdict(StrEnum):
    TAKE = "TAKE"
    """The run waits and has no answer yet: this one is its answer."""
    REPEAT = "REPEAT"
    """The run already has this very answer."""
    CONFLICT = "CONFLICT"
    """The run already has another answer: this one is refused."""
    NOT_WAITING = "NOT_WAITING"
    """The run waits for no review and was never answered."""


def answer_verdict(waiting: bool, given: ReviewAction | None, asked: ReviewAction) -> AnswerVerdict:
    """Decide what `asked` is, for a run that is (or is not) `waiting` at its review and whose
    question already has the answer `given` (recorded, or taken by the run) or none."""
    if given is None:
        return AnswerVerdict.TAKE if waiting else AnswerVerdict.NOT_WAITING
    return AnswerVerdict.REPEAT if given is asked else AnswerVerdict.CONFLICT
