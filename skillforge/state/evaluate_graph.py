"""State of the evaluate graph."""

from __future__ import annotations

import operator
from typing import Annotated

from pydantic import Field

from skillforge.state.evaluate import Case, CaseResult, ExecutionMode, SkillSide
from skillforge.state.ids import RunId, SetName, SkillName
from skillforge.state.result import EvalKind, EvalResult
from skillforge.state.inputs import GraphInput


class EvalState(GraphInput):
    """Read and written by load_cases -> run_case (fanned out) -> measure -> record."""

    run_id: RunId
    """Also the checkpoint thread id and the trace file name (validated: never a path)."""
    skill: SkillName
    eval_set: SetName
    kind: EvalKind = EvalKind.AB
    """ab: candidate against baseline; aa: the live release against itself (the noise floor)."""
    baseline: SkillSide
    """The current release (or text None: no skill)."""
    candidate: SkillSide
    mode: ExecutionMode = ExecutionMode.BEHAVIOUR
    """behaviour: the skill under test loaded up front; disclosure: index + use_skill."""
    not_evaluated: list[str] = Field(default_factory=list)
    """The files outside SKILL.md that differ between the sides (rules/skillfiles.py, described):
    no case runs them, so measure caps a PASS at REVIEW."""
    cases: list[Case] = Field(default_factory=list)
    """Set by load_cases."""
    results: Annotated[list[CaseResult], operator.add] = Field(default_factory=list)
    """One per finished case, appended by run_case (kept across a resume)."""
    result: EvalResult | None = None
    """Set by measure."""
