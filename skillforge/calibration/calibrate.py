"""`judge calibrate`: the configured judge re-judges the golden pairs a person labelled blind, in both
orders, K times, from the stored answers alone (the executor is never called), and the result is
appended to runs/judge_calibration.jsonl bound to the judge's fingerprint (calibration/records.py).

The first repeat may come from the response cache (an answer of this very judge to this very
prompt); every later repeat asks the judge again and is not cached, so the repeats measure how
stable the judge is. A judgement that fails (LLMError) makes its (pair, repeat) invalid: counted and
reported, never agreement. A request the budget refuses stops the run and nothing is recorded.

The statistics are rules/calibration.py's; this module reads the golden files and asks the judge.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING


from skillforge.calibration.golden import GoldenFileError, golden_dir, read_golden
from skillforge.calibration.records import append_record, fingerprint_of, judge_identity
from skillforge.config import Workspace
from skillforge.errors import BadArgument, BudgetExceeded, LLMError, SkillForgeError
from skillforge.rules.calibration import PairRuns, calibrate_dimensions, self_preference
from skillforge.state.calibration import HUMAN_DIMENSIONS, CalibrationRecord, GoldenLabel
from skillforge.state.evaluate import Case, Expectation

if TYPE_CHECKING:
    from skillforge.llm.client import LLM
    from skillforge.state.llm import BudgetCaps

log = logging.getLogger(__name__)
DEFAULT_REPEATS = 3
MAX_REPEATS = 20
LABEL_HINT = ("label stored output pairs first: `skillforge judge label RUN` (RUN: an evaluation run "
              "whose outputs are in runs/traces/)")


class NoGoldenLabels(SkillForgeError):
    """Nothing to calibrate on: no golden file, or none with a usable label."""


class CalibrationStopped(SkillForgeError):
    """The budget refused a judge request: the calibration stopped and recorded nothing."""

    def __init__(self, message: str, spend: dict[str, object]) -> None:
        super().__init__(message)
        self.spend = spend


# ---- golden files -----------------------------------------------------------------------------
def golden_files(ws: Workspace, given: Sequence[Path] = ()) -> list[Path]:
    """The --golden files as given (each must exist), else every evaluation_sets/golden/*.jsonl."""
    if given:
        missing = [str(p) for p in given if not p.is_file()]
        if missing:
            raise GoldenFileError(f"no such golden file: {', '.join(missing)}")
        return list(dict.fromkeys(given))
    files = sorted(golden_dir(ws).glob("*.jsonl"))
    if not files:
        raise NoGoldenLabels(f"no golden labels in {golden_dir(ws)}: {LABEL_HINT}")
    return files


def _name(ws: Workspace, path: Path) -> str:
    try:
        return path.resolve().relative_to(ws.root.resolve()).as_posix()
    except ValueError:
        return str(path)


def load_labels(ws: Workspace, files: Sequence[Path]) -> tuple[list[GoldenLabel], dict[str, str]]:
    """(the labels, one per pair id: the first wins; file name -> sha256 of its bytes)."""
    labels: dict[str, GoldenLabel] = {}
    digests = {}
    for path in files:
        digests[_name(ws, path)] = hashlib.sha256(path.read_bytes()).hexdigest()
        for label in read_golden(path):
            if not any(label.labels.get(d) for d in HUMAN_DIMENSIONS):
                log.warning("%s: pair %s has no label on %s; skipped", path, label.pair_id, ", ".join(HUMAN_DIMENSIONS))
            elif label.pair_id in labels:
                log.warning("%s: pair %s is labelled again; the first label is used", path, label.pair_id)
            else:
                labels[label.pair_id] = label
    if not labels:
        raise NoGoldenLabels(f"no usable golden label in {', '.join(map(str, files))}: {LABEL_HINT}")
    return list(labels.values()), digests


def case_of(label: GoldenLabel) -> Case:
    """The case the judge is shown for a golden pair: its query and expectations (the judge's prompt
    does not show tool fixtures)."""
    return Case(id=label.case_id, skill=label.skill, query=label.query,
                expect=Expectation(must_include=label.must_include, must_not_include=label.must_not_include))


# ---- judging ----------------------------------------------------------------------------------
@dataclass
class _Judged:
    runs: PairRuns
    requests: int
    refused: BudgetExceeded | None


def _judge_pair(llm: LLM, label: GoldenLabel, repeats: int) -> _Judged:
    from skillforge.evaluation.judge import judge_once

    case, requests, refused = case_of(label), 0, None

    def once(first: str, second: str, use_cache: bool) -> dict[str, str] | None:
        nonlocal requests, refused
        try:
            labels = judge_once(llm, case, first, second, use_cache=use_cache)
        except BudgetExceeded as e:  # not sent
            refused = refused or e
            return None
        except LLMError as e:
            log.warning("pair %s: the judge failed (%s: %s); counted invalid", label.pair_id, type(e).__name__,
                        str(e)[:200])
            labels = None
        requests += 1
        return labels

    a_first, b_first = [], []
    with llm.one_case():
        for r in range(repeats):
            a_first.append(once(label.answer_a, label.answer_b, r == 0))
            b_first.append(once(label.answer_b, label.answer_a, r == 0))
    return _Judged(PairRuns(dict(label.labels), tuple(a_first), tuple(b_first)), requests, refused)


def calibrate(ws: Workspace, *, golden: Sequence[Path] = (), repeats: int = DEFAULT_REPEATS,
              caps: BudgetCaps | None = None, no_cache: bool = False, concurrency: int | None = None,
              progress: Callable[[int, int], None] | None = None,
              say: Callable[[str], None] | None = None) -> CalibrationRecord:
    """Judge every golden pair K=`repeats` times in both orders with the configured judge, measure it
    against the person per dimension, append the record and return it. `progress(done, total)`
    after each pair; `say` gets the estimate. NoGoldenLabels / GoldenFileError before any request;
    CalibrationStopped (nothing recorded) when `caps` refuse a request."""
    if not 1 <= repeats <= MAX_REPEATS:
        raise BadArgument(f"--repeats must be between 1 and {MAX_REPEATS}, got {repeats}")
    labels, digests = load_labels(ws, golden_files(ws, golden))
    # the model stack (~3 s of imports) only once the arguments and the labels are known to be usable
    from skillforge.evaluation.compare import require_roles
    from skillforge.llm.client import build_llm
    from skillforge.llm.config import default_concurrency
    from skillforge.llm.ledger import RequestLedger, RunBudget
    from skillforge.runners import interrupt
    from skillforge.state.llm import BudgetCaps, Role

    run_id = f"calibrate-{uuid.uuid4().hex[:8]}"
    llm = build_llm(ws, no_cache=no_cache, ledger=RunBudget(RequestLedger.of_workspace(ws.runs_dir), run_id,
                                                            caps or BudgetCaps()))
    require_roles(llm, [Role.JUDGE])
    endpoint, model = judge_identity(llm.configs[Role.JUDGE])
    fingerprint, prompt_sha, rubric_sha = fingerprint_of(model, endpoint)
    total = len(labels)
    if say is not None:
        say(f"estimate: at most {2 * repeats * total} judge requests ({total} pairs x 2 orders x {repeats} "
            f"repeats); cap {llm.ledger.caps.max_calls or 'none'}")
    results: list[_Judged | None] = [None] * total
    workers = max(1, min(concurrency or default_concurrency(llm.configs), total))
    with interrupt.stopping(llm.stop), ThreadPoolExecutor(workers, thread_name_prefix="calibrate") as pool:
        futures = {pool.submit(_judge_pair, llm, label, repeats): i for i, label in enumerate(labels)}
        for done, future in enumerate(as_completed(futures), 1):
            results[futures[future]] = future.result()
            if progress is not None:
                progress(done, total)
    judged = [r for r in results if r is not None]
    refused = next((r.refused for r in judged if r.refused is not None), None)
    if refused is not None:
        from skillforge.runners.budget import report
        cached = "" if no_cache else " (the first repeat's judgements made so far come from the cache)"
        raise CalibrationStopped(f"stopped at the budget ({refused}): nothing was recorded; run again with "
                                 f"--budget-calls {2 * repeats * total}{cached}",
                                 report(llm.ledger.totals(), llm.ledger.caps))
    roles = {role.value: llm.configs[role].model_key for role in (Role.EXECUTOR, Role.PROPOSER)
             if role in llm.configs and llm.configs[role].configured}
    record = CalibrationRecord(
        fingerprint=fingerprint, model=model, endpoint=endpoint, prompt_sha=prompt_sha, rubric_sha=rubric_sha,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"), golden=digests, repeats=repeats,
        pairs=total, dimensions=calibrate_dimensions([r.runs for r in judged]),
        self_preference=self_preference(llm.configs[Role.JUDGE].model_key, roles), requests=sum(r.requests for r in judged))
    append_record(ws, record)
    return record


__all__ = ["CalibrationStopped", "GoldenFileError", "NoGoldenLabels", "calibrate", "case_of", "golden_dir",
           "golden_files", "load_labels", "read_golden"]
