"""Paired statistics of an evaluation: is the candidate better, worse, or can this set not tell? Pure.

Both sides run on the same cases, so every case gives one *paired* outcome per dimension: the
per-case delta ``d = candidate score - baseline score`` in [-1, 1]. A delta above ``TIE_MARGIN`` is
a candidate win, below ``-TIE_MARGIN`` a loss, anything between a tie (a judge tie, an objective check
both sides pass or both fail, or a token count within about 10 %).

For each dimension:

- an **exact sign test** on the discordant cases (wins vs losses, ties dropped): the one-sided
  p-value of "the candidate wins more often than it loses" is ``P(X >= wins)`` and of "it loses more
  often" ``P(X >= losses)``, with ``X ~ Binomial(wins + losses, 1/2)``. Two one-sided tests at
  ``ALPHA`` each, because the gate asks two separate questions (is there evidence of a loss, which
  vetoes; is there evidence of a win, which evolution needs) and each needs its own error bound;
- a **seeded paired bootstrap** CI (``CI_LEVEL``, percentile, ``RESAMPLES`` resamples of the cases)
  of the mean delta, i.e. of ``new score - old score``: how big the change is. It is reported; the
  outcome comes from the sign test, so a deterministic 0.001 move is a tie, never a decision;
- the **minimum detectable effect**: the smallest mean delta this n can detect with ``POWER`` at
  one-sided ``ALPHA`` (normal approximation, the observed SD of the deltas, ``PLANNING_SD`` when the
  sample cannot give one).

Family-wise error, per direction:

- **LOSS**: Holm's step-down procedure over every dimension at ``ALPHA``. Whatever the true state,
  the chance of any false LOSS claim is at most ``ALPHA``, so noise declines at most that often.
- **WIN**: a fixed sequence. The primary endpoint (``PRIMARY``, the effect score) is tested first at
  the full ``ALPHA``; only when it is a WIN are the other dimensions tested, with Holm at ``ALPHA``.
  (Closed testing: the family-wise error stays at most ``ALPHA``, and the primary keeps full power.)

Dimensions that are *reported only* on a run (``reported``: the judged ones when the judge is noise,
rules/endpoint.py) cannot decline or win anything, so they leave both families: the deciding
dimensions keep their power (under a noisy judge, LOSS on the objective checks is Holm over the
objective and efficiency only, not over all six). A reported dimension's outcome is still the one
it gets in the whole family, as if nothing were reported only (it can only be more conservative).

Constants are code on purpose: nothing an evolution loop writes can change them.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from statistics import NormalDist

from skillforge.state.result import Evidence, Outcome

ALPHA = 0.05
"""One-sided level of each direction (WIN, LOSS), family-wise."""
TIE_MARGIN = 0.05
"""A per-case |delta| below this is a tie (a token ratio within ~10 %, float noise, rounding)."""
RESAMPLES = 2000
CI_LEVEL = 0.90
"""Two-sided level of the bootstrap CI: its ends match the one-sided 5 % tests."""
BOOTSTRAP_SEED = 20261201
"""The bootstrap's seed: the same deltas always give the same CI."""
POWER = 0.80
PLANNING_SD = 0.5
"""SD of a per-case delta assumed for the MDE when the sample has no spread (all ties, n < 2)."""
PRIMARY = "effect"
"""The primary endpoint: its WIN is what `improvement` reports and what evolution requires."""


def sign_test(wins: int, losses: int) -> tuple[float, float]:
    """(p of WIN, p of LOSS): exact one-sided binomial tails P(X >= wins), P(X >= losses) with
    X ~ Binomial(wins + losses, 1/2). No discordant case gives (1, 1)."""
    if wins < 0 or losses < 0:
        raise ValueError("wins and losses must be >= 0")
    n = wins + losses

    def tail(k: int) -> float:
        return min(1.0, sum(math.comb(n, i) for i in range(k, n + 1)) / 2 ** n)

    return tail(wins), tail(losses)


def min_cases(alpha: float = ALPHA) -> int:
    """The smallest n at which the sign test can decide anything: n discordant cases all one way
    give p = 2^-n, which must reach `alpha` (5 for 0.05)."""
    return math.ceil(math.log2(1 / alpha) - 1e-12)


def classify(deltas: Sequence[float]) -> tuple[int, int, int]:
    """(wins, losses, ties) of per-case deltas, with |delta| < TIE_MARGIN a tie."""
    wins = sum(1 for d in deltas if d >= TIE_MARGIN)
    losses = sum(1 for d in deltas if d <= -TIE_MARGIN)
    return wins, losses, len(deltas) - wins - losses


