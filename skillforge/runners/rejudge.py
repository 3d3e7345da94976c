"""The rejudge of a stored evaluation run: only the judge runs again, on the case outputs in
runs/traces/<run>.jsonl and the two sides' texts in runs/traces/<run>.meta.json (written by
runners/evaluate.py). It is a new run, counted in the request ledger under its own id, with its own
meta.json (so a rejudge can be rejudged)."""

from __future__ import annotations

import json
import logging
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from skillforge.config import Workspace
from skillforge.errors import SkillForgeError, UnknownRun
from skillforge.runners import interrupt
from skillforge.runners.budget import report as budget_report
from skillforge.runners.evaluate import BudgetStop, Finished, Watcher, _same_skill, _save_meta, finished
from skillforge.state.evaluate import ExecutionMode

if TYPE_CHECKING:
    from skillforge.state.llm import BudgetCaps

log = logging.getLogger(__name__)


class StoredRunError(SkillForgeError):
    """A stored run that --rejudge cannot use: its meta.json or its case outputs are unreadable."""


def rejudge_run(ws: Workspace, run: str, *, no_cache: bool = False, report: Path | None = None,
                skill: str | None = None, caps: BudgetCaps | None = None,
                watcher: Watcher | None = None) -> Finished | BudgetStop:
    """Judge a stored run's outputs again, as a new run counted in the ledger under its own id;
    with `caps`, a refused judge request stops it at BUDGET (the judgements made so far are cached)."""
    from skillforge.calibration.records import statuses_for
    from skillforge.evaluation.compare import conclude, judge_case, require_roles
    from skillforge.llm.ledger import RequestLedger, RunBudget
    from skillforge.nodes.evaluate import budget_refusal
    from skillforge.state.llm import BudgetCaps, Role
    from skillforge.journal import read_jsonl
    from skillforge.llm.client import build_llm
    from skillforge.nodes.evaluate import record_result
    from skillforge.state.evaluate import CaseResult, Unexercised

    watcher = watcher or Watcher()
    meta_path = ws.traces_dir / f"{run}.meta.json"
    if not meta_path.exists():
        raise UnknownRun(f"no stored run '{run}' in {ws.traces_dir}")
    meta = _read_meta(meta_path)
    _same_skill(skill, meta["skill"], run)
    traces = ws.traces_dir / f"{run}.jsonl"
    if not traces.exists():
        raise StoredRunError(f"stored run '{run}' has no case outputs ({traces} is missing): nothing to rejudge")
    new_run = f"{run}-rejudge-{uuid.uuid4().hex[:4]}"
    llm = build_llm(ws, no_cache=no_cache, ledger=RunBudget(RequestLedger.of_workspace(ws.runs_dir), new_run,
                                                            caps or BudgetCaps()))
    require_roles(llm, [Role.JUDGE])
    stored, bad = {}, 0
    for n, line in enumerate(read_jsonl(traces), 1):
        try:
            r = CaseResult.model_validate({k: v for k, v in line.items() if k in CaseResult.model_fields})
        except ValidationError as e:
            bad += 1
            log.warning("%s: trace line %d is not a case's outputs (%s); skipped", traces, n,
                        str(e).splitlines()[0])
            continue
        stored[r.case.id] = r  # the last line of a case wins (a run can be rejudged more than once)
    if not stored:
        raise StoredRunError(f"stored run '{run}' has no usable case outputs in {traces}"
                             + (f" ({bad} line(s) not a case's outputs)" if bad else " (it is empty)"))
    watcher.say(f"estimate: at most {2 * len(stored)} judge requests ({len(stored)} cases x 2 orders); "
                f"cap {llm.ledger.caps.max_calls or 'none'}")
    with interrupt.stopping(llm.stop):
        results = [judge_case(r.case, r.baseline, r.candidate, llm) for r in stored.values()]
    refused = next(filter(None, map(budget_refusal, results)), None)
    if refused is not None:
        needed = llm.ledger.calls + 2 * sum(budget_refusal(r) is not None for r in results)
        return BudgetStop(llm.ledger, refused, meta["skill"], meta["eval_set"],
                          sum(budget_refusal(r) is None for r in results), len(results),
                          f"skillforge evaluate --rejudge {run} --budget-calls {needed} (what was judged comes "
                          "from the cache)")
    base = {"run_id": new_run, "skill": meta["skill"], "eval_set": meta["eval_set"], "kind": meta.get("kind", "ab"),
            "baseline_release": meta["baseline"].get("release_id"), "candidate_release": meta["candidate"].get("release_id"),
            "mode": ExecutionMode(meta.get("mode", ExecutionMode.DISCLOSURE)),  # runs before modes were disclosure
            "unexercised": Unexercised.of(results)}
    result = conclude(base, meta["baseline"].get("text"), meta["candidate"].get("text"), results,
                      statuses_for(ws, llm.configs.get(Role.JUDGE)))  # the judge of this rejudge, now
    record_result(ws.evaluations_log, ws.traces_dir, result, results)
    _save_meta(ws, meta | {"run_id": new_run})  # so the rejudge can be rejudged
    return finished(ws, result, results, report, budget_report(llm.ledger.totals(), llm.ledger.caps))


def _read_meta(path: Path) -> dict:
    """A stored run's meta.json, checked: the skill, the set and both sides' texts."""
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise StoredRunError(f"{path} is unreadable ({str(e).splitlines()[0]}): cannot rejudge") from None
    if (not isinstance(meta, dict) or not isinstance(meta.get("skill"), str) or not isinstance(meta.get("eval_set"), str)
            or not all(isinstance(meta.get(side), dict) for side in ("baseline", "candidate"))):
        raise StoredRunError(f"{path} lacks the skill, the set or a side's text: cannot rejudge")
    return meta


__all__ = ["StoredRunError", "rejudge_run"]
