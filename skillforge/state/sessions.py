"""Agent sessions read from transcripts (Claude Code, Codex CLI, generic JSONL), and the cases
harvested from them before and after a person's review."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from skillforge.state.evaluate import Case, Expectation, Partition


class SessionSource(StrEnum):
    CLAUDE_CODE = "claude-code"
    """~/.claude/projects/<encoded cwd>/<session uuid>.jsonl (subagents: .../subagents/agent-<id>.jsonl)."""
    CODEX = "codex"
    """~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl."""
    JSONL = "jsonl"
    """The generic format (docs/sessions.md): one JSON object per line, OpenAI-style messages."""


class ToolCallRec(BaseModel):
    """A tool call the assistant made."""

    model_config = ConfigDict(frozen=True)

    call_id: str
    name: str
    arguments: dict[str, JsonValue] = Field(default_factory=dict)
    """The call's arguments; a string that is not a JSON object becomes {"input": text}."""


class Message(BaseModel):
    """One message of a session, in order. Tool results are their own `tool` messages."""

    model_config = ConfigDict(frozen=True)

    index: int
    """The message's position in the session (0-based, counting only kept messages)."""
    role: Literal["user", "assistant", "tool"]
    text: str = ""
    """user: what the person typed; assistant: its visible text; tool: the result's text."""
    tool_calls: list[ToolCallRec] = Field(default_factory=list)
    """assistant only."""
    tool_call_id: str | None = None
    """tool only: the call this result answers."""
    tool_name: str | None = None
    """tool only: the name of that call, when the source says or the call is known."""
    is_error: bool = False
    """tool only: the tool failed (the source flags it, or a non-zero exit code)."""
    timestamp: str | None = None
    """ISO 8601 as the source wrote it, if it did."""


class Transcript(BaseModel):
    """One agent session, normalised."""

    model_config = ConfigDict(frozen=True)

    source: SessionSource
    session_id: str
    path: str
    """The file it was read from."""
    started: str | None = None
    """ISO 8601 time of the first timestamped message (or the session's own start time)."""
    cwd: str | None = None
    messages: list[Message] = Field(default_factory=list)


class SourceProblem(BaseModel):
    """A file or line that could not be read; reported, never fatal."""

    model_config = ConfigDict(frozen=True)

    path: str
    line: int | None = None
    reason: str


class Provenance(BaseModel):
    """Where a harvested case's text came from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: SessionSource
    session_id: str
    path: str
    request_index: int
    """The index of the user message that became the query."""
    content_hash: str
    """sha256 of the query and the fixtures, as staged (after redaction)."""
    fixture_indexes: dict[str, int] = Field(default_factory=dict)
    """Fixture (tool name) -> index of the tool message its response came from."""
    release_id: str | None = None
    """The release the session was served (its skill_used event), else the live one at harvest."""
    harvested_at: str = ""
    identifier_hashes: list[str] | None = None
    """Keyed hashes (HMAC-SHA256 under the workspace's runs/identifier-salt, 16 hex) of the
    identifiers of the query BEFORE redaction (rules/sessions.identifier_hashes): two requests that
    differ only in a redacted e-mail or phone number stay two cases. None: harvested before."""


class Signal(StrEnum):
    """Why a session's request was taken as a case."""

    TOOL_ERROR = "tool_error"
    CORRECTION = "correction"
    """The person's next message corrected the answer ("no, ...", "that's wrong")."""
    NEGATIVE_FOLLOWUP = "negative_followup"
    """The person's next message was unhappy without saying what was right."""
    FEEDBACK_BAD = "feedback_bad"
    """A public `bad` feedback event for the session and skill (runs/events/public.jsonl)."""


class StagedCase(BaseModel):
    """A harvested case waiting for a person (evaluation_sets/staged/<skill>.json)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    """`<skill>_auto_<hash>`: stable for the same session and request."""
    skill: str
    query: str
    fixtures: dict[str, JsonValue] = Field(default_factory=dict)
    expect: Expectation = Field(default_factory=Expectation)
    """A suggestion: must_include / must_not_include from a correction, or empty (pairwise only)."""
    answer: str = ""
    """The agent's final answer in the session (redacted): context for the reviewer, never a gate input."""
    signals: list[Signal]
    why: str
    """One line: the failure signal that made this a case."""
    provenance: Provenance
    redactions: int = 0
    """How many secrets, emails and phone numbers were replaced."""
    duplicates: list[str] = Field(default_factory=list)
    """Sessions whose request was a near-duplicate of this one (not staged on their own)."""
    duplicate_ids: list[str] = Field(default_factory=list)
    """Their case ids (so a later harvest knows them and does not weigh them again)."""
    flags: list[str] = Field(default_factory=list)
    """Why a person should look twice (rules/sessions.case_flags: prompt injection, invisible or bidi
    characters); accepting a flagged case needs `--confirm-flagged`."""
    reviewed: bool = False
    status: Literal["pending", "accepted", "rejected"] = "pending"
    partition: Partition | None = None
    """Set on accept: the partition its id hashes to."""
    reviewed_at: str | None = None
    note: str | None = None


class StagedFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    skill: str
    cases: list[StagedCase] = Field(default_factory=list)

    def case(self, case_id: str) -> StagedCase | None:
        return next((c for c in self.cases if c.id == case_id), None)


def as_case(staged: StagedCase) -> Case:
    """The eval-set case an accepted staged case becomes."""
    return Case(id=staged.id, skill=staged.skill, query=staged.query, fixtures=staged.fixtures,
                expect=staged.expect, tags=["auto", "session", *(s.value for s in staged.signals)])
