"""Judge calibration decisions. Pure: ids and fingerprints of golden pairs and judges, and what the
gate may do with each judged dimension given a calibration record (state/calibration.py).

- A dimension whose calibrated Cohen's kappa is below ``KAPPA_FLOOR`` or whose agreement with the
  person is below ``AGREEMENT_FLOOR`` is REPORTED: measured and shown, never a WIN, never a veto.
- With no record for the judge's fingerprint every judged dimension is UNCALIBRATED: gated as
  before, and the result says so.

The floors are code on purpose: nothing an evolution loop writes can change them.

The second half measures a judge against the person (`judge calibrate`): Cohen's kappa over the
three choices A / B / tie, raw agreement, their 95 % intervals, position bias and flip rates, from
the raw single-order labels of each golden pair (`PairRuns`). Deterministic: the bootstrap draws
from a fixed seed.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from skillforge.rules.pairwise import combine_orders
from skillforge.state.calibration import HUMAN_DIMENSIONS, CalibrationRecord, DimensionCalibration, DimensionStatus
from skillforge.state.evaluate import PairVerdict

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


# ---- the judge measured against the person ---------------------------------------------------
CHOICES = ("A", "B", "tie")
"""The three categories of kappa, in the person's frame (A: the answer the person saw first)."""
Z95 = 1.959963984540054
"""The normal quantile of a two-sided 95 % interval."""
BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 25
"""Kappa's interval resamples golden pairs from this fixed seed: the same judgements, the same interval."""
MAX_INVALID_SHARE = 0.20
"""More than this share of a dimension's (pair, repeat) judgements failed: REPORTED, whatever kappa."""
NO_INTERVAL = (-1.0, 1.0)
"""Kappa's interval when fewer than two pairs were judged: nothing is known."""

Confusion = tuple[int, ...]
"""3 x 3 counts, row-major: row = the person's choice, column = the judge's (CHOICES order)."""


@dataclass(frozen=True)
class PairRuns:
    """One golden pair re-judged K times in both orders: the person's choices, and the judge's raw
    labels per repeat with the person's A shown first (`a_first`) and with their B shown first
    (`b_first`). None: that judgement failed (it is invalid, never agreement)."""

    person: Mapping[str, str]
    a_first: tuple[Mapping[str, str] | None, ...]
    b_first: tuple[Mapping[str, str] | None, ...]


