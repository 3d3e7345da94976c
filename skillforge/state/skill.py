"""The SKILL.md model: spec fields (agentskills.io) plus SkillForge's typed extensions."""

from __future__ import annotations

import re
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, JsonValue

NAME_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
"""A skill name (the spec's `name`): lowercase letters and digits, single hyphens between them."""
NAME_MAX = 64
"""Longest skill name (the spec's limit)."""


class Severity(StrEnum):
    """How bad a broken rule is. WARNING loads (lenient); ERROR never loads."""

    ERROR = "error"
    WARNING = "warning"


class SkillIssue(BaseModel):
    """One broken rule in one SKILL.md."""

    model_config = ConfigDict(frozen=True)

    file: str
    field: str
    rule: str
    severity: Severity

    def __str__(self) -> str:
        return f"{self.file}: field '{self.field}': {self.rule}"


class SkillFile(BaseModel):
    """A parsed SKILL.md. Equality covers every field, so parse(render(x)) == x is testable."""

    model_config = ConfigDict(frozen=True)

    # --- agentskills.io spec -------------------------------------------------------------
    name: str
    """1-64 chars of a-z 0-9 '-', equal to the folder name."""
    description: str
    """What the skill does and when to use it. Spec cap 1024 chars (over it is a warning)."""
    license: str | None = None
    compatibility: str | None = None
    allowed_tools: str | None = None
    """The spec's `allowed-tools`: a space-delimited tool list."""
    metadata: dict[str, str] = Field(default_factory=dict)
    """String-to-string map; `metadata.version` is the skill's semver."""

    # --- SkillForge extensions ---------------------------------------------------------
    use_when: str | None = None
    """Trigger text. None means the spec default: the description."""
    not_for: list[str] = Field(default_factory=list)
    """Near neighbours this skill must not take (rule-layer negatives, LLM hints)."""
    keywords: list[str] = Field(default_factory=list)
    examples: list[str] = Field(default_factory=list)
    """Realistic user queries this skill should answer."""
    dependencies: list[str] = Field(default_factory=list)
    """Tools the skill needs, e.g. `weather.get_forecast`."""

    extra: dict[str, JsonValue] = Field(default_factory=dict)
    """Unknown top-level keys, kept so that render() loses nothing."""
    body: str
    """Everything after the closing `---` line, byte for byte."""

    @property
    def version(self) -> str | None:
        return self.metadata.get("version")

    @property
    def effective_use_when(self) -> str:
        """use_when, or the description for a spec-only skill."""
        return self.use_when if self.use_when is not None else self.description
