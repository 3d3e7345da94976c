"""A stored evaluation run read back: runs/traces/<run>.meta.json (the skill, the set and both sides'
texts) and runs/traces/<run>.jsonl (one CaseResult a line; the last
line of a case wins, since a run can be rejudged more than once). `evaluate --rejudge` judges them
again (runners/rejudge.py); `judge label` shows their answers to a person (calibration/golden.py).
The evaluate graph's record node writes both (nodes/evaluate.py), for the CLI's runs and the Python
API's alike, under a run id its first node claimed (`claim_evaluation`)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from pydantic import ValidationError

from skillforge.config import Workspace
from skillforge.journal import json_lines
from skillforge.errors import RunIdTaken, SkillForgeError, UnknownRun
from skillforge.rules.ids import IdKind
from skillforge.state.evaluate import CaseResult
from skillforge.state.ids import require_id

log = logging.getLogger(__name__)


class StoredRunError(SkillForgeError):
    """A stored run that cannot be used: its meta.json or its case outputs are unreadable."""


def read_meta(ws: Workspace, run: str, purpose: str = "rejudge") -> dict:
    """A stored run's meta.json, checked: the skill, the set and both sides' texts. UnknownRun when
    there is none; StoredRunError ("cannot <purpose>") when it is unreadable or incomplete."""
    path = ws.traces_dir / f"{require_id(IdKind.RUN, run)}.meta.json"
    if not path.exists() and (ws.traces_dir / f"{run}.jsonl").exists():  # QA 38 F8: say what is missing
        raise StoredRunError(f"stored run '{run}' has its case outputs but no {path.name} (the skill, the set and "
                             f"both sides' texts): cannot {purpose}; evaluate again")
    if not path.exists():
        raise UnknownRun(f"no stored run '{run}' in {ws.traces_dir}")
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise StoredRunError(f"{path} is unreadable ({str(e).splitlines()[0]}): cannot {purpose}") from None
    if (not isinstance(meta, dict) or not isinstance(meta.get("skill"), str) or not isinstance(meta.get("eval_set"), str)
            or not all(isinstance(meta.get(side), dict) for side in ("baseline", "candidate"))):
        raise StoredRunError(f"{path} lacks the skill, the set or a side's text: cannot {purpose}")
    return meta


def read_case_outputs(ws: Workspace, run: str, purpose: str = "rejudge") -> dict[str, CaseResult]:
    """Case id -> the stored run's last CaseResult of that case, in the order cases first appear. A
    line that is not a case's outputs (not JSON, not an object, not a CaseResult) is logged with its
    line number in the file and skipped; StoredRunError ("nothing to <purpose>") when the file is
    missing or holds no usable line. (`coverage` says how many of the run's cases these are.)"""
    traces = ws.traces_dir / f"{require_id(IdKind.RUN, run)}.jsonl"
    if not traces.exists():
        raise StoredRunError(f"stored run '{run}' has no case outputs ({traces} is missing): nothing to {purpose}")
    stored: dict[str, CaseResult] = {}
    bad = 0
    for n, line in json_lines(traces):
        try:
            if not isinstance(line, dict):
                raise TypeError(f"a JSON {type(line).__name__}, not an object")
            r = CaseResult.model_validate({k: v for k, v in line.items() if k in CaseResult.model_fields})
        except (ValidationError, TypeError) as e:
            bad += 1
            log.warning("%s: trace line %d is not a case's outputs (%s); skipped", traces, n,
                        str(e).splitlines()[0])
            continue
        stored[r.case.id] = r  # the last line of a case wins (a run can be rejudged more than once)
    if not stored:
        raise StoredRunError(f"stored run '{run}' has no usable case outputs in {traces}"
                             + (f" ({bad} line(s) not a case's outputs)" if bad else " (it is empty)"))
    return stored


def coverage(meta: dict, stored: dict[str, CaseResult]) -> tuple[int, int | None, list[str]]:
    """(usable, the run's cases, the ids missing) of a stored run: the run's case ids are in its
    meta.json (runs from before they were recorded: None, not known)."""
    ids = meta.get("cases")
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        return len(stored), None, []
    missing = [i for i in ids if i not in stored]
    return len(ids) - len(missing), len(ids), missing


SIDES = ("skill", "eval_set", "kind", "mode", "baseline", "candidate")
"""What a run evaluates: a run id recorded with other values is another run's (QA 38 F1)."""


def claim_evaluation(traces_dir: Path, run_id: str, thread: str | None, meta: dict[str, object] | None = None) -> None:
    """Claim the run id of an evaluation about to record under `traces_dir` for the graph thread
    `thread` (runs/traces/<run>.claim holds its id). RunIdTaken when another thread, or a run without
    a checkpointer, claimed it, or when an evaluation recorded under it before claims were made: a
    second run would append its cases to the first one's trace and add a second result under the
    same id, and `report`, `--rejudge` and `judge label` find runs by id. The same thread passes: a
    resumed run, and an evolve run's validation re-run after a crash (it runs in its parent's thread),
    unless the run recorded under the id evaluated other sides than `meta` says (the thread given new
    input: a new run, which needs a new id)."""
    from skillforge.evolution.preflight import thread_owner
    from skillforge.journal import AGAIN
    from skillforge.safewrite import claim_file

    claim = traces_dir / f"{require_id(IdKind.RUN, run_id)}.claim"
    recorded = [p.name for p in (traces_dir / f"{run_id}.jsonl", traces_dir / f"{run_id}.meta.json") if p.exists()]
    held = ("a run recorded before claims" if recorded and not claim.exists()
            else claim_file(claim, thread_owner(thread), AGAIN))
    if held is None and meta is not None and (other := _other_sides(traces_dir / f"{run_id}.meta.json", meta)):
        held = f"this thread's finished run, which evaluated another {other}"
    if held is not None:
        raise RunIdTaken(f"run id '{run_id}' was already used by an evaluation in this workspace "
                         f"({held[:80] or 'a run starting now'}; {traces_dir / f'{run_id}.jsonl'}): a new run needs "
                         "an id of its own (skillforge's runs get a fresh one; give another run_id). "
                         "This evaluation was not run.")


def _other_sides(path: Path, meta: dict[str, object]) -> str:
    """The first of SIDES whose value the recorded run's meta file at `path` holds differently from
    `meta` ("" when there is no such file, or every one is the same)."""
    stored = _stored_meta(path)
    given = json.loads(json.dumps(meta, ensure_ascii=False, default=str))
    return next((k for k in SIDES if stored is not None and stored.get(k) != given.get(k)), "")


def _stored_meta(path: Path) -> dict | None:
    """The meta file at `path` as a dict; None when it is missing or unreadable."""
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return stored if isinstance(stored, dict) else None


def was_recorded(path: Path) -> bool:
    """Whether the run whose meta file is `path` has its line in runs/evaluations.jsonl: its meta says
    `recorded` (a meta from before the key was written only after the line: recorded)."""
    stored = _stored_meta(path)
    return stored is not None and stored.get("recorded", True) is True


def write_meta(traces_dir: Path, meta: dict) -> None:
    """runs/traces/<run_id>.meta.json: what --rejudge needs besides the traces."""
    from skillforge.safewrite import write_text_atomic  # a full disk is NotWritable, not an internal error

    write_text_atomic(traces_dir / f"{meta['run_id']}.meta.json", json.dumps(meta, ensure_ascii=False))


__all__ = ["StoredRunError", "claim_evaluation", "coverage", "read_case_outputs", "read_meta", "was_recorded",
           "write_meta"]
