"""What `evolve` and `evaluate` share about budgets: the cap options, checked before anything runs,
and the one line that says what a run has spent (the request ledger's paid, cached and refused).
The estimate checked before the first request and the `budget` object are the drivers'
(runners/budget.py)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from rich.console import Console

from skillforge.cli.output import json_safe, plain
from skillforge.errors import BadArgument

if TYPE_CHECKING:  # the ledger and the models are imported by the runs that use them
    from skillforge.llm.ledger import RequestLedger, RunBudget
    from skillforge.state.llm import BudgetCaps

EXIT_BUDGET = 6
"""`evaluate` stopped at its budget (0, 3, 4 and 5 are verdicts, 2 a named error)."""

BudgetCallsOpt = Annotated[int | None, typer.Option(
    "--budget-calls", help="Hard cap on requests sent to a model by the run (retries included; cached "
                           "answers are not counted).")]
BudgetTokensOpt = Annotated[int | None, typer.Option(
    "--budget-tokens", help="Hard cap on tokens of the run (prompt + completion; a request counts its "
                            "worst case until its usage is known).")]


BatchCallsOpt = Annotated[int | None, typer.Option(
    "--batch-budget-calls", help="With --all or --resume BATCH: hard cap on requests sent by all the batch's runs "
                                 "together (each run's --budget-calls holds too).")]
BatchTokensOpt = Annotated[int | None, typer.Option(
    "--batch-budget-tokens", help="With --all or --resume BATCH: hard cap on tokens of all the batch's runs together.")]
BATCH_OPTS = ("--batch-budget-calls", "--batch-budget-tokens")


def budget_caps(calls: int | None, tokens: int | None,
                names: tuple[str, str] = ("--budget-calls", "--budget-tokens")) -> BudgetCaps | None:
    """The caps the options give (None: none given). BadArgument for a number below 1 or above
    CAP_LIMIT (what a checkpoint and the ledger can hold): a 2**64 cap was an internal error."""
    from skillforge.state.llm import CAP_LIMIT, BudgetCaps

    for name, v in zip(names, (calls, tokens), strict=True):
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


def set_batch_caps(ledger: RequestLedger, batch_id: str, given: BudgetCaps) -> None:
    """The batch's caps from now on: the caps given replace those of the same kind; a cap not given is
    kept (QA 48 F5: `--resume BATCH --batch-budget-calls N` dropped the batch's token cap unsaid)."""
    kept = ledger.caps(batch_id)
    ledger.set_caps(batch_id, kept.model_copy(update={k: v for k, v in given.model_dump().items() if v is not None})
                    if kept is not None else given)


def batch_lines(ledger: RequestLedger, batch_id: str) -> list[str]:
    """The lines under a batch's table: what its runs spent together, and the command that goes on
    (with the cap to raise when the batch's own caps stopped it)."""
    from skillforge.rules.evolve_budget import batch_next

    caps = ledger.caps(batch_id)
    lines = [f"batch {batch_id}: {spend_line(ledger.spend(batch_id).report(), caps.model_dump() if caps else None)}"]
    held = ledger.reached(batch_id)
    lines.append(f"batch {batch_id}: its {held.reason}; go on with: {batch_next(batch_id, held.cap or 'calls')}"
                 if held is not None else f"batch {batch_id}: resume with skillforge evolve --resume {batch_id}")
    return lines


def stop_at_budget(ledger: RunBudget, reason: str, skill: str, eval_set: str, done: int, total: int,
                   as_json: bool, next_step: str) -> NoReturn:
    """Show an evaluation that stopped at its budget (a result, not an error) and exit EXIT_BUDGET:
    the reason, what the run spent, the cases done, and `next_step` (the command that goes on)."""
    from skillforge.runners.budget import report

    spend = ledger.totals()
    if as_json:
        typer.echo(json_safe(json.dumps({
            "verdict": "BUDGET", "run_id": ledger.run_id, "skill": skill, "eval_set": eval_set, "reasons": [reason],
            "cases": total, "cases_done": done, "budget": report(spend, ledger.caps), "next": next_step},
            ensure_ascii=False)))
    else:
        console = Console(markup=False, highlight=False, soft_wrap=True)
        for line in (f"BUDGET  {skill} on {eval_set} (run {ledger.run_id}): {done} of {total} cases done",
                     f"  - {reason}", f"  {spend_line(report(spend, ledger.caps), ledger.caps.model_dump())}",
                     f"  next: {next_step}"):
            console.print(plain(line))
    raise typer.Exit(EXIT_BUDGET)
