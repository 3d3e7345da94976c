"""`route eval`: metrics of routing decisions against labelled queries (a stable JSON contract)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from skillforge.routing.fit import LabelledQuery
from skillforge.rules.thresholds import UNSCORED, EmbedCase, operating_curve
from skillforge.state.route import HitLayer, RouteState

WORST_CONFUSIONS = 10


def top3(state: RouteState) -> list[str]:
    """The chosen skill first, then the embed ranking, then the rule ranking; 3 names at most."""
    names: list[str] = [state.chosen] if state.chosen else []
    for layer in ("embed", "rule"):
        names += list(state.scores.get(layer, {}))
    return list(dict.fromkeys(names))[:3]


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _percentiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p95": None}
    return {"p50": round(float(np.percentile(values, 50)), 3), "p95": round(float(np.percentile(values, 95)), 3)}


def summarize(results: Sequence[tuple[LabelledQuery, RouteState]]) -> dict[str, object]:
    """recall_at_1, recall_at_3, none_precision, none_recall, layer_share, latency_ms, cases,
    accuracy and worst_confusions. `chosen` is null for NONE and for fall-through."""
    in_scope = [(c, s) for c, s in results if c.expected is not None]
    predicted_none = [(c, s) for c, s in results if s.chosen is None]
    expected_none = [(c, s) for c, s in results if c.expected is None]
    layers = Counter((s.hit_layer or HitLayer.NONE).value for _, s in results)
    latency: dict[str, dict[str, float | None]] = {}
    for layer in ("rule", "embed", "llm"):
        latency[layer] = _percentiles([s.latency_ms[layer] for _, s in results if layer in s.latency_ms])
    latency["total"] = _percentiles([sum(s.latency_ms.values()) for _, s in results])
    confusions = Counter((c.expected, s.chosen) for c, s in results if s.chosen != c.expected)
    right = _share(sum(s.chosen == c.expected for c, s in in_scope), len(in_scope))
    rejected = _share(sum(s.chosen is None for _, s in expected_none), len(expected_none))
    return {
        "operating_point": {"answered_right": right, "rejected": rejected,
                            "balanced_accuracy": round((right + rejected) / 2, 4)
                            if right is not None and rejected is not None else None,
                            "in_scope": len(in_scope), "none": len(expected_none)},
        "recall_at_1": _share(sum(s.chosen == c.expected for c, s in in_scope), len(in_scope)),
        "recall_at_3": _share(sum(c.expected in top3(s) for c, s in in_scope), len(in_scope)),
        "none_precision": _share(sum(c.expected is None for c, _ in predicted_none), len(predicted_none)),
        "none_recall": _share(sum(s.chosen is None for _, s in expected_none), len(expected_none)),
        "accuracy": _share(sum(s.chosen == c.expected for c, s in results), len(results)),
        "layer_share": {layer.value: _share(layers.get(layer.value, 0), len(results)) for layer in HitLayer},
        "latency_ms": latency,
        "worst_confusions": [{"expected": e, "chosen": ch, "count": n}
                             for (e, ch), n in confusions.most_common(WORST_CONFUSIONS)],
        "cases": [{"query": c.query, "expected": c.expected, "chosen": s.chosen,
                   "hit_layer": (s.hit_layer or HitLayer.NONE).value, "top3": top3(s)} for c, s in results],
    }


def curve(results: Sequence[tuple[LabelledQuery, RouteState]], margin: float = 0.0) -> list[dict[str, float | None]]:
    """The answered-right / rejected trade-off of the rule + embed layers (no LLM) as the embed
    threshold moves: rule answers stay fixed, every other query is answered when its top embed
    score clears the threshold (with the lead `margin`), else NONE."""
    cases = []
    for c, s in results:
        ranked = list(s.scores.get("embed", {}).items())
        if s.hit_layer is HitLayer.RULE:
            cases.append(EmbedCase(0.0, 0.0, False, c.expected is not None, rule_answer=s.chosen == c.expected))
        elif ranked:
            cases.append(EmbedCase(ranked[0][1], ranked[1][1] if len(ranked) > 1 else 0.0,
                                   ranked[0][0] == c.expected, c.expected is not None))
        else:  # decided before any layer scored it (an empty query): NONE at every threshold
            cases.append(EmbedCase(UNSCORED, UNSCORED, False, c.expected is not None))
    return [{"threshold": p.threshold, "answered_right": None if p.answered_right is None else round(p.answered_right, 4),
             "rejected": None if p.rejected is None else round(p.rejected, 4)} for p in operating_curve(cases, margin)]
