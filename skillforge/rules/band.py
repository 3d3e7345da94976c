"""The unsure band a router model decides: where the embed layer's own cut is least sure.

Calibrated without an LLM, HIGH and LOW may meet: every query is answered or rejected by the embed
layer and a configured router model is never asked (`route calibrate` on the example skills set
HIGH = LOW = 0.934, so "summarize the notes from today's standup" came back NONE although its skill
ranked first). With a router model the cascade uses the band (`RouteThresholds.llm_high/llm_low`),
widened around the cut until it holds BAND_SHARE of the calibration cases. What the band is worth
is measured by `route eval` (`llm_band`: the model's right answers against the ranking's top-1 or
NONE on the same cases). Pure functions (numpy only), no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from skillforge.rules.thresholds import UNSCORED, EmbedCase, class_weights

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
