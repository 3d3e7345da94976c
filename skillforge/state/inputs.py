"""The base of the graphs' states (RouteState, EvalState, EvolveState): a value of the wrong type is
InvalidInput, a named error, not pydantic's ValidationError with its URL.

LangGraph builds the state model from its channels (`schema(**values)`, langgraph.graph.state
`_coerce_state`) each time a node reads it, so the input given to `graph.invoke`, Studio or the
HTTP API is first validated when the first node runs: before it writes anything. The wrap
validator here turns the ValidationError into InvalidInput there, and wherever else the state is
built (`RouteState(query=42)`, `EvolveState.model_validate(...)`). InvalidInput is a TypeError, so
pydantic passes it through unwrapped and LangGraph's server shows its message to Studio. Valid
values (normal use, a checkpoint's) go through the handler untouched.
"""

from __future__ import annotations

from pydantic import BaseModel, ValidationError, ValidatorFunctionWrapHandler, model_validator

from skillforge.errors import InvalidInput, given

SHOWN = 5
"""Problems named in one message, at most."""


def problems(error: ValidationError) -> list[str]:
    """One line per problem of `error`: `field should be a valid string, got 42 (int)`, or
    `field is required`."""
    out = []
    for err in error.errors(include_url=False):
        field = ".".join(str(p) for p in err.get("loc", ())) or "the input"
        if err.get("type") == "missing":
            out.append(f"{field} is required")
            continue
        msg = str(err.get("msg", "is not valid"))
        msg = "should be " + msg[len("Input should be "):] if msg.startswith("Input should be ") else msg[:1].lower() + msg[1:]
        out.append(f"{field}: {msg}, got {given(err.get('input'))}")
    return out


class GraphInput(BaseModel):
    """A graph's state: InvalidInput instead of a ValidationError (module docstring)."""

    @model_validator(mode="wrap")
    @classmethod
    def _named(cls, data: object, handler: ValidatorFunctionWrapHandler) -> object:
        try:
            return handler(data)
        except ValidationError as e:
            found = problems(e)
            more = f"; and {len(found) - SHOWN} more" if len(found) > SHOWN else ""
            if not isinstance(data, dict | BaseModel):
                raise InvalidInput(f"{cls.__name__}: the input must be a dict of its fields, got {given(data)}") from None
            raise InvalidInput(f"{cls.__name__}: " + "; ".join(found[:SHOWN]) + more) from None
