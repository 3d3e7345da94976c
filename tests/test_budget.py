"""The budget rules at their edges (pure): the cap check against a run's spend, the usage an
endpoint may report, the caps a checkpoint can hold, and the preflight estimates."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from skillforge.rules.budget import call_cost, check_call, estimate_prompt_tokens, usage_counts
from skillforge.rules.evolve_budget import estimate_evaluation, estimate_round
from skillforge.state.llm import CAP_LIMIT, BudgetCaps, BudgetLedger, Role, RoleSpend, Spend


def spent(calls=0, prompt=0, completion=0, cost=0.0, reserved=0, reserved_cost=0.0, cached=0) -> Spend:
    return Spend(by_role={Role.JUDGE: RoleSpend(calls=calls, prompt_tokens=prompt, completion_tokens=completion,
                                                cost_usd=cost, reserved_tokens=reserved,
                                                reserved_cost_usd=reserved_cost, cache_hits=cached)})


def test_no_caps_always_allowed():
    assert check_call(BudgetCaps(), spent(calls=10**6, prompt=10**9), 10**6, 100.0).allowed


def test_call_cap_is_a_ceiling_that_may_be_reached():
    assert check_call(BudgetCaps(max_calls=2), spent(calls=1), 20).allowed
    verdict = check_call(BudgetCaps(max_calls=2), spent(calls=2), 20)
    assert not verdict.allowed and "call cap" in verdict.reason and "2 of 2" in verdict.reason


def test_cached_answers_are_not_paid_calls():
    assert check_call(BudgetCaps(max_calls=2), spent(calls=1, cached=500), 20).allowed


def test_token_cap_counts_the_worst_case_completion_and_what_is_reserved():
    assert check_call(BudgetCaps(max_tokens=100), spent(prompt=50, completion=30), 20).allowed       # 80 + 20 = 100
    assert not check_call(BudgetCaps(max_tokens=100), spent(prompt=50, completion=30), 21).allowed   # 101
    # a request in flight (or killed, or of unknown usage) still holds its worst case
    assert not check_call(BudgetCaps(max_tokens=100), spent(prompt=50, reserved=31), 20).allowed
    assert check_call(BudgetCaps(max_tokens=100), spent(prompt=50, reserved=30), 20).allowed


def test_cost_cap():
    assert call_cost(1_000_000, 1_000_000, 0.15, 0.6) == 0.75
    assert check_call(BudgetCaps(max_cost_usd=1.0), spent(cost=0.5), 0, 0.5).allowed
    assert not check_call(BudgetCaps(max_cost_usd=1.0), spent(cost=0.5), 0, 0.500001).allowed
    assert not check_call(BudgetCaps(max_cost_usd=1.0), spent(cost=0.5, reserved_cost=0.5), 0, 0.01).allowed
    assert check_call(BudgetCaps(max_cost_usd=1.0), spent(cost=0.99), 10**6, 0.0).allowed  # local: free


def test_estimate_is_conservative_for_chinese_and_english():
    assert estimate_prompt_tokens(["北京今天天气怎么样"]) >= 9           # ~1 token per CJK character
    assert estimate_prompt_tokens(["hello world, how are you"]) >= 6
    assert estimate_prompt_tokens([]) == 0


@pytest.mark.parametrize(("prompt", "completion", "expected"), [
    (40, 7, (40, 7)), (0, 0, (0, 0)), (40.0, 7.0, (40, 7)), (CAP_LIMIT, 0, (CAP_LIMIT, 0)),
    (math.nan, 7, None), (40, math.inf, None), (-1, 7, None), (40, -5, None), (40.5, 7, None),
    ("40", 7, None), (None, 7, None), (True, 7, None), (CAP_LIMIT + 1, 0, None), (1e300, 0, None),
])
def test_usage_must_be_token_counts(prompt, completion, expected):
    assert usage_counts(prompt, completion) == expected


def test_caps_are_bounded_to_what_a_checkpoint_holds():
    assert BudgetCaps(max_calls=CAP_LIMIT, max_tokens=1).max_calls == CAP_LIMIT
    for bad in ({"max_calls": CAP_LIMIT + 1}, {"max_calls": 2**64}, {"max_calls": 0}, {"max_tokens": -1},
                {"max_cost_usd": math.nan}, {"max_cost_usd": math.inf}, {"max_cost_usd": 0}):
        with pytest.raises(ValidationError):
            BudgetCaps(**bad)


def test_the_state_keeps_the_caps_only():
    led = BudgetLedger(caps=BudgetCaps(max_calls=5))
    again = BudgetLedger.model_validate_json(led.model_dump_json())
    assert again == led and set(BudgetLedger.model_fields) == {"caps"}
    # a checkpoint written before the ledger existed (spend in the state) still loads; its spend is ignored
    old = BudgetLedger.model_validate({"caps": {"max_calls": 5}, "by_role": {"judge": {"calls": 3}}})
    assert old == led


def test_evaluation_estimate_per_mode():
    assert estimate_evaluation(10).calls == 60                       # 2 sides x 2 turns + 2 judge orders
    assert estimate_evaluation(10, disclosure=True).calls == 80      # + a use_skill turn per side
    assert estimate_evaluation(0).calls == 0
    fits, why = estimate_evaluation(10).fits(BudgetCaps(max_calls=59))
    assert not fits and "60 calls" in why
    assert estimate_evaluation(10).fits(BudgetCaps(max_calls=100), spent_calls=40)[0]
    assert not estimate_evaluation(10).fits(BudgetCaps(max_calls=100), spent_calls=41)[0]
    assert estimate_round(6, 2, 6).calls == 128
