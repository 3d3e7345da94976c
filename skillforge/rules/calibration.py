"""Judge calibration decisions. Pure: ids and fingerprints of golden pairs and judges, and what the
gate may do with each judged dimension given a calibration record (state/calibration.py).

- A dimension whose calibrated Cohen's kappa is below ``KAPPA_FLOOR`` or whose agreement with the
  person is below ``AGREEMENT_FLOOR`` is REPORTED: measured and shown, never a WIN, never a veto.
- With no record for the judge's fingerprint every judged dimension is UNCALIBRATED: gated as
  before, and the result says so.

The floors are code on purpose: nothing an evolution loop writes can change them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

from skillforge.state.calibration import HUMAN_DIMENSIONS, CalibrationRecord, DimensionStatus

KAPPA_FLOOR = 0.40
"""Cohen's kappa with the person at or above which a judged dimension may gate ("moderate" agreement)."""
AGREEMENT_FLOOR = 0.60
"""Raw agreement with the person at or above which a judged dimension may gate."""


def sha256_text(text: str) -> str:
    """sha256 hex of `text`'s UTF-8 bytes: an answer's content hash in a golden label."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def pair_id(skill: str, case_id: str, sha_a: str, sha_b: str) -> str:
    """A pair's stable id, the same whichever answer is shown first (so a pair is labelled once)."""
    one, two = sorted((sha_a, sha_b))
    return hashlib.sha256("\x1f".join((skill, case_id, one, two)).encode("utf-8")).hexdigest()[:16]


def judge_fingerprint(model: str | None, endpoint: str | None, prompt: str, rubric: str) -> str:
    """The judge's identity for calibration: model, endpoint, prompt text and rubric. Any change to
    one of them gives another fingerprint, so an earlier calibration record no longer applies."""
    blob = json.dumps({"model": model, "endpoint": (endpoint or "").rstrip("/"), "prompt": prompt,
                       "rubric": rubric}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def dimension_status(kappa: float, agreement: float) -> DimensionStatus:
    """GATED when both measures are at or above their floors, else REPORTED."""
    if kappa >= KAPPA_FLOOR and agreement >= AGREEMENT_FLOOR:
        return DimensionStatus.GATED
    return DimensionStatus.REPORTED


def dimension_statuses(record: CalibrationRecord | None, fingerprint: str) -> dict[str, DimensionStatus]:
    """What the gate may do with each human-labelled dimension on the judge with `fingerprint`: the
    record's statuses when it was made for that fingerprint, else UNCALIBRATED for each (a record of
    another fingerprint is stale). A dimension the record did not measure is UNCALIBRATED."""
    if record is None or record.fingerprint != fingerprint:
        return dict.fromkeys(HUMAN_DIMENSIONS, DimensionStatus.UNCALIBRATED)
    return {d: (record.dimensions[d].status if d in record.dimensions else DimensionStatus.UNCALIBRATED)
            for d in HUMAN_DIMENSIONS}


def ungated(statuses: Mapping[str, DimensionStatus]) -> frozenset[str]:
    """The dimensions that may not decide: those a calibration put below a floor."""
    return frozenset(d for d, s in statuses.items() if s is DimensionStatus.REPORTED)
