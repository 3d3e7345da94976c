"""The rejudge of a stored evaluation run: only the judge runs again, on the case outputs in
runs/traces/<run>.jsonl and the two sides' texts in runs/traces/<run>.meta.json (written by
the evaluate graph's record node). It is a new run, counted in the request ledger under its own id, with its own
meta.json (so a rejudge can be rejudged)."""

from __future__ import annotations

import logging
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from skillforge.config import Workspace
from skillforge.evaluation.stored import StoredRunError, coverage, read_case_outputs, read_meta
from skillforge.rules.coverage import rejudge_coverage
from skillforge.runners import interrupt
from skillforge.runners.budget import report as budget_report
from skillforge.runners.evaluate import BudgetStop, Finished, Watcher, _same_skill, finished
from skillforge.state.evaluate import ExecutionMode

if TYPE_CHECKING:
    from skillforge.state.llm import BudgetCaps

log = logging.getLogger(__name__)


def rejudge_run(ws: Workspace, run: str, *, no_cache: bool = False, report: Path | None = None,
                skill: str | None = None, caps: BudgetCaps | None = None,
                watcher: Watcher | None = None) -> Finished | BudgetStop:
    """Judge a stored run's outputs again, as a new run counted in the ledger under its own id;
    with `caps`, a refused judge request stops it at BUDGET (the judgements made so far are cached)."""
    from skillforge.calibration.records import statuses_for
    from skillforge.evaluation.compare import conclude, judge_case, require_roles
    from skillforge.llm.ledger import RequestLedger, RunBudget
    from skillforge.nodes.evaluate import budget_refusal, with_not_evaluated
    from skillforge.state.llm import BudgetCaps, Role
    from skillforge.llm.client import build_llm
    from skillforge.nodes.evaluate import record_result
    from skillforge.state.evaluate import Unexercised

    watcher = watcher or Watcher()
    meta = read_meta(ws, run)
    _same_skill(skill, meta["skill"], run)
    stored = read_case_outputs(ws, run)
    if strays := sorted({r.case.skill for r in stored.values()} - {meta["skill"]}):  # QA 38 F8: a meta edited by hand
        raise StoredRunError(f"stored run '{run}': its meta.json names skill '{meta['skill']}' but its case outputs "
                             f"are cases of {', '.join(map(repr, strays))}: the two files do not belong together "
                             f"(edited by hand?); nothing was judged")
    usable, total, missing = coverage(meta, stored)
    refuse, partial = rejudge_coverage(run, usable, total, missing)
    if refuse:
        raise StoredRunError(f"stored run '{run}': {refuse}")
    new_run = f"{run}-rejudge-{uuid.uuid4().hex[:4]}"
    llm = build_llm(ws, no_cache=no_cache, ledger=RunBudget(RequestLedger.of_workspace(ws.runs_dir), new_run,
                                                            caps or BudgetCaps()))
    require_roles(llm, [Role.JUDGE])
    if partial:
        watcher.say(f"warning: {partial}")
    watcher.say(f"estimate: at most {2 * len(stored)} judge requests ({len(stored)} cases x 2 orders); "
                f"cap {llm.ledger.caps.max_calls or 'none'}")
    with interrupt.stopping(llm.stop):
        results = [judge_case(r.case, r.baseline, r.candidate, llm) for r in stored.values()]
    refused = next(filter(None, map(budget_refusal, results)), None)
    if refused is not None:
        needed = llm.ledger.calls + 2 * sum(budget_refusal(r) is not None for r in results)
        return BudgetStop(llm.ledger, refused, meta["skill"], meta["eval_set"],
                          sum(budget_refusal(r) is None for r in results), len(results),
                          f"skillforge evaluate --rejudge {run} --budget-calls {needed}"
                          + (" --no-cache" if no_cache else " (what was judged comes from the cache)"))
    base = {"run_id": new_run, "skill": meta["skill"], "eval_set": meta["eval_set"], "kind": meta.get("kind", "ab"),
            "baseline_release": meta["baseline"].get("release_id"), "candidate_release": meta["candidate"].get("release_id"),
            "mode": ExecutionMode(meta.get("mode", ExecutionMode.DISCLOSURE)),  # runs before modes were disclosure
            "unexercised": Unexercised.of(results)}
    result = conclude(base, meta["baseline"].get("text"), meta["candidate"].get("text"), results,
                      statuses_for(ws, llm.configs.get(Role.JUDGE)))  # the judge of this rejudge, now
    result = with_not_evaluated(result, meta.get("not_evaluated", []))  # files outside SKILL.md: still unmeasured
    if partial:
        result = result.model_copy(update={"reasons": [partial, *result.reasons]})
    record_result(ws.evaluations_log, ws.traces_dir, result, results, meta=meta | {"run_id": new_run})  # its meta:
    # so the rejudge can be rejudged
    return finished(ws, result, results, report, budget_report(llm.ledger.totals(), llm.ledger.caps))


__all__ = ["StoredRunError", "rejudge_run"]
