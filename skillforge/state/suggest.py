"""What `skills suggest` finds: clusters of the queries the router answered NONE, each proposed as
a new (CAPTURED) skill or refused, and the counts of what was read to find them."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict


class SuggestStatus(StrEnum):
    PROPOSE = "PROPOSE"
    """A cluster a new skill could serve: `skillforge skills new` is the next step."""
    REFUSED = "REFUSED"
    """A cluster the out-of-scope bank covers (jokes, trivia, chit-chat ...): no skill serves it."""


class Cluster(BaseModel):
    """One cluster of distinct NONE queries. Every query text here is redacted (rules/redact)."""

    model_config = ConfigDict(frozen=True)

    id: str
    """`c-` and 10 hex digits of the sha256 of its members' normalised queries: stable across runs
    over the same queries."""
    size: int
    """Distinct queries (after NFKC + casefold + single spaces)."""
    occurrences: int
    """NONE decisions on them in the window (a query asked twice counts twice)."""
    sources: dict[str, int]
    """Occurrences per router log source: `route` (CLI), `mcp` (the MCP server)."""
    representatives: list[str]
    """The (at most 5) members nearest the cluster's centroid, nearest first."""
    status: SuggestStatus
    reason: str
    """Why PROPOSE or REFUSED, in one sentence."""
    bank_kind: str | None = None
    """REFUSED: the out-of-scope bank's kind that covers it (joke, trivia, chitchat ...)."""
    bank_share: float = 0.0
    """The share of members like a bank query of a refused kind."""
    name: str | None = None
    """PROPOSE: the new skill's name (`rules/names.topic_name`, else `need-` and the id's digits)."""
    need: str | None = None
    """PROPOSE: the need to hand to `skillforge skills new`."""
    queries_file: str | None = None
    """PROPOSE: the cluster's queries, one JSON object a line (runs/suggestions/clusters/<id>.jsonl)."""
    command: str | None = None
    """PROPOSE: the command a person runs next."""
    queries: list[str] = []
    """Every member, nearest the centroid first."""


class LogCounts(BaseModel):
    """What reading the router log found (every count is of lines, except `distinct`)."""

    lines: int = 0
    malformed: int = 0
    """Lines skipped: not JSON, not an object, no usable time or query."""
    none_decisions: int = 0
    """Route decisions that chose no skill (`route eval` measurements and empty queries left out)."""
    in_window: int = 0
    eval_queries: int = 0
    """NONE decisions in the window on a query of the workspace's evaluation sets (left out)."""
    held_out_copies: int = 0
    """Distinct queries left out as near-copies of a holdout or final_audit query (a greeting, a `?`
    or a suffix round it; evolution/heldout.py): never shown to a model as a need."""
    by_source: dict[str, int] = {}
    """NONE decisions in the window per source."""
    distinct: int = 0
    clustered: int = 0
    """Distinct queries considered (at most MAX_QUERIES, the most recent)."""


class Suggestions(BaseModel):
    """The whole answer of `skills suggest`."""

    window_days: float
    min_size: int
    log: str
    counts: LogCounts
    clusters: list[Cluster]
    embedder: str = ""
    seconds: float = 0.0
    archived_before: str | None = None
    """Set when the window reaches before the lines `runs prune` moved to runs/archive/: the
    decisions before this time are not read."""
