"""Cold start of the commands that need no LLM: `route` (no router model), `skills list`, `--version`.

Builds a workspace in a temp folder (`skillforge init` + `skills import --from skills`, no LLM
settings in the environment), then times each command as a user runs it: a new process of the
console script, wall time, median of --repeats. As a yardstick on a shared, noisy machine it also
times `python -c "import langgraph.graph, langchain_openai"` (what the cold commands no longer
import) and prints each command's ratio to it. With --before DIR (a checkout of an older tree,
say `git archive main | tar -x -C DIR`), each command also runs from that tree (PYTHONPATH=DIR),
interleaved with the current one, so that both see the same load. It also says whether the
command imported langchain / langgraph / openai (`-X importtime` of one run).

    python benchmarks/cold_start.py [--repeats 7] [--before DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXE = Path(sys.executable).parent / "skillforge"
HEAVY = ("langgraph", "langchain", "langchain_core", "langchain_openai", "openai")
REFERENCE = [sys.executable, "-c", "import langgraph.graph, langchain_openai"]


def env_for(tree: Path) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SKILLFORGE_", "OPENAI_"))}
    return {**base, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}


def wall(argv: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def heavy_imports(argv: list[str], env: dict[str, str]) -> list[str]:
    """The top-level packages of HEAVY that one run of `argv` (the console script) imported."""
    proc = subprocess.run([sys.executable, "-X", "importtime", str(EXE), *argv[1:]], env=env,
                          capture_output=True, text=True, check=True)
    found = set()
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip().split(".")[0]
            if name in HEAVY:
                found.add(name)
    return sorted(found)


def make_workspace(root: Path) -> Path:
    ws = root / "ws"
    env = env_for(REPO)
    subprocess.run([str(EXE), "init", str(ws)], env=env, check=True, capture_output=True)
    subprocess.run([str(EXE), "skills", "import", "--from", str(REPO / "skills"), "-w", str(ws)],
                   env=env, check=True, capture_output=True)
    return ws


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--before", type=Path, help="an older tree to time too, interleaved")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="sf-cold-"))
    try:
        ws = make_workspace(tmp)
        commands = {
            "route (no LLM)": [str(EXE), "route", "where is my parcel", "-w", str(ws)],
            "route --json (embed layer)": [str(EXE), "route", "recommend a good book", "-w", str(ws), "--json"],
            "skills list": [str(EXE), "skills", "list", "-w", str(ws)],
            "--version": [str(EXE), "--version"],
        }
        trees = {"after": REPO, **({"before": a.before.resolve()} if a.before else {})}
        times: dict[str, dict[str, list[float]]] = {c: {t: [] for t in trees} for c in commands}
        ref: list[float] = []
        for _ in range(a.repeats):  # interleaved: every command and the yardstick see the same load
            ref.append(wall(REFERENCE, env_for(REPO)))
            for name, argv in commands.items():
                for tree, path in trees.items():
                    times[name][tree].append(wall(argv, env_for(path)))
        ref_s = statistics.median(ref)
        rows = []
        for name, argv in commands.items():
            for tree, path in trees.items():
                med = statistics.median(times[name][tree])
                rows.append({"command": name, "tree": tree, "median_s": round(med, 3),
                             "ratio_to_reference": round(med / ref_s, 2),
                             "heavy_imports": heavy_imports(argv, env_for(path))})
        load = os.getloadavg()
        result = {"reference": {"command": "python -c 'import langgraph.graph, langchain_openai'",
                                "median_s": round(ref_s, 3)},
                  "repeats": a.repeats, "loadavg": [round(x, 2) for x in load], "cpus": os.cpu_count(),
                  "rows": rows}
        if a.json:
            print(json.dumps(result, indent=2))
            return
        print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cpus; "
              f"median of {a.repeats} fresh processes")
        print(f"reference  import langgraph.graph, langchain_openai: {ref_s:.2f} s")
        for r in rows:
            heavy = ", ".join(r["heavy_imports"]) or "none"
            print(f"{r['tree']:<7}{r['command']:<28}{r['median_s']:>7.2f} s  {r['ratio_to_reference']:>5.2f}x "
                  f"the reference  imports: {heavy}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
