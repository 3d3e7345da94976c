"""Evaluation sets and cases: what a candidate release is measured on."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, JsonValue


class Partition(StrEnum):
    """dev, repair and p0 are visible to the proposer; holdout and final_audit never are."""

    DEV = "dev"
    P0 = "p0"
    REPAIR = "repair"
    HOLDOUT = "holdout"
    FINAL_AUDIT = "final_audit"


VISIBLE_TO_PROPOSER = frozenset({Partition.DEV, Partition.P0, Partition.REPAIR})


class Expectation(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    must_include: list[str] = Field(default_factory=list)
    """Facts that must appear in the answer (case-insensitive substring)."""
    must_not_include: list[str] = Field(default_factory=list)
    """Statements that must not appear (invented data, wrong tool output, unsafe advice)."""


class Case(BaseModel):
    """One task for one skill, with the tool responses the executor will see."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    skill: str
    query: str
    fixtures: dict[str, JsonValue] = Field(default_factory=dict)
    """Tool name -> the response that tool returns (a fresh nonce is injected per run)."""
    expect: Expectation = Field(default_factory=Expectation)
    p0: bool = False
    """A must-never-regress case: one pass -> fail flip declines the candidate."""
    tags: list[str] = Field(default_factory=list)


class SetMeta(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    partition: Partition
    skills: list[str]
    auto_case_ids: list[str] = Field(default_factory=list)
    """Ids of cases generated from captured failures (`*_auto_*`); must match them exactly."""


class EvalSet(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    meta: SetMeta
    cases: list[Case]
