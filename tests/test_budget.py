"""The budget rule at its edges (pure), and the ledger as graph state (serialisable, resumable)."""

from __future__ import annotations

from skillforge.rules.budget import call_cost, check_call, estimate_prompt_tokens
from skillforge.state.llm import BudgetCaps, BudgetLedger, Role


def ledger(calls=0, prompt=0, completion=0, cost=0.0, **caps) -> BudgetLedger:
    led = BudgetLedger(caps=BudgetCaps(**caps))
    s = led.spend(Role.JUDGE)
    s.calls, s.prompt_tokens, s.completion_tokens, s.cost_usd = calls, prompt, completion, cost
    return led


def test_no_caps_always_allowed():
    assert check_call(ledger(calls=10**6, prompt=10**9), 10**6, 10**6, 100, 100).allowed


def test_call_cap_is_a_ceiling_that_may_be_reached():
    assert check_call(ledger(calls=1, max_calls=2), 10, 10).allowed
    verdict = check_call(ledger(calls=2, max_calls=2), 10, 10)
    assert not verdict.allowed and "call cap" in verdict.reason


def test_token_cap_counts_the_worst_case_completion():
    assert check_call(ledger(prompt=50, completion=30, max_tokens=100), 10, 10).allowed       # 80 + 20 = 100
    assert not check_call(ledger(prompt=50, completion=30, max_tokens=100), 10, 11).allowed   # 101


def test_cost_cap():
    assert call_cost(1_000_000, 1_000_000, 0.15, 0.6) == 0.75
    assert check_call(ledger(cost=0.5, max_cost_usd=1.0), 1_000_000, 0, 0.5, 0.0).allowed
    assert not check_call(ledger(cost=0.5, max_cost_usd=1.0), 1_000_001, 0, 0.5, 0.0).allowed
    assert check_call(ledger(cost=0.99, max_cost_usd=1.0), 10**6, 10**6, 0.0, 0.0).allowed  # local: free


def test_estimate_is_conservative_for_chinese_and_english():
    assert estimate_prompt_tokens(["北京今天天气怎么样"]) >= 9           # ~1 token per CJK character
    assert estimate_prompt_tokens(["hello world, how are you"]) >= 6
    assert estimate_prompt_tokens([]) == 0


def test_ledger_round_trips_as_state():
    led = ledger(calls=3, prompt=30, completion=15, cost=0.01, max_calls=5)
    led.spend(Role.ROUTER).cache_hits = 2
    again = BudgetLedger.model_validate_json(led.model_dump_json())
    assert again == led and again.calls == 3 and again.tokens == 45 and again.cache_hits == 2
    assert not check_call(ledger(calls=5, max_calls=5), 1, 1).allowed
