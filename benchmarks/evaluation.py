"""Evaluation benchmark: how fast the evaluate graph runs cases, what checkpointing costs, and what
the embedded local model does with the executor's JSON-action loop.

Every part goes through the real code paths: `build_evaluate_graph()` -> load_cases -> run_case
(fanned out with Send; each case = `Executor.run` on the baseline, `Executor.run` on the candidate,
`judge_once` in both orders) -> measure -> record, with an `LLM` that makes real HTTP calls.

1. fake        32 cases for one skill (taxi-hailing, synthesised make_set-style: one fixture tool
               `ride.estimate_fare` per case, the other 9 example skills in the executor's index) at
               `max_concurrency` 8 against `ActionServer`, a `FakeOpenAIServer` subclass in this file
               with 200 ms latency per call, `LLM(resolve_all(env=...), cache=None)`, no checkpointer.
               The server answers the schemas sensibly: `Action` turn 1 use_skill of the case's
               skill, turn 2 call_tool of the first tool the step enum offers, turn 3 answer with the tool result's leaf values; `Judgement` a fixed
               valid all-tie answer. Calls = chat requests the server received. Ideal walls:
                 throughput    calls / 8 x 200 ms,
                 critical path max over cases of its sequential calls (baseline turns + candidate
                               turns + judge calls) x 200 ms,
                 schedule      cases list-scheduled in order onto 8 workers (each case lasting its
                               sequential calls x 200 ms): the makespan of a perfect pool,
               ideal = max(throughput, critical path). Target: wall <= 1.3 x ideal. Also reported: the
               same run at latency 0 (pure client + graph + server CPU per call), peak requests in
               flight, and whether every execution answered and passed its objective checks.
2. checkpoint  The same 32-case run with and without `sqlite_saver(<tmp db>)` (a fresh file per run,
               durability "sync", thread id per run), at server latency 0 and 200 ms, --repeats
               paired runs each (order alternated), medians. Overhead = median(with) / median(without)
               - 1, and the median of the per-pair ratios. Target: <= 5 % at 200 ms.
3. local       The embedded model (`local_server.serve(ws)`: llama.cpp, one thread per core, the RAM
               prompt cache on, n_ctx 4096) in a temp
               workspace (`init_workspace`, the 10 example skills imported with
               `ReleaseStateMachine.open(ws).import_skills(skillfile.scan(...))`, an evaluation set
               `dev` holding the first --local-cases cases of evaluation_sets/dev.json). The graph
               evaluates one skill per run, so the cases are evaluated skill by skill (one graph run
               per skill, in dev.json order), in --local-mode (behaviour: the skill loaded up front),
               each with `max_concurrency` = `default_concurrency` (2 against the embedded server: it
               serialises requests; more only queues), through `eval_context(ws, build_llm(ws,
               no_cache=True))`, with the package's local-server defaults (timeout 600 s, 0 retries)
               unless --local-timeout / --local-retries say otherwise (SKILLFORGE_LLM_TIMEOUT /
               _MAX_RETRIES).
               Baseline = the current (imported) release; candidate = the same SKILL.md plus one
               harmless constraint line. Reported: wall, calls and tokens (the LLM ledger), call
               latencies, judge flip rate, INVALID rate, the skill-exercised rate (executions that
               loaded the case's skill) and no-evidence cases, executions that ended without an answer
               (and why), objective pass rates, the verdict per skill, and sample Actions the model
               produced (recorded by wrapping the context's `llm.structured`), and llama.cpp's own
               timings summed from the server log (prompt vs generation time, prefix-cache hits).
               The server is always stopped in a `finally`. Takes 20-40 minutes on a 2-core box;
               progress goes to stderr.

Machine info and a table (or one JSON object with --json) go to stdout. The fake server runs as a
thread of this process, so its request handling shares the GIL with the graph's worker threads.
Figures are wall-clock (time.perf_counter). The script always exits 0: it reports numbers.

    python benchmarks/evaluation.py [--part fake|checkpoint|local|all] [--json] [--repeats 5]
                                    [--local-cases 10] [--local-mode behaviour|disclosure]
                                    [--local-timeout S] [--local-retries N] [--local-threads N]
                                    [--local-concurrency N]
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import platform  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import sqlite3  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402
from collections import Counter, defaultdict  # noqa: E402
from collections.abc import Mapping, Sequence  # noqa: E402
from importlib.metadata import PackageNotFoundError, version  # noqa: E402
from pathlib import Path  # noqa: E402

# Allow `python benchmarks/evaluation.py` from a checkout without an installed package.
_REPO_ROOT = Path(__file__).resolve().parent.parent
if str(_REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(_REPO_ROOT))

from skillforge.skill import file as skillfile  # noqa: E402
from skillforge.context import EvalContext  # noqa: E402
from skillforge.evaluation.executor import LOADED, Action, SkillUnderTest  # noqa: E402
from skillforge.runners.checkpoint import sqlite_saver  # noqa: E402
from skillforge.graphs.evaluate import build_evaluate_graph  # noqa: E402
from skillforge.evaluation.judge import Judgement  # noqa: E402
from skillforge.llm.client import LLM  # noqa: E402
from skillforge.llm.ledger import RunBudget  # noqa: E402
from skillforge.llm.config import resolve_all  # noqa: E402
from skillforge.state.evaluate import CaseResult, EvalSet, SkillSide  # noqa: E402
from skillforge.state.evaluate_graph import EvalState  # noqa: E402
from skillforge.testing.fake_chat import offered_tools  # noqa: E402
from skillforge.testing.openai_server import FakeOpenAIServer, Reply  # noqa: E402
from skillforge.testing.schema_values import pick_tool  # noqa: E402

SKILLS_DIR = _REPO_ROOT / "skills"
DEV_SET = _REPO_ROOT / "evaluation_sets" / "dev.json"
SKILL = "taxi-hailing"
N_CASES = 32
CONCURRENCY = 8
LATENCY_S = 0.2
TARGET_WALL_RATIO = 1.3
TARGET_CKPT_OVERHEAD = 0.05
LOCAL_TIMEOUT_S = -1.0
"""-1: the package's default for the embedded server (600 s)."""
LOCAL_RETRIES = -1
EXTRA_LINE = "- 回复末尾不要添加与请求无关的推销内容。"
"""The candidate's one harmless extra constraint (no promotional filler at the end of a reply)."""
JUDGEMENT = Judgement(overall="tie", task="tie", robustness="tie", readability="tie",
                      reason="Both answers state the same tool values.").model_dump()