def bootstrap_ci(deltas: Sequence[float], *, seed: int = BOOTSTRAP_SEED, resamples: int = RESAMPLES,
                 level: float = CI_LEVEL) -> tuple[float, float]:
    """Percentile CI of the mean delta from `resamples` resamples of the cases, drawn with a
    generator seeded by `seed` (same input, same CI). An empty sample gives (0, 0)."""
    if not deltas:
        return 0.0, 0.0
    import numpy as np  # here, not at the top: the CLI reads this module's constants for its options

    data = np.asarray(deltas, dtype=float)
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, len(data), size=(resamples, len(data)))].mean(axis=1)
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(means, [tail, 100 - tail])
    return round(float(lo), 6), round(float(hi), 6)


def mde(n: int, sd: float, *, alpha: float = ALPHA, power: float = POWER) -> float:
    """Minimum detectable mean delta: (z_{1-alpha} + z_power) * sd / sqrt(n); 1.0 (anything up to
    the whole scale) when n = 0."""
    if n <= 0:
        return 1.0
    z = NormalDist().inv_cdf(1 - alpha) + NormalDist().inv_cdf(power)
    return round(min(2.0, z * sd / math.sqrt(n)), 4)


def holm_adjusted(pvalues: Mapping[str, float]) -> dict[str, float]:
    """Holm's step-down adjusted p-values: the k-th smallest p times (m - k + 1), made monotone and
    capped at 1. A hypothesis is rejected at level a exactly when its adjusted p <= a."""
    order = sorted(pvalues, key=lambda k: (pvalues[k], k))
    m, running, out = len(order), 0.0, {}
    for i, key in enumerate(order):
        running = max(running, min(1.0, (m - i) * pvalues[key]))
        out[key] = running
    return out


def _sd(deltas: Sequence[float]) -> float:
    if len(deltas) < 2:
        return PLANNING_SD
    import numpy as np

    sd = float(np.std(np.asarray(deltas, dtype=float), ddof=1))
    return sd if sd > 0 else PLANNING_SD


def paired_evidence(deltas: Mapping[str, Sequence[float]], *, primary: str = PRIMARY,
                    reported: Collection[str] = (), seed: int = BOOTSTRAP_SEED,
                    resamples: int = RESAMPLES) -> dict[str, Evidence]:
    """Evidence per dimension from per-case deltas (dimension -> one delta per valid case, in
    [-1, 1]). LOSS by Holm over the deciding dimensions; WIN by the fixed sequence primary -> Holm
    over the rest; the `reported` dimensions (never the primary) stay out of the deciding families
    (see the module docstring). `primary` must be one of the dimensions."""
    if primary not in deltas:
        raise ValueError(f"primary endpoint {primary!r} has no deltas")
    if primary in reported:
        raise ValueError(f"the primary endpoint {primary!r} cannot be reported only")
    counts = {k: classify(v) for k, v in deltas.items()}
    p_win = {k: sign_test(w, l)[0] for k, (w, l, _) in counts.items()}
    p_loss = {k: sign_test(w, l)[1] for k, (w, l, _) in counts.items()}
    side = set(reported) & set(deltas)
    # every dimension in one family (as when nothing is reported only): what a reported one shows
    adj_loss = holm_adjusted(p_loss)
    rest = holm_adjusted({k: p for k, p in p_win.items() if k != primary})
    adj_win = {primary: p_win[primary], **{k: max(p_win[primary], p) for k, p in rest.items()}}
    if side:  # the deciding dimensions: families without the reported ones
        adj_loss.update(holm_adjusted({k: p for k, p in p_loss.items() if k not in side}))
        rest = holm_adjusted({k: p for k, p in p_win.items() if k != primary and k not in side})
        adj_win.update({k: max(p_win[primary], p) for k, p in rest.items()})
    out: dict[str, Evidence] = {}
    for key, values in deltas.items():
        wins, losses, ties = counts[key]
        outcome = (Outcome.WIN if adj_win[key] <= ALPHA else Outcome.LOSS if adj_loss[key] <= ALPHA
                   else Outcome.INCONCLUSIVE)
        toward_win = wins >= losses
        out[key] = Evidence(
            wins=wins, losses=losses, ties=ties,
            p_value=round(p_win[key] if toward_win else p_loss[key], 6),
            p_adjusted=round(adj_win[key] if toward_win else adj_loss[key], 6),
            ci=bootstrap_ci(values, seed=seed, resamples=resamples),
            mean=round(sum(values) / len(values), 6) if values else 0.0,
            outcome=outcome, mde=mde(len(values), _sd(values)))
    return out


def wilson_lower(passes: int, n: int, *, z: float = NormalDist().inv_cdf(1 - ALPHA)) -> float:
    """The Wilson score lower bound of a pass rate (one-sided 95 % by default); 0 for n = 0."""
    if n <= 0:
        return 0.0
    if not 0 <= passes <= n:
        raise ValueError(f"passes must be in [0, {n}], got {passes}")
    p = passes / n
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, (centre - spread) / (1 + z * z / n))
