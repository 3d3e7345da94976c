"""Pairwise judging in both orders: combine two judgements into one verdict per dimension. Pure.

Order 1 shows the baseline as A and the candidate as B; order 2 swaps them. A dimension the two
orders agree on gets that winner; if they disagree, it is a tie and the flip is counted (a judge
that prefers whatever it reads first cannot make a candidate win).
"""

from __future__ import annotations

from collections.abc import Mapping

from skillforge.state.evaluate import JUDGED_DIMENSIONS, PairVerdict

VALID = frozenset({"A", "B", "tie"})


def _side(label: str, baseline_is_a: bool) -> PairVerdict:
    if label == "tie":
        return PairVerdict.TIE
    a_wins = label == "A"
    return PairVerdict.BASELINE if a_wins == baseline_is_a else PairVerdict.CANDIDATE


def combine_orders(first: Mapping[str, str], second: Mapping[str, str]) -> tuple[dict[str, PairVerdict], bool]:
    """(verdict per dimension, flipped). `first` judged (A=baseline, B=candidate), `second` the
    swapped pair. A missing or unknown label makes that dimension INVALID (fail closed)."""
    verdicts: dict[str, PairVerdict] = {}
    flipped = False
    for dim in JUDGED_DIMENSIONS:
        a, b = first.get(dim), second.get(dim)
        if a not in VALID or b not in VALID:
            verdicts[dim] = PairVerdict.INVALID
            continue
        one, two = _side(a, True), _side(b, False)
        if one == two:
            verdicts[dim] = one
        else:
            verdicts[dim] = PairVerdict.TIE
            flipped = flipped or dim == "overall"
    return verdicts, flipped


def candidate_share(verdict: PairVerdict) -> float:
    """The candidate's share of a dimension: 1 win, 0.5 tie, 0 loss (the baseline gets the rest)."""
    return {PairVerdict.CANDIDATE: 1.0, PairVerdict.TIE: 0.5, PairVerdict.BASELINE: 0.0}.get(verdict, 0.5)
