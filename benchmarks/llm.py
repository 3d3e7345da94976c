"""LLM client benchmark: what `skillforge.llm.LLM` costs on top of the OpenAI client, and whether it
overlaps concurrent calls.

Everything runs against `FakeOpenAIServer` (skillforge.testing.openai_server) on 127.0.0.1 in this
process; no network beyond loopback, no key. The request is the same in every variant: a system and a
user message, one function tool built from a 3-field pydantic schema (`Pick`), `tool_choice` naming
it, `parallel_tool_calls=false`, `temperature=0`, `max_tokens=64` (the exact body `LLM.structured`
sends; the script checks that the three variants send identical bodies).

1. overhead  Server latency 0. The same structured request made --calls times through
             (a) raw     `openai.OpenAI(max_retries=0).chat.completions.create(...)` + `json.loads` of the
                         tool-call arguments + `Pick.model_validate`,
             (b) lc      a bare langchain-openai `ChatOpenAI(...).with_structured_output(Pick,
                         method="function_calling")` runnable (built once) `.invoke(messages)`,
             (c) llm     `LLM.structured(Role.ROUTER, Pick, messages, use_cache=False)` on an LLM built
                         from `resolve_all(env=...)` without a cache.
             Each variant is warmed up first; then the calls run in interleaved rounds: per round a block
             of --block calls of each variant (the order a,b,c rotated each round so no variant always
             runs first). Reported per variant: median of the per-round medians ("p50"), the mean and
             p95 of all calls. Overhead (c)-(a) and the langchain / wrapper split (b)-(a) and (c)-(b)
             are the medians over rounds of the per-round differences of medians (paired, so drift
             between rounds cancels). Target: (c)-(a) <= 5 ms per call.
             Also: the cache-hit path, `LLM.structured` (use_cache=True) with a warm `LLMCache` in a
             temporary SQLite file (no request reaches the server), and a breakdown of the wrapper's
             own per-call steps timed in isolation (no I/O): message conversion, cache key (schema +
             messages_to_dict + sha256), building the structured-output runnable, and the request
             ledger's admit + settle on a file (what every request adds).
2. concurrency  Server latency 200 ms. 64 `LLM.structured` calls (use_cache=False) from a
             ThreadPoolExecutor(max_workers=8) sharing ONE `LLM`. Ideal wall = 64/8 x 200 ms = 1.6 s;
             target wall <= 1.3 x ideal = 2.08 s. Checks: every answer is a valid `Pick`, not cached, and
             `llm.ledger.calls == 64`. Also reported: the peak number of requests in flight at the server
             (should be 8), and the same 64 calls through the raw openai client as a reference, so a miss
             can be attributed to the wrapper, the client, or the server.

The server runs as a thread of this process, so its request handling shares the GIL with the clients:
absolute per-call times include the server's work (identical for all variants; the differences do not).
Figures are wall-clock (time.perf_counter). The script prints a table with PASS/MISS against the
targets (or one JSON object with --json) and always exits 0: a benchmark reports numbers, it is not a
test.

    python benchmarks/llm.py [--calls 300] [--block 10] [--json]
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402
from importlib.metadata import PackageNotFoundError, version  # noqa: E402
from pathlib import Path  # noqa: E402

# Allow `python benchmarks/llm.py` from a checkout without an installed package.
_REPO_ROOT = Path(__file__).resolve().parent.parent
if str(_REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(_REPO_ROOT))

import openai  # noqa: E402
from langchain_core.messages import convert_to_messages, messages_to_dict  # noqa: E402
from langchain_openai import ChatOpenAI  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from skillforge.llm.client import LLM  # noqa: E402
from skillforge.llm.cache import LLMCache, cache_key  # noqa: E402
from skillforge.llm.config import resolve_all  # noqa: E402
from skillforge.llm.ledger import RequestLedger, RunBudget  # noqa: E402
from skillforge.rules.budget import call_cost, estimate_prompt_tokens  # noqa: E402
from skillforge.state.llm import BudgetCaps, Role  # noqa: E402
from skillforge.testing.openai_server import FakeOpenAIServer, Reply  # noqa: E402

TARGET_OVERHEAD_MS = 5.0
CONC_CALLS = 64
CONC_WORKERS = 8
CONC_LATENCY_S = 0.2
CONC_SLACK = 1.3
MODEL = "fake-model"
MAX_TOKENS = 64
TIMEOUT_S = 10.0
ROLE = Role.ROUTER
VARIANTS = ("raw", "lc", "llm")


class Pick(BaseModel):
    """The structured answer requested in every call."""

    skill: str
    reason: str
    confidence: float


SYSTEM = "You route a user request to one skill. Answer with the Pick tool."
USER = "北京今天天气怎么样？明天会下雨吗"
MESSAGES_TUPLES = [("system", SYSTEM), ("user", USER)]
MESSAGES_OPENAI = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}]


def _strip_titles(schema: object) -> object:
    """The JSON schema without pydantic's `title` keys (langchain drops them too)."""
    if isinstance(schema, dict):
        return {k: _strip_titles(v) for k, v in schema.items() if k != "title"}
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


