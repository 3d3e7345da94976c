"""The unsure band a router model decides: where the embed layer's own cut is least sure.

Calibrated without an LLM, HIGH and LOW may meet: every query is answered or rejected by the embed
layer and a configured router model is never asked (`route calibrate` on the example skills set
HIGH = LOW = 0.934, so "summarize the notes from today's standup" came back NONE although its skill
ranked first). With a router model the cascade uses the band (`RouteThresholds.llm_high/llm_low`),
widened around the cut until it holds BAND_SHARE of the calibration cases. What the band is worth
is measured by `route eval` (`llm_band`: the model's right answers against the ranking's top-1 or
NONE on the same cases).

The band's NONE guard (head scorer): a router model may answer a skill from the band only when the
head gives that skill at least `ratio` times what it leaves for NONE. `none_ratio` sets the ratio
for the worst model, one that answers a skill for every query it is asked, so that the NONE
queries' rejection with any router model stays within NONE_SLACK of the rate calibrated without
one (or at the asked minimum). Measured on MetaTool's 199 tools with the embedded 1.5B model, which
answered NONE once in 67 band queries: without the guard the band cut NONE rejected from 96 to
73 % (benchmarks/README.md). Pure functions (numpy only), no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from skillforge.rules.thresholds import (
    UNSCORED,
    EmbedCase,
    EmbedVerdict,
    class_weights,
    embed_decision,
)

NONE_SLACK = 0.05
"""With a router model, NONE rejected may fall this far below the rate calibrated without one (at
worst: every query in the band answered), and no further."""
BAND_SHARE = 0.30
"""With a router model, at least this share of the calibration cases (the two classes weighed
equally) falls between LOW and HIGH and goes to the model: the cases nearest the no-LLM cut."""


def _weighted_cdf(values: np.ndarray, weights: np.ndarray, x: float) -> float:
    return float(weights[values < x].sum() / weights.sum())


def _weighted_quantile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    order = np.argsort(values)
    v, cw = values[order], np.cumsum(weights[order])
    return float(v[min(int(np.searchsorted(cw, q * cw[-1])), len(v) - 1)])


def unsure_band(top1: np.ndarray, weights: np.ndarray, high: float, low: float,
                share: float = BAND_SHARE) -> tuple[float, float]:
    """(high', low') with low' <= low <= high <= high', widened (half below LOW, half above HIGH,
    the rest on the other side at an end) until `share` of the cases' weight lies in [low', high'),
    the unsure band a router model decides. Unchanged when the band already holds that share."""
    top1, weights = np.asarray(top1, dtype=float), np.asarray(weights, dtype=float)
    if top1.size == 0 or weights.sum() <= 0 or share <= 0:
        return high, low
    f_low, f_high = _weighted_cdf(top1, weights, low), _weighted_cdf(top1, weights, high)
    need = share - (f_high - f_low)
    if need <= 0:
        return high, low
    down = min(need / 2, f_low)
    up = min(need - down, 1.0 - f_high)
    down = min(need - up, f_low)
    new_low = _weighted_quantile(top1, weights, f_low - down) if down > 0 else low
    new_high = _weighted_quantile(top1, weights, f_high + up) + 1e-6 if up > 0 else high
    return max(high, new_high), min(low, new_low)


def band_for(cases: Sequence[EmbedCase], high: float, low: float, share: float = BAND_SHARE) -> tuple[float, float]:
    """`unsure_band` over the cases the embed layer sees (rule answers left out), classes weighed equally."""
    free = [c for c in cases if c.rule_answer is None and c.top1 > UNSCORED]
    if not free:
        return high, low
    w = class_weights(np.array([c.in_scope for c in free], dtype=bool), np.array([c.weight for c in free]))
    return unsure_band(np.array([c.top1 for c in free]), w, high, low, share)


def guard_allows(p_skill: float, none_share: float | None, ratio: float | None) -> bool:
    """May the band answer a skill of head probability `p_skill`? Always without a guard or a NONE
    share (the cosine scorer); else only at `ratio` times the NONE share or more."""
    return ratio is None or none_share is None or p_skill >= ratio * none_share


def none_ratio(cases: Sequence[EmbedCase], llm_high: float, llm_low: float, margin: float,
               target: float) -> float | None:
    """The smallest ratio at which the NONE cases' rejection (classes weighed equally, as
    `operating_point` does) reaches `target` if the router model answered a skill for every query it
    is asked: a query in the band is asked only when its top skill clears `guard_allows`. 0.0 when
    the target holds whatever the model answers; just above every band NONE case's ratio when even
    that misses it (the most the guard can do); None when a case the embed layer sees has no NONE
    share (the cosine scorer) or there is no NONE case."""
    if any(c.none_share is None for c in cases if c.rule_answer is None and c.top1 > UNSCORED):
        return None
    w = class_weights(np.array([c.in_scope for c in cases], dtype=bool), np.array([c.weight for c in cases]))
    total = sum(wi for c, wi in zip(cases, w, strict=True) if not c.in_scope)
    if total <= 0:
        return None
    rejected, band = 0.0, []
    for c, wi in zip(cases, w, strict=True):
        if c.in_scope or c.rule_answer is not None:  # a keyword answer is an answer, whatever the band does
            continue
        verdict = embed_decision(c.top1, c.top2, llm_high, llm_low, margin)
        if verdict is EmbedVerdict.REJECT:
            rejected += wi
        elif verdict is EmbedVerdict.UNSURE:
            ns = c.none_share or 0.0
            band.append((c.top1 / ns if ns > 0 else float("inf"), wi))
    need = target * total - rejected  # the band weight the guard must reject
    if need <= 1e-9:
        return 0.0
    finite = sorted((r, wi) for r, wi in band if np.isfinite(r))
    taken = 0.0
    for ratio, wi in finite:
        taken += wi
        if taken >= need - 1e-9:
            return _above(ratio)
    return _above(finite[-1][0]) if finite else 0.0


def _above(ratio: float) -> float:
    """A ratio that guards a case of exactly `ratio` (top1 / NONE share) whatever the rounding."""
    return ratio * (1 + 1e-9)
