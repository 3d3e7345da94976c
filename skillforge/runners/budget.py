"""What a driver decides about a run's budget: the estimate checked before the first request, the
`budget` object of a result (the request ledger's paid, cached and refused, and the caps in force),
and the command that continues a run stopped at its budget. (The cap options and the lines a person
reads are the CLI's: cli/budget.py.)"""

from __future__ import annotations

from collections.abc import Callable

from skillforge.llm.ledger import RunBudget
from skillforge.rules.evolve_budget import RoundEstimate, evaluate_next
from skillforge.state.llm import BudgetCaps, Spend


def report(spend: Spend, caps: BudgetCaps) -> dict[str, object]:
    """The `budget` object of a command's --json: the ledger's counts and the caps in force."""
    return {**spend.report(), "caps": caps.model_dump()}


def preflight(ledger: RunBudget, est: RoundEstimate, say: Callable[[str], None]) -> str | None:
    """Say the estimate before the first request; the reason to refuse the run when the estimate
    does not fit the caps after what the run has paid already (None: go)."""
    spent = ledger.totals()
    say(estimate_line(ledger.caps, est, spent.calls, spent.tokens + spent.reserved_tokens))
    fits, why = est.fits(ledger.caps, spent.calls, spent.tokens + spent.reserved_tokens)
    return None if fits else f"estimate above budget: the run {why}; nothing was sent"


def next_step(ledger: RunBudget, est: RoundEstimate, run_id: str | None) -> str:
    """What continues an evaluation stopped at its budget, `est` being what its cases left need: the
    caps that block, raised (rules/evolve_budget.evaluate_next); `run_id` None: a run refused before
    its checkpoint, which is run again."""
    spent = ledger.totals()
    return evaluate_next(run_id, ledger.caps, est, spent.calls, spent.tokens + spent.reserved_tokens)


def estimate_line(caps: BudgetCaps, est: RoundEstimate, paid: int, spent_tokens: int) -> str:
    """The estimate and every cap in force (a token cap too: "no cap" beside one would be false)."""
    need = f"at least {est.calls} requests ({est.detail})"
    shown = []
    if caps.max_calls is not None:
        shown.append(f"{caps.max_calls} requests" if caps.max_tokens is not None else str(caps.max_calls))
    if caps.max_tokens is not None:
        need += f", about {est.tokens} tokens"
        shown.append(f"{caps.max_tokens} tokens")
    cap = f"cap {', '.join(shown)}" if shown else "no cap (--budget-calls N sets one)"
    spent = f"{paid} paid so far" + (f", {spent_tokens} tokens" if caps.max_tokens is not None else "")
    return f"estimate: {need}; {cap}; {spent}"


__all__ = ["estimate_line", "next_step", "preflight", "report"]