def _tool_spec(schema: type[BaseModel]) -> dict[str, object]:
    """The function tool langchain-openai builds for `schema`: the docstring as description, the JSON
    schema without titles or description as parameters."""
    params = _strip_titles(schema.model_json_schema())
    description = params.pop("description", "")  # type: ignore[union-attr]
    return {"type": "function", "function": {"name": schema.__name__, "description": description,
                                             "parameters": params}}


PICK_TOOL = _tool_spec(Pick)
PICK_CHOICE = {"type": "function", "function": {"name": "Pick"}}


class CountingServer(FakeOpenAIServer):
    """The fake server, also recording how many chat requests were in flight at once (peak)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._flight_lock = threading.Lock()
        self.in_flight = 0
        self.peak_in_flight = 0

    def reset_peak(self) -> None:
        with self._flight_lock:
            self.peak_in_flight = self.in_flight

    def _chat(self, raw: bytes, auth: str | None):  # noqa: ANN202 - same as the parent
        with self._flight_lock:
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            return super()._chat(raw, auth)
        finally:
            with self._flight_lock:
                self.in_flight -= 1


# ---- the three ways to make the call -------------------------------------------------------
def env_for(url: str) -> dict[str, str]:
    return {"SKILLFORGE_LLM_BASE_URL": url, "SKILLFORGE_LLM_MODEL": MODEL, "SKILLFORGE_LLM_API_KEY": "k",
            "SKILLFORGE_LLM_MAX_RETRIES": "0", "SKILLFORGE_LLM_TIMEOUT": str(TIMEOUT_S),
            "SKILLFORGE_LLM_MAX_TOKENS": str(MAX_TOKENS), "SKILLFORGE_JUDGE_MODEL": "judge-model"}


def make_llm(url: str, cache: LLMCache | None = None) -> LLM:
    return LLM(resolve_all(env=env_for(url)), cache=cache)


def make_raw(url: str) -> Callable[[], Pick]:
    client = openai.OpenAI(base_url=url, api_key="k", max_retries=0, timeout=TIMEOUT_S)

    def call() -> Pick:
        resp = client.chat.completions.create(model=MODEL, messages=MESSAGES_OPENAI, tools=[PICK_TOOL],
                                              tool_choice=PICK_CHOICE, parallel_tool_calls=False,
                                              temperature=0.0, max_tokens=MAX_TOKENS, stream=False)
        args = json.loads(resp.choices[0].message.tool_calls[0].function.arguments)
        return Pick.model_validate(args)

    return call


def make_lc(url: str) -> Callable[[], Pick]:
    chat = ChatOpenAI(model=MODEL, base_url=url, api_key="k", timeout=TIMEOUT_S, max_retries=0,
                      temperature=0.0, extra_body={"max_tokens": MAX_TOKENS})
    runnable = chat.with_structured_output(Pick, method="function_calling")
    messages = convert_to_messages(MESSAGES_TUPLES)

    def call() -> Pick:
        return runnable.invoke(messages)  # type: ignore[return-value]

    return call


def make_wrapped(llm: LLM, use_cache: bool = False) -> Callable[[], Pick]:
    def call() -> Pick:
        return llm.structured(ROLE, Pick, MESSAGES_TUPLES, use_cache=use_cache).value

    return call


# ---- statistics ------------------------------------------------------------------------------
def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile, q in [0, 100]."""
    s = sorted(values)
    if not s:
        return float("nan")
    k = (len(s) - 1) * q / 100
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def ms(x: float) -> float:
    return round(x * 1000, 4)


