"""Which endpoint decides a run: the judge's, or the objective checks when the judge is noise. Pure.

Every evaluation judges each case in both orders and counts a *flip* when the two orders disagree on
`overall` (rules/pairwise.py). The flip rate over the cases the judge saw measures the judge on this
run: a coin gives about 0.5 (0.67 with ties), a consistent judge 0.

- **Reliable judge** (flip rate below ``JUDGE_NOISE_FLIP_RATE``, or no case judged): nothing
  changes. The primary endpoint is the effect score (``rules.paired.PRIMARY``) and every gated
  dimension may veto.
- **Noisy judge** (flip rate at or above ``JUDGE_NOISE_FLIP_RATE``): the dimensions the judge scores
  (``JUDGE_DEPENDENT``: task, robustness, readability and the effect score, their mean) are still
  measured and reported, but they do not decide: their LOSS does not decline, their WIN is not the
  improvement. The primary endpoint becomes ``OBJECTIVE``: per case pass -> fail is a loss and
  fail -> pass a win, the same exact sign test (so fewer than ``rules.paired.min_cases()``
  discordant cases can never be a WIN). A no-op (the same objective outcomes on both sides) is then
  all ties: never a WIN, whatever the coin says.

- **Judge below a calibration floor** (``ungated``: the dimensions of task, robustness and readability
  a calibration against a person put below ``rules.calibration.KAPPA_FLOOR`` or ``AGREEMENT_FLOOR``):
  those dimensions are reported and do not decide, and since the effect score is their mean with
  efficiency, neither does it: the primary endpoint is ``OBJECTIVE`` whatever the flip rate. The
  other calibrated dimensions still decide. With a noisy judge too, the noisy-judge rule (every
  judged dimension reported) holds and the reason says both. No ungated dimension: nothing changes.

The threshold is code on purpose: nothing an evolution loop writes can change it.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from fractions import Fraction

from skillforge.rules.paired import PRIMARY
from skillforge.state.calibration import HUMAN_DIMENSIONS

JUDGE_NOISE_FLIP_RATE = 0.30
"""A run whose judge flip rate is at or above this has a noisy judge: the judged dimensions do not decide."""
OBJECTIVE = "objective"
"""The primary endpoint under a noisy judge: the objective checks, pass -> fail / fail -> pass per case."""
JUDGE_DEPENDENT = ("task", "robustness", "readability", PRIMARY)
"""Dimensions whose score comes (in whole or in part) from the judge; efficiency (tokens) and the
objective pass rate do not."""


@dataclass(frozen=True)
class Endpoint:
    """The primary endpoint of one run, and why."""

    primary: str
    """The dimension whose outcome is `improvement` (and is tested first for a WIN)."""
    judge_decides: bool
    """False when the judge is noise: the JUDGE_DEPENDENT dimensions are reported only."""
    flips: int
    judged: int
    """Valid cases the judge was asked on in both orders (the flip rate's denominator)."""
    reason: str
    """One line, e.g. 'primary: objective (judge flip rate 0.45 ≥ 0.30, 9 of 20 judged cases flipped)'."""
    ungated: tuple[str, ...] = ()
    """The calibrated dimensions (of HUMAN_DIMENSIONS) a calibration put below a floor, in that order."""

    @property
    def flip_rate(self) -> float | None:
        """flips / judged; None when no case was judged."""
        return self.flips / self.judged if self.judged else None

    @property
    def undecided(self) -> tuple[str, ...]:
        """The dimensions that are reported but may not decide on this run: every judged one under a
        noisy judge; else the ungated ones and the effect score (their mean) when there are any."""
        if not self.judge_decides:
            return JUDGE_DEPENDENT
        return tuple(d for d in JUDGE_DEPENDENT if d in self.ungated or d == PRIMARY) if self.ungated else ()


def primary_endpoint(flips: int, judged: int, *, threshold: float = JUDGE_NOISE_FLIP_RATE,
                     ungated: Mapping[str, str] | Collection[str] = ()) -> Endpoint:
    """The run's primary endpoint from its judge flips over the cases judged in both orders: the
    objective checks when flips / judged >= `threshold` (compared exactly, so 3 of 10 at 0.30 is
    noise), else the effect score. No case judged: the judge decided nothing, the effect score stays.
    `ungated`: the calibrated dimensions below a calibration floor (a mapping gives each one's why,
    e.g. 'κ 0.02 < 0.40', for the reason): they and the effect score do not decide, and the primary
    endpoint is the objective checks. ValueError for a dimension outside HUMAN_DIMENSIONS."""
    if flips < 0 or judged < 0 or flips > judged:
        raise ValueError(f"flips must be in [0, judged], got {flips} of {judged}")
    notes = dict(ungated) if isinstance(ungated, Mapping) else dict.fromkeys(ungated, "")
    unknown = sorted(set(notes) - set(HUMAN_DIMENSIONS))
    if unknown:
        raise ValueError(f"only {', '.join(HUMAN_DIMENSIONS)} can be below a calibration floor, got {unknown}")
    noisy, rate = _flip_rate(flips, judged, threshold)
    below = tuple(d for d in HUMAN_DIMENSIONS if d in notes)
    floor = f"judge below calibration floor on {_listed(below, notes)}"
    if noisy:
        reason = (f"primary: {OBJECTIVE} ({rate}); the judged dimensions ({', '.join(JUDGE_DEPENDENT)})"
                  f"{_UNDECIDED}")
        return Endpoint(OBJECTIVE, False, flips, judged, f"{reason}; {floor}" if below else reason, below)
    if below:
        return Endpoint(OBJECTIVE, True, flips, judged, f"primary: {OBJECTIVE} ({floor}; {rate}); "
                        f"{', '.join((*below, PRIMARY))}{_UNDECIDED}", below)
    return Endpoint(PRIMARY, True, flips, judged, f"primary: {PRIMARY} ({rate})")


_UNDECIDED = " are reported and do not decide"


def undecided_in(reason: object) -> tuple[str, ...]:
    """The dimensions a recorded reason (an Endpoint.reason, stored as `primary_reason`) says are
    reported and do not decide, in JUDGE_DEPENDENT order: Endpoint.undecided read back from the
    line; () for a reason without that clause (the effect score decided), or not a string."""
    head, sep, _ = reason.partition(_UNDECIDED) if isinstance(reason, str) else ("", "", "")
    words = set(re.findall(r"[a-z_]+", head.rsplit("; ", 1)[-1])) if sep else set()
    return tuple(d for d in JUDGE_DEPENDENT if d in words)


def _flip_rate(flips: int, judged: int, threshold: float) -> tuple[bool, str]:
    """(noisy, how the flip rate reads in the reason): flips / judged >= `threshold`, exactly."""
    if judged == 0:
        return False, "no case was judged in both orders"
    noisy = Fraction(flips, judged) >= Fraction(str(threshold))
    return noisy, (f"judge flip rate {flips / judged:.2f} {'≥' if noisy else '<'} {threshold:.2f}, "
                   f"{flips} of {judged} judged cases flipped")


def _listed(dims: tuple[str, ...], notes: Mapping[str, str]) -> str:
    """'task, robustness: κ 0.02 < 0.40' when they share one why, else 'task (κ 0.02 < 0.40), readability'."""
    whys = {notes[d] for d in dims}
    if len(whys) == 1:
        why = whys.pop()
        return ", ".join(dims) + (f": {why}" if why else "")
    return ", ".join(f"{d} ({notes[d]})" if notes[d] else d for d in dims)


RELIABLE = Endpoint(PRIMARY, True, 0, 0, f"primary: {PRIMARY}")
"""The endpoint when no flip rate is given (a caller of the ratchet that predates this rule)."""
