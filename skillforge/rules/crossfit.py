"""Cross-fitted operating point of the route thresholds: how they do on queries they were not fitted to.

A calibration fitted on 11 NONE queries rejected 90.9 % of them and 50 % of a held-back set. The
rate it reports on its own cases is therefore not a promise. Here the calibration is repeated k
times, each time without one fold of the cases, and each fold is decided by thresholds that never
saw it. The pooled held-out decisions give the rates, each with a 95 % Wilson interval.

Folds keep like with like apart: in-scope queries are dealt round-robin after a seeded shuffle;
the NONE queries of one `fold_group` (a kind and language of the shipped bank: chit-chat in
Chinese, near-misses in English, ...) stay in one fold, so a fold's rejections measure a kind of
query its thresholds have not seen, the way a user's new queries are. A workspace's own negatives
are each their own group.

`holding_target`: with `--min-reject R`, the in-sample floor that makes the held-out rejection
reach R (the smallest found by bisection over [R, 1]). Pure functions (numpy only), no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from skillforge.rules.calibration import wilson_interval
from skillforge.rules.thresholds import EmbedCase, calibrate_embed

FOLDS = 5
BISECT_STEPS = 4
"""Bisection steps of `holding_target` (a resolution of (1 - R) / 16)."""


@dataclass(frozen=True)
class Rate:
    """hits of n, with a 95 % Wilson interval."""

    hits: int
    n: int

    @property
    def share(self) -> float | None:
        return self.hits / self.n if self.n else None

    def summary(self) -> dict[str, object]:
        if not self.n:
            return {"share": None, "n": 0}
        low, high = wilson_interval(self.hits / self.n, self.n)
        return {"share": round(self.hits / self.n, 4), "ci95": [round(low, 4), round(high, 4)], "n": self.n}


@dataclass(frozen=True)
class HeldOut:
    """Pooled decisions of thresholds fitted without the case's fold (rule + embed layers, no LLM)."""

    answered_right: Rate
    rejected_own: Rate
    """The workspace's labelled NONE queries left unanswered..."""
    rejected_bank: Rate
    """...and the shipped bank's."""
    folds: int

    @property
    def rejected_min(self) -> float | None:
        """The lower of the two sources' rejection (each must hold a floor)."""
        shares = [r.share for r in (self.rejected_own, self.rejected_bank) if r.share is not None]
        return min(shares) if shares else None

    def summary(self) -> dict[str, object]:
        return {"folds": self.folds, "answered_right": self.answered_right.summary(),
                "rejected_own": self.rejected_own.summary(), "rejected_bank": self.rejected_bank.summary()}


def assign_folds(in_scope: Sequence[bool], groups: Sequence[str], folds: int, seed: int = 0) -> np.ndarray:
    """Fold of each case: in-scope cases shuffled and dealt round-robin; NONE cases by group (a
    non-empty group stays together, largest groups first onto the emptiest fold; "" is a case of
    its own)."""
    rng = np.random.default_rng(seed)
    out = np.zeros(len(in_scope), dtype=np.int64)
    ins = [i for i, v in enumerate(in_scope) if v]
    for j, i in enumerate(rng.permutation(ins).tolist() if ins else []):
        out[i] = j % folds
    members: dict[str, list[int]] = {}
    for i, (v, g) in enumerate(zip(in_scope, groups, strict=True)):
        if not v:
            members.setdefault(g or f"#{i}", []).append(i)
    keys = list(members)
    order = [keys[k] for k in rng.permutation(len(keys))] if keys else []
    order.sort(key=lambda g: -len(members[g]))  # stable: ties keep the shuffled order
    load = np.zeros(folds)
    for g in order:
        f = int(np.argmin(load))
        out[members[g]] = f
        load[f] += len(members[g])
    return out


def _decide(case: EmbedCase, high: float, low: float, margin: float) -> tuple[bool, bool]:
    """(answered, answered right) for one case at one setting."""
    if case.rule_answer is not None:
        return True, bool(case.rule_answer)
    accepted = case.top1 >= low and case.top1 >= high and case.top1 - case.top2 >= margin
    return accepted, accepted and case.top1_correct


