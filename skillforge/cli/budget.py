"""What `evolve` and `evaluate` share about budgets: the cap options, checked before anything runs,
and the one line that says what a run has spent (the request ledger's paid, cached and refused)."""

from __future__ import annotations

from typing import Annotated

import typer

from skillforge.errors import BadArgument
from skillforge.state.llm import CAP_LIMIT, BudgetCaps, Spend

BudgetCallsOpt = Annotated[int | None, typer.Option(
    "--budget-calls", help="Hard cap on requests sent to a model by the run (retries included; cached "
                           "answers are not counted).")]
BudgetTokensOpt = Annotated[int | None, typer.Option(
    "--budget-tokens", help="Hard cap on tokens of the run (prompt + completion; a request counts its "
                            "worst case until its usage is known).")]


def budget_caps(calls: int | None, tokens: int | None) -> BudgetCaps | None:
    """The caps the options give (None: none given). BadArgument for a number below 1 or above
    CAP_LIMIT (what a checkpoint and the ledger can hold): a 2**64 cap was an internal error."""
    for name, v in (("--budget-calls", calls), ("--budget-tokens", tokens)):
        if v is not None and not 1 <= v <= CAP_LIMIT:
            raise BadArgument(f"{name} must be a positive number of at most {CAP_LIMIT} "
                              f"(what a run's checkpoint can hold), got {v}")
    return BudgetCaps(max_calls=calls, max_tokens=tokens) if calls is not None or tokens is not None else None


def spend_line(spend: dict[str, object], caps: dict[str, object] | None = None) -> str:
    """`requests: 40 paid (cap 50), 12 cached, 3 refused; 5400 tokens` from a `Spend.report()`."""
    caps = caps or {}
    cap = f" (cap {caps['max_calls']})" if caps.get("max_calls") is not None else ""
    tok_cap = f" (cap {caps['max_tokens']})" if caps.get("max_tokens") is not None else ""
    reserved = f" + {spend['reserved_tokens']} reserved" if spend.get("reserved_tokens") else ""
    return (f"requests: {spend['paid']} paid{cap}, {spend['cached']} cached, {spend['refused']} refused; "
            f"{spend['tokens']} tokens{reserved}{tok_cap}")


def report(spend: Spend, caps: BudgetCaps) -> dict[str, object]:
    """The `budget` object of a command's --json: the ledger's counts and the caps in force."""
    return {**spend.report(), "caps": caps.model_dump()}

