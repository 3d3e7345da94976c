"""Budget rules: may the next request be sent without passing a hard cap, and is the usage an endpoint
reported a count? Pure, no I/O."""

from __future__ import annotations

import math
from dataclasses import dataclass

from skillforge.state.llm import CAP_LIMIT, BudgetCaps, Spend

BYTES_PER_TOKEN_ESTIMATE = 3
"""Over-estimates on purpose: ~1 token per CJK character (3 UTF-8 bytes), ~4 chars per English token."""
TOKENS_PER_MESSAGE = 4


@dataclass(frozen=True)
class BudgetVerdict:
    allowed: bool
    reason: str
    cap: str | None = None
    """The cap that refused: "calls", "tokens" or "cost" (None when allowed)."""


def estimate_prompt_tokens(message_texts: list[str]) -> int:
    """A conservative token count for a prompt, without a tokenizer (none may be downloaded)."""
    return sum(math.ceil(len(t.encode("utf-8")) / BYTES_PER_TOKEN_ESTIMATE) + TOKENS_PER_MESSAGE
               for t in message_texts)


def call_cost(prompt_tokens: int, completion_tokens: int, price_in_per_m: float, price_out_per_m: float) -> float:
    """USD for one call, prices per million tokens."""
    return (prompt_tokens * price_in_per_m + completion_tokens * price_out_per_m) / 1_000_000


def check_call(caps: BudgetCaps, spent: Spend, worst_tokens: int, worst_cost: float = 0.0) -> BudgetVerdict:
    """Refuse the request if, at its worst (`worst_tokens`: estimated prompt + the whole reply cap,
    and its `worst_cost`), it would pass a cap, counting what the run spent and what its requests
    in flight (or of unknown usage) may still spend. A cap is a ceiling that may be reached, not passed."""
    if caps.max_calls is not None and spent.calls + 1 > caps.max_calls:
        return BudgetVerdict(False, f"call cap reached: {spent.calls} of {caps.max_calls} requests sent", "calls")
    tokens = spent.tokens + spent.reserved_tokens
    if caps.max_tokens is not None and tokens + worst_tokens > caps.max_tokens:
        return BudgetVerdict(False, f"token cap: {tokens} spent or reserved + up to {worst_tokens} for this "
                                    f"request > {caps.max_tokens}", "tokens")
    cost = spent.cost_usd + spent.reserved_cost_usd
    if caps.max_cost_usd is not None and cost + worst_cost > caps.max_cost_usd:
        return BudgetVerdict(False, f"cost cap: ${cost:.4f} spent or reserved + up to ${worst_cost:.4f} "
                                    f"> ${caps.max_cost_usd:.4f}", "cost")
    return BudgetVerdict(True, "within budget")


def usage_counts(prompt: object, completion: object) -> tuple[int, int] | None:
    """The (prompt, completion) tokens an endpoint reported, or None when either is not a count (NaN,
    infinite, negative, fractional, not a number, beyond CAP_LIMIT): such a reply is not used, and its
    request keeps its worst case in the ledger, since a negative count would lower the spend."""
    out: list[int] = []
    for v in (prompt, completion):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return None
        if isinstance(v, float) and (not math.isfinite(v) or not v.is_integer()):
            return None
        if not 0 <= v <= CAP_LIMIT:
            return None
        out.append(int(v))
    return out[0], out[1]