def cross_fitted(cases: Sequence[EmbedCase], defaults: tuple[float, float, float], *, folds: int = FOLDS,
                 seed: int = 0, min_reject: float | None = None,
                 calibrate: Callable[..., tuple[float, float, float, float]] = calibrate_embed) -> HeldOut | None:
    """Held-out rates of `calibrate` (calibrate_embed) with `min_reject`; None when there are fewer
    than two in-scope cases or two NONE groups (nothing to hold out)."""
    fold = assign_folds([c.in_scope for c in cases], [c.fold_group for c in cases], folds, seed)
    n_in = sum(c.in_scope for c in cases)
    if n_in < 2 or len({int(fold[i]) for i, c in enumerate(cases) if not c.in_scope}) < 2:
        return None
    right = own_rej = own_n = bank_rej = bank_n = 0
    used = 0
    for f in range(folds):
        test = [i for i in range(len(cases)) if fold[i] == f]
        if not test:
            continue
        used += 1
        train = [cases[i] for i in range(len(cases)) if fold[i] != f]
        high, low, margin, _ = calibrate(train, defaults, min_reject=min_reject)
        for i in test:
            answered, ok = _decide(cases[i], high, low, margin)
            if cases[i].in_scope:
                right += ok
            elif cases[i].group == "bank":
                bank_n += 1
                bank_rej += not answered
            else:
                own_n += 1
                own_rej += not answered
    return HeldOut(Rate(right, n_in), Rate(own_rej, own_n), Rate(bank_rej, bank_n), used)


def holding_target(cases: Sequence[EmbedCase], defaults: tuple[float, float, float], target: float, *,
                   folds: int = FOLDS, seed: int = 0, steps: int = BISECT_STEPS,
                   calibrate: Callable[..., tuple[float, float, float, float]] = calibrate_embed
                   ) -> tuple[float, HeldOut | None]:
    """(in-sample floor, its held-out rates): the smallest floor in [target, 1] (bisection) whose
    held-out rejection, in each source, reaches `target`; 1.0 if none does; `target` itself when
    nothing can be held out."""
    first = cross_fitted(cases, defaults, folds=folds, seed=seed, min_reject=target, calibrate=calibrate)
    if first is None or (first.rejected_min or 0.0) >= target - 1e-9:
        return target, first
    lo, hi = target, 1.0
    best = cross_fitted(cases, defaults, folds=folds, seed=seed, min_reject=hi, calibrate=calibrate)
    for _ in range(steps):
        mid = (lo + hi) / 2
        point = cross_fitted(cases, defaults, folds=folds, seed=seed, min_reject=mid, calibrate=calibrate)
        if point is not None and (point.rejected_min or 0.0) >= target - 1e-9:
            hi, best = mid, point
        else:
            lo = mid
    return hi, best


Z_ONE_SIDED_95 = 1.6449
"""A one-sided 95 % bound."""


def decision_rate(cases: Sequence[EmbedCase], high: float, low: float, margin: float) -> Rate:
    """Right decisions of the rule + embed layers (no LLM) at one setting: an in-scope case answered
    with its skill, a NONE case left unanswered."""
    hits = 0
    for c in cases:
        answered, ok = _decide(c, high, low, margin)
        hits += ok if c.in_scope else not answered
    return Rate(hits, len(cases))


def held_out_decisions(held: dict[str, object] | None) -> Rate | None:
    """The same count from a calibration's `held_out` summary, on the labelled cases only (in-scope
    answered right plus own NONE rejected; the bank left out); None when nothing was held out."""
    if not held:
        return None
    hits = n = 0
    for key in ("answered_right", "rejected_own"):
        part = held.get(key) or {}
        k, share = int(part.get("n") or 0), part.get("share")  # type: ignore[union-attr]
        if k and share is not None:
            hits += round(float(share) * k)
            n += k
    return Rate(hits, n) if n else None


@dataclass(frozen=True)
class Replacement:
    """The router in use against the one that would replace it, on the same labelled cases."""

    current: Rate
    new: Rate
    upper: float
    """One-sided 95 % upper bound of new share - current share (Newcombe's hybrid score interval
    from the two Wilson intervals; unpaired, so cautious for two routers scored on the same cases)."""

    @property
    def worse(self) -> bool:
        """The new router is clearly worse: even the upper bound of the difference is below 0."""
        return self.upper < 0


def compare_routers(current: Rate, new: Rate, z: float = Z_ONE_SIDED_95) -> Replacement:
    """`Replacement` of `current` by `new` (both with n > 0)."""
    p_cur, p_new = current.hits / current.n, new.hits / new.n
    low_cur, _ = wilson_interval(p_cur, current.n, z)
    _, high_new = wilson_interval(p_new, new.n, z)
    upper = (p_new - p_cur) + float(np.sqrt((high_new - p_new) ** 2 + (p_cur - low_cur) ** 2))
    return Replacement(current, new, upper)
