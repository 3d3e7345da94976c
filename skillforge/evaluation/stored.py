"""A stored evaluation run read back: runs/traces/<run>.meta.json (the skill, the set and both sides'
texts, written by runners/evaluate.py) and runs/traces/<run>.jsonl (one CaseResult a line; the last
line of a case wins, since a run can be rejudged more than once). `evaluate --rejudge` judges them
again (runners/rejudge.py); `judge label` shows their answers to a person (calibration/golden.py)."""

from __future__ import annotations

import json
import logging

from pydantic import ValidationError

from skillforge.config import Workspace
from skillforge.journal import json_lines
from skillforge.errors import SkillForgeError, UnknownRun
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


__all__ = ["StoredRunError", "coverage", "read_case_outputs", "read_meta"]
