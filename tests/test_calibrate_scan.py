"""rules.thresholds.calibrate_embed searches every (HIGH, LOW, margin) of its grids one LOW at a time,
all (HIGH, margin) in one matrix product. Here it is held to the plain scan it replaced (one setting
at a time, the first best key kept and its ties collected in scan order, `_centre` among them):
the same setting on seeded random case sets, with and without `min_reject`, balanced or not, with
rule-layer answers, weights and NONE groups; the utility equal up to float rounding."""

from __future__ import annotations

import numpy as np
import pytest

from skillforge.rules.thresholds import (CORRECT, WRONG, EmbedCase, _arrays, _centre, _grid,
                                         calibrate_embed)


def _compare(a: tuple[float, ...], b: tuple[float, ...], tol: float = 1e-9) -> int:
    for x, y in zip(a, b):
        if x > y + tol:
            return 1
        if x < y - tol:
            return -1
    return 0 if len(a) == len(b) else (1 if len(a) > len(b) else -1)


def plain_scan(cases: list[EmbedCase], defaults: tuple[float, float, float], grid_size: int = 24, *,
               balance: bool = True, min_reject: float | None = None) -> tuple[float, float, float, float]:
    """calibrate_embed as it was: every setting in turn (the grids are built the same way)."""
    a = _arrays(cases, balance)
    top1, lead, w, free, in_scope = a["top1"], a["lead"], a["w"], a["free"], a["in_scope"]
    seen = top1[free] if free.any() else top1
    seen_none = top1[free & ~in_scope]
    highs, lows = _grid(seen, [defaults[0]], grid_size), _grid(seen, [defaults[1]], grid_size)
    if min_reject is not None and seen_none.size:
        above_none = np.quantile(seen_none, np.linspace(0, 1, min(len(seen_none), 4 * grid_size)), method="lower") + 1e-7
        extra_t = np.concatenate([_grid(top1[free & in_scope], [], grid_size), _grid(seen_none, [], grid_size), above_none])
        highs, lows = np.unique(np.concatenate([highs, extra_t])), np.unique(np.concatenate([lows, extra_t]))
    margins = _grid(lead[free] if free.any() else lead, [0.0, defaults[2]], grid_size)
    fixed = float((w * np.where(free, 0.0, np.where(a["rule_right"], CORRECT, WRONG))).sum())
    wf = np.where(free, w, 0.0)
    w_in = w[in_scope].sum()
    groups = []
    for g in dict.fromkeys(a["group"][~in_scope].tolist()):
        mask = ~in_scope & (a["group"] == g)
        groups.append((float(w[mask].sum()), float(w[mask & ~free].sum()), wf * mask))
    fixed_right_in = float(w[in_scope & ~free & a["rule_right"]].sum())
    clears = lead[None, :] >= margins[:, None]
    accept_w = wf * np.where(a["correct"], CORRECT, WRONG)
    reject_w = wf * np.where(in_scope, WRONG, CORRECT)
    right_w = wf * (in_scope & a["correct"])
    best_key: tuple[float, ...] = (-np.inf,)
    best: list[tuple[float, float, float]] = []
    best_u = -np.inf
    for low in lows:
        rejected = top1 < low
        u_reject = float(reject_w[rejected].sum())
        for high in highs[highs >= low]:
            acc = clears & (~rejected & (top1 >= high))[None, :]
            us = fixed + u_reject + acc @ accept_w
            if min_reject is None:
                keys = [(float(u),) for u in us]
            else:
                none_rej = np.min([(wg - fixed_g - acc @ cw) / wg for wg, fixed_g, cw in groups if wg > 0], axis=0) \
                    if groups else np.ones(len(margins))
                right = (fixed_right_in + acc @ right_w) / w_in if w_in else np.zeros(len(margins))
                keys = [(1.0, float(r), float(u)) if nr >= min_reject - 1e-9 else (0.0, float(nr), float(r))
                        for u, nr, r in zip(us, none_rej, right, strict=True)]
            for margin, key, u in zip(margins, keys, us, strict=True):
                order = _compare(key, best_key)
                if order > 0:
                    best_key, best, best_u = key, [(high, low, margin)], float(u)
                elif order == 0:
                    best.append((high, low, margin))
    high, low, margin = _centre(np.array(best), [highs, lows, margins])
    return high, low, margin, best_u


def random_cases(rng: np.random.Generator, n: int) -> list[EmbedCase]:
    out = []
    for _ in range(n):
        in_scope = rng.random() < 0.6
        top1 = round(float(rng.random()), 1) if rng.random() < 0.3 else float(rng.random())  # ties on purpose
        rule = None if rng.random() < 0.8 else bool(rng.random() < 0.5)
        out.append(EmbedCase(top1, top1 - float(rng.random()) * 0.3, bool(rng.random() < 0.7), bool(in_scope),
                             float(rng.choice([1.0, 1.0, 0.5, 2.0])), rule,
                             "" if in_scope else str(rng.choice(["", "bank"]))))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_the_matrix_search_picks_what_the_plain_scan_picks(seed: int) -> None:
    rng = np.random.default_rng(seed)
    cases = random_cases(rng, int(rng.integers(8, 36)))
    for min_reject, balance in ((None, True), (None, False), (0.6, False), (0.95, True), (1.0, True)):
        want = plain_scan(cases, (0.9, 0.5, 0.05), grid_size=10, balance=balance, min_reject=min_reject)
        got = calibrate_embed(cases, (0.9, 0.5, 0.05), grid_size=10, balance=balance, min_reject=min_reject)
        assert got[:3] == want[:3], (seed, min_reject, balance)
        assert got[3] == pytest.approx(want[3], abs=1e-9)