# ---- 1. overhead ------------------------------------------------------------------------------
def check_same_requests(srv: FakeOpenAIServer, calls: dict[str, Callable[[], Pick]]) -> bool:
    """True if every variant sends the same JSON body (so the comparison is like for like)."""
    bodies = []
    for fn in calls.values():
        before = len(srv.requests)
        fn()
        bodies.append(srv.requests[before])
    canon = [json.dumps(b, sort_keys=True) for b in bodies]
    if len(set(canon)) != 1:
        for name, c in zip(calls, canon):
            print(f"[bench] request body of {name}: {c}", file=sys.stderr)
        return False
    return True


def measure_overhead(calls: int, block: int, warmup: int) -> dict[str, object]:
    with FakeOpenAIServer(default=Reply.echo_tool(), latency_s=0.0) as srv:
        fns = {"raw": make_raw(srv.base_url), "lc": make_lc(srv.base_url), "llm": make_wrapped(make_llm(srv.base_url))}
        same_body = check_same_requests(srv, fns)
        for _ in range(warmup):
            for fn in fns.values():
                fn()
        rounds = max(1, calls // block)
        samples: dict[str, list[float]] = {v: [] for v in VARIANTS}
        round_medians: dict[str, list[float]] = {v: [] for v in VARIANTS}
        bad = 0
        hits0 = srv.hits
        for r in range(rounds):
            order = VARIANTS[r % 3:] + VARIANTS[:r % 3]
            for name in order:
                fn = fns[name]
                times = []
                for _ in range(block):
                    t0 = time.perf_counter()
                    out = fn()
                    times.append(time.perf_counter() - t0)
                    bad += not isinstance(out, Pick)
                samples[name].extend(times)
                round_medians[name].append(statistics.median(times))
        hits = srv.hits - hits0
    per = {name: {"p50_ms": ms(statistics.median(round_medians[name])), "mean_ms": ms(statistics.fmean(samples[name])),
                  "p95_ms": ms(percentile(samples[name], 95)), "min_ms": ms(min(samples[name])),
                  "calls": len(samples[name])} for name in VARIANTS}

    def paired(x: str, y: str) -> float:
        return ms(statistics.median(a - b for a, b in zip(round_medians[x], round_medians[y])))

    return {"rounds": rounds, "block": block, "warmup": warmup, "same_request_body": same_body,
            "server_hits": hits, "invalid_answers": bad, "variants": per,
            "overhead_llm_vs_raw_ms": paired("llm", "raw"), "langchain_vs_raw_ms": paired("lc", "raw"),
            "wrapper_vs_langchain_ms": paired("llm", "lc"),
            "overhead_llm_vs_raw_mean_ms": round(per["llm"]["mean_ms"] - per["raw"]["mean_ms"], 4)}


def measure_cache_hits(calls: int) -> dict[str, object]:
    with FakeOpenAIServer(default=Reply.echo_tool()) as srv, tempfile.TemporaryDirectory(prefix="sf-bench-llm-") as tmp:
        cache = LLMCache(Path(tmp) / "cache.db")
        try:
            make_llm(srv.base_url, cache).structured(ROLE, Pick, MESSAGES_TUPLES)  # fills the cache
            llm = make_llm(srv.base_url, cache)  # a new run on the same cache
            hits0 = srv.hits
            for _ in range(20):
                llm.structured(ROLE, Pick, MESSAGES_TUPLES)
            times, not_cached = [], 0
            for _ in range(calls):
                t0 = time.perf_counter()
                ans = llm.structured(ROLE, Pick, MESSAGES_TUPLES)
                times.append(time.perf_counter() - t0)
                not_cached += not (ans.cached and isinstance(ans.value, Pick))
            requests = srv.hits - hits0
        finally:
            cache.close()
    return {"calls": calls, "p50_ms": ms(statistics.median(times)), "mean_ms": ms(statistics.fmean(times)),
            "p95_ms": ms(percentile(times, 95)), "not_cached": not_cached, "requests_sent": requests,
            "ledger_calls": llm.ledger.calls, "ledger_cache_hits": llm.ledger.cache_hits}


def time_step(fn: Callable[[], object], n: int = 2000) -> float:
    """Median per-call seconds of `fn` over 5 batches of n/5 calls."""
    batch = max(1, n // 5)
    fn()
    out = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
        out.append((time.perf_counter() - t0) / batch)
    return statistics.median(out)


def measure_wrapper_steps() -> dict[str, float]:
    """The wrapper's own per-call work from `LLM.structured`/`LLM._call`, each step timed alone (no I/O)."""
    llm = make_llm("http://127.0.0.1:9/v1")
    cfg = llm.configs[ROLE]
    msgs = convert_to_messages(MESSAGES_TUPLES)
    model = llm.model(ROLE)  # builds the ChatOpenAI once (not per call in LLM either)

    def key() -> str:
        return cache_key(kind="structured", role=cfg.role.value, endpoint=cfg.identity[0], model=cfg.model,
                         messages=messages_to_dict(msgs), params={"temperature": cfg.temperature,
                                                                  "max_tokens": cfg.max_tokens},
                         schema=Pick.model_json_schema(), choices={})

    ledger = RunBudget(RequestLedger(Path(tempfile.mkdtemp()) / "ledger.db"), "bench", BudgetCaps(max_calls=10**9))

    def budget() -> object:  # what each request adds: admitted (a committed row), then settled
        est = estimate_prompt_tokens([m.text for m in msgs])
        seq = ledger.admit(ROLE, est + cfg.max_tokens, call_cost(est, cfg.max_tokens, cfg.price_in, cfg.price_out))
        ledger.settle(seq, 10, 5, 0.0)
        return seq

    steps = {
        "convert_to_messages": lambda: convert_to_messages(MESSAGES_TUPLES),
        "cache_key (schema+messages_to_dict+sha256)": key,
        "  of which Pick.model_json_schema()": Pick.model_json_schema,
        "with_structured_output(include_raw=True)": lambda: model.with_structured_output(
            Pick, method="function_calling", include_raw=True),
        "budget: ledger admit + settle (2 SQLite transactions, WAL, a file)": budget,
    }
    return {name: ms(time_step(fn, 1000 if "with_structured" in name else 3000)) for name, fn in steps.items()}


def measure_include_raw(calls: int, warmup: int) -> dict[str, float]:
    """Bare langchain with include_raw=True (what LLM uses) vs without, interleaved, p50 ms."""
    with FakeOpenAIServer(default=Reply.echo_tool()) as srv:
        chat = ChatOpenAI(model=MODEL, base_url=srv.base_url, api_key="k", timeout=TIMEOUT_S, max_retries=0,
                          temperature=0.0, extra_body={"max_tokens": MAX_TOKENS})
        msgs = convert_to_messages(MESSAGES_TUPLES)
        plain = chat.with_structured_output(Pick, method="function_calling")
        withraw = chat.with_structured_output(Pick, method="function_calling", include_raw=True)
        fns = {"lc": lambda: plain.invoke(msgs), "lc_include_raw": lambda: withraw.invoke(msgs),
               "lc_include_raw_rebuilt": lambda: chat.with_structured_output(
                   Pick, method="function_calling", include_raw=True).invoke(msgs)}
        for _ in range(warmup):
            for fn in fns.values():
                fn()
        meds: dict[str, list[float]] = {k: [] for k in fns}
        block = 10
        for r in range(max(1, calls // block)):
            names = list(fns)
            names = names[r % 3:] + names[:r % 3]
            for name in names:
                times = []
                for _ in range(block):
                    t0 = time.perf_counter()
                    fns[name]()
                    times.append(time.perf_counter() - t0)
                meds[name].append(statistics.median(times))
    return {k: ms(statistics.median(v)) for k, v in meds.items()}


# ---- 2. concurrency -------------------------------------------------------------------------
def run_concurrent(fn: Callable[[], object], srv: CountingServer) -> tuple[float, list[object], list[BaseException]]:
    srv.reset_peak()
    results: list[object] = []
    errors: list[BaseException] = []
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=CONC_WORKERS) as pool:
        futures = [pool.submit(fn) for _ in range(CONC_CALLS)]
        for f in futures:
            try:
                results.append(f.result())
            except BaseException as e:  # noqa: BLE001 - reported, not raised
                errors.append(e)
    return time.perf_counter() - t0, results, errors


def pool_limits(llm: LLM) -> str:
    """The httpx connection-pool limits of the role's openai client (for diagnosis)."""
    try:
        client = llm.model(ROLE).root_client._client  # type: ignore[attr-defined]
        pool = client._transport._pool
        return f"max_connections={pool._max_connections}, max_keepalive={pool._max_keepalive_connections}"
    except AttributeError as e:
        return f"unknown ({e})"


def measure_concurrency() -> dict[str, object]:
    ideal = CONC_CALLS / CONC_WORKERS * CONC_LATENCY_S
    with CountingServer(default=Reply.echo_tool(), latency_s=0.0) as srv:
        llm = make_llm(srv.base_url)
        raw = make_raw(srv.base_url)
        llm.structured(ROLE, Pick, MESSAGES_TUPLES, use_cache=False)  # warm-up: imports, client, connection
        raw()
        srv.latency_s = CONC_LATENCY_S
        warm_calls = llm.ledger.calls
        wall, answers, errors = run_concurrent(lambda: llm.structured(ROLE, Pick, MESSAGES_TUPLES, use_cache=False), srv)
        peak = srv.peak_in_flight
        ledger_calls = llm.ledger.calls - warm_calls
        valid = sum(isinstance(a.value, Pick) and not a.cached for a in answers)  # type: ignore[attr-defined]
        latencies = [a.latency_ms for a in answers]  # type: ignore[attr-defined]
        raw_wall, raw_answers, raw_errors = run_concurrent(raw, srv)
        raw_peak = srv.peak_in_flight
        limits = pool_limits(llm)
    return {"calls": CONC_CALLS, "workers": CONC_WORKERS, "latency_ms": CONC_LATENCY_S * 1000,
            "ideal_s": round(ideal, 4), "target_s": round(ideal * CONC_SLACK, 4), "wall_s": round(wall, 4),
            "ratio": round(wall / ideal, 4), "valid_answers": valid, "errors": [repr(e)[:200] for e in errors],
            "ledger_calls": ledger_calls, "ledger_ok": ledger_calls == CONC_CALLS, "peak_in_flight": peak,
            "call_latency_p50_ms": round(statistics.median(latencies), 2) if latencies else None,
            "call_latency_max_ms": round(max(latencies), 2) if latencies else None,
            "raw_wall_s": round(raw_wall, 4), "raw_ratio": round(raw_wall / ideal, 4),
            "raw_valid_answers": sum(isinstance(a, Pick) for a in raw_answers), "raw_errors": len(raw_errors),
            "raw_peak_in_flight": raw_peak, "httpx_pool": limits}


# ---- machine info & report ---------------------------------------------------------------------
def _ver(dist: str) -> str:
    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


def machine_info() -> dict[str, object]:
    return {"cpu_count": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
            "python_impl": platform.python_implementation(), "openai": openai.__version__,
            "langchain_openai": _ver("langchain-openai"), "langchain_core": _ver("langchain-core"),
            "httpx": _ver("httpx"), "pydantic": _ver("pydantic"),
            "omp_num_threads": os.environ.get("OMP_NUM_THREADS")}


def verdict(value: float, target: float) -> str:
    return "PASS" if value <= target else "MISS"


def print_report(res: dict[str, object]) -> None:
    m, ov, ch, cc = res["machine"], res["overhead"], res["cache_hit"], res["concurrency"]
    print("SkillForge LLM client benchmark (fake OpenAI server on 127.0.0.1, in-process)")
    print(f"  machine : {m['cpu_count']} CPU, {m['platform']}")
    print(f"  python  : {m['python']} ({m['python_impl']}), openai {m['openai']}, langchain-openai "
          f"{m['langchain_openai']}, langchain-core {m['langchain_core']}, httpx {m['httpx']}, pydantic {m['pydantic']}")
    print(f"  config  : {ov['rounds']} rounds x {ov['block']} calls per variant (interleaved, order rotated), "
          f"{ov['warmup']} warm-up calls each; identical request bodies: {'yes' if ov['same_request_body'] else 'NO'}")
    print()
    rows: list[tuple[str, str, str, str]] = []
    names = {"raw": "(a) raw openai + json.loads + pydantic", "lc": "(b) ChatOpenAI.with_structured_output",
             "llm": "(c) LLM.structured(use_cache=False)"}
    for v in VARIANTS:
        s = ov["variants"][v]
        rows.append((names[v], f"p50 {s['p50_ms']:.2f}  mean {s['mean_ms']:.2f}  p95 {s['p95_ms']:.2f} ms", "-", ""))
    rows.append(("overhead (c)-(a) per call", f"{ov['overhead_llm_vs_raw_ms']:.2f} ms "
                 f"(mean diff {ov['overhead_llm_vs_raw_mean_ms']:.2f})", f"<= {TARGET_OVERHEAD_MS:g} ms",
                 verdict(ov["overhead_llm_vs_raw_ms"], TARGET_OVERHEAD_MS)))
    rows.append(("  langchain (b)-(a)", f"{ov['langchain_vs_raw_ms']:.2f} ms", "-", ""))
    rows.append(("  our wrapper (c)-(b)", f"{ov['wrapper_vs_langchain_ms']:.2f} ms", "-", ""))
    ir = res.get("include_raw")
    if ir:
        rows.append(("  lc include_raw=True, built once", f"p50 {ir['lc_include_raw']:.2f} ms "
                     f"(+{ir['lc_include_raw'] - ir['lc']:.2f} vs (b))", "-", ""))
        rows.append(("  lc include_raw=True, rebuilt per call", f"p50 {ir['lc_include_raw_rebuilt']:.2f} ms "
                     f"(+{ir['lc_include_raw_rebuilt'] - ir['lc']:.2f} vs (b))", "-", ""))
    for step, val in res["wrapper_steps"].items():
        rows.append((f"  step: {step}", f"{val:.3f} ms", "-", ""))
    rows.append(("cache hit: LLM.structured, warm LLMCache", f"p50 {ch['p50_ms']:.3f}  mean {ch['mean_ms']:.3f}  "
                 f"p95 {ch['p95_ms']:.3f} ms", "-", "" if ch["not_cached"] == 0 and ch["requests_sent"] == 0 else "BAD"))
    ok = cc["valid_answers"] == cc["calls"] and cc["ledger_ok"] and not cc["errors"]
    rows.append((f"concurrency: {cc['calls']} calls, {cc['workers']} threads, {cc['latency_ms']:.0f} ms",
                 f"{cc['wall_s']:.3f} s (ideal {cc['ideal_s']:.2f} s, x{cc['ratio']:.3f})",
                 f"<= {cc['target_s']:.2f} s", verdict(cc["wall_s"], cc["target_s"])))
    rows.append(("  answers valid / ledger.calls", f"{cc['valid_answers']}/{cc['calls']}, ledger {cc['ledger_calls']}",
                 f"{cc['calls']}", "OK" if ok else "BAD"))
    rows.append(("  peak requests in flight at the server", f"{cc['peak_in_flight']}", f"{cc['workers']}", ""))
    rows.append(("  reference: raw openai client, same load", f"{cc['raw_wall_s']:.3f} s (x{cc['raw_ratio']:.3f}, "
                 f"peak {cc['raw_peak_in_flight']})", "-", ""))
    rows.append(("  per-call latency (LLMAnswer) p50 / max", f"{cc['call_latency_p50_ms']:.1f} / "
                 f"{cc['call_latency_max_ms']:.1f} ms", "-", ""))
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    w2 = max(len(r[2]) for r in rows)
    print(f"  {'measure':<{w0}}  {'value':<{w1}}  {'target':<{w2}}  result")
    print(f"  {'-' * w0}  {'-' * w1}  {'-' * w2}  ------")
    for a, b, c, d in rows:
        print(f"  {a:<{w0}}  {b:<{w1}}  {c:<{w2}}  {d}")
    print(f"\n  httpx pool of the LLM's client: {cc['httpx_pool']}")
    if cc["errors"]:
        print(f"  concurrency errors: {cc['errors'][:3]}")
    if ov["invalid_answers"]:
        print(f"  WARNING: {ov['invalid_answers']} overhead calls returned no valid Pick")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="SkillForge LLM client benchmark: wrapper overhead and concurrency "
                                                 "against a local fake OpenAI server.")
    parser.add_argument("--calls", type=int, default=300, help="timed calls per variant for the overhead (default 300)")
    parser.add_argument("--block", type=int, default=10, help="calls per variant per interleaved round (default 10)")
    parser.add_argument("--warmup", type=int, default=20, help="warm-up calls per variant (default 20)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    res: dict[str, object] = {"machine": machine_info(),
                              "targets": {"overhead_ms": TARGET_OVERHEAD_MS, "concurrency_slack": CONC_SLACK}}
    res["overhead"] = measure_overhead(args.calls, max(1, args.block), args.warmup)
    res["include_raw"] = measure_include_raw(max(30, args.calls // 2), min(args.warmup, 10))
    res["wrapper_steps"] = measure_wrapper_steps()
    res["cache_hit"] = measure_cache_hits(args.calls)
    res["concurrency"] = measure_concurrency()
    ov, cc = res["overhead"], res["concurrency"]
    res["pass"] = {"overhead": ov["overhead_llm_vs_raw_ms"] <= TARGET_OVERHEAD_MS,
                   "concurrency": cc["wall_s"] <= cc["target_s"],
                   "concurrency_checks": cc["valid_answers"] == cc["calls"] and cc["ledger_ok"] and not cc["errors"]}
    if args.json:
        print(json.dumps(res, ensure_ascii=False))
    else:
        print_report(res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
