"""`skills new` on the embedded model (issue 27's benchmark run): what does the 1.5B proposer write
for a need, and does it pass the checks?

A workspace of the example skills and the shipped sets (router sets included), the embedded server
(`skillforge llm serve`), then one capture run per need (default: a distinct need, "track a flight's
status", and a near-duplicate, "book a table at a restaurant"). Reported per need: the run's status
and message, the draft's counts (starter cases, router examples, negatives), the conflict measures,
the wall time and the calls, and the SKILL.md it wrote (with --show). Nothing is approved.

    .venv/bin/python benchmarks/skills_new_local.py [--need TEXT ...] [--show] [--json]   (needs make test-local)

Prints figures; exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(REPO / "benchmarks"))
NEEDS = ["track a flight's status", "book a table at a restaurant"]

from evolution_local import workspace  # the same workspace: example skills and shipped sets


def one(ws, need: str) -> dict[str, object]:
    from skillforge.runners.evolve import Runner

    runner = Runner(ws)
    t0 = time.perf_counter()
    out = runner.capture(need)
    wall = time.perf_counter() - t0
    state = runner.state(str(out["run_id"]))
    cand = state.candidates[0] if state.candidates else None
    counts = {}
    if state.registration:
        reg = state.registration
        counts = {"router_lines": reg.get("router/dev.jsonl", "").count("\n"),
                  "negatives": reg.get("router/negatives.jsonl", "").count("\n")}
    return {"need": need, "skill": out["skill"], "status": out["status"], "message": out["message"],
            "wall_s": round(wall, 1), "llm_calls": out.get("llm_calls"), "tokens": out.get("tokens"),
            "verdict": cand.verdict.value if cand else None, "rejected_by": cand.rejected_by if cand else None,
            "notes": list(cand.notes) if cand else [], "conflict": out.get("conflict"), **counts,
            "skill_md": cand.text if cand else None}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--need", action="append", help="a need (repeatable; default: the two of the issue)")
    ap.add_argument("--show", action="store_true", help="print each SKILL.md written")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    exe = str(Path(sys.executable).parent / "skillforge")
    with tempfile.TemporaryDirectory() as tmp:
        ws = workspace(Path(tmp) / "ws")
        subprocess.run([exe, "llm", "serve", "-w", str(ws.root)], check=True)
        try:
            results = [one(ws, need) for need in args.need or NEEDS]
        finally:
            subprocess.run([exe, "llm", "stop", "-w", str(ws.root)], check=False)
    if args.json:
        print(json.dumps(results, ensure_ascii=False, default=str))
        return 0
    for r in results:
        print(f"need: {r['need']!r} -> {r['skill']}: {r['status']} in {r['wall_s']} s, {r['llm_calls']} call(s), "
              f"{r['tokens']} tokens")
        print(f"  {r['message']}")
        for note in r["notes"]:
            print(f"  note: {note}")
        c = r["conflict"] or {}
        if c:
            print(f"  conflict: {c.get('verdict')}; held-out reach {c.get('score')}, served by live "
                  f"{c.get('baseline_score')}; " + "; ".join(c.get("reasons") or []))
        if args.show and r["skill_md"]:
            print("  ---- SKILL.md ----")
            print("\n".join(f"  | {line}" for line in str(r["skill_md"]).splitlines()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
