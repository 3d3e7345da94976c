"""What a chat reply or a failed chat call means, for `skillforge.llm.client.LLM`: the named error an
exception maps to (with the network cause worded as it happened), the token usage a reply reports
(None when it reports none: its request keeps its worst case), and the one tool call a structured
reply must hold."""

from __future__ import annotations

import datetime as dt
import email.utils
import importlib
import json
import math
from typing import NamedTuple

import openai
import pydantic
from langchain_core.messages import AIMessage

from skillforge.errors import InvalidLLMOutput, LLMError, LLMTimeout, LLMUnavailable
from skillforge.llm.config import RoleConfig
from skillforge.rules.budget import usage_counts


def reply_excerpt(raw: AIMessage | None) -> str:
    """What the reply held instead of a valid tool call, for the error message: its text and any
    tool call the client could not parse (their raw arguments), cut short."""
    if raw is None:
        return ""
    parts = [f"text {str(raw.content)[:120]!r}"] if raw.content else []
    parts += [f"unparsed call {c.get('name')!r}: {str(c.get('args') or c.get('error'))[:160]!r}"
              for c in raw.invalid_tool_calls[:2]]
    return f" ({'; '.join(parts)})" if parts else " (empty reply)"


def map_error(e: BaseException, cfg: RoleConfig) -> LLMError:
    """The named error for an exception raised by a chat call."""
    where = f"role '{cfg.role.value}' ({cfg.model} at {cfg.identity[0]})"
    if isinstance(e, LLMError):
        return e
    if isinstance(e, openai.APITimeoutError):
        return LLMTimeout(f"{where}: no answer within {cfg.timeout:g} s after {cfg.max_retries} retries")
    if isinstance(e, TimeoutError):  # a chat model that is not openai's (socket.timeout is TimeoutError too)
        return LLMTimeout(f"{where}: no answer in time: {type(e).__name__}: {e}"[:500])
    if isinstance(e, openai.APIConnectionError):
        return LLMUnavailable(f"{where}: {_connection_failure(e)}"[:500])
    if isinstance(e, openai.APIStatusError):
        return LLMUnavailable(f"{where}: HTTP {e.status_code}{_not_waited(e)}: {e.message}"[:500])
    if isinstance(e, pydantic.ValidationError):  # a structured reply that does not fit its schema: name the fields
        fields = "; ".join(f"{'.'.join(str(x) for x in err.get('loc', ())) or 'reply'}: {err.get('msg', 'invalid')}"
                           for err in e.errors(include_url=False, include_input=False)[:5])
        return InvalidLLMOutput(f"{where}: the reply does not fit {e.title}: {fields}"[:500])
    if isinstance(e, (openai.APIResponseValidationError, ValueError, TypeError)):  # body not JSON or not the OpenAI shape
        return InvalidLLMOutput(f"{where}: unusable response: {type(e).__name__}: {e}"[:500])
    return LLMError(f"{where}: {type(e).__name__}: {e}"[:500])


def _transport_errors() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """(could not connect, lost after the request was sent): the HTTP library's exception classes,
    of httpx2 (what this openai client uses) and httpx, whichever are installed."""
    connect: list[type[BaseException]] = []
    lost: list[type[BaseException]] = []
    for name in ("httpx2", "httpx"):
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        connect.append(mod.ConnectError)
        lost += [mod.ReadError, mod.RemoteProtocolError]
    return tuple(connect), tuple(lost)


def never_connected(e: BaseException) -> bool:
    """True when a failed call's error is a connection that was never made (refused, no route): the
    request never reached an endpoint. A timeout, a dropped connection or an HTTP error may have."""
    if isinstance(e, openai.APITimeoutError) or not isinstance(e, openai.APIConnectionError):
        return False
    return isinstance(_transport_cause(e), _transport_errors()[0])


def _transport_cause(e: BaseException) -> BaseException | None:
    """The HTTP library's connect or lost-connection error that `e` wraps (langchain-openai's wraps
    openai's, which wraps the transport's), or None."""
    connect, lost = _transport_errors()
    cause: BaseException | None = e
    for _ in range(8):
        cause = cause.__cause__ or cause.__context__ if cause is not None else None
        if isinstance(cause, connect + lost):
            return cause
    return None


def _connection_failure(e: BaseException) -> str:
    """What a connection error was, from the transport error it wraps (langchain-openai's wraps
    openai's, which wraps the HTTP library's): refused before the request left, or the connection
    dropped once it was sent (the endpoint got it, and the ledger paid it)."""
    cause = _transport_cause(e)
    if cause is None:
        return f"connection error: {e}"
    if isinstance(cause, _transport_errors()[0]):
        return f"cannot connect: {cause}"
    return f"connection reset by the endpoint after the request was sent: {cause}"


def _not_waited(e: openai.APIStatusError) -> str:
    """' (Retry-After S s, longer than the M s we wait: not retried)' when the endpoint asked for a
    wait the openai client refuses to sleep (it then raises at once, retries unused); else ''."""
    try:
        from openai._constants import MAX_RETRY_AFTER_DELAY  # the client's limit (private: absent, say nothing)
    except ImportError:
        return ""
    headers = getattr(getattr(e, "response", None), "headers", None) or {}
    for header, divisor in (("retry-after-ms", 1000), ("retry-after", 1)):
        wait = _seconds(headers.get(header), divisor)
        if wait is None:
            continue
        if math.isfinite(wait) and wait > MAX_RETRY_AFTER_DELAY:
            return f" (Retry-After {wait:.0f} s, longer than the {MAX_RETRY_AFTER_DELAY:g} s we wait: not retried)"
        return ""
    return ""


