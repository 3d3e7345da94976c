"""Feedback and usage events: what agents and people said about a skill after it was served.

`record_use`, `record_feedback` and `record_tool_error` check their input (a named error and
nothing written when it is bad), fill in the skill's live release when none is given, and append
one event to runs/events/ (`EventLog`, log.py). `rebuild` writes the effective projection
(projection.py; the rule is `rules/events.project`). Private events stay in private.jsonl and are
only ever counted.
"""

from __future__ import annotations

import difflib

from skillforge.config import Workspace
from skillforge.errors import EventError, InvalidId, NotPublished, UnknownSkill
from skillforge.events.log import EventLog
from skillforge.events.projection import rebuild
from skillforge.rules.events import parse_outcome, session_problem, text_problem
from skillforge.rules.ids import IdKind, id_problem
from skillforge.state.events import Event, EventKind, FeedbackOutcome

__all__ = ["EventLog", "rebuild", "record_feedback", "record_tool_error", "record_use"]


def record_use(ws: Workspace, session_id: str, skill: str, release_id: str | None,
               reason: str | None = None) -> Event:
    """Append a skill_used event (release_id None: the release this session is served)."""
    _check_texts(session_id, reason=reason)
    release_id = _release(ws, skill, release_id, session_id)
    return EventLog(ws).append(Event(kind=EventKind.SKILL_USED, session_id=session_id, skill=skill,
                                     release_id=release_id, reason=reason))


def record_tool_error(ws: Workspace, session_id: str, skill: str, release_id: str | None, reason: str) -> Event:
    """Append a tool_error event: `reason` says which tool failed and how."""
    _check_texts(session_id, reason=reason)
    release_id = _release(ws, skill, release_id, session_id)
    return EventLog(ws).append(Event(kind=EventKind.TOOL_ERROR, session_id=session_id, skill=skill,
                                     release_id=release_id, reason=reason))


def record_feedback(ws: Workspace, session_id: str, skill: str, outcome: FeedbackOutcome | str,
                    comment: str | None = None, *, private: bool = False, release_id: str | None = None,
                    corrects: int | None = None, tokens: int | None = None) -> Event:
    """Append a feedback event, or a correction when `corrects` names the seq of an earlier
    feedback (or correction) of the same session and skill. release_id None: the skill's live
    release (for a correction: the release of the verdict it corrects). A correction is private
    when what it corrects is (a public line naming a private seq would tell that it exists), and a
    public verdict's correction cannot be private (it would not count). `tokens`: what the session
    spent with the skill, if the caller knows (a whole number >= 0)."""
    verdict = parse_outcome(outcome)
    if verdict is None:
        raise EventError(f"unknown outcome {str(outcome)[:60]!r}: use one of "
                         f"{', '.join(o.value for o in FeedbackOutcome)}")
    _check_texts(session_id, comment=comment)
    if tokens is not None and (isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0):
        raise EventError(f"tokens must be a whole number >= 0, got {tokens!r}")
    events = EventLog(ws)
    if corrects is None:
        release_id = _release(ws, skill, release_id, session_id)
        kind = EventKind.FEEDBACK
    else:
        target = _corrected(ws, events, corrects, session_id, skill, release_id)
        if private and not target.private:
            raise EventError(f"event #{corrects} is public feedback, so its correction is public too (the "
                             "verdicts counted are the public ones): drop --private, and put words you want "
                             "kept private in a feedback of their own with --private")
        release_id, private, kind = target.release_id, target.private, EventKind.CORRECTION
    return events.append(Event(kind=kind, session_id=session_id, skill=skill, release_id=release_id,
                               outcome=verdict, comment=comment, private=bool(private), corrects=corrects,
                               tokens=tokens))


def _check_texts(session_id: str, **texts: str | None) -> None:
    problem = session_problem(session_id) or next(
        (p for field, value in texts.items() if (p := text_problem(field, value))), None)
    if problem:
        raise EventError(problem)


def _release(ws: Workspace, skill: str, release_id: str | None, session_id: str | None = None) -> str:
    """The full id of `release_id` of `skill`, or when None of the release `session_id` is served
    (the live one, or the open canary's for a session in its bucket); UnknownSkill, UnknownRelease,
    NotPublished otherwise."""
    from skillforge.library.canaries import Canaries  # here: `skillforge --help` need not load the store
    from skillforge.library.store import Store

    problem = id_problem(IdKind.SKILL, skill)
    if problem:
        raise InvalidId(problem)
    store = Store(ws.db_path)
    try:
        names = store.skill_names()
        if skill not in names:
            raise UnknownSkill(skill, difflib.get_close_matches(skill, names, n=3, cutoff=0.5))
        if release_id is not None:
            return store.find_release(skill, release_id).release_id
        live, _ = Canaries(store).served(skill, session_id)
        if live is None:
            raise NotPublished(f"skill '{skill}' has no published release yet: give --release")
        return live.release_id
    finally:
        store.close()


def _corrected(ws: Workspace, events: EventLog, corrects: int, session_id: str, skill: str,
               release_id: str | None) -> Event:
    """The event a correction of `corrects` corrects, after checking that it may correct it."""
    if isinstance(corrects, bool) or not isinstance(corrects, int) or corrects < 1:
        raise EventError(f"--corrects must be the seq of an earlier feedback (a positive number), got {corrects!r}")
    target = events.lookup(corrects)
    if target is None:
        raise EventError(f"no event #{corrects} in this workspace: `skillforge feedback list` shows the seqs")
    if target.kind not in (EventKind.FEEDBACK, EventKind.CORRECTION):
        raise EventError(f"event #{corrects} is a {target.kind.value}, not feedback: only feedback can be corrected")
    if target.session_id != session_id or target.skill != skill:
        raise EventError(f"event #{corrects} is feedback on another session or skill: "
                         "a correction must name the same session and skill")
    if release_id is not None and _release(ws, skill, release_id) != target.release_id:
        raise EventError(f"event #{corrects} is about release {target.release_id}, not {release_id}")
    return target
