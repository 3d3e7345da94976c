"""What a driver decides about a run's budget: the estimate checked before the first request, the
`budget` object of a result (the request ledger's paid, cached and refused, and the caps in force),
and the command that continues a run stopped at its budget. (The cap options and the lines a person
reads are the CLI's: cli/budget.py.)"""

from __future__ import annotations

from collections.abc import Callable

from skillforge.llm.ledger import RunBudget
from skillforge.rules.evolve_budget import RoundEstimate
from skillforge.state.llm import BudgetCaps, Spend


def report(spend: Spend, caps: BudgetCaps) -> dict[str, object]:
    """The `budget` object of a command's --json: the ledger's counts and the caps in force."""
    return {**spend.report(), "caps": caps.model_dump()}


def preflight(ledger: RunBudget, est: RoundEstimate, say: Callable[[str], None]) -> str | None:
    """Say the estimate before the first request; the reason to refuse the run when the estimate
    does not fit the caps after what the run has paid already (None: go)."""
    spent = ledger.totals()
    cap = f"cap {ledger.caps.max_calls}" if ledger.caps.max_calls is not None else "no cap (--budget-calls N sets one)"
    say(f"estimate: at least {est.calls} requests ({est.detail}); {cap}; {spent.calls} paid so far")
    fits, why = est.fits(ledger.caps, spent.calls, spent.tokens + spent.reserved_tokens)
    return None if fits else f"estimate above budget: the run {why}; nothing was sent"


def resume_hint(run_id: str, needed: int) -> str:
    """The command that continues evaluation `run_id` with enough calls for `needed` in all."""
    return f"skillforge evaluate --resume {run_id} --budget-calls {needed}"


__all__ = ["preflight", "report", "resume_hint"]