def _seconds(value: object, divisor: float) -> float | None:
    """A Retry-After header's wait in seconds: a number (of `divisor`ths of a second), or an HTTP date
    (RFC 9110; as the openai client reads it) less now; None when it is neither."""
    try:
        return float(value) / divisor  # type: ignore[arg-type]
    except (TypeError, ValueError):
        pass
    if divisor != 1 or not isinstance(value, str):
        return None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return (when - dt.datetime.now(dt.timezone.utc)).total_seconds()


def reported_usage(msg: AIMessage | None, cfg: RoleConfig) -> tuple[int, int] | None:
    """The (prompt, completion) tokens the reply reports; None when it reports none: no `usage`
    object, or one whose counts are null or absent (langchain-openai reads those as 0, which would
    settle the request at no cost and release its worst case). InvalidLLMOutput when they are not
    counts (NaN, negative...): the reply is not used, its cost stays unknown."""
    usage = getattr(msg, "usage_metadata", None)
    raw = (getattr(msg, "response_metadata", None) or {}).get("token_usage")
    if isinstance(raw, dict):  # the endpoint's own values: langchain-openai reads true as 1 and null as 0
        prompt, completion = raw.get("prompt_tokens"), raw.get("completion_tokens")
        if prompt is None or completion is None:
            return None
    elif not usage:
        return None
    else:
        prompt, completion = usage.get("input_tokens", 0), usage.get("output_tokens", 0)
    counts = usage_counts(prompt, completion)
    if counts is not None and counts[0] == 0:  # a prompt is never 0 tokens: a proxy that does not know says 0
        return None
    if counts is None:
        raise InvalidLLMOutput(f"role '{cfg.role.value}': the endpoint reported usage that is not a token count "
                               f"(prompt {prompt!r}, completion {completion!r})"[:500])
    return counts


class Shape(NamedTuple):
    """What an HTTP answer of the chat API holds that the openai client would hide (replies.answer_shape)."""
    choices: int = 1
    """How many `choices`: the client keeps only the first."""
    dup: str | None = None
    """A key some tool call's arguments give twice: json.loads keeps the last."""
    usage: str | None = None
    """The `usage` value when it is neither an object nor null, or holds a count that is a list or an
    object (langchain-openai fails on those with an AttributeError or a TypeError), as sent (cut short)."""


def answer_shape(response: object) -> Shape:
    """What an HTTP answer of the chat API holds beyond what the client reads; Shape() when it is no
    such JSON body. The openai client keeps only the first choice and json.loads the last duplicate,
    so a second value that disagrees would never be seen."""
    if int(getattr(response, "status_code", 0)) != 200:
        return Shape()
    try:
        response.read()  # type: ignore[attr-defined]  # an httpx response hook may read the body
        body = response.json()  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - not JSON: the client's own parse says so
        return Shape()
    usage = body.get("usage") if isinstance(body, dict) else None
    nested = isinstance(usage, dict) and any(isinstance(usage.get(k), (list, dict))
                                             for k in ("prompt_tokens", "completion_tokens", "total_tokens"))
    odd = None if usage is None or (isinstance(usage, dict) and not nested) else json.dumps(usage)[:80]
    found = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(found, list) or not found:
        return Shape(usage=odd)
    dup = next((d for c in found if isinstance(c, dict) and isinstance(c.get("message"), dict)
                for t in c["message"].get("tool_calls") or [] if isinstance(t, dict)
                if isinstance(args := (t.get("function") or {}).get("arguments"), str)
                and (d := _duplicate_key(args)) is not None), None)
    return Shape(len(found), dup, odd)


def odd_usage(shape: Shape | None, cfg: RoleConfig) -> None:
    """InvalidLLMOutput when the answer's `usage` was no object (a list, a string, a number): its
    cost is unknown, so the request keeps its worst case, and the reply is not used."""
    if shape is not None and shape.usage is not None:
        raise InvalidLLMOutput(f"role '{cfg.role.value}': the endpoint reported usage that is not a token count "
                               f"(usage {shape.usage}; an object with prompt_tokens and completion_tokens expected)"[:500])


def one_tool_call(raw: AIMessage | None, role: str, shape: Shape | None = None) -> None:
    """InvalidLLMOutput when a structured reply holds more than one tool call (parsed or not): the
    parser would take the first, so two calls that disagree ([safe, unsafe]) would be decided by
    their order. Identical calls are refused too: exactly one is the only unambiguous reply."""
    choices, dup, _ = shape or Shape()
    if choices > 1:
        raise InvalidLLMOutput(f"role '{role}': {choices} choices in the reply; exactly one expected (n=1 was asked)")
    if dup is not None:
        raise InvalidLLMOutput(f"role '{role}': the tool call's arguments give {dup!r} twice; exactly one "
                               "value expected (the parser keeps the last)"[:500])
    n = len(raw.tool_calls) + len(raw.invalid_tool_calls) if raw is not None else 0
    if n > 1:
        names = sorted({str(c.get("name")) for c in [*raw.tool_calls, *raw.invalid_tool_calls]})  # type: ignore[union-attr]
        raise InvalidLLMOutput(f"role '{role}': {n} tool calls in the reply ({', '.join(names)}); "
                               f"exactly one expected"[:500])


def _duplicate_key(arguments: str) -> str | None:
    """A key some JSON object of `arguments` holds twice (json.loads keeps the last one), or None
    (also when the text is not JSON: the parser says so)."""
    seen: list[str] = []

    def pairs(items: list[tuple[str, object]]) -> dict[str, object]:
        keys = [k for k, _ in items]
        seen.extend(k for i, k in enumerate(keys) if k in keys[:i])
        return dict(items)
    try:
        json.loads(arguments, object_pairs_hook=pairs)
    except ValueError:
        return None
    return seen[0] if seen else None
