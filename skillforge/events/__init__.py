"""Feedback and usage events: what agents and people said about a skill after it was served.

`record_use`, `record_feedback` and `record_tool_error` check their input (a named error and
nothing written when it is bad), fill in the release when none is given (for a use the release the
session is served now; for a feedback or a tool error the release its last `skill_used` event
names: one on a session that was never served the skill is refused unless the caller names the
release, since it would count as evidence about a release the session never saw), and append
one event to runs/events/ (`EventLog`, log.py). A comment or reason is stored redacted as the router log
keeps a query (rules/redact: keys, tokens, credential values, emails, phone and card numbers become
`[REDACTED:<kind>]`, never cut): evolve and sessions harvest show it to a model, and a user pastes an
error with its password in it. `skillforge runs redact` redacts the lines written before this. `rebuild` writes the effective projection
(projection.py; the rule is `rules/events.project`). Private events stay in private.jsonl and are
only ever counted.
"""

from __future__ import annotations

import difflib
import os
from typing import TYPE_CHECKING

from skillforge.config import Workspace
from skillforge.errors import EventError, InvalidId, NotPublished, SkillRetired, UnknownSkill, given
from skillforge.events.log import EventLog, workspace_of
from skillforge.events.projection import rebuild
from skillforge.rules.events import parse_outcome, session_problem, text_problem
from skillforge.rules.ids import IdKind, id_problem
from skillforge.rules.redact import redact
from skillforge.state.events import Event, EventKind, FeedbackOutcome

if TYPE_CHECKING:
    from skillforge.library.store import Store

__all__ = ["TOKENS_MAX", "EventLog", "event_json", "known_skill", "rebuild", "record_feedback", "record_tool_error",
           "record_use", "stored_text", "unserved_release"]

TOKENS_MAX = 2**63 - 1
"""The most tokens a feedback may report (what SQLite and --budget-tokens hold)."""


def record_use(ws: Workspace | str | os.PathLike[str], session_id: str, skill: str, release_id: str | None,
               reason: str | None = None) -> Event:
    """Append a skill_used event (release_id None: the release this session is served). `ws`: the
    Workspace, or its folder's path (here and in the other functions: opened as `-w DIR` is)."""
    ws = workspace_of(ws)
    _check_texts(session_id, reason=reason)
    release_id = _release(ws, skill, release_id, session_id)
    return EventLog(ws).append(Event(kind=EventKind.SKILL_USED, session_id=session_id, skill=skill,
                                     release_id=release_id, reason=stored_text(reason)))


def record_tool_error(ws: Workspace | str | os.PathLike[str], session_id: str, skill: str, release_id: str | None, reason: str) -> Event:
    """Append a tool_error event: `reason` says which tool failed and how. release_id None: the
    release the session's last skill_used event of the skill names (EventError when there is none,
    as for feedback: a tool error of a session never served the skill would count against a release
    it never saw)."""
    ws = workspace_of(ws)
    _check_texts(session_id, reason=reason)
    events = EventLog(ws)
    release_id = _release(ws, skill, release_id, session_id, events=events, what="tool error",
                          name_it="pass its release_id")
    return events.append(Event(kind=EventKind.TOOL_ERROR, session_id=session_id, skill=skill,
                               release_id=release_id, reason=stored_text(reason)))


def record_feedback(ws: Workspace | str | os.PathLike[str], session_id: str, skill: str, outcome: FeedbackOutcome | str,
                    comment: str | None = None, *, private: bool = False, release_id: str | None = None,
                    corrects: int | None = None, tokens: int | None = None) -> Event:
    """Append a feedback event, or a correction when `corrects` names the seq of an earlier
    feedback (or correction) of the same session and skill. release_id None: the release the
    session's last skill_used event of the skill names (EventError when there is none: feedback
    on a session never served the skill would count against a release it never saw); for a
    correction, the release of the verdict it corrects. A correction is private
    when what it corrects is (a public line naming a private seq would tell that it exists), and a
    public verdict's correction cannot be private (it would not count). `tokens`: what the session
    spent with the skill, if the caller knows (a whole number, 0 to TOKENS_MAX)."""
    ws = workspace_of(ws)
    verdict = parse_outcome(outcome)
    if verdict is None:
        shown = repr(outcome)[:60] if isinstance(outcome, str) else given(outcome)  # a word's type is no news
        raise EventError(f"unknown outcome {shown}: use one of "
                         f"{', '.join(o.value for o in FeedbackOutcome)}")
    _check_texts(session_id, comment=comment)
    if not isinstance(private, bool):
        raise EventError(f"private must be True or False, got {given(private)}")
    if tokens is not None and (isinstance(tokens, bool) or not isinstance(tokens, int) or not 0 <= tokens <= TOKENS_MAX):
        raise EventError(f"tokens must be a whole number from 0 to {TOKENS_MAX} (2**63-1), got {given(tokens)}")
    events = EventLog(ws)
    if corrects is None:
        release_id = _release(ws, skill, release_id, session_id, events=events)
        kind = EventKind.FEEDBACK
    else:
        target = _corrected(ws, events, corrects, session_id, skill, release_id)
        if private and not target.private:
            raise EventError(f"event #{corrects} is public feedback, so its correction is public too (the "
                             "verdicts counted are the public ones): drop --private, and put words you want "
                             "kept private in a feedback of their own with --private")
        release_id, private, kind = target.release_id, target.private, EventKind.CORRECTION
    return events.append(Event(kind=kind, session_id=session_id, skill=skill, release_id=release_id,
                               outcome=verdict, comment=stored_text(comment), private=bool(private), corrects=corrects,
                               tokens=tokens))


