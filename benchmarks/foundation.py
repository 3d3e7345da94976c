"""Foundation benchmark: how SkillForge's core behaves with a library of ~1000 skills.

What it measures (all in one fresh temporary workspace made with `init_workspace`):

1. setup     Generate N realistic SKILL.md files (fixed seed) under skills/skill-NNNN/ and import
             them with `ReleaseStateMachine.import_skills(skillfile.scan(...))`. Reported, no target.
2. load      `SkillRegistry.load(ws)` with new Store / SkillsRepo objects each time (so a new
             SQLite connection and a new `git cat-file` process, as in a fresh CLI process),
             repeated 5 times: min and median. Target: <= 2 s. Also reported separately:
             `skillfile.scan` of the working tree (parse N files from disk), `build_index()`,
             and the same load measured inside a brand-new Python interpreter (imports excluded).
3. use_skill `registry.use_skill(name, reason)` for --calls random names: p50 / p95 / max in ms,
             measured with time.perf_counter around the call (it also appends to runs/router.jsonl).
             Target: p95 <= 10 ms.
4. publish   --publishes times: pick a random skill, append a line to its SKILL.md bytes, then
             time begin_release -> write_commit(files) -> append_evaluation -> commit_release,
             each step and the total: p50 / p95. No target (reported for tracking).

The figures are wall-clock times on a warm page cache; the script prints a table with PASS/MISS
against the targets (or one JSON object with --json) and always exits 0: a benchmark reports
numbers, it is not a test.

    python benchmarks/foundation.py [--skills 1000] [--publishes 30] [--calls 500] [--json] [--keep]

Only the standard library and the skillforge package are used.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import random  # noqa: E402
import shutil  # noqa: E402
import sqlite3  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import textwrap  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

# Allow `python benchmarks/foundation.py` from a checkout without an installed package.
_REPO_ROOT = Path(__file__).resolve().parent.parent
if str(_REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(_REPO_ROOT))

from skillforge.skill import file as skillfile  # noqa: E402
from skillforge.config import Workspace, init_workspace  # noqa: E402
from skillforge.library.gitrepo import read_folder  # noqa: E402
from skillforge.library.registry import SkillRegistry  # noqa: E402
from skillforge.library.releases import ReleaseStateMachine  # noqa: E402

TARGET_LOAD_S = 2.0
TARGET_USE_P95_MS = 10.0
LOAD_REPEATS = 5
SCAN_REPEATS = 3
INDEX_REPEATS = 5
SUBPROCESS_REPEATS = 3

# ---- a small vocabulary to make N distinct, realistic skills --------------------------------
# (English topic, Chinese topic, tool namespace, object noun)
DOMAINS = [
    ("weather forecasts", "天气预报", "weather", "forecast"),
    ("flight search", "机票查询", "flights", "itinerary"),
    ("hotel booking", "酒店预订", "hotels", "reservation"),
    ("restaurant reservations", "餐厅订座", "dining", "table booking"),
    ("expense reports", "报销单", "expenses", "expense report"),
    ("invoice extraction", "发票识别", "ocr", "invoice"),
    ("meeting notes", "会议纪要", "meetings", "meeting summary"),
    ("calendar scheduling", "日程安排", "calendar", "event"),
    ("email drafting", "邮件撰写", "mail", "email draft"),
    ("SQL queries", "SQL 查询", "db", "query"),
    ("code review", "代码审查", "repo", "pull request"),
    ("commit messages", "提交信息", "git", "commit message"),
    ("package tracking", "快递查询", "logistics", "shipment"),
    ("taxi hailing", "打车", "rides", "ride request"),
    ("recipe suggestions", "菜谱推荐", "recipes", "recipe"),
    ("news digests", "新闻摘要", "news", "digest"),
    ("currency conversion", "汇率换算", "fx", "conversion"),
    ("stock quotes", "股票行情", "markets", "quote"),
    ("translation", "翻译", "translate", "translation"),
    ("document summarisation", "文档摘要", "docs", "summary"),
    ("spreadsheet formulas", "表格公式", "sheets", "formula"),
    ("slide outlines", "幻灯片大纲", "slides", "outline"),
    ("contract review", "合同审阅", "legal", "clause list"),
    ("job descriptions", "招聘启事", "hr", "job posting"),
    ("interview questions", "面试题", "hr", "question set"),
    ("travel itineraries", "旅行行程", "travel", "day plan"),
    ("fitness plans", "健身计划", "fitness", "workout plan"),
    ("medication reminders", "用药提醒", "health", "reminder"),
    ("bug triage", "缺陷分诊", "issues", "bug report"),
    ("log analysis", "日志分析", "logs", "incident timeline"),
    ("customer support replies", "客服回复", "support", "reply"),
    ("product descriptions", "商品文案", "catalog", "product copy"),
    ("social media posts", "社交媒体文案", "social", "post"),
    ("tax estimates", "个税估算", "tax", "estimate"),
    ("mortgage calculations", "房贷计算", "finance", "repayment schedule"),
    ("train tickets", "火车票", "rail", "ticket"),
    ("parking lookup", "停车查询", "parking", "parking spot"),
    ("unit conversion", "单位换算", "units", "conversion"),
    ("regex writing", "正则表达式", "text", "pattern"),
    ("API documentation", "接口文档", "apidocs", "endpoint reference"),
]
ACTIONS = [
    ("Find", "查找"), ("Compare", "比较"), ("Draft", "起草"), ("Summarise", "总结"),
    ("Check", "检查"), ("Plan", "规划"), ("Explain", "解释"), ("Convert", "转换"),
    ("Validate", "校验"), ("Rewrite", "改写"), ("Extract", "提取"), ("Schedule", "安排"),
]
AUDIENCES = ["for a busy professional", "for a small team", "for a first-time user", "for finance staff",
             "for travellers", "for developers", "for students", "for operations engineers",
             "for customer-facing staff", "for a family"]
QUALIFIERS = ["with sources cited", "in the user's language", "respecting stated budgets",
              "without inventing live data", "with clear next steps", "in a compact table",
              "with explicit assumptions", "ready to paste", "with a short rationale",
              "flagging anything uncertain"]
ZH_CONTEXTS = ["出差前", "周末", "下班后", "月底结算时", "项目上线前", "开会之前", "旅行途中", "入职第一周",
               "客户来访时", "节假日", "紧急情况下", "日常工作中"]
ZH_VERBS = ["想要", "需要", "让助手帮忙", "要求", "打算", "希望"]
SECTION_LINES = [
    "Confirm the request is in scope; if a neighbour skill fits better, say which one and stop.",
    "Ask at most one clarifying question when a required input is missing.",
    "Prefer the user's own wording for names, places and identifiers.",
    "Quote figures exactly as the tool returned them, with units.",
    "When a tool call fails, report the failure plainly and offer one alternative.",
    "Keep the answer under 200 words unless the user asks for detail.",
    "Use a table when comparing more than two options.",
    "State the time zone of every date and time you mention.",
    "Never store or repeat personal data beyond what the task needs.",
    "End with the single most useful next step.",
    "If results are empty, say so and suggest how to widen the search.",
    "Round money to two decimals and show the currency code.",
    "Mention the data source and its timestamp when it matters.",
    "Do not guess values that a tool could return; call the tool.",
    "Match the formality of the user's message.",
]


def _pad_to(text: str, rng: random.Random, target: int, extras: list[str]) -> str:
    """Grow `text` with clauses until it is about `target` characters (varying the choice)."""
    pool = extras[:]
    rng.shuffle(pool)
    for clause in pool:
        if len(text) >= target - 10:
            break
        text = f"{text.rstrip('.')}, {clause}."
    return text


def _a(noun: str) -> str:
    return f"{'an' if noun[0] in 'aeiouAEIOU' else 'a'} {noun}"


def make_skill(i: int, n: int, rng: random.Random) -> tuple[str, str]:
    """(name, SKILL.md text) of the i-th generated skill."""
    name = f"skill-{i:04d}"
    topic, zh_topic, ns, noun = DOMAINS[i % len(DOMAINS)]
    action, zh_action = ACTIONS[(i // len(DOMAINS) + rng.randrange(len(ACTIONS))) % len(ACTIONS)]
    audience = rng.choice(AUDIENCES)
    qualifier = rng.choice(QUALIFIERS)
    description = (f"{action} {topic} and produce {_a(noun)} {audience}, {qualifier}. "
                   f"Use when the user asks about {topic} (variant {i}).")
    description = _pad_to(description, rng, 150 + rng.randrange(-15, 16),
                          [q for q in QUALIFIERS if q != qualifier] + [f"covering {noun} edge cases",
                                                                       f"using the {ns} tools"])
    use_when = (f"用户{rng.choice(ZH_CONTEXTS)}{rng.choice(ZH_VERBS)}{zh_action}{zh_topic}，"
                f"例如生成或修改{zh_topic}相关的结果（第 {i} 号技能）")
    neighbours = rng.sample([d for d in DOMAINS if d[0] != topic], 3)
    not_for = [f"{d[0]} (use skill-{rng.randrange(1, n + 1):04d})" for d in neighbours]
    keywords = [topic, noun, ns, zh_topic, f"{zh_action}{zh_topic}", action.lower(), f"kw{i}"]
    examples = [f"帮我{zh_action}一下{zh_topic}，{rng.choice(ZH_CONTEXTS)}要用",
                f"{action.lower()} the {noun} {audience}",
                f"能不能{rng.choice(ZH_VERBS)}把{zh_topic}做成表格？"]
    dependencies = [f"{ns}.search", f"{ns}.get_{noun.replace(' ', '_')}"]
    version = f"{1 + i % 3}.{rng.randrange(10)}.{rng.randrange(20)}"
    front = "\n".join([
        "---",
        f"name: {name}",
        f"description: {json.dumps(description, ensure_ascii=False)}",
        f'metadata: {{version: "{version}"}}',
        f"use_when: {json.dumps(use_when, ensure_ascii=False)}",
        f"not_for: {json.dumps(not_for, ensure_ascii=False)}",
        f"keywords: {json.dumps(keywords, ensure_ascii=False)}",
        f"examples: {json.dumps(examples, ensure_ascii=False)}",
        f"dependencies: {json.dumps(dependencies, ensure_ascii=False)}",
        "---",
    ])
    steps = rng.sample(SECTION_LINES, 10)
    constraints = rng.sample(SECTION_LINES, 6)
    body_lines = [
        "## Overview",
        f"{action}s {topic} {audience}. Output: one {noun}, {qualifier}.",
        f"Neighbours: {', '.join(d[0] for d in neighbours)} are handled by other skills.",
        "",
        "## Inputs",
        f"- The user's request about {topic} ({zh_topic}).",
        f"- Optional constraints: dates, budget, language, format of the {noun}.",
        "",
        "## Instructions",
        f"1. Call `{dependencies[0]}` with the user's terms; keep at most 10 results.",
        f"2. Call `{dependencies[1]}` for the chosen item and read every field you will quote.",
        *[f"{k}. {s}" for k, s in enumerate(steps, start=3)],
        "",
        "## Examples",
        *[f"- \"{e}\" -> {_a(noun)} {qualifier}." for e in examples],
        f"- Missing input -> ask one question about the {noun}, then continue.",
        "",
        "## Constraints",
        *[f"- {s}" for s in constraints],
        "",
        "## Output format",
        f"A short heading, the {noun} itself, then one line of next steps.",
        textwrap.shorten(f"Notes for skill {i}: " + " ".join(rng.sample(QUALIFIERS, 4)), 120),
    ]
    return name, front + "\n" + "\n".join(body_lines) + "\n"


def generate_library(ws: Workspace, n: int, seed: int) -> int:
    """Write N SKILL.md files; return the total bytes written."""
    rng = random.Random(seed)
    total = 0
    for i in range(1, n + 1):
        name, text = make_skill(i, n, rng)
        folder = ws.skills_dir / name
        folder.mkdir(parents=True, exist_ok=True)
        data = text.encode("utf-8")
        (folder / skillfile.SKILL_FILENAME).write_bytes(data)
        total += len(data)
    return total


# ---- statistics -------------------------------------------------------------------------
def percentile(values: list[float], q: float) -> float:
    """Nearest-rank style percentile with linear interpolation (q in 0..100)."""
    if not values:
        return float("nan")
    s = sorted(values)
    if len(s) == 1:
        return s[0]
    pos = (len(s) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def summary_ms(samples_s: list[float]) -> dict[str, float]:
    ms = [x * 1000 for x in samples_s]
    return {"n": len(ms), "min_ms": min(ms), "p50_ms": percentile(ms, 50), "p95_ms": percentile(ms, 95),
            "max_ms": max(ms), "mean_ms": statistics.fmean(ms)}


# ---- measurements -----------------------------------------------------------------------
def close_registry(reg: SkillRegistry) -> None:
    """Stop the git cat-file processes and the SQLite connection of a registry we made."""
    reg.repo.repo.close()
    reg.store.close()


def time_registry_load(ws: Workspace, repeats: int) -> tuple[list[float], int, int]:
    times, count, errors = [], 0, 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        reg = SkillRegistry.load(ws)  # new Store and SkillsRepo each time
        times.append(time.perf_counter() - t0)
        count, errors = len(reg.skills), len(reg.errors)
        close_registry(reg)
    return times, count, errors


_SUBPROCESS_CODE = """
import json, sys, time
from skillforge.config import Workspace
from skillforge.library.registry import SkillRegistry
ws = Workspace.open(sys.argv[1])
t0 = time.perf_counter()
reg = SkillRegistry.load(ws)
dt = time.perf_counter() - t0
print(json.dumps({"load_s": dt, "skills": len(reg.skills)}))
"""


def time_registry_load_subprocess(ws: Workspace, repeats: int) -> list[float]:
    """The load inside a brand-new interpreter (imports not counted); empty list if it fails."""
    out = []
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_REPO_ROOT), env.get("PYTHONPATH")) if p)
    for _ in range(repeats):
        proc = subprocess.run([sys.executable, "-c", _SUBPROCESS_CODE, str(ws.root)], capture_output=True,
                              text=True, env=env, timeout=600)
        if proc.returncode != 0:
            print(f"[bench] subprocess load failed: {proc.stderr.strip()[-400:]}", file=sys.stderr)
            return []
        out.append(json.loads(proc.stdout.strip().splitlines()[-1])["load_s"])
    return out


def time_scan(ws: Workspace, repeats: int) -> tuple[list[float], int]:
    times, count = [], 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        report = skillfile.scan(ws.skills_dir, ws.root)
        times.append(time.perf_counter() - t0)
        count = len(report.skills)
    return times, count


def time_index(reg: SkillRegistry, repeats: int) -> tuple[list[float], int]:
    times, size = [], 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        text = reg.build_index()
        times.append(time.perf_counter() - t0)
        size = len(text.encode("utf-8"))
    return times, size


def time_use_skill(reg: SkillRegistry, calls: int, rng: random.Random) -> list[float]:
    names = reg.names()
    reg.use_skill(names[0], "benchmark warm-up")  # not counted
    times = []
    for k in range(calls):
        name = rng.choice(names)
        t0 = time.perf_counter()
        body = reg.use_skill(name, f"benchmark call {k}: user asked something {name} handles")
        times.append(time.perf_counter() - t0)
        if not body:
            raise RuntimeError(f"use_skill({name}) returned an empty body")
    return times


STEPS = ("begin_release", "write_commit", "append_evaluation", "commit_release")


def time_publishes(ws: Workspace, machine: ReleaseStateMachine, names: list[str], count: int,
                   rng: random.Random) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {s: [] for s in (*STEPS, "total")}
    for k in range(count):
        name = rng.choice(names)
        folder = machine.folder_of(name)
        files = read_folder(folder)
        files[skillfile.SKILL_FILENAME] += f"\n- Benchmark edit {k}: keep answers short ({rng.random():.6f}).\n".encode()
        summary = {"kind": "benchmark", "cases": 20, "passed": 19 + k % 2, "score": round(rng.uniform(0.8, 1.0), 4)}
        t0 = time.perf_counter()
        rel = machine.begin_release(name, triggered_by="benchmark")
        t1 = time.perf_counter()
        machine.write_commit(rel.release_id, files)
        t2 = time.perf_counter()
        machine.append_evaluation(rel.release_id, summary)
        t3 = time.perf_counter()
        published = machine.commit_release(rel.release_id)
        t4 = time.perf_counter()
        if published.status.value != "PUBLISHED":
            raise RuntimeError(f"release {rel.release_id} ended {published.status}")
        for step, dt in zip(STEPS, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
            samples[step].append(dt)
        samples["total"].append(t4 - t0)
    return samples


# ---- machine info -----------------------------------------------------------------------
def machine_info() -> dict[str, object]:
    try:
        git_version = subprocess.run(["git", "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    except OSError as e:
        git_version = f"unavailable ({e})"
    import git as gitpython
    import yaml

    return {
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "python_impl": platform.python_implementation(),
        "git": git_version,
        "gitpython": getattr(gitpython, "__version__", "?"),
        "pyyaml": yaml.__version__,
        "pyyaml_libyaml": hasattr(yaml, "CSafeLoader"),
        "sqlite": sqlite3.sqlite_version,
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
    }


# ---- report -----------------------------------------------------------------------------
def verdict(value: float, target: float) -> str:
    return "PASS" if value <= target else "MISS"


def print_report(res: dict[str, object]) -> None:
    m = res["machine"]
    cfg = res["config"]
    print("SkillForge foundation benchmark")
    print(f"  machine : {m['cpu_count']} CPU, {m['platform']}")
    print(f"  python  : {m['python']} ({m['python_impl']}), {m['git']}, GitPython {m['gitpython']}, "
          f"PyYAML {m['pyyaml']} (libyaml {'yes' if m['pyyaml_libyaml'] else 'NO'}), SQLite {m['sqlite']}")
    print(f"  config  : {cfg['skills']} skills, {cfg['calls']} use_skill calls, {cfg['publishes']} publishes, "
          f"seed {cfg['seed']}, workspace {cfg['workspace']}{' (kept)' if cfg['keep'] else ''}")
    print()
    rows: list[tuple[str, str, str, str]] = []
    s = res["setup"]
    rows.append(("generate library (setup)", f"{s['generate_s']:.2f} s ({s['library_bytes'] / 1e6:.2f} MB)", "-", ""))
    rows.append(("import_skills (setup)", f"{s['import_s']:.2f} s ({s['imported']} imported)", "-", ""))
    load = res["registry_load"]
    rows.append((f"SkillRegistry.load min ({load['repeats']}x)", f"{load['min_s']:.3f} s", "", ""))
    rows.append(("SkillRegistry.load median", f"{load['median_s']:.3f} s", f"<= {TARGET_LOAD_S:g} s",
                 verdict(load["median_s"], TARGET_LOAD_S)))
    sub = res.get("registry_load_subprocess")
    if sub:
        rows.append((f"  ... in a new interpreter, median ({sub['repeats']}x)", f"{sub['median_s']:.3f} s",
                     f"<= {TARGET_LOAD_S:g} s", verdict(sub["median_s"], TARGET_LOAD_S)))
    sc = res["scan"]
    rows.append((f"skillfile.scan working tree, median ({sc['repeats']}x)", f"{sc['median_s']:.3f} s", "-", ""))
    ix = res["build_index"]
    rows.append(("build_index() p50", f"{ix['p50_ms']:.2f} ms ({ix['bytes'] / 1e3:.0f} kB)", "-", ""))
    us = res["use_skill"]
    rows.append(("use_skill p50", f"{us['p50_ms']:.2f} ms", "", ""))
    rows.append(("use_skill p95", f"{us['p95_ms']:.2f} ms", f"<= {TARGET_USE_P95_MS:g} ms",
                 verdict(us["p95_ms"], TARGET_USE_P95_MS)))
    rows.append(("use_skill max", f"{us['max_ms']:.2f} ms", "", ""))
    for step in (*STEPS, "total"):
        st = res["publish"][step]
        label = "publish total (4 steps)" if step == "total" else f"publish: {step}"
        rows.append((f"{label} p50 / p95", f"{st['p50_ms']:.1f} / {st['p95_ms']:.1f} ms", "-", ""))
    w = [max(len(r[c]) for r in rows + [("measure", "value", "target", "result")]) for c in range(4)]
    header = ("measure", "value", "target", "result")
    print("  ".join(h.ljust(w[c]) for c, h in enumerate(header)))
    print("  ".join("-" * w[c] for c in range(4)))
    for r in rows:
        print("  ".join(r[c].ljust(w[c]) for c in range(4)).rstrip())
    print()
    print(f"registry: {load['skills']} skills loaded, {load['errors']} load errors; "
          f"scan found {sc['skills']} skills; use_skill sample {us['n']} calls")


def run(args: argparse.Namespace) -> dict[str, object]:
    rng = random.Random(args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="skillforge-bench-", dir=args.tmpdir))
    res: dict[str, object] = {"config": {"skills": args.skills, "calls": args.calls, "publishes": args.publishes,
                                          "seed": args.seed, "workspace": str(tmp), "keep": args.keep},
                              "machine": machine_info(),
                              "targets": {"registry_load_s": TARGET_LOAD_S, "use_skill_p95_ms": TARGET_USE_P95_MS}}

    def say(msg: str) -> None:
        if not args.quiet:
            print(f"[bench] {msg}", file=sys.stderr, flush=True)

    try:
        ws = init_workspace(tmp)
        say(f"workspace {tmp}; generating {args.skills} skills")
        t0 = time.perf_counter()
        nbytes = generate_library(ws, args.skills, args.seed)
        gen_s = time.perf_counter() - t0

        say("importing")
        machine = ReleaseStateMachine.open(ws)
        t0 = time.perf_counter()
        report = skillfile.scan(ws.skills_dir, ws.root)
        result = machine.import_skills(report)
        import_s = time.perf_counter() - t0
        if report.errors or result.errors:
            raise RuntimeError(f"generated skills failed to load: {(report.errors or result.errors)[:3]}")
        res["setup"] = {"generate_s": gen_s, "library_bytes": nbytes, "import_s": import_s,
                        "imported": len(result.imported), "scan_warnings": len(report.warnings)}

        say(f"SkillRegistry.load x{LOAD_REPEATS}")
        load_times, count, errors = time_registry_load(ws, LOAD_REPEATS)
        res["registry_load"] = {"repeats": LOAD_REPEATS, "min_s": min(load_times),
                                "median_s": statistics.median(load_times), "max_s": max(load_times),
                                "all_s": load_times, "skills": count, "errors": errors}
        if not args.no_subprocess:
            say(f"SkillRegistry.load in a new interpreter x{SUBPROCESS_REPEATS}")
            sub = time_registry_load_subprocess(ws, SUBPROCESS_REPEATS)
            if sub:
                res["registry_load_subprocess"] = {"repeats": len(sub), "min_s": min(sub),
                                                   "median_s": statistics.median(sub), "all_s": sub}

        say(f"skillfile.scan x{SCAN_REPEATS}")
        scan_times, scanned = time_scan(ws, SCAN_REPEATS)
        res["scan"] = {"repeats": SCAN_REPEATS, "min_s": min(scan_times), "median_s": statistics.median(scan_times),
                       "skills": scanned}

        registry = SkillRegistry.load(ws)
        try:
            idx_times, idx_bytes = time_index(registry, INDEX_REPEATS)
            res["build_index"] = {**summary_ms(idx_times), "bytes": idx_bytes}
            say(f"use_skill x{args.calls}")
            res["use_skill"] = summary_ms(time_use_skill(registry, args.calls, rng))
            names = registry.names()
        finally:
            close_registry(registry)

        say(f"publish x{args.publishes}")
        samples = time_publishes(ws, machine, names, args.publishes, rng)
        res["publish"] = {k: summary_ms(v) for k, v in samples.items()}
        machine.repo.repo.close()
        machine.store.close()
        res["verdicts"] = {
            "registry_load": verdict(res["registry_load"]["median_s"], TARGET_LOAD_S),
            "use_skill_p95": verdict(res["use_skill"]["p95_ms"], TARGET_USE_P95_MS),
        }
    finally:
        if args.keep:
            say(f"kept workspace {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return res


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--skills", type=int, default=1000, help="skills in the generated library (default 1000)")
    p.add_argument("--publishes", type=int, default=30, help="four-step publishes to time (default 30)")
    p.add_argument("--calls", type=int, default=500, help="use_skill calls to time (default 500)")
    p.add_argument("--seed", type=int, default=20240601, help="random seed (default 20240601)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.add_argument("--keep", action="store_true", help="keep the temporary workspace")
    p.add_argument("--tmpdir", default=None, help="parent folder of the temporary workspace")
    p.add_argument("--no-subprocess", action="store_true", help="skip the load in a new interpreter")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    args = p.parse_args(argv)
    if args.skills < 1 or args.calls < 1 or args.publishes < 1:
        p.error("--skills, --calls and --publishes must be at least 1")
    res = run(args)
    if args.json:
        print(json.dumps(res, indent=2, ensure_ascii=False))
    else:
        print_report(res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
