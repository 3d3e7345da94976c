"""What a chat reply or a failed chat call means, for `skillforge.llm.client.LLM`: the named error an
exception maps to (with the network cause worded as it happened), the token usage a reply reports
(None when it reports none: its request keeps its worst case), and the one tool call a structured
reply must hold."""

from __future__ import annotations

import importlib
import math

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


def _connection_failure(e: BaseException) -> str:
    """What a connection error was, from the transport error it wraps (langchain-openai's wraps
    openai's, which wraps the HTTP library's): refused before the request left, or the connection
    dropped once it was sent (the endpoint got it, and the ledger paid it)."""
    connect, lost = _transport_errors()
    cause: BaseException | None = e
    for _ in range(8):
        cause = cause.__cause__ or cause.__context__ if cause is not None else None
        if isinstance(cause, connect):
            return f"cannot connect: {cause}"
        if isinstance(cause, lost):
            return f"connection reset by the endpoint after the request was sent: {cause}"
    return f"connection error: {e}"


def _not_waited(e: openai.APIStatusError) -> str:
    """' (Retry-After S s, longer than the M s we wait: not retried)' when the endpoint asked for a
    wait the openai client refuses to sleep (it then raises at once, retries unused); else ''."""
    try:
        from openai._constants import MAX_RETRY_AFTER_DELAY  # the client's limit (private: absent, say nothing)
    except ImportError:
        return ""
    headers = getattr(getattr(e, "response", None), "headers", None) or {}
    for header, divisor in (("retry-after-ms", 1000), ("retry-after", 1)):
        try:
            wait = float(headers.get(header)) / divisor
        except (TypeError, ValueError):
            continue
        if math.isfinite(wait) and wait > MAX_RETRY_AFTER_DELAY:
            return f" (Retry-After {wait:g} s, longer than the {MAX_RETRY_AFTER_DELAY:g} s we wait: not retried)"
        return ""
    return ""


def reported_usage(msg: AIMessage | None, cfg: RoleConfig) -> tuple[int, int] | None:
    """The (prompt, completion) tokens the reply reports; None when it reports none: no `usage`
    object, or one whose counts are null or absent (langchain-openai reads those as 0, which would
    settle the request at no cost and release its worst case). InvalidLLMOutput when they are not
    counts (NaN, negative...): the reply is not used, its cost stays unknown."""
    usage = getattr(msg, "usage_metadata", None)
    if not usage:
        return None
    raw = (getattr(msg, "response_metadata", None) or {}).get("token_usage")
    if isinstance(raw, dict) and (raw.get("prompt_tokens") is None or raw.get("completion_tokens") is None):
        return None
    counts = usage_counts(usage.get("input_tokens", 0), usage.get("output_tokens", 0))
    if counts is None:
        raise InvalidLLMOutput(f"role '{cfg.role.value}': the endpoint reported usage that is not a token count "
                               f"(prompt {usage.get('input_tokens')!r}, completion {usage.get('output_tokens')!r})"[:500])
    return counts


def one_tool_call(raw: AIMessage | None, role: str) -> None:
    """InvalidLLMOutput when a structured reply holds more than one tool call (parsed or not): the
    parser would take the first, so two calls that disagree ([safe, unsafe]) would be decided by
    their order. Identical calls are refused too: exactly one is the only unambiguous reply."""
    n = len(raw.tool_calls) + len(raw.invalid_tool_calls) if raw is not None else 0
    if n > 1:
        names = sorted({str(c.get("name")) for c in [*raw.tool_calls, *raw.invalid_tool_calls]})  # type: ignore[union-attr]
        raise InvalidLLMOutput(f"role '{role}': {n} tool calls in the reply ({', '.join(names)}); "
                               f"exactly one expected"[:500])
