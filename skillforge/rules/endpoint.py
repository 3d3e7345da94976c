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

The threshold is code on purpose: nothing an evolution loop writes can change it.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from skillforge.rules.paired import PRIMARY

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
    """One line, e.g. 'primary: objective (judge flip rate 0.45 ≥ 0.30, 9 of 20 judged cases)'."""

    @property
    def flip_rate(self) -> float | None:
        """flips / judged; None when no case was judged."""
        return self.flips / self.judged if self.judged else None

    @property
    def undecided(self) -> tuple[str, ...]:
        """The dimensions that are reported but may not decide on this run."""
        return () if self.judge_decides else JUDGE_DEPENDENT


def primary_endpoint(flips: int, judged: int, *, threshold: float = JUDGE_NOISE_FLIP_RATE) -> Endpoint:
    """The run's primary endpoint from its judge flips over the cases judged in both orders: the
    objective checks when flips / judged >= `threshold` (compared exactly, so 3 of 10 at 0.30 is
    noise), else the effect score. No case judged: the judge decided nothing, the effect score stays."""
    if flips < 0 or judged < 0 or flips > judged:
        raise ValueError(f"flips must be in [0, judged], got {flips} of {judged}")
    if judged == 0:
        return Endpoint(PRIMARY, True, 0, 0, f"primary: {PRIMARY} (no case was judged in both orders)")
    noisy = Fraction(flips, judged) >= Fraction(str(threshold))
    rate = f"judge flip rate {flips / judged:.2f} {'≥' if noisy else '<'} {threshold:.2f}, {flips} of {judged} judged cases"
    if noisy:
        return Endpoint(OBJECTIVE, False, flips, judged,
                        f"primary: {OBJECTIVE} ({rate}); the judged dimensions ({', '.join(JUDGE_DEPENDENT)}) "
                        "are reported and do not decide")
    return Endpoint(PRIMARY, True, flips, judged, f"primary: {PRIMARY} ({rate})")


RELIABLE = Endpoint(PRIMARY, True, 0, 0, f"primary: {PRIMARY}")
"""The endpoint when no flip rate is given (a caller of the ratchet that predates this rule)."""
