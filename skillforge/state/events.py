"""Feedback and usage events (runs/events/*.jsonl) and the effective projection built from them."""

from __future__ import annotations

from enum import StrEnum

from pydantic import AliasChoices, BaseModel, ConfigDict, Field


class EventKind(StrEnum):
    SKILL_USED = "skill_used"
    """An agent loaded the skill (the body of `release_id` was served)."""
    FEEDBACK = "feedback"
    """A person's (or an agent's) verdict on what the skill did in a session."""
    TOOL_ERROR = "tool_error"
    """A tool the skill relies on failed in a session."""
    CORRECTION = "correction"
    """A new outcome for an earlier feedback (`corrects` names its seq): a mis-tap does not count twice."""


class FeedbackOutcome(StrEnum):
    GOOD = "good"
    BAD = "bad"
    NEUTRAL = "neutral"


class Event(BaseModel):
    """One line of runs/events/public.jsonl or private.jsonl. On disk the time is the `ts` key that
    every JSONL log of the workspace has; `at` reads it back."""

    model_config = ConfigDict(frozen=True)

    kind: EventKind
    session_id: str
    """The caller's session (1-200 characters, no control characters)."""
    skill: str
    release_id: str | None = None
    """The release that was served (the skill's live release when the caller did not say)."""
    at: str = Field(default="", validation_alias=AliasChoices("at", "ts"))
    """UTC ISO time the event was appended ("" before)."""
    seq: int | None = None
    """The workspace's sequence number, one counter across both files; None before append."""
    outcome: FeedbackOutcome | None = None
    """The verdict of a feedback or correction; None for the other kinds."""
    comment: str | None = None
    private: bool = False
    """Kept in private.jsonl: never shown, never in a prompt, a report or a harvested case; only counted."""
    corrects: int | None = None
    """A correction's target: the seq of the feedback (or correction) it replaces."""
    reason: str | None = None
    """Why the skill was used, or what the tool error was."""
    tokens: int | None = Field(default=None, ge=0)
    """On a feedback: the tokens the session spent with the skill, when the caller reports them
    (the canary comparison's cost signal)."""


class EventRead(BaseModel):
    """What a read of the public log returns."""

    events: list[Event]
    """The public events, in seq order."""
    skipped_lines: int = 0
    """Lines that are not a whole event (a torn last line left by a killed writer); reported, never fatal."""


class EventCounts(BaseModel):
    """How many events each file holds; the only thing said about private events."""

    public: int
    private: int
    skipped_lines: int
    """Torn or corrupt lines in both files together."""
    last_seq: int
    """The highest seq in either file (0 when empty)."""


class Verdict(BaseModel):
    """The latest verdict on one session for one release of one skill."""

    session_id: str
    skill: str
    release_id: str | None
    outcome: FeedbackOutcome
    seq: int
    """The seq of the feedback this verdict is (a later feedback of the same session replaces it)."""
    decided_by: int
    """The seq that set `outcome`: `seq` itself, or the last correction of it."""
    corrections: int = 0


class ReleaseTally(BaseModel):
    """One release of one skill: uses, tool errors and effective verdicts (one per session)."""

    skill: str
    release_id: str | None
    uses: int = 0
    tool_errors: int = 0
    good: int = 0
    bad: int = 0
    neutral: int = 0


class Projection(BaseModel):
    """runs/events/effective.json: a function of the public log only (no build time inside, so two
    builds of the same log are byte-identical)."""

    last_seq: int
    """The highest seq the projection read (0 for an empty log)."""
    verdicts: list[Verdict]
    """Sorted by skill, release, session."""
    releases: list[ReleaseTally]
    """Sorted by skill, release."""