USE_SKILL_RE = re.compile(r"^- ([a-z0-9][a-z0-9-]*):", re.MULTILINE)
log = logging.getLogger("benchmarks.evaluation")


def progress(msg: str) -> None:
    sys.stderr.write(f"[{time.strftime('%H:%M:%S')}] {msg}\n")
    sys.stderr.flush()


# ---- the fake endpoint -------------------------------------------------------------------------
def _content(message: object) -> str:
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _leaves(value: object) -> list[str]:
    """The scalar values of a JSON value, depth first (keys dropped)."""
    if isinstance(value, dict):
        return [x for k, v in value.items() if k != "_nonce" for x in _leaves(v)]
    if isinstance(value, list):
        return [x for v in value for x in _leaves(v)]
    return [] if value is None else [str(value)]


def sensible_action(messages: Sequence[object], skill_of_query: Mapping[str, str],
                    tools: list[str]) -> dict[str, object]:
    """What a competent executor does: load the case's skill, call the first tool (of those the step
    enum offers), answer with its values."""
    system, query, last = _content(messages[0]), _content(messages[1]), _content(messages[-1])
    if len(messages) <= 2 and LOADED in system and tools:  # behaviour mode: the skill is loaded already
        return {"kind": "call_tool", "name": tools[0], "arguments": {}}
    if len(messages) <= 2:
        skill = skill_of_query.get(query) or next(iter(USE_SKILL_RE.findall(system)), "")
        return {"kind": "use_skill", "name": skill, "text": "the request matches this skill"}
    if last.startswith("use_skill") and tools:
        return {"kind": "call_tool", "name": tools[0], "arguments": {}}
    if last.startswith("tool result"):
        payload = last.split(": ", 1)[1] if ": " in last else ""
        try:
            facts = _leaves(json.loads(payload))
        except ValueError:  # cut at TOOL_RESULT_CHARS
            facts = [payload[:200]]
        return {"kind": "answer", "text": "根据查询结果：" + "，".join(facts) + "。需要我继续吗？"}
    return {"kind": "answer", "text": "抱歉，暂时无法完成这个请求，请补充信息。"}


