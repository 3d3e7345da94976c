"""Splitting a skill that does two jobs (`skills split NAME`): its intents, their couplings, the
verdict, and what the route test measured of each proposed child."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class IntentSource(StrEnum):
    """Where the intents came from."""

    TAGS = "tags"
    """Case tags `intent:NAME`."""
    TOOLS = "tools"
    """Clusters of cases linked by the tools their fixtures use (no intent tags)."""


class SplitCase(BaseModel):
    """What the split reads of one evaluation case of the skill."""

    model_config = ConfigDict(frozen=True)

    id: str
    query: str
    tools: list[str] = Field(default_factory=list)
    """Tool names its fixtures answer for."""
    tags: list[str] = Field(default_factory=list)


class Intent(BaseModel):
    """One job of the skill: its cases, the tools they use, and the words that name it."""

    model_config = ConfigDict(frozen=True)

    name: str
    """a-z0-9 and hyphens: the child is named `<parent>-<name>` unless names are given."""
    case_ids: list[str]
    tools: list[str]
    terms: list[str] = Field(default_factory=list)
    """Words that mark text as being about this intent: its tools, their namespaces, its tag's
    name and the skill's keywords found in its cases' queries."""


class Couplings(BaseModel):
    """How entangled the intents are, each 0 (independent) .. 1 (one job); the worst pair counts."""

    model_config = ConfigDict(frozen=True)

    tool_overlap: float
    """Jaccard of the tools two intents' cases use (shared tools and fixtures)."""
    instruction_entanglement: float
    """Share of the body's lines naming some intent that name two or more."""
    case_overlap: float
    """Share of the skill's cases in two or more intents, or in none."""

    @property
    def worst(self) -> float:
        return max(self.tool_overlap, self.instruction_entanglement, self.case_overlap)


class SplitVerdict(StrEnum):
    SPLIT = "SPLIT"
    REFUSE = "REFUSE"


class SplitDecision(BaseModel):
    """The pure rule's answer: split into one child per intent, or refuse, with the numbers."""

    model_config = ConfigDict(frozen=True)

    verdict: SplitVerdict
    source: IntentSource
    intents: list[Intent]
    couplings: Couplings | None
    """None when there are fewer than two intents to couple."""
    benefit: float
    """1 - the worst coupling (0 when there is nothing to split)."""
    reasons: list[str] = Field(default_factory=list)


class CaptureShare(BaseModel):
    """Route test of one proposed child: the share of its cases the router sends to it."""

    model_config = ConfigDict(frozen=True)

    child: str
    cases: int
    captured: int
    elsewhere: dict[str, int] = Field(default_factory=dict)
    """Where the other cases went: a skill's name, or "NONE" for no skill."""

    @property
    def share(self) -> float:
        return self.captured / self.cases if self.cases else 0.0


class SplitLink(BaseModel):
    """One published split as the store records it (library/splitlinks.py): the parent, the release
    it was split from, and the case ids each child's split record lists (its intent's own cases)."""

    model_config = ConfigDict(frozen=True)

    parent: str
    parent_release: str
    children: dict[str, list[str]] = Field(default_factory=dict)
    """Child name -> the case ids its release's evaluation record (kind "split") lists."""
    retired: bool = True
    """The parent is RETIRED by this split now (False once `release revert` or a publish brought it back)."""
