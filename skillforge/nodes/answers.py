"""Pauses that wait for an answer (the review, the budget): `ask` interrupts the run and returns the
answer only once it fits the pause's schema.

LangGraph stores a resume value as the node's answer to its interrupt and replays it each time the
node re-runs; a value the node then refused broke the pause for good (every later resume, even a
valid approve, hit the same error). `interrupt(..., response_schema=...)` validates the value
before it is stored: an invalid one raises and nothing is saved, so the pause stays open and the
next, valid answer is taken. The schema also reaches clients (Studio) with the interrupt.
"""

from __future__ import annotations

import copy
import enum
import functools
import typing
from typing import Annotated, TypeVar

from langgraph.errors import is_invalid_resume
from langgraph.types import interrupt
from pydantic import BaseModel, ConfigDict, Strict, ValidationError, field_validator, model_validator

from skillforge.errors import InvalidResume
from skillforge.state.evolve import ReviewDecision
from skillforge.state.inputs import problems

M = TypeVar("M", bound=BaseModel)
REVIEW_EXAMPLE = '{"action": "approve" | "reject" | "rebase", "comment": "..."}'
CAPS_EXAMPLE = '{"max_calls": N, "max_tokens": N, "max_cost_usd": X} (any of them; a missing one is no cap)'


def _enum_field(annotation: object) -> bool:
    """Whether a field holds an enum (alone or in a union): its value comes as the enum's string."""
    if isinstance(annotation, type):
        return issubclass(annotation, enum.Enum)
    return any(_enum_field(a) for a in typing.get_args(annotation))


@functools.cache
def strict(schema: type[M]) -> type[M]:
    """`schema` refusing unknown keys (a typo such as `max_call` must not silently mean "no cap"),
    and values of another type than its fields' (pydantic's strict mode: `"force": "yes"` is not
    True, `"max_calls": "400"`, 400.0 or true is not 400, a number is not a comment); an enum field
    still takes its value's string (`"action": "approve"`). An instance of `schema` itself is taken
    as its fields."""
    def plain(cls: type[M], value: object) -> object:
        return value.model_dump() if isinstance(value, BaseModel) else value

    config = ConfigDict(**{**schema.model_config, "extra": "forbid"})  # type: ignore[typeddict-item]
    typed = {name: f for name, f in schema.model_fields.items() if not _enum_field(f.annotation)}
    return type(schema.__name__, (schema,), {"model_config": config, "__module__": __name__, "__doc__": schema.__doc__,
                                             "__annotations__": {name: Annotated[f.annotation, Strict()]
                                                                 for name, f in typed.items()},
                                             **{name: copy.copy(f) for name, f in typed.items()},
                                             "_plain": model_validator(mode="before")(classmethod(plain))})


def ask(payload: dict[str, object], schema: type[M], example: str) -> M:
    """Pause with `payload` until resumed with a value `schema` accepts (no other keys); returns it
    as a `schema`. An invalid value is InvalidResume, naming what was wrong and `example`, and is
    not stored: the run stays paused at this question."""
    try:
        answer = interrupt(payload, response_schema=strict(schema))
    except ValidationError as e:
        if not is_invalid_resume(e):
            raise
        said = "; ".join(problems(e))
        raise InvalidResume(f"run {payload.get('run_id')}: the {payload.get('kind')} answer was refused ({said}); "
                            f"nothing was stored and the run still waits: resume with {example}") from None
    return schema.model_validate(answer.model_dump())


class ReviewAnswer(ReviewDecision):
    """A review answer as a client gives it (QA 37 F3): `answered_at`, when given, must be a UTC
    ISO-8601 time (`2026-12-07T17:00:00Z`) and not in the future; left out, the review node stamps
    the time the run took the answer. (The CLI gives the time the person answered: the run may take
    it later, after a crash.) Stored as a plain ReviewDecision."""

    @field_validator("answered_at")
    @classmethod
    def _utc_time(cls, value: str) -> str:
        from datetime import UTC, datetime, timedelta

        if not value:
            return value
        try:
            when = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            when = None
        if when is None or when.utcoffset() != timedelta(0):
            raise ValueError("answered_at must be a UTC time such as 2026-12-07T17:00:00Z, or left out (the run "
                             "stamps the time it takes the answer)")
        if when > datetime.now(UTC) + timedelta(minutes=2):
            raise ValueError("answered_at is in the future: leave it out (the run stamps the time it takes the answer)")
        return value

