"""Pauses that wait for an answer (the review, the budget): `ask` interrupts the run and returns the
answer only once it fits the pause's schema.

LangGraph stores a resume value as the node's answer to its interrupt and replays it each time the
node re-runs; a value the node then refused broke the pause for good (every later resume, even a
valid approve, hit the same error). `interrupt(..., response_schema=...)` validates the value
before it is stored: an invalid one raises and nothing is saved, so the pause stays open and the
next, valid answer is taken. The schema also reaches clients (Studio) with the interrupt.
"""

from __future__ import annotations

import functools
from typing import TypeVar

from langgraph.errors import is_invalid_resume
from langgraph.types import interrupt
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from skillforge.errors import InvalidResume

M = TypeVar("M", bound=BaseModel)
REVIEW_EXAMPLE = '{"action": "approve" | "reject" | "rebase", "comment": "..."}'
CAPS_EXAMPLE = '{"max_calls": N, "max_tokens": N, "max_cost_usd": X} (any of them; a missing one is no cap)'


@functools.cache
def strict(schema: type[M]) -> type[M]:
    """`schema` refusing unknown keys (a typo such as `max_call` must not silently mean "no cap"),
    and taking an instance of `schema` itself as its fields."""
    def plain(cls: type[M], value: object) -> object:
        return value.model_dump() if isinstance(value, BaseModel) else value

    config = ConfigDict(**{**schema.model_config, "extra": "forbid"})  # type: ignore[typeddict-item]
    return type(schema.__name__, (schema,), {"model_config": config, "__module__": __name__, "__doc__": schema.__doc__,
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
        problems = "; ".join(f"{'.'.join(map(str, err['loc'])) or 'answer'}: {err['msg']}" for err in e.errors())
        raise InvalidResume(f"run {payload.get('run_id')}: the {payload.get('kind')} answer was refused ({problems}); "
                            f"nothing was stored and the run still waits: resume with {example}") from None
    return schema.model_validate(answer.model_dump())