def unserved_release(ws: Workspace | str | os.PathLike[str], event: Event) -> str | None:
    """A warning when feedback `event` names a release its session was not last served (an explicit
    --release is accepted as the caller's override, but not silently): the session and the release
    its last skill_used event of the skill names, if any. None when it names that release, and for a
    correction (its release is the corrected verdict's)."""
    if event.kind is not EventKind.FEEDBACK:
        return None
    used = EventLog(ws).served(event.session_id, event.skill)
    last = max(used, key=lambda e: e.seq or 0).release_id if used else None
    if last == event.release_id:
        return None
    given = (event.release_id or "none")[:8]
    was = (f"was last served release {last[:8]} of '{event.skill}'" if last else
           f"was never served '{event.skill}' (no skill_used event)")
    return (f"session {event.session_id[:60]!r} {was}, not release {given}: feedback #{event.seq} is recorded "
            f"against {given} because --release names it")


def stored_text(text: str | None) -> str | None:
    """A comment or reason as the events files keep it: redacted (`rules/redact.redact`), whole."""
    return None if text is None else redact(text)[0]


def _check_texts(session_id: str, **texts: str | None) -> None:
    problem = session_problem(session_id) or next(
        (p for field, value in texts.items() if (p := text_problem(field, value))), None)
    if problem:
        raise EventError(problem)


def event_json(event: Event) -> dict[str, object]:
    """An event as JSON, its time under `ts` as in the log files."""
    return {"ts": event.at, **event.model_dump(mode="json", exclude={"at"})}


def known_skill(ws: Workspace | str | os.PathLike[str], skill: str) -> None:
    """InvalidId or UnknownSkill (with the closest names) unless the workspace has a skill `skill`
    (live, unpublished or retired)."""
    _store_of(workspace_of(ws), skill).close()


def _store_of(ws: Workspace, skill: str) -> Store:
    """The workspace's store, once `skill` is known to be one of its skills."""
    from skillforge.library.store import Store  # here: `skillforge --help` need not load the store

    problem = id_problem(IdKind.SKILL, skill)
    if problem:
        raise InvalidId(problem)
    store = Store(ws.db_path)
    names = store.skill_names()
    if skill not in names:
        store.close()
        raise UnknownSkill(skill, difflib.get_close_matches(skill, names, n=3, cutoff=0.5))
    return store


def _release(ws: Workspace, skill: str, release_id: str | None, session_id: str | None = None, *,
             events: EventLog | None = None, what: str = "feedback",
             name_it: str = "`skillforge feedback add --release`") -> str:
    """The full id of `release_id` of `skill`, or when None: with `events` (a feedback or a tool
    error, `what`), the release the session's last skill_used event of the skill names; without,
    the release `session_id` is served now (the live one, or the open canary's for a session in its
    bucket). UnknownSkill, UnknownRelease, SkillRetired, NotPublished or EventError (never served,
    saying how to `name_it`) otherwise."""
    from skillforge.library.canaries import Canaries  # here: `skillforge --help` need not load the store

    if release_id is not None and not isinstance(release_id, str):
        raise EventError(f"the release id must be text (a release id or a prefix of one), got {given(release_id)}")
    store = _store_of(ws, skill)
    try:
        if release_id is not None:
            return store.find_release(skill, release_id).release_id
        if store.retirement(skill) is not None:
            raise SkillRetired(f"skill '{skill}' is RETIRED; `skillforge release revert {skill}` brings it back "
                               "(give --release to record this against one of its releases)")
        live, _ = Canaries(store).served(skill, session_id)
        if live is None:
            raise NotPublished(f"skill '{skill}' has no published release yet: give --release")
        if events is None:
            return live.release_id
    finally:
        store.close()
    used = events.served(session_id, skill)
    if not used:
        raise EventError(f"session {(session_id or '')[:60]!r} was never served '{skill}' (no skill_used event): its {what} "
                         "would count against a release it never saw. Check the session id (an agent loads the skill "
                         f"with use_skill in that session first), or name the release: {name_it}")
    return max(used, key=lambda e: e.seq or 0).release_id or live.release_id


def _corrected(ws: Workspace, events: EventLog, corrects: int, session_id: str, skill: str,
               release_id: str | None) -> Event:
    """The event a correction of `corrects` corrects, after checking that it may correct it."""
    if isinstance(corrects, bool) or not isinstance(corrects, int) or corrects < 1:
        raise EventError(f"--corrects must be the seq of an earlier feedback (a positive number), got {given(corrects)}")
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
