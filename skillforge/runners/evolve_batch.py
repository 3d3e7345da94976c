"""`evolve --all`: a batch of runs, one per skill, `concurrency` at a time, and the batch's own caps
(moved out of runners/evolve.py, which was at its size limit).

A batch's caps (`--batch-budget-calls`, `--batch-budget-tokens`) are kept in the request ledger under
the batch id, and every run the batch drives joins the batch there before it starts or resumes: the
ledger then refuses a request that would pass the batch's caps as it refuses one past the run's own
(atomically, across the batch's threads and processes), and a run not started yet is not started once
the batch's caps are reached.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from skillforge.config import Workspace
from skillforge.errors import RunBusy, SkillForgeError
from skillforge.runners.batchfile import write_batch
from skillforge.rules.budget import BudgetVerdict
from skillforge.rules.evolve_budget import batch_next
from skillforge.state.evolve import MAX_ROUNDS, TERMINAL, EvolveMode, EvolveStatus
from skillforge.state.llm import BudgetCaps

if TYPE_CHECKING:
    from skillforge.llm.ledger import RequestLedger
    from skillforge.runners.evolve import Runner

log = logging.getLogger(__name__)
BUSY = "BUSY"
"""A batch row's status when another process was evolving the skill: skipped, not failed (no run of this batch)."""
NOT_STARTED = "NOT_STARTED"
"""A batch row's status when the batch's caps were reached before its run started (no run yet: the
batch's resume with higher caps starts it)."""


def new_batch(ws: Workspace, names: list[str] | None = None, *, mode: EvolveMode = EvolveMode.AUTONOMOUS,
              max_rounds: int = MAX_ROUNDS, url: str | None = None) -> tuple[str, dict[str, str]]:
    """A new batch of the skills `names` (default: every published one): its id and one new run id
    per skill, written to runs/batches/ (and, with `url`, registered as claims that the workers of
    that database share)."""
    from skillforge.library.registry import SkillRegistry

    from skillforge.runners.evolve import new_run_id

    names = names or SkillRegistry.load(ws).names()
    batch_id = new_run_id("all", kind="batch")
    runs = {name: new_run_id(name) for name in names}
    if url is not None:
        from skillforge.runners.batch import register

        register(url, batch_id, runs, ws.workspace_id)
    write_batch(ws, batch_id, runs, mode=mode, max_rounds=max_rounds)
    return batch_id, runs


def run_one(runner: Runner, name: str, run_id: str, *, mode: EvolveMode = EvolveMode.AUTONOMOUS,
            max_rounds: int = MAX_ROUNDS, caps: BudgetCaps | None = None,
            batch_id: str | None = None) -> dict[str, object]:
    """Start skill `name`'s run `run_id`, or resume it when its thread exists and is unfinished. A
    skill whose earlier run is still open (an earlier night's, killed, paused at its budget or
    stopped by a named error such as MissingCases) has that run resumed instead, so the nightly loop
    goes on from it rather than failing on RunOpen every night; one waiting for review is shown as
    it stands. A failure ends FAILED with the reason in one line (never raises, no traceback).
    With `batch_id`, the run joins the batch in the request ledger first (its requests count against
    the batch's caps too) and is neither started nor resumed once the batch's caps are reached."""
    try:
        if run_id not in runner.run_ids() and (earlier := runner.open_run(name)) is not None:
            run_id = earlier
        res = runner.summary(run_id) if run_id in runner.run_ids() else None
        if res is not None and res["status"] in (*TERMINAL, EvolveStatus.PENDING_REVIEW):
            return res
        if batch_id is not None:
            if (held := runner.ledger.reached(batch_id)) is not None:
                return _held(name, run_id, res, batch_id, held)
            runner.ledger.join(batch_id, run_id)
        if res is not None:
            return runner.resume(run_id, caps=caps)
        return runner.start(name, mode=mode, max_rounds=max_rounds, caps=caps, run_id=run_id)
    except RunBusy as e:  # another process evolves it now (a second batch, a person): its run, not a failure
        return {"run_id": None, "skill": name, "status": BUSY, "message": f"skipped: {e}"[:500]}  # no run of this batch
    except Exception as e:  # noqa: BLE001 - one broken skill must not stop the batch
        named = isinstance(e, SkillForgeError)
        log.warning("run %s of %s failed: %s: %s", run_id, name, type(e).__name__, " ".join(str(e).split())[:300])
        if not named:  # a bug, not a named refusal: its traceback for whoever turns the log level down
            log.debug("run %s of %s: the traceback", run_id, name, exc_info=True)
        return {"run_id": run_id, "skill": name, "status": EvolveStatus.FAILED.value,
                "message": f"{type(e).__name__}: {e}"[:500]}


def _held(name: str, run_id: str, res: dict[str, object] | None, batch_id: str, held: BudgetVerdict) -> dict[str, object]:
    """The batch row of a run the batch's reached caps keep from starting (or from resuming: an open
    run is shown as it stands, with what goes on)."""
    then = batch_next(batch_id, held.cap or "calls")
    if res is None:
        return {"run_id": None, "skill": name, "status": NOT_STARTED,
                "message": f"not started: the batch's {held.reason}; go on with: {then}"}
    return {**res, "message": f"not resumed: the batch's {held.reason}; go on with: {then}"}


def run_batch(runner: Runner, runs: dict[str, str], *, mode: EvolveMode = EvolveMode.AUTONOMOUS,
              max_rounds: int = MAX_ROUNDS, caps: BudgetCaps | None = None, concurrency: int = 2,
              on_done: Callable[[dict[str, object]], None] | None = None,
              batch_id: str | None = None) -> list[dict[str, object]]:
    """Start (or resume, when its thread exists) one run per skill, `concurrency` at a time. A skill
    that fails ends FAILED with the reason; the others go on. With `batch_id`, each run counts against
    the batch's caps too (run_one)."""
    from concurrent.futures import ThreadPoolExecutor

    def one(item: tuple[str, str]) -> dict[str, object]:
        res = run_one(runner, item[0], item[1], mode=mode, max_rounds=max_rounds, caps=caps, batch_id=batch_id)
        if on_done is not None:
            on_done(res)
        return res

    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        return list(pool.map(one, runs.items()))


def batch_budget(ledger: RequestLedger, batch_id: str) -> dict[str, object]:
    """What the batch's runs spent together (the ledger's group totals) and the batch's caps."""
    return {**ledger.spend(batch_id).report(), "caps": (ledger.caps(batch_id) or BudgetCaps()).model_dump()}
