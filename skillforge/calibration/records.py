"""Calibration records: `runs/judge_calibration.jsonl`, one `CalibrationRecord` a line, appended by
`judge calibrate`; the latest line for a fingerprint is the one that applies. Also the configured
judge's fingerprint (rules.calibration.judge_fingerprint over its model, endpoint, prompt and rubric),
and `statuses_for`: what the gate may do with each judged dimension on that judge."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from skillforge.config import Workspace
from skillforge.journal import append_jsonl, read_jsonl
from skillforge.rules.calibration import (AGREEMENT_FLOOR, KAPPA_FLOOR, dimension_statuses, judge_changes,
                                          judge_fingerprint, sha256_text)
from skillforge.state.calibration import CalibrationRecord, DimensionCalibration, DimensionStatus
from skillforge.state.result import JudgeCalibration

if TYPE_CHECKING:
    from skillforge.llm.config import RoleConfig

log = logging.getLogger(__name__)
RECORDS = "judge_calibration.jsonl"


def records_path(ws: Workspace) -> Path:
    return ws.runs_dir / RECORDS


EMBEDDED_ENDPOINT = "embedded (skillforge llm serve)"
"""The endpoint a judge on the embedded server is fingerprinted with: that server listens on a new
port each time it starts, and a calibration must outlive a restart of the same model."""


def judge_identity(judge: RoleConfig) -> tuple[str | None, str | None]:
    """(endpoint, model) of a judge as its fingerprint sees it: the config's identity, with the
    embedded server's changing URL replaced by EMBEDDED_ENDPOINT."""
    from skillforge.llm.config import LOCAL_SOURCE
    endpoint, model = judge.identity
    return (EMBEDDED_ENDPOINT if judge.source == LOCAL_SOURCE else endpoint), model


def fingerprint_of(model: str | None, endpoint: str | None) -> tuple[str, str, str]:
    """(fingerprint, prompt_sha, rubric_sha) of a judge on `model` at `endpoint` with this code's
    prompt and rubric (evaluation/judge.py)."""
    from skillforge.evaluation.judge import judge_prompt_text, rubric_text
    prompt, rubric = judge_prompt_text(), rubric_text()
    return judge_fingerprint(model, endpoint, prompt, rubric), sha256_text(prompt), sha256_text(rubric)


def append_record(ws: Workspace, record: CalibrationRecord) -> None:
    append_jsonl(records_path(ws), record.model_dump(mode="json"), durable=True)


def all_records(ws: Workspace) -> list[CalibrationRecord]:
    """Every readable record, oldest first (an unreadable line is logged and skipped)."""
    path = records_path(ws)
    if not path.exists():
        return []
    out = []
    for n, line in enumerate(read_jsonl(path), 1):
        try:
            out.append(CalibrationRecord.model_validate(line))
        except ValidationError as e:
            log.warning("%s: line %d is not a calibration record (%s); skipped", path, n, str(e).splitlines()[0])
    return out


def statuses_for(ws: Workspace | None, judge: RoleConfig | None) -> JudgeCalibration:
    """What the gate may do with each judged dimension on the judge `judge` (the judge role's
    config: its fingerprint is over `judge_identity(judge)`, the code's prompt and rubric): the latest
    record for that fingerprint decides (rules.calibration.dimension_statuses); with none, or with no
    workspace or judge to look it up for, every dimension is UNCALIBRATED and the line says why."""
    if ws is None or judge is None:
        return JudgeCalibration.unknown("judge: uncalibrated (no workspace: no calibration record was looked up)")
    st = judge_status(ws, judge)
    record, fingerprint = st.record, st.fingerprint
    if record is None:
        stale = ""
        if st.previous is not None:
            stale = (f"; the newest record ({st.previous.created_at[:10]}, fingerprint {st.previous.fingerprint}) is "
                     f"for another judge ({'; '.join(st.changes)}) and does not apply")
        return JudgeCalibration.unknown(f"judge: uncalibrated (no calibration record for fingerprint {fingerprint}"
                                        f"{stale}; run `skillforge judge calibrate`)", fingerprint)
    notes = {d: _numbers(record.dimensions[d]) for d in st.statuses if d in record.dimensions}
    shown = ", ".join(f"{d} {s.value} {notes[d]}" if d in notes else f"{d} {s.value} (not measured)"
                      for d, s in st.statuses.items())
    return JudgeCalibration(fingerprint=fingerprint, calibrated_at=record.created_at, statuses=st.statuses,
                            notes=notes, line=f"judge: calibrated {record.created_at[:10]} (fingerprint {fingerprint}): {shown}")


def _numbers(dim: DimensionCalibration) -> str:
    """'κ 0.81' for a dimension at or above the floors; each floor it is below, e.g. 'κ 0.12 < 0.40'."""
    below = [f"{name} {value:.2f} < {floor:.2f}" for name, value, floor in
             (("κ", dim.kappa, KAPPA_FLOOR), ("agreement", dim.agreement, AGREEMENT_FLOOR)) if value < floor]
    return ", ".join(below) or f"κ {dim.kappa:.2f}"


@dataclass(frozen=True)
class JudgeStatus:
    """The configured judge and its calibration: `state` is "calibrated" (a record for its
    fingerprint), "stale" (records exist, none for this judge: `previous` is the newest, `changes`
    what differs) or "uncalibrated" (no record at all)."""

    configured: bool
    model: str | None
    endpoint: str | None
    fingerprint: str
    prompt_sha: str
    rubric_sha: str
    state: str
    record: CalibrationRecord | None = None
    previous: CalibrationRecord | None = None
    changes: list[str] = field(default_factory=list)
    statuses: dict[str, DimensionStatus] = field(default_factory=dict)
    """What the gate may do with each judged dimension on this judge (rules.dimension_statuses)."""


def judge_status(ws: Workspace, cfg: RoleConfig | None = None) -> JudgeStatus:
    """The judge's fingerprint (`cfg`, else the workspace's judge role) and whether a calibration
    record applies to it; the records file is read once."""
    if cfg is None:
        from skillforge.llm.config import workspace_configs
        from skillforge.state.llm import Role
        cfg = workspace_configs(ws)[Role.JUDGE]
    endpoint, model = judge_identity(cfg)
    fingerprint, prompt_sha, rubric_sha = fingerprint_of(model, endpoint)
    records = all_records(ws)
    record = next((r for r in reversed(records) if r.fingerprint == fingerprint), None)
    previous = records[-1] if record is None and records else None
    state = "calibrated" if record is not None else "stale" if previous is not None else "uncalibrated"
    changes = judge_changes(previous, model, endpoint, prompt_sha, rubric_sha) if previous is not None else []
    if previous is not None and not changes:
        changes = ["fingerprint changed"]
    return JudgeStatus(cfg.configured, model, endpoint, fingerprint, prompt_sha, rubric_sha, state, record, previous,
                       changes, dimension_statuses(record, fingerprint))
