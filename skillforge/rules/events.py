"""Feedback events: which texts may be recorded, and the effective projection (pure, no I/O).

The projection answers "what is the latest verdict on session S for release R of skill K?". Each
feedback is a verdict. A correction replaces the outcome of the verdict it names (following a chain
of corrections to the first feedback) and keeps that verdict's place, so a mis-tap and its
correction count once. A later feedback of the same session and release replaces the earlier one.
A correction whose target is not in the input (a private or unknown seq, or a later one) stands as
a verdict of its own. Private events and events without a seq are ignored: the projection is a
function of the public log only.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

from skillforge.state.events import (Event, EventKind, FeedbackOutcome, Projection, ReleaseTally,
                                     Verdict)

SESSION_MAX = 200
"""Longest session id."""
TEXT_MAX = 4000
"""Longest comment or reason."""
_HIDDEN = {"Cc", "Cf", "Zl", "Zp"}
"""Unicode categories a session id may not hold: control and format characters, line breaks."""
_TEXT_ALLOWED = {"\n", "\t"}
"""Control characters a comment or reason may hold."""


def session_problem(value: object) -> str | None:
    """Why `value` cannot be a session id, or None when it can."""
    if not isinstance(value, str):
        return f"the session id must be text, got {type(value).__name__}"
    if not value.strip():
        return "the session id must not be empty"
    if len(value) > SESSION_MAX:
        return f"the session id must be at most {SESSION_MAX} characters, got {len(value)}"
    bad = next((c for c in value if unicodedata.category(c) in _HIDDEN), None)
    if bad is not None:
        return f"the session id may not hold control or format characters (U+{ord(bad):04X})"
    return None


def text_problem(field: str, value: str | None) -> str | None:
    """Why `value` cannot be a comment or reason (None when it can: no text is fine)."""
    if value is None:
        return None
    if not isinstance(value, str):
        return f"the {field} must be text, got {type(value).__name__}"
    if len(value) > TEXT_MAX:
        return f"the {field} must be at most {TEXT_MAX} characters, got {len(value)}"
    bad = next((c for c in value if unicodedata.category(c) == "Cc" and c not in _TEXT_ALLOWED), None)
    if bad is not None:
        return f"the {field} may not hold control characters (U+{ord(bad):04X})"
    return None


def parse_outcome(value: object) -> FeedbackOutcome | None:
    """The outcome `value` names (case and surrounding space ignored), or None."""
    if isinstance(value, FeedbackOutcome):
        return value
    if isinstance(value, str):
        try:
            return FeedbackOutcome(value.strip().lower())
        except ValueError:
            return None
    return None


def project(events: Iterable[Event]) -> Projection:
    """The effective projection of `events` (any order; a repeated seq counts once, the first)."""
    by_seq: dict[int, Event] = {}
    for e in events:
        if e.seq is not None and not e.private:
            by_seq.setdefault(e.seq, e)
    roots: dict[int, Verdict] = {}
    root_of: dict[int, int] = {}
    tallies: dict[tuple[str, str | None], ReleaseTally] = {}

    def tally(e: Event) -> ReleaseTally:
        return tallies.setdefault((e.skill, e.release_id), ReleaseTally(skill=e.skill, release_id=e.release_id))

    for seq in sorted(by_seq):
        e = by_seq[seq]
        if e.kind is EventKind.SKILL_USED:
            tally(e).uses += 1
        elif e.kind is EventKind.TOOL_ERROR:
            tally(e).tool_errors += 1
        elif e.outcome is None:
            continue  # a feedback without a verdict says nothing
        elif e.kind is EventKind.CORRECTION and e.corrects is not None and e.corrects in root_of:
            root = roots[root_of[e.corrects]]
            root.outcome, root.decided_by, root.corrections = e.outcome, seq, root.corrections + 1
            root_of[seq] = root.seq
        else:  # a feedback, or a correction of nothing this log shows
            roots[seq] = Verdict(session_id=e.session_id, skill=e.skill, release_id=e.release_id,
                                 outcome=e.outcome, seq=seq, decided_by=seq)
            root_of[seq] = seq
    latest: dict[tuple[str, str | None, str], Verdict] = {}
    for seq in sorted(roots):
        v = roots[seq]
        latest[(v.skill, v.release_id, v.session_id)] = v  # a later feedback replaces an earlier one
    for v in latest.values():
        t = tallies.setdefault((v.skill, v.release_id), ReleaseTally(skill=v.skill, release_id=v.release_id))
        setattr(t, v.outcome.value, getattr(t, v.outcome.value) + 1)
    return Projection(
        last_seq=max(by_seq, default=0),
        verdicts=sorted(latest.values(), key=lambda v: (v.skill, v.release_id or "", v.session_id)),
        releases=sorted(tallies.values(), key=lambda t: (t.skill, t.release_id or "")))


def latest_verdict(projection: Projection, session_id: str, release_id: str | None,
                   skill: str | None = None) -> Verdict | None:
    """The latest verdict on `session_id` for `release_id` (of `skill`, when given), or None."""
    found = [v for v in projection.verdicts if v.session_id == session_id and v.release_id == release_id
             and (skill is None or v.skill == skill)]
    return max(found, key=lambda v: v.seq, default=None)
