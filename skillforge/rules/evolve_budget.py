"""How many LLM calls and tokens one evolution round, or one evaluation, will need, estimated before
the first call (pure). The estimate is what a round typically costs (one candidate validated, plus
holdout; every executor done in its typical turns). An evolution round's `floor` leaves out the
reworded neighbours, which a round may not get (a failure whose query had to be altered gets none,
near-duplicates are dropped): a run whose caps are below the floor does not start, and says so;
one between the floor and the estimate starts, and like any run that runs out pauses with BUDGET
and resumes with a larger budget (QA pass 15: "needs at least 116 calls" refused caps of 105-115
for a round that took 105)."""

from __future__ import annotations

from dataclasses import dataclass

from skillforge.state.llm import BudgetCaps

EXECUTOR_TURNS = 2
"""Typical executor turns per side and case in behaviour mode (a tool, then the answer; disclosure
mode adds a use_skill turn, which makes the estimate a lower bound there too)."""
DISCLOSURE_TURNS = 1
"""The use_skill turn disclosure mode adds per side."""
WORST_EXECUTOR_TURNS = 6
"""The most turns an executor takes on one side of a case (evaluation/executor.MAX_TURNS, all modes)."""
JUDGE_CALLS = 2
"""Both orders."""
PROMPT_TOKENS = 1500
COMPLETION_TOKENS = 250
PROPOSER_PROMPT_TOKENS = 4000
PROPOSER_COMPLETION_TOKENS = 2500


@dataclass(frozen=True)
class RoundEstimate:
    calls: int
    tokens: int
    detail: str
    floor: int | None = None
    """The fewest calls the run can start with (None: `calls`)."""

    def fits(self, caps: BudgetCaps, spent_calls: int = 0, spent_tokens: int = 0) -> tuple[bool, str]:
        """(fits, why not) against the caps, after what the run has spent already: refused below the
        floor."""
        floor = self.calls if self.floor is None else self.floor
        if caps.max_calls is not None and spent_calls + floor > caps.max_calls:
            need = (f"needs at least {self.calls} calls ({self.detail})" if floor == self.calls else
                    f"needs about {self.calls} calls ({self.detail}) and at least {floor} without reworded "
                    "neighbours")
            return False, f"{need}; {spent_calls} paid, cap {caps.max_calls}"
        if caps.max_tokens is not None and spent_tokens + self.tokens > caps.max_tokens:
            return False, (f"needs about {self.tokens} tokens ({self.detail}); {spent_tokens} spent, "
                           f"cap {caps.max_tokens}")
        return True, ""


def estimate_round(failures: int, p0_cases: int, holdout_cases: int, candidates: int = 1,
                   neighbours: bool | int = True, analyze: bool = True) -> RoundEstimate:
    """analyze + propose + neighbours + each candidate on (failures + neighbours + P0) + one holdout run.
    `neighbours`: one a failure (True), none (False), or at most that many (the evolve.neighbours
    limit: QA 43 M5, the estimate ignored it)."""
    per_case = 2 * EXECUTOR_TURNS + JUDGE_CALLS
    nb = (failures if neighbours else 0) if isinstance(neighbours, bool) else min(failures, max(0, neighbours))
    selection_cases = failures + nb + p0_cases
    proposer_calls = int(analyze) + 1 + nb
    eval_calls = candidates * selection_cases * per_case + holdout_cases * per_case
    calls = proposer_calls + eval_calls
    tokens = (proposer_calls * (PROPOSER_PROMPT_TOKENS + PROPOSER_COMPLETION_TOKENS)
              + eval_calls * (PROMPT_TOKENS + COMPLETION_TOKENS))
    detail = (f"{proposer_calls} proposer, {candidates} candidates x {selection_cases} cases x {per_case} "
              f"+ holdout {holdout_cases} x {per_case}")
    floor = calls - nb - candidates * nb * per_case  # no neighbour written, none run
    return RoundEstimate(calls, tokens, detail, floor)