class ActionServer(FakeOpenAIServer):
    """`FakeOpenAIServer` answering the executor's `Action` and the judge's `Judgement` sensibly (see
    `sensible_action`); counts requests per tool and the peak number in flight."""

    def __init__(self, skill_of_query: Mapping[str, str], latency_s: float = 0.0) -> None:
        super().__init__(latency_s=latency_s, default=Reply.auto(), model="fake-model")
        self.skill_of_query = dict(skill_of_query)
        self._stats_lock = threading.Lock()
        self.by_tool: Counter[str] = Counter()
        self.in_flight = 0
        self.peak_in_flight = 0

    def reset_stats(self) -> None:
        with self._stats_lock:
            self.by_tool = Counter()
            self.peak_in_flight = self.in_flight

    def _chat(self, raw: bytes, auth: str | None):  # noqa: ANN202 - same as the parent
        with self._stats_lock:
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            return super()._chat(raw, auth)
        finally:
            with self._stats_lock:
                self.in_flight -= 1

    def _answer(self, reply: Reply, body: dict[str, object]):  # noqa: ANN202 - same as the parent
        fn = pick_tool(body)
        name = str(fn.get("name")) if fn else ""
        messages = body.get("messages") if isinstance(body.get("messages"), list) else []
        prompt_tokens = max(1, sum(len(_content(m)) for m in messages) // 3)  # type: ignore[union-attr]
        if name == Action.__name__:
            offered = offered_tools(body.get("tools") if isinstance(body.get("tools"), list) else [])  # type: ignore[arg-type]
            args = json.dumps(sensible_action(messages, self.skill_of_query, offered), ensure_ascii=False)  # type: ignore[arg-type]
            reply = Reply.tool_call(name, args, prompt_tokens=prompt_tokens, completion_tokens=max(1, len(args) // 3))
        elif name == Judgement.__name__:
            reply = Reply.tool_call(name, JUDGEMENT, prompt_tokens=prompt_tokens, completion_tokens=40)
        with self._stats_lock:
            self.by_tool[name or "(text)"] += 1
        return super()._answer(reply, body)


# ---- the fake run ------------------------------------------------------------------------------
def skill_text(extra: str = "") -> str:
    base = (SKILLS_DIR / SKILL / "SKILL.md").read_text(encoding="utf-8")
    return base.rstrip("\n") + "\n" + (extra + "\n" if extra else "")


PLACES = [("公司", "浦东机场T2"), ("静安寺", "虹桥火车站"), ("home", "the Bund"), ("人民广场", "迪士尼乐园"),
          ("陆家嘴", "徐家汇"), ("the office", "Hongqiao airport"), ("五角场", "南京西路"), ("世纪公园", "前滩")]


def synth_set(n: int = N_CASES) -> EvalSet:
    """n make_set-style cases for taxi-hailing with varied queries and one fixture tool each."""
    cases = []
    for i in range(n):
        src, dst = PLACES[i % len(PLACES)]
        fare, eta = 96 + 7 * i, f"{8 + i % 14:02d}:{(7 * i) % 60:02d}"
        query = (f"从{src}打车到{dst}大概多少钱？第{i + 1}单" if i % 2 == 0 else
                 f"How much is a ride from {src} to {dst}? (request {i + 1})")
        cases.append({"id": f"bench-{i:02d}", "skill": SKILL, "query": query,
                      "fixtures": {"ride.estimate_fare": {"pickup": src, "dropoff": dst, "options": [
                          {"vehicle_type": "快车", "fare": fare, "eta": eta},
                          {"vehicle_type": "专车", "fare": fare + 55, "eta": eta}]}},
                      "expect": {"must_include": [str(fare), eta], "must_not_include": ["已为您叫车"]},
                      "p0": i < 2, "tags": ["zh" if i % 2 == 0 else "en"]})
    return EvalSet.model_validate({"meta": {"name": "bench", "partition": "dev", "skills": [SKILL]}, "cases": cases})


def example_others() -> dict[str, SkillUnderTest]:
    """The other example skills, visible in the executor's index on both sides."""
    report = skillfile.scan(SKILLS_DIR, SKILLS_DIR)
    return {name: SkillUnderTest(lo.skill, lo.skill.body, None) for name, lo in report.skills.items() if name != SKILL}


def fake_llm(url: str) -> LLM:
    env = {"SKILLFORGE_LLM_BASE_URL": url, "SKILLFORGE_LLM_MODEL": "fake-exec", "SKILLFORGE_LLM_API_KEY": "k",
           "SKILLFORGE_LLM_MAX_RETRIES": "0", "SKILLFORGE_LLM_TIMEOUT": "30", "SKILLFORGE_JUDGE_MODEL": "fake-judge"}
    return LLM(resolve_all(env=env), cache=None)


class FakeBench:
    """One server, one set, one LLM; runs the 32-case evaluation on demand."""

    def __init__(self, n_cases: int = N_CASES) -> None:
        self.eval_set = synth_set(n_cases)
        self.srv = ActionServer({c.query: c.skill for c in self.eval_set.cases}).start()
        self.llm = fake_llm(self.srv.base_url)
        self.ctx = EvalContext(llm=self.llm, sets={"bench": self.eval_set}, others=example_others())
        self.tmp = Path(tempfile.mkdtemp(prefix="sf-bench-eval-"))

    def close(self) -> None:
        self.srv.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def state(self, run_id: str) -> EvalState:
        return EvalState(run_id=run_id, skill=SKILL, eval_set="bench",
                         baseline=SkillSide(text=skill_text(), release_id="r-base"),
                         candidate=SkillSide(text=skill_text(EXTRA_LINE), release_id=None, label="candidate"))

    def run(self, latency_s: float, *, checkpoint: bool = False) -> dict[str, object]:
        """One full evaluation; wall time, server hits and the final state."""
        self.srv.latency_s = latency_s
        run_id = f"bench-{uuid.uuid4().hex[:8]}"
        db = self.tmp / f"{run_id}.sqlite"
        saver = sqlite_saver(db) if checkpoint else None
        graph = build_evaluate_graph(checkpointer=saver)
        cfg: dict[str, object] = {"max_concurrency": CONCURRENCY}
        if checkpoint:
            cfg["configurable"] = {"thread_id": run_id}
        self.srv.reset_stats()
        hits0, calls0 = self.srv.hits, self.llm.ledger.calls
        t0 = time.perf_counter()
        out = graph.invoke(self.state(run_id), cfg, context=self.ctx, **({"durability": "sync"} if checkpoint else {}))
        wall = time.perf_counter() - t0
        final = EvalState.model_validate(out)
        row: dict[str, object] = {"wall_s": wall, "calls": self.srv.hits - hits0,
                                  "ledger_calls": self.llm.ledger.calls - calls0,
                                  "peak_in_flight": self.srv.peak_in_flight, "by_tool": dict(self.srv.by_tool),
                                  "final": final}
        if checkpoint:
            row["db_bytes"] = sum(p.stat().st_size for p in self.tmp.glob(f"{run_id}.sqlite*"))
            with sqlite3.connect(db) as conn:
                row["checkpoints"] = conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0]
                row["writes"] = conn.execute("SELECT COUNT(*) FROM writes").fetchone()[0]
            saver.conn.close()  # type: ignore[union-attr]
        return row


def case_calls(r: CaseResult) -> int:
    """Sequential LLM calls of one case: both executions' turns and the judge calls made."""
    judged = len(r.orders) if r.orders else (0 if r.baseline.error or r.candidate.error else 2)
    return r.baseline.turns + r.candidate.turns + judged


def list_schedule(durations: Sequence[float], workers: int) -> float:
    """Makespan of running `durations` in order on `workers` (each job to the first free worker)."""
    free = [0.0] * workers
    for d in durations:
        i = min(range(workers), key=free.__getitem__)
        free[i] += d
    return max(free) if free else 0.0


def summarise_fake(row: dict[str, object], latency_s: float) -> dict[str, object]:
    final: EvalState = row["final"]  # type: ignore[assignment]
    order = {c.id: i for i, c in enumerate(final.cases)}
    results = sorted(final.results, key=lambda r: order[r.case.id])
    per_case = [case_calls(r) for r in results]
    calls = int(row["calls"])  # type: ignore[arg-type]
    throughput = calls / CONCURRENCY * latency_s
    critical = max(per_case, default=0) * latency_s
    ideal = max(throughput, critical)
    wall = float(row["wall_s"])  # type: ignore[arg-type]
    m = final.result.measured if final.result else None
    execs = [e for r in results for e in (r.baseline, r.candidate)]
    return {
        "latency_ms": latency_s * 1000, "cases": len(results), "concurrency": CONCURRENCY, "wall_s": round(wall, 3),
        "calls": calls, "ledger_calls": row["ledger_calls"], "calls_by_schema": row["by_tool"],
        "calls_per_case": dict(sorted(Counter(per_case).items())), "sum_case_calls": sum(per_case),
        "ideal_throughput_s": round(throughput, 3), "ideal_critical_path_s": round(critical, 3),
        "ideal_schedule_s": round(list_schedule([c * latency_s for c in per_case], CONCURRENCY), 3),
        "ideal_s": round(ideal, 3), "ratio": round(wall / ideal, 3) if ideal else None,
        "target_ratio": TARGET_WALL_RATIO,
        "overhead_ms_per_call": round((wall - throughput) / calls * CONCURRENCY * 1000, 2) if calls else None,
        "client_ms_per_call": round(wall / calls * 1000, 3) if calls else None,
        "peak_in_flight": row["peak_in_flight"],
        "executions": len(execs), "answered": sum(1 for e in execs if e.answer and not e.error),
        "objective_pass": sum(1 for r in results for s in r.checks.values() if s.passed),
        "verdict": final.result.verdict if final.result else None,
        "reasons": list(final.result.reasons) if final.result else [],
        "scores": {"baseline": m.old.model_dump(), "candidate": m.new.model_dump()} if m else {},
        "invalid_rate": m.invalid_rate if m else None, "flip_rate": m.flip_rate if m else None,
    }


def part_fake(bench: FakeBench) -> dict[str, object]:
    progress("fake: warm-up run (latency 0)")
    bench.run(0.0)
    progress("fake: 32 cases at latency 0")
    zero = summarise_fake(bench.run(0.0), 0.0)
    progress(f"fake: 32 cases at latency {LATENCY_S * 1000:.0f} ms, concurrency {CONCURRENCY}")
    main = summarise_fake(bench.run(LATENCY_S), LATENCY_S)
    progress(f"fake: wall {main['wall_s']} s, ideal {main['ideal_s']} s, ratio {main['ratio']}")
    return {"latency_200": main, "latency_0": zero}


def part_checkpoint(bench: FakeBench, repeats: int) -> dict[str, object]:
    out: dict[str, object] = {"repeats": repeats, "durability": "sync", "target_overhead": TARGET_CKPT_OVERHEAD}
    bench.run(0.0, checkpoint=True)  # warm-up of the saver and serializer
    for latency in (0.0, LATENCY_S):
        plain, saved, ratios, extra = [], [], [], {}
        for i in range(repeats):
            progress(f"checkpoint: latency {latency * 1000:.0f} ms, pair {i + 1}/{repeats}")
            first_ckpt = i % 2 == 1
            a = bench.run(latency, checkpoint=first_ckpt)
            b = bench.run(latency, checkpoint=not first_ckpt)
            with_c, without = (a, b) if first_ckpt else (b, a)
            plain.append(float(without["wall_s"]))  # type: ignore[arg-type]
            saved.append(float(with_c["wall_s"]))  # type: ignore[arg-type]
            ratios.append(saved[-1] / plain[-1])
            extra = {k: with_c[k] for k in ("db_bytes", "checkpoints", "writes")}
            extra["verdicts_equal"] = (with_c["final"].result.verdict == without["final"].result.verdict)  # type: ignore[union-attr]
        med_plain, med_saved = statistics.median(plain), statistics.median(saved)
        out[f"latency_{int(latency * 1000)}"] = {
            "without_s": [round(x, 3) for x in plain], "with_s": [round(x, 3) for x in saved],
            "median_without_s": round(med_plain, 3), "median_with_s": round(med_saved, 3),
            "overhead": round(med_saved / med_plain - 1, 4), "overhead_paired": round(statistics.median(ratios) - 1, 4),
            "per_case_ms": round((med_saved - med_plain) / N_CASES * 1000, 2), **extra}
    return out


# ---- the local model ---------------------------------------------------------------------------
class Recorder:
    """Wraps `llm.structured` of one LLM instance: every call's role, schema, value or error, latency."""

    def __init__(self, llm: LLM) -> None:
        self.lock = threading.Lock()
        self.calls: list[dict[str, object]] = []
        inner = llm.structured

        def structured(role, schema, messages, **kw):  # noqa: ANN001, ANN202
            from langchain_core.messages import convert_to_messages

            msgs = convert_to_messages(messages)
            rec: dict[str, object] = {"t": time.time(), "thread": threading.get_ident(), "role": role.value,
                                      "schema": schema.__name__, "n_messages": len(msgs),
                                      "query": msgs[1].text if len(msgs) > 1 else "",
                                      "last": (msgs[-1].text or "")[:120]}
            t0 = time.perf_counter()
            try:
                ans = inner(role, schema, messages, **kw)
            except Exception as e:
                rec.update(error=f"{type(e).__name__}: {e}"[:300], latency_ms=round((time.perf_counter() - t0) * 1000))
                with self.lock:
                    self.calls.append(rec)
                raise
            rec.update(value=ans.value.model_dump(mode="json"), latency_ms=round(ans.latency_ms),
                       prompt_tokens=ans.prompt_tokens, completion_tokens=ans.completion_tokens)
            with self.lock:
                self.calls.append(rec)
            return ans

        llm.structured = structured  # type: ignore[method-assign]

    def executions(self) -> list[list[dict[str, object]]]:
        """Executor calls grouped into executions: a case runs in one thread; an execution starts at
        the call with 2 messages."""
        runs: list[list[dict[str, object]]] = []
        open_run: dict[int, list[dict[str, object]]] = {}
        for c in sorted(self.calls, key=lambda c: c["t"]):  # type: ignore[arg-type, return-value]
            if c["schema"] != Action.__name__:
                continue
            if c["n_messages"] == 2 or c["thread"] not in open_run:
                open_run[c["thread"]] = []  # type: ignore[index]
                runs.append(open_run[c["thread"]])  # type: ignore[index]
            open_run[c["thread"]].append(c)  # type: ignore[index]
        return runs


def _pct(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    return round(s[min(len(s) - 1, int(round(q * (len(s) - 1))))], 1)


def setup_workspace(root: Path, n_cases: int):  # noqa: ANN201 - (Workspace, machine, cases)
    from skillforge.config import init_workspace
    from skillforge.library.releases import ReleaseStateMachine

    ws = init_workspace(root)
    for name, lo in skillfile.scan(SKILLS_DIR, SKILLS_DIR).skills.items():
        shutil.copytree(lo.path, ws.skills_dir / name)
    machine = ReleaseStateMachine.open(ws)
    imported = machine.import_skills(skillfile.scan(ws.skills_dir, ws.root))
    if imported.errors:
        raise RuntimeError(f"import failed: {imported.errors}")
    data = json.loads(DEV_SET.read_text(encoding="utf-8"))
    data["cases"] = data["cases"][:n_cases]
    (ws.evaluation_sets_dir / "dev.json").write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    return ws, machine, data["cases"]


PERF_RE = re.compile(r"llama_perf_context_print:\s+(prompt eval|eval|total) time =\s+([\d.]+) ms /\s+(\d+) (?:tokens|runs)")
PREFIX_RE = re.compile(r"Llama\.generate: (\d+) prefix-match hit, remaining (\d+) prompt tokens")


def server_log_stats(path: Path) -> dict[str, object]:
    """llama.cpp's per-request timings from the server log: where the server's time went."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for kind, ms_, n in PERF_RE.findall(text):
        sums[kind][0] += float(ms_)
        sums[kind][1] += int(n)
        sums[kind][2] += 1
    hits = [(int(a), int(b)) for a, b in PREFIX_RE.findall(text)]
    pe, ev_, tot = sums["prompt eval"], sums["eval"], sums["total"]
    return {"requests": int(tot[2]), "total_s": round(tot[0] / 1000, 1),
            "prompt_eval_s": round(pe[0] / 1000, 1), "prompt_tokens_evaluated": int(pe[1]),
            "prompt_tok_per_s": round(pe[1] / pe[0] * 1000, 1) if pe[0] else None,
            "gen_s": round(ev_[0] / 1000, 1), "gen_tokens": int(ev_[1]),
            "gen_tok_per_s": round(ev_[1] / ev_[0] * 1000, 2) if ev_[0] else None,
            "other_s": round((tot[0] - pe[0] - ev_[0]) / 1000, 1),
            "prefix_hit_tokens": sum(a for a, _ in hits), "requests_with_prefix_hit": len(hits),
            "client_disconnects_logged": text.count("Disconnected") + text.count("disconnect")}


def part_local(n_cases: int, timeout_s: float, retries: int, mode: str = "behaviour",
               threads: int | None = None, concurrency: int | None = None) -> dict[str, object]:
    """The local-model evaluation, skill by skill; raw material for `summarise_local`. `timeout_s` and
    `retries` go to the LLM through SKILLFORGE_LLM_TIMEOUT / _MAX_RETRIES (a negative value keeps the
    package default); these env keys do not stop the local server from being used."""
    from skillforge.llm import local_server
    from skillforge.context import eval_context
    from skillforge.llm.client import build_llm
    from skillforge.llm.config import default_concurrency
    from skillforge.state.evaluate import ExecutionMode

    tmp = Path(tempfile.mkdtemp(prefix="sf-bench-local-"))
    out: dict[str, object] = {"cases": n_cases, "mode": mode, "runs": [], "results": []}
    ws = None
    saved_env = {k: os.environ.get(k) for k in ("SKILLFORGE_LLM_TIMEOUT", "SKILLFORGE_LLM_MAX_RETRIES")}
    if timeout_s >= 0:
        os.environ["SKILLFORGE_LLM_TIMEOUT"] = f"{timeout_s:g}"
    if retries >= 0:
        os.environ["SKILLFORGE_LLM_MAX_RETRIES"] = str(retries)
    try:
        ws, machine, cases = setup_workspace(tmp / "ws", n_cases)
        skills = list(dict.fromkeys(c["skill"] for c in cases))
        progress(f"local: starting the model server (workspace {ws.root})")
        t0 = time.perf_counter()
        info = local_server.serve(ws, wait_s=600, n_threads=threads)
        out["server_start_s"] = round(time.perf_counter() - t0, 1)
        out["model"] = info.model
        llm = build_llm(ws, no_cache=True)
        cfg = next(iter(llm.configs.values()))
        out["config"] = {"sources": sorted({c.source for c in llm.configs.values()}), "timeout_s": cfg.timeout,
                         "max_retries": cfg.max_retries, "max_tokens": cfg.max_tokens, "temperature": cfg.temperature,
                         "context_tokens": cfg.context_tokens, "server_command": info.command[3:]}
        concurrency = concurrency or default_concurrency(llm.configs)
        out["concurrency"] = concurrency
        rec = Recorder(llm)
        out["recorder"], out["ledger"] = rec, llm.ledger
        ctx = eval_context(ws, llm)
        graph = build_evaluate_graph()
        t_all = time.perf_counter()
        done = 0
        for skill in skills:
            current = machine.store.current(skill)
            assert current is not None and current.commit_hash is not None
            text = machine.repo.read(current.commit_hash, f"{current.skill_path}/SKILL.md").decode("utf-8")
            state = EvalState(run_id=f"bench-local-{skill}-{uuid.uuid4().hex[:6]}", skill=skill, eval_set="dev",
                              baseline=SkillSide(text=text, release_id=current.release_id, label="current"),
                              candidate=SkillSide(text=text.rstrip("\n") + "\n" + EXTRA_LINE + "\n", label="candidate"),
                              mode=ExecutionMode(mode))
            n_skill = sum(1 for c in cases if c["skill"] == skill)
            progress(f"local: {skill}: {n_skill} case(s), mode {mode}, concurrency {concurrency}")
            t0, calls0, tokens0 = time.perf_counter(), llm.ledger.calls, llm.ledger.tokens
            result = None
            for update in graph.stream(state, {"max_concurrency": concurrency}, context=ctx,
                                       stream_mode="updates"):
                for r in (update.get("run_case") or {}).get("results", []):
                    done += 1
                    out["results"].append(r)  # type: ignore[union-attr]
                    why = f" ({(r.error or '')[:120]})" if r.error else ""
                    progress(f"local:   case {done}/{n_cases} {r.case.id}: turns {r.baseline.turns}+{r.candidate.turns}"
                             f", answered {bool(r.baseline.answer)}/{bool(r.candidate.answer)}, invalid {r.invalid}{why}"
                             f"; {time.perf_counter() - t_all:.0f} s elapsed, {llm.ledger.calls} calls")
                if "measure" in update:
                    result = update["measure"]["result"]
            wall = time.perf_counter() - t0
            out["runs"].append({"skill": skill, "cases": n_skill, "wall_s": round(wall, 1),  # type: ignore[union-attr]
                                "calls": llm.ledger.calls - calls0, "tokens": llm.ledger.tokens - tokens0,
                                "verdict": getattr(result, "verdict", None),
                                "reasons": list(getattr(result, "reasons", []) or [])})
            progress(f"local: {skill}: {getattr(result, 'verdict', None)} in {wall:.0f} s")
        out["wall_s"] = round(time.perf_counter() - t_all, 1)
    except Exception as e:  # noqa: BLE001 - a benchmark reports what happened
        log.debug("local part failed", exc_info=True)
        out["error"] = f"{type(e).__name__}: {e}"[:1500]
        progress(f"local: FAILED: {out['error']}")
    finally:
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        if ws is not None:
            out["server_log"] = server_log_stats(ws.runs_dir / local_server.SERVER_LOG)
            try:
                out["server_stopped"] = local_server.stop(ws)
            except Exception as e:  # noqa: BLE001
                out["server_stopped"] = f"stop failed: {e}"
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def _reason(error: str) -> str:
    """An execution error without its variable parts."""
    error = re.sub(r"\(.*? at http://[^)]*\)", "", error)
    error = re.sub(r" in the reply \(.*", " in the reply", error)  # what the reply held: per reply
    return re.sub(r"\s+", " ", error)[:110]


def _short(value: object, n: int = 160) -> object:
    if isinstance(value, dict):
        return {k: _short(v, n) for k, v in value.items()}
    if isinstance(value, str) and len(value) > n:
        return value[:n] + "…"
    return value


def summarise_local(raw: dict[str, object]) -> dict[str, object]:
    results: list[CaseResult] = raw.get("results", [])  # type: ignore[assignment]
    rec: Recorder | None = raw.get("recorder")  # type: ignore[assignment]
    ledger: RunBudget | None = raw.get("ledger")  # type: ignore[assignment]
    out = {k: raw[k] for k in ("cases", "mode", "concurrency", "server_start_s", "model", "config", "wall_s", "runs",
                               "error", "server_log", "server_stopped") if k in raw}
    valid = [r for r in results if not r.invalid]
    execs = [(r, side, e) for r in results for side, e in (("baseline", r.baseline), ("candidate", r.candidate))]
    unanswered = [(r, side, e) for r, side, e in execs if e.error or not e.answer]
    out.update({
        "cases_done": len(results), "invalid_cases": len(results) - len(valid),
        "invalid_rate": round((len(results) - len(valid)) / len(results), 4) if results else None,
        "flip_rate": round(sum(r.flipped for r in valid) / len(valid), 4) if valid else None,
        "flipped_cases": [r.case.id for r in valid if r.flipped],
        "executions": len(execs), "without_answer": len(unanswered),
        "without_answer_reasons": dict(Counter(_reason(e.error or "empty answer") for _, _, e in unanswered).most_common()),
        "turns": dict(sorted(Counter(e.turns for _, _, e in execs).items())),
        "loaded_right_skill": sum(1 for r, _, e in execs if r.case.skill in e.skills_loaded),
        "skill_exercised_rate": round(sum(1 for r, _, e in execs if r.case.skill in e.skills_loaded) / len(execs), 4)
        if execs else None,
        "no_evidence_cases": sum(1 for r in results if r.no_evidence),
        "context": {"truncated_tool_results": sum(e.truncated_tool_results for _, _, e in execs),
                    "executions_with_elided_turns": sum(1 for _, _, e in execs if e.elided_turns),
                    "context_overflows": sum(1 for _, _, e in execs if (e.error or "").startswith("ContextOverflow"))},
        "called_a_fixture_tool": sum(1 for _, _, e in execs if any(t.ok for t in e.tool_calls)),
        "bad_tool_calls": sum(1 for _, _, e in execs for t in e.tool_calls if not t.ok),
        "objective_pass": {side: sum(1 for r in results if r.checks[side].passed) for side in ("baseline", "candidate")},
        "expect_pass": {side: sum(1 for r in results if r.checks[side].expect_pass) for side in ("baseline", "candidate")},
        "provenance_ok": {side: sum(1 for r in results if r.checks[side].provenance_ok) for side in ("baseline", "candidate")},
        "judge_overall": dict(Counter(r.verdicts["overall"].value for r in valid if "overall" in r.verdicts)),
        "case_errors": {r.case.id: _reason(r.error) for r in results if r.error},
        # the whole message of each execution that failed without answering (what the reply held)
        "execution_errors": [f"{r.case.id} {side}: {e.error}" for r, side, e in unanswered if e.error],
    })
    if ledger is not None:
        out["calls"], out["tokens"], out["cache_hits"] = ledger.calls, ledger.tokens, ledger.cache_hits
        out["by_role"] = {role.value: {"calls": s.calls, "prompt_tokens": s.prompt_tokens,
                                       "completion_tokens": s.completion_tokens} for role, s in ledger.by_role.items()}
    if rec is not None:
        calls = rec.calls
        lat: dict[str, list[float]] = defaultdict(list)
        for c in calls:
            lat[str(c["schema"])].append(float(c["latency_ms"]))  # type: ignore[arg-type]
        out["latency_ms"] = {k: {"n": len(v), "p50": _pct(v, 0.5), "p95": _pct(v, 0.95), "max": max(v)}
                             for k, v in lat.items()}
        out["call_errors"] = dict(Counter(_reason(str(c["error"])) for c in calls if "error" in c).most_common())
        actions = [c for c in calls if c["schema"] == Action.__name__ and "value" in c]
        by_turn: dict[int, Counter[str]] = defaultdict(Counter)
        for c in actions:
            v = c["value"]
            turn = (int(c["n_messages"]) - 2) // 2 + 1  # type: ignore[arg-type]
            by_turn[turn][str(v["step"])] += 1  # type: ignore[index]
        out["actions_by_turn"] = {t: dict(cnt.most_common(6)) for t, cnt in sorted(by_turn.items())}
        out["sample_executions"] = [
            [{"turn": (int(c["n_messages"]) - 2) // 2 + 1,  # type: ignore[arg-type]
              **({"action": _short(c["value"])} if "value" in c else {"error": c.get("error")})} for c in run]
            for run in rec.executions()[:4]]
    return out


# ---- machine info & report ---------------------------------------------------------------------
def pkg_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "?"


def machine_info() -> dict[str, object]:
    cpu, mem = "?", None
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    try:
        mem = next(round(int(line.split()[1]) / 1024 / 1024, 1) for line in Path("/proc/meminfo").read_text().splitlines()
                   if line.startswith("MemTotal:"))
    except (OSError, StopIteration):
        pass
    return {"cpu_count": os.cpu_count(), "cpu": cpu, "mem_gb": mem, "platform": platform.platform(),
            "python": platform.python_version(), "langgraph": pkg_version("langgraph"),
            "langchain-openai": pkg_version("langchain-openai"), "openai": pkg_version("openai"),
            "llama_cpp_python": pkg_version("llama_cpp_python"), "omp_num_threads": os.environ.get("OMP_NUM_THREADS")}


def mark(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def print_report(res: dict[str, object]) -> None:
    m = res["machine"]
    print("SkillForge evaluation benchmark")
    print(f"  machine : {m['cpu_count']} CPU ({m['cpu']}), {m['mem_gb']} GB, {m['platform']}")  # type: ignore[index]
    print(f"  versions: python {m['python']}, langgraph {m['langgraph']}, langchain-openai {m['langchain-openai']}, "  # type: ignore[index]
          f"openai {m['openai']}, llama_cpp_python {m['llama_cpp_python']}, OMP_NUM_THREADS={m['omp_num_threads']}")  # type: ignore[index]
    if "fake" in res:
        f, z = res["fake"]["latency_200"], res["fake"]["latency_0"]  # type: ignore[index]
        print(f"\n1. fake server: {f['cases']} cases of {SKILL}, max_concurrency {f['concurrency']}, no cache")
        print(f"   {'':28}{'latency 200 ms':>16}{'latency 0':>12}")
        rows = [("wall (s)", "wall_s"), ("LLM calls (server hits)", "calls"), ("ledger calls", "ledger_calls"),
                ("peak requests in flight", "peak_in_flight"), ("ideal: calls/8 x lat (s)", "ideal_throughput_s"),
                ("ideal: critical path (s)", "ideal_critical_path_s"), ("ideal: list schedule (s)", "ideal_schedule_s"),
                ("wall / ideal", "ratio"), ("overhead/call beyond lat (ms)", "overhead_ms_per_call"),
                ("wall / calls (ms)", "client_ms_per_call"), ("executions answered", "executions"),
                ("objective checks passed", "objective_pass"), ("verdict", "verdict")]
        for label, key in rows:
            if key == "executions":
                a, b = f"{f['answered']}/{f['executions']}", f"{z['answered']}/{z['executions']}"
            elif key == "objective_pass":
                a, b = f"{f['objective_pass']}/{2 * f['cases']}", f"{z['objective_pass']}/{2 * z['cases']}"
            else:
                a, b = f.get(key), z.get(key)
            print(f"   {label:28}{a!s:>16}{b!s:>12}")
        print(f"   calls by schema: {f['calls_by_schema']}; sequential calls per case: {f['calls_per_case']}")
        print(f"   verdict reasons: {'; '.join(f['reasons'])}")
        print(f"   scores: baseline {f['scores'].get('baseline')}, candidate {f['scores'].get('candidate')}")
        print(f"   target wall <= {TARGET_WALL_RATIO} x ideal ({TARGET_WALL_RATIO * f['ideal_s']:.2f} s): "
              f"{f['wall_s']} s -> {mark(f['ratio'] <= TARGET_WALL_RATIO)}")
    if "checkpoint" in res:
        c = res["checkpoint"]
        print(f"\n2. checkpointer: sqlite_saver(tmp db), durability sync, {c['repeats']} paired runs, medians")  # type: ignore[index]
        print(f"   {'latency':>8} {'without (s)':>12} {'with (s)':>10} {'overhead':>9} {'paired':>8} {'ms/case':>8}"
              f" {'checkpoints':>11} {'writes':>7} {'db KB':>7}")
        for lat in (0, 200):
            r = c[f"latency_{lat}"]  # type: ignore[index]
            print(f"   {lat:>6}ms {r['median_without_s']:>12} {r['median_with_s']:>10} {r['overhead']:>9.1%} "
                  f"{r['overhead_paired']:>8.1%} {r['per_case_ms']:>8} {r['checkpoints']:>11} {r['writes']:>7} "
                  f"{r['db_bytes'] / 1024:>7.0f}")
            print(f"   {'':>8} runs without {r['without_s']}, with {r['with_s']}")
        r200 = c["latency_200"]  # type: ignore[index]
        print(f"   target overhead <= {TARGET_CKPT_OVERHEAD:.0%} at 200 ms: {r200['overhead']:.1%} -> "
              f"{mark(r200['overhead'] <= TARGET_CKPT_OVERHEAD)}")
    if "local" in res:
        lo = res["local"]
        print(f"\n3. local model: {lo.get('model')}, {lo.get('cases')} dev cases, mode {lo.get('mode')}, "  # type: ignore[union-attr]
              f"concurrency {lo.get('concurrency')}")  # type: ignore[union-attr]
        if lo.get("error"):  # type: ignore[union-attr]
            print(f"   ERROR: {lo['error']}")  # type: ignore[index]
        for key, label in (("server_start_s", "server start (s)"), ("config", "llm config"),
                           ("wall_s", "wall (s)"), ("calls", "LLM calls (ledger)"), ("tokens", "tokens (ledger)"),
                           ("by_role", "by role"), ("latency_ms", "call latency (ms)"), ("cases_done", "cases done"),
                           ("invalid_rate", "INVALID rate"), ("invalid_cases", "INVALID cases"),
                           ("flip_rate", "judge flip rate"), ("flipped_cases", "flipped"),
                           ("executions", "executions"), ("without_answer", "ended without answer"),
                           ("without_answer_reasons", "  why"), ("turns", "turns per execution"),
                           ("loaded_right_skill", "loaded the case's skill"),
                           ("skill_exercised_rate", "skill-exercised rate"), ("no_evidence_cases", "no-evidence cases"),
                           ("context", "context caps"),
                           ("called_a_fixture_tool", "called a fixture tool"), ("bad_tool_calls", "unknown-tool calls"),
                           ("expect_pass", "expectations met"), ("provenance_ok", "provenance ok"),
                           ("objective_pass", "objective pass"), ("judge_overall", "judge overall"),
                           ("call_errors", "call errors"), ("case_errors", "case errors"),
                           ("actions_by_turn", "actions by turn"), ("server_log", "server (llama.cpp log)"),
                           ("server_stopped", "server stopped")):
            if key in lo:  # type: ignore[operator]
                print(f"   {label:26}{json.dumps(lo[key], ensure_ascii=False)}")  # type: ignore[index]
        for run in lo.get("runs", []):  # type: ignore[union-attr]
            print(f"   run {run['skill']:22} {run['cases']} cases {run['wall_s']:>7} s {run['calls']:>4} calls "
                  f"{run['tokens']:>7} tokens  verdict {run['verdict']}  {'; '.join(run['reasons'])[:150]}")
        for i, ex in enumerate(lo.get("sample_executions", [])):  # type: ignore[union-attr]
            print(f"   sample execution {i + 1}:")
            for step in ex:
                print(f"     {json.dumps(step, ensure_ascii=False)[:300]}")


def _jsonable(res: dict[str, object]) -> dict[str, object]:
    return json.loads(json.dumps(res, ensure_ascii=False, default=str))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--part", choices=("fake", "checkpoint", "local", "all"), default="all")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--repeats", type=int, default=5, help="paired runs per latency in the checkpoint part")
    p.add_argument("--local-cases", type=int, default=10, help="first N cases of evaluation_sets/dev.json")
    p.add_argument("--local-mode", choices=("behaviour", "disclosure"), default="behaviour")
    p.add_argument("--local-timeout", type=float, default=LOCAL_TIMEOUT_S,
                   help="LLM timeout (s) for the local part; negative = the package default (600 s for the local server)")
    p.add_argument("--local-retries", type=int, default=LOCAL_RETRIES,
                   help="LLM max_retries for the local part; negative = the package default (0 for the local server)")
    p.add_argument("--local-concurrency", type=int, default=None,
                   help="cases at once for the local part (default: the package's, default_concurrency)")
    p.add_argument("--local-threads", type=int, default=None,
                   help="llama.cpp threads (default: the package's idle-core rule, rules/threads.py)")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("skillforge.llm.config").setLevel(logging.ERROR)  # judge == proposer warning (local model)
    res: dict[str, object] = {"machine": machine_info()}
    if args.part in ("fake", "checkpoint", "all"):
        bench = FakeBench()
        try:
            if args.part in ("fake", "all"):
                res["fake"] = part_fake(bench)
            if args.part in ("checkpoint", "all"):
                res["checkpoint"] = part_checkpoint(bench, args.repeats)
        finally:
            bench.close()
    if args.part in ("local", "all"):
        res["local"] = summarise_local(part_local(args.local_cases, args.local_timeout, args.local_retries,
                                                  args.local_mode, args.local_threads, args.local_concurrency))
    if args.json:
        print(json.dumps(_jsonable(res), ensure_ascii=False))
    else:
        print_report(res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