def wilson_interval(p: float, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion `p` observed on `n` independent trials ((0, 1) for none)."""
    if n <= 0:
        return 0.0, 1.0
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(max(p * (1 - p), 0.0) / n + z * z / (4 * n * n)) / denom
    # the bounds are exactly 0 / 1 at p = 0 / 1 (floating point would say 0.9999999999999999)
    return (0.0 if p <= 0.0 else max(0.0, centre - half)), (1.0 if p >= 1.0 else min(1.0, centre + half))


def confusion(pairs: Iterable[tuple[str, str]]) -> Confusion:
    """The confusion counts of (person, judge) choices; a choice outside CHOICES is not counted."""
    counts = [0] * 9
    for person, judge in pairs:
        if person in CHOICES and judge in CHOICES:
            counts[3 * CHOICES.index(person) + CHOICES.index(judge)] += 1
    return tuple(counts)


def kappa_of(counts: Confusion) -> float:
    """Cohen's kappa of confusion counts: (p_o - p_e) / (1 - p_e).

    Defined as 0.0 where the formula is 0/0 or empty: no judgement, or an expected agreement of 1
    (person and judge each used one and the same choice on every pair, say all ties). Such a judge
    is indistinguishable from a constant one, so it shows no skill beyond chance and cannot gate."""
    n = sum(counts)
    if n == 0:
        return 0.0
    observed = sum(counts[4 * i] for i in range(3)) / n
    rows = [sum(counts[3 * i:3 * i + 3]) for i in range(3)]
    cols = [sum(counts[i::3]) for i in range(3)]
    expected = sum(r * c for r, c in zip(rows, cols, strict=True)) / (n * n)
    if expected >= 1.0:
        return 0.0
    return (observed - expected) / (1.0 - expected)


def cohen_kappa(person: Sequence[str], judge: Sequence[str]) -> float:
    """Cohen's kappa of two raters over A / B / tie (see kappa_of for the undefined cases)."""
    return kappa_of(confusion(zip(person, judge, strict=True)))


def _add(one: Confusion, two: Confusion) -> Confusion:
    return tuple(a + b for a, b in zip(one, two, strict=True))


def kappa_interval(groups: Sequence[Sequence[tuple[str, str]]], *, resamples: int = BOOTSTRAP_RESAMPLES,
                   seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
    """Kappa's 95 % percentile-bootstrap interval, resampling golden pairs (a group: one pair's
    (person, judge) choices over its repeats, which are not independent) with replacement from a
    fixed seed. NO_INTERVAL with fewer than two pairs that have a judgement."""
    mats = [confusion(g) for g in groups if g]
    if len(mats) < 2:
        return NO_INTERVAL
    rng = random.Random(seed)
    zero: Confusion = (0,) * 9
    stats = []
    for _ in range(resamples):
        total = zero
        for _ in range(len(mats)):
            total = _add(total, mats[rng.randrange(len(mats))])
        stats.append(kappa_of(total))
    stats.sort()
    lo = stats[math.floor(0.025 * resamples)]
    hi = stats[math.ceil(0.975 * resamples) - 1]
    return lo, hi


def calibrated_status(kappa: float, kappa_ci: tuple[float, float], agreement: float, judgements: int,
                      invalid: int) -> DimensionStatus:
    """A measured dimension's status: GATED only when `dimension_status` says so, the judge is
    better than chance with 95 % confidence (kappa's interval lies above 0: a handful of lucky
    pairs cannot gate) and at most MAX_INVALID_SHARE of its judgements failed; else REPORTED."""
    attempted = judgements + invalid
    if judgements == 0 or invalid / attempted > MAX_INVALID_SHARE or kappa_ci[0] <= 0.0:
        return DimensionStatus.REPORTED
    return dimension_status(kappa, agreement)


_PERSON_FRAME = {PairVerdict.BASELINE: "A", PairVerdict.CANDIDATE: "B", PairVerdict.TIE: "tie"}


def both_orders(a_first: Mapping[str, str], b_first: Mapping[str, str], dim: str) -> tuple[str | None, bool]:
    """(the judge's choice in the person's frame, flipped) for one repeat of a pair, with
    rules.pairwise.combine_orders' semantics (the person's A is its baseline): orders that agree
    give their winner; orders that disagree on the sided winner give a tie and count as a flip.
    (None, False) when either order has no valid label for `dim`."""
    one, two = a_first.get(dim), b_first.get(dim)
    if one not in CHOICES or two not in CHOICES:
        return None, False
    verdict = combine_orders({dim: one}, {dim: two})[0][dim]
    choice = _PERSON_FRAME[verdict]
    return choice, choice == "tie" and not (one == "tie" and two == "tie")


def calibrate_dimension(dim: str, runs: Sequence[PairRuns]) -> DimensionCalibration:
    """The judge against the person on `dim`, over every pair the person labelled on it.

    - agreement / kappa: over the valid (pair, repeat) both-order choices; agreement's interval is
      Wilson's with n = the pairs judged (repeats of a pair are not independent: conservative);
      kappa's is the pair bootstrap (kappa_interval);
    - position bias: share of valid single-order A/B labels that chose the answer shown first,
      Wilson interval with n = the pairs that gave one;
    - flip rate between orders: share of valid (pair, repeat) that `both_orders` calls flipped;
    - flip rate across repeats: share of (pair, order) with >= 2 valid repeats whose label changed;
    - invalid: (pair, repeat) with a failed judgement in either order (never agreement)."""
    groups: list[list[tuple[str, str]]] = []
    invalid = flips = first_shown = sided = bias_pairs = changed = repeat_units = 0
    for run in runs:
        person = run.person.get(dim)
        if person not in CHOICES:
            continue
        group = []
        for one, two in zip(run.a_first, run.b_first, strict=True):
            choice, flipped = both_orders(one, two, dim) if one is not None and two is not None else (None, False)
            if choice is None:
                invalid += 1
                continue
            group.append((person, choice))
            flips += flipped
        groups.append(group)
        picks = [j[dim] for j in (*run.a_first, *run.b_first) if j is not None and j.get(dim) in ("A", "B")]
        first_shown, sided, bias_pairs = first_shown + picks.count("A"), sided + len(picks), bias_pairs + bool(picks)
        for order in (run.a_first, run.b_first):
            seen = [j[dim] for j in order if j is not None and j.get(dim) in CHOICES]
            if len(seen) >= 2:
                repeat_units += 1
                changed += len(set(seen)) > 1
    pairs_judged = sum(1 for g in groups if g)
    judged = [x for g in groups for x in g]
    agreement = sum(p == j for p, j in judged) / len(judged) if judged else 0.0
    kappa, kappa_ci = kappa_of(confusion(judged)), kappa_interval(groups)
    bias = first_shown / sided if sided else None
    return DimensionCalibration(
        dimension=dim, pairs=len(groups), judgements=len(judged), agreement=agreement,
        agreement_ci=wilson_interval(agreement, pairs_judged), kappa=kappa, kappa_ci=kappa_ci,
        position_bias=bias, position_bias_ci=None if bias is None else wilson_interval(bias, bias_pairs),
        flip_rate_orders=flips / len(judged) if judged else 0.0,
        flip_rate_repeats=changed / repeat_units if repeat_units else 0.0, invalid=invalid,
        status=calibrated_status(kappa, kappa_ci, agreement, len(judged), invalid))


def calibrate_dimensions(runs: Sequence[PairRuns]) -> dict[str, DimensionCalibration]:
    """`calibrate_dimension` for each human-labelled dimension that at least one pair has a label on."""
    return {d: calibrate_dimension(d, runs) for d in HUMAN_DIMENSIONS
            if any(r.person.get(d) in CHOICES for r in runs)}


def self_preference(judge: tuple[str | None, str | None],
                    roles: Mapping[str, tuple[str | None, str | None]]) -> dict[str, bool]:
    """Role -> whether the judge is that role's model (the same (server, model) key, a model set;
    RoleConfig.model_key): a model grading its own answers or proposals is biased towards them."""
    return {role: judge[1] is not None and identity == judge for role, identity in roles.items()}


def judge_changes(record: CalibrationRecord, model: str | None, endpoint: str | None, prompt_sha: str,
                  rubric_sha: str) -> list[str]:
    """What differs between the judge a record was made for and the judge now, in words
    ("model X -> Y", "endpoint changed (X -> Y)", "prompt changed", "rubric changed")."""
    changes = []
    if record.model != model:
        changes.append(f"model {record.model or '(none)'} → {model or '(none)'}")
    if (record.endpoint or "").rstrip("/") != (endpoint or "").rstrip("/"):
        changes.append(f"endpoint changed ({record.endpoint or '(none)'} → {endpoint or '(none)'})")
    if record.prompt_sha != prompt_sha:
        changes.append("prompt changed")
    if record.rubric_sha != rubric_sha:
        changes.append("rubric changed")
    return changes
