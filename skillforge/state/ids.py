"""Validated id types for graph state: a field typed `RunId`, `EvolveRunId`, `SkillName` or `SetName` refuses an id
that could name a path outside the workspace (`rules.ids`) with `InvalidId`, whoever built the state:
the CLI, the Python API or a Studio input (LangGraph validates the input when the first node reads
it, so that node never runs and nothing is written)."""

from __future__ import annotations

from functools import partial
from typing import Annotated

from pydantic import AfterValidator

from skillforge.errors import InvalidId
from skillforge.rules.ids import IdKind, id_problem


def require_id(kind: IdKind, value: str) -> str:
    """`value` when it is a valid `kind`; InvalidId (a named error, not a ValueError) otherwise."""
    problem = id_problem(kind, value)
    if problem is not None:
        raise InvalidId(problem)
    return value


RunId = Annotated[str, AfterValidator(partial(require_id, IdKind.RUN))]
EvolveRunId = Annotated[str, AfterValidator(partial(require_id, IdKind.EVOLVE_RUN))]
SkillName = Annotated[str, AfterValidator(partial(require_id, IdKind.SKILL))]
SetName = Annotated[str, AfterValidator(partial(require_id, IdKind.SET))]
