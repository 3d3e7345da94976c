"""What a chat reply or a failed chat call means, for `skillforge.llm.client.LLM`: the named error an
exception maps to (with the network cause worded as it happened), the token usage a reply reports
(None when it reports none: its request keeps its worst case), and the one tool call a structured
reply must hold."""

from __future__ import annotations

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
        return LLMUnavailable(f"{where}: cannot connect: {e.__cause__ or e}")
    if isinstance(e, openai.APIStatusError):
        return LLMUnavailable(f"{where}: HTTP {e.status_code}: {e.message}"[:500])
    if isinstance(e, pydantic.ValidationError):  # a structured reply that does not fit its schema: name the fields
        fields = "; ".join(f"{'.'.join(str(x) for x in err.get('loc', ())) or 'reply'}: {err.get('msg', 'invalid')}"
                           for err in e.errors(include_url=False, include_input=False)[:5])
        return InvalidLLMOutput(f"{where}: the reply does not fit {e.title}: {fields}"[:500])
    if isinstance(e, (openai.APIResponseValidationError, ValueError, TypeError)):  # body not JSON or not the OpenAI shape
        return InvalidLLMOutput(f"{where}: unusable response: {type(e).__name__}: {e}"[:500])
    return LLMError(f"{where}: {type(e).__name__}: {e}"[:500])


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