def estimate_evaluation(cases: int, disclosure: bool = False, *, worst: bool = False) -> RoundEstimate:
    """An evaluation of `cases` cases: both sides' executor turns (+ the use_skill turn in disclosure
    mode) and both judge orders per case. Cached answers are not subtracted: the estimate is of the
    requests the run may need, and the least of them; `worst`: the most they can take (every side at
    WORST_EXECUTOR_TURNS), what a resume after a stop mid-run needs to be sure to finish, since the
    requests a case paid before the stop are paid again (QA 34 F2: a resume at the least never
    finished a case whose agent took 6 turns)."""
    turns = WORST_EXECUTOR_TURNS if worst else EXECUTOR_TURNS + (DISCLOSURE_TURNS if disclosure else 0)
    per_case = 2 * turns + JUDGE_CALLS
    calls = cases * per_case
    detail = f"{cases} cases x {per_case}: 2 sides x {turns} executor turns + {JUDGE_CALLS} judge orders"
    return RoundEstimate(calls, calls * (PROMPT_TOKENS + COMPLETION_TOKENS), detail)


def caps_to_raise(caps: BudgetCaps, calls: int | None, tokens: int | None, paid_calls: int,
                  spent_tokens: int) -> list[str]:
    """The cap options a run needs to do `calls` requests and `tokens` tokens more after what it has
    spent: one for each cap in force that they would pass (`--budget-tokens 262300`), none for a cap
    that does not block (naming a cap that is already high enough loops the user)."""
    opts: list[str] = []
    if isinstance(calls, int) and caps.max_calls is not None and paid_calls + calls > caps.max_calls:
        opts.append(f"--budget-calls {paid_calls + calls}")
    if isinstance(tokens, int) and caps.max_tokens is not None and spent_tokens + tokens > caps.max_tokens:
        opts.append(f"--budget-tokens {spent_tokens + tokens}")
    return opts


def evaluate_next(run_id: str | None, caps: BudgetCaps, estimate: RoundEstimate, paid_calls: int,
                  spent_tokens: int) -> str:
    """What continues an evaluation stopped at its budget, `estimate` being what the cases left need:
    `skillforge evaluate --resume RUN` (a run with a checkpoint) or "run it again" (a run refused before
    it started, `run_id` None) with the caps that block raised; when none blocks by the estimate (a cap
    reached mid-run by requests the estimate did not count), the cap that was reached, raised by the
    estimate."""
    opts = caps_to_raise(caps, estimate.calls, estimate.tokens, paid_calls, spent_tokens)
    if not opts:
        if caps.max_tokens is not None and (caps.max_calls is None or paid_calls < caps.max_calls):
            opts.append(f"--budget-tokens {max(spent_tokens, caps.max_tokens) + estimate.tokens}")
        else:
            opts.append(f"--budget-calls {paid_calls + estimate.calls}")
    if run_id is None:
        return f"run it again with {' '.join(opts)} or more, or on a smaller set"
    return " ".join(["skillforge evaluate --resume", run_id, *opts])


def evolve_next(run_id: str, caps: BudgetCaps, estimate: dict[str, object] | None, paid_calls: int,
                spent_tokens: int) -> str:
    """The command that continues evolve run `run_id` paused at its budget. Paused by the round's
    `estimate` ({calls, tokens}) before a request: the caps it needs after what the run has paid
    (`--budget-calls 128`). Paused at a cap mid-run: the cap that was reached, as `N` (what the rest
    needs is not known; the requests already answered come from the cache)."""
    calls = estimate.get("calls") if estimate else None
    tokens = estimate.get("tokens") if estimate else None
    opts = caps_to_raise(caps, calls if isinstance(calls, int) else None, tokens if isinstance(tokens, int) else None,
                         paid_calls, spent_tokens)
    if not opts and estimate is None:
        if caps.max_calls is not None and paid_calls >= caps.max_calls:
            opts.append("--budget-calls N")
        elif caps.max_tokens is not None:
            opts.append("--budget-tokens N")
    return " ".join(["skillforge evolve --resume", run_id, *(opts or ["--budget-calls N"])])


def batch_next(batch_id: str, cap: str) -> str:
    """The command that continues a batch stopped at its own cap (`cap`: "calls" or "tokens"): its
    runs' own caps are not what stopped them, so resuming one of them alone would stop it again."""
    opt = "--batch-budget-tokens N" if cap == "tokens" else "--batch-budget-calls N"
    return f"skillforge evolve --resume {batch_id} {opt}"
