"""Evolution benchmark: what one round of the evolve graph costs besides the models.

Uses the scripted world of the tests (tests/evolve_fakes.py: taxi-hailing with a planted failure,
instant executor / judge / proposer fakes), a real workspace in a temp folder (git + SQLite), the
SqliteSaver checkpointer with durability "sync". It needs nothing outside the repository.

1. overhead   One L1 round (collect -> analyze -> propose -> check -> validate -> decide -> publish),
              --repeats times, each in a fresh workspace. Reported: the wall of the run, the time spent
              inside the evaluation subgraph (validate's and decide's evaluations: executor + judge
              calls, instant here), and the rest = framework overhead (collect, analyze, propose,
              check, decide, publish, checkpoints). Target: overhead <= 2 s.
2. calls      LLM calls per round, by role, from the run's ledger.
3. resume     kill -9 right after validate in a child process, then resume in another; against an
              uninterrupted child run of the same world. Reported: both walls and the difference
              (process start, checkpoint load, and the killed node re-run from the LLM cache).

    python benchmarks/evolution.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]
os.environ.setdefault("OMP_NUM_THREADS", "1")

from evolve_fakes import SKILL, World, examples_patch, new_workspace, seed_failures  # noqa: E402

from skillforge.runners.evolve import Runner  # noqa: E402
from skillforge.evolution import validate as validating  # noqa: E402


def one_round() -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        ws = new_workspace(Path(tmp) / "ws")
        world = World(lambda r: [examples_patch()])
        seed_failures(ws, world.llm())
        spent = [0.0]
        real = validating.evaluate_cases

        def timed(*a, **kw):  # noqa: ANN002, ANN003, ANN202
            t0 = time.perf_counter()
            try:
                return real(*a, **kw)
            finally:
                spent[0] += time.perf_counter() - t0
        validating.evaluate_cases = timed
        try:
            runner = Runner(ws, llm_factory=world.llm)
            t0 = time.perf_counter()
            out = runner.start(SKILL)
            wall = time.perf_counter() - t0
        finally:
            validating.evaluate_cases = real
        assert out["status"] == "PUBLISHED", out
        ledger = runner.ledger.spend(str(out["run_id"]))
        return {"wall": wall, "evaluation": spent[0], "overhead": wall - spent[0], "calls": float(out["llm_calls"]),
                **{f"calls_{role.value}": float(s.calls) for role, s in ledger.by_role.items()}}


def child(ws: Path, action: str, run_id: str, kill_at: str = "") -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, str(REPO / "tests" / "evolve_child.py"), str(ws), action, run_id, "l1"],
                   env={**os.environ, "KILL_AT": kill_at}, capture_output=True, text=True, timeout=600)
    return time.perf_counter() - t0


def resume_cost() -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        a, b = new_workspace(Path(tmp) / "a"), new_workspace(Path(tmp) / "b")
        for ws in (a, b):
            seed_failures(ws, World(lambda r: []).llm())
        straight = child(a.root, "start", "bench")
        killed = child(b.root, "start", "bench", kill_at="validate")
        resumed = child(b.root, "resume", "bench")
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, 'tests'); import evolve_fakes, "
                        "skillforge.runners.evolve, skillforge.graphs.evolve"], cwd=REPO, check=True)
        start = time.perf_counter() - t0
        return {"uninterrupted": straight, "killed_part": killed, "resume": resumed, "process_start": start,
                "overhead": killed + resumed - straight}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    print(f"evolution benchmark: {os.cpu_count()} cores, python {sys.version.split()[0]}")
    runs = [one_round() for _ in range(args.repeats)]
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    print(f"1. one L1 round, median of {args.repeats}: wall {med['wall']:.2f} s, evaluation subgraph "
          f"{med['evaluation']:.2f} s, framework overhead {med['overhead']:.2f} s (target <= 2 s)")
    roles = ", ".join(f"{k.removeprefix('calls_')} {int(v)}" for k, v in med.items() if k.startswith("calls_"))
    print(f"2. LLM calls per round: {int(med['calls'])} ({roles})")
    r = resume_cost()
    print(f"3. kill -9 after validate + resume: {r['killed_part']:.2f} s + {r['resume']:.2f} s vs uninterrupted "
          f"{r['uninterrupted']:.2f} s: resume overhead {r['overhead']:.2f} s, of which one extra process start "
          f"(imports) {r['process_start']:.2f} s; net {r['overhead'] - r['process_start']:.2f} s")


if __name__ == "__main__":
    main()
