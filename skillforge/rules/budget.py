"""Budget rule: may the next LLM call be made without passing a hard cap? Pure, no I/O."""

from __future__ import annotations

import math
from dataclasses import dataclass

from skillforge.state.llm import BudgetLedger

BYTES_PER_TOKEN_ESTIMATE = 3
"""Over-estimates on purpose: ~1 token per CJK character (3 UTF-8 bytes), ~4 chars per English token."""
TOKENS_PER_MESSAGE = 4


@dataclass(frozen=True)
class BudgetVerdict:
    allowed: bool
    reason: str


def estimate_prompt_tokens(message_texts: list[str]) -> int:
    """A conservative token count for a prompt, without a tokenizer (none may be downloaded)."""
    return sum(math.ceil(len(t.encode("utf-8")) / BYTES_PER_TOKEN_ESTIMATE) + TOKENS_PER_MESSAGE
               for t in message_texts)


def call_cost(prompt_tokens: int, completion_tokens: int, price_in_per_m: float, price_out_per_m: float) -> float:
    """USD for one call, prices per million tokens."""
    return (prompt_tokens * price_in_per_m + completion_tokens * price_out_per_m) / 1_000_000


def check_call(ledger: BudgetLedger, est_prompt_tokens: int, max_completion_tokens: int,
               price_in_per_m: float = 0.0, price_out_per_m: float = 0.0) -> BudgetVerdict:
    """Refuse the call if, at its worst (estimated prompt + the whole completion cap), it would
    pass a cap. A cap is a ceiling that may be reached, not passed."""
    caps = ledger.caps
    if caps.max_calls is not None and ledger.calls + 1 > caps.max_calls:
        return BudgetVerdict(False, f"call cap reached: {ledger.calls} of {caps.max_calls} calls made")
    worst_tokens = est_prompt_tokens + max_completion_tokens
    if caps.max_tokens is not None and ledger.tokens + worst_tokens > caps.max_tokens:
        return BudgetVerdict(False, f"token cap: {ledger.tokens} spent + up to {worst_tokens} for this call "
                                    f"> {caps.max_tokens}")
    worst_cost = call_cost(est_prompt_tokens, max_completion_tokens, price_in_per_m, price_out_per_m)
    if caps.max_cost_usd is not None and ledger.cost_usd + worst_cost > caps.max_cost_usd:
        return BudgetVerdict(False, f"cost cap: ${ledger.cost_usd:.4f} spent + up to ${worst_cost:.4f} "
                                    f"> ${caps.max_cost_usd:.4f}")
    return BudgetVerdict(True, "within budget")
