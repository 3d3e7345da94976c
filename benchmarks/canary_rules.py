"""Canary rules on simulated traffic: how often `rules/canary.decide` promotes, rolls back or is
still waiting after N sessions, per scenario (true rates of each arm) and share, with the rules
asked every 50 sessions as a cron `canary tick` would (the first promote or rollback ends a run).
The default limits: --min-sessions 100, no reaping (a canary still waiting at N is counted as
waiting; at its maximum age the reaper would roll it back). The rules' bounds are time-uniform, so
a denser schedule (--look-every 10) must not raise the share of wrong decisions (a canary worse by
exactly the threshold promoted, an equal one rolled back).

    .venv/bin/python benchmarks/canary_rules.py [--seeds 200] [--json]
    .venv/bin/python benchmarks/canary_rules.py --min-sessions 20 --look-every 10 --sizes 50,100,200 --only "no feedback"
    CANARY_RULES_REPO=/path/to/other/checkout .venv/bin/python benchmarks/canary_rules.py   # another version's rules

Prints figures; exits 0. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
REPO = Path(os.environ.get("CANARY_RULES_REPO") or Path(__file__).resolve().parents[1])
sys.path.insert(0, str(REPO))

from skillforge.rules.canary import compare, decide  # noqa: E402
from skillforge.state.canary import ArmCounts, CanaryAction  # noqa: E402

SCENARIOS = {  # name: ((live bad, tool error, correction), (canary bad, tool error, correction)[, verdict share])
    "worse 0.32 vs 0.20, feedback only (QA F3)": ((0.20, 0.0, 0.0), (0.32, 0.0, 0.0)),
    "worse 0.32 vs 0.20, all signals": ((0.20, 0.10, 0.05), (0.32, 0.10, 0.05)),
    "worse by the threshold, 0.25 vs 0.20": ((0.20, 0.0, 0.0), (0.25, 0.0, 0.0)),
    "equal 0.20, feedback only": ((0.20, 0.0, 0.0), (0.20, 0.0, 0.0)),
    "equal 0.20 / 0.10 / 0.05": ((0.20, 0.10, 0.05), (0.20, 0.10, 0.05)),
    "better 0.10 vs 0.20, feedback only": ((0.20, 0.0, 0.0), (0.10, 0.0, 0.0)),
    "better 0.10 vs 0.20, tool errors and corrections equal": ((0.20, 0.10, 0.05), (0.10, 0.10, 0.05)),
    "no feedback, no tool errors (QA 26 N2)": ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 0.0),
    "no feedback, tool errors equal 0.02": ((0.0, 0.02, 0.0), (0.0, 0.02, 0.0), 0.0),
    "no feedback, tool errors 0.10 vs 0.02": ((0.0, 0.02, 0.0), (0.0, 0.10, 0.0), 0.0),
}
SIZES = (240, 500, 1000, 2000, 4000)
LOOK_EVERY = 50
MIN_SESSIONS = 100


def run(seed: int, share: float, live: tuple[float, ...], canary: tuple[float, ...],
        verdicts: float = 1.0) -> dict[int, str]:
    """One trajectory: {N: "promote" | "rollback" | "wait"} at each of SIZES; a session has a
    verdict with probability `verdicts` (0: agents that send no feedback; tool errors still count)."""
    rng = random.Random(seed)
    arms = {True: ArmCounts(), False: ArmCounts()}
    outcome, at = "wait", {}
    for i in range(1, max(SIZES) + 1):
        if outcome == "wait":
            in_canary = rng.random() < share
            bad, tool_error, correction = canary if in_canary else live
            a = arms[in_canary]
            has_verdict = verdicts >= 1.0 or rng.random() < verdicts  # draws in the same order as before at 1.0
            a.sessions += 1
            is_bad = rng.random() < bad
            a.tool_error_sessions += rng.random() < tool_error
            is_corrected = rng.random() < correction
            if has_verdict:
                a.with_verdict += 1
                a.bad += is_bad
                a.corrected += is_corrected
            if i % LOOK_EVERY == 0:
                v = decide(compare(arms[True], arms[False], share), [], age_hours=1.0, min_sessions=MIN_SESSIONS,
                           max_age_hours=1e9)
                if v.action is not CanaryAction.HOLD:
                    outcome = "promote" if v.action is CanaryAction.PROMOTE else "rollback"
        if i in SIZES:
            at[i] = outcome
    return at


def main() -> None:
    global SIZES, LOOK_EVERY, MIN_SESSIONS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--min-sessions", type=int, default=MIN_SESSIONS)
    ap.add_argument("--look-every", type=int, default=LOOK_EVERY)
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)), help="comma-separated session counts")
    ap.add_argument("--only", default="", help="only the scenarios whose name holds this text")
    args = ap.parse_args()
    SIZES, LOOK_EVERY, MIN_SESSIONS = tuple(int(n) for n in args.sizes.split(",")), args.look_every, args.min_sessions
    rows = []
    for share in (0.5, 0.1):
        for name, (live, canary, *verdicts) in ((k, v) for k, v in SCENARIOS.items() if args.only in k):
            tally = {n: {"promote": 0, "rollback": 0, "wait": 0} for n in SIZES}
            for seed in range(args.seeds):
                for n, what in run(seed, share, live, canary, *verdicts).items():
                    tally[n][what] += 1
            for n in SIZES:
                rows.append({"share": share, "scenario": name, "sessions": n,
                             **{k: round(v / args.seeds, 3) for k, v in tally[n].items()}})
    if args.json:
        print(json.dumps({"repo": str(REPO), "seeds": args.seeds, "rows": rows}, indent=1))
        return
    print(f"rules from {REPO}; {args.seeds} seeds; looks every {LOOK_EVERY} sessions; min sessions {MIN_SESSIONS}")
    print(f"{'share':>5}  {'scenario':<56}{'N':>6}  {'promote':>8}{'rollback':>9}{'wait':>6}")
    for r in rows:
        print(f"{r['share']:>5.0%}  {r['scenario']:<56}{r['sessions']:>6}  {r['promote']:>8.1%}{r['rollback']:>9.1%}"
              f"{r['wait']:>6.0%}")


if __name__ == "__main__":
    main()
