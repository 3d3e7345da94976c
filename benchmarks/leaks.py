"""Leak-scan benchmark: catch rate of disguised leaks, false positives on the example skills, scan time.

1. corpus     tests/fixtures/leaks/corpus.jsonl (disguised copies of holdout / final_audit data) and
              clean.jsonl (texts that must not be flagged), scanned against a context of the corpus's
              cases. Reported: caught / total per disguise, clean texts flagged.
2. examples   Each SKILL.md under skills/, scanned whole as if newly added, against the example sets
              under evaluation_sets/ of the OTHER skills, then of its own. Reported: findings per kind.
3. time       One realistic SKILL.md (skills/restaurant-booking) scanned against a 300-case context
              (the example sets' cases repeated under new ids): context build and per-scan ms.

The scan is the installed skillforge's; to measure another checkout's (say main's, for a before/after),
put it first on the path:
    python benchmarks/leaks.py                         # this tree
    PYTHONPATH=/work/main python benchmarks/leaks.py   # another checkout, same corpus
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from skillforge.evaluation.datasets import read_set  # noqa: E402
from skillforge.evolution.check import eval_text  # noqa: E402
from skillforge.rules.leaks import EvalText, LeakContext, scan_leaks  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "leaks"
CONTEXT_CASES = 300


def _read_jsonl(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _eval_text(case: dict[str, object]) -> EvalText:
    return EvalText(str(case["id"]), str(case["partition"]), str(case["query"]), tuple(case["facts"]),  # type: ignore[arg-type]
                    json.dumps(case["fixtures"], ensure_ascii=False))


def corpus() -> None:
    leaks, clean = _read_jsonl(FIXTURES / "corpus.jsonl"), _read_jsonl(FIXTURES / "clean.jsonl")
    cases = {str(e["case"]["id"]): e["case"] for e in leaks}  # type: ignore[index]
    ctx = LeakContext(cases=tuple(_eval_text(c) for c in cases.values()))  # type: ignore[arg-type]
    caught = 0
    print(f"{'disguise':<66} caught  findings")
    for e in leaks:
        found = scan_leaks(str(e["text"]), ctx)
        caught += bool(found)
        kinds = ",".join(sorted({f.kind.value for f in found})) or "-"
        print(f"{str(e['disguise'])[:66]:<66} {'yes' if found else 'NO ':<7} {kinds}")
    flagged = [e for e in clean if scan_leaks(str(e["text"]), ctx)]
    print(f"\ncaught {caught}/{len(leaks)} ({100 * caught / len(leaks):.1f} %); clean flagged {len(flagged)}/{len(clean)}"
          + "".join(f"\n  flagged: {e['name']}" for e in flagged))


def _example_cases() -> list[tuple[str, EvalText]]:
    out = []
    for path in sorted((REPO / "evaluation_sets").glob("*.json")):
        s = read_set(path)
        out += [(c.skill, eval_text(c, s.meta.partition.value)) for c in s.cases]
    return out


def examples() -> None:
    cases = _example_cases()
    print(f"\n{len(cases)} example cases; each skill's SKILL.md scanned whole")
    print(f"{'skill':<24} {'vs other skills':<40} vs its own sets")
    totals: dict[str, Counter[str]] = {"other": Counter(), "own": Counter()}
    for skill_md in sorted((REPO / "skills").glob("*/SKILL.md")):
        name, text = skill_md.parent.name, skill_md.read_text(encoding="utf-8")
        row = []
        for side, keep in (("other", lambda s: s != name), ("own", lambda s: s == name)):
            ctx = LeakContext(cases=tuple(e for s, e in cases if keep(s)))
            kinds = Counter(f.kind.value for f in scan_leaks(text, ctx))
            totals[side].update(kinds)
            row.append(", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) or "0")
        print(f"{name:<24} {row[0]:<40} {row[1]}")
    for side, kinds in totals.items():
        print(f"total vs {side}: {sum(kinds.values())} finding(s) {dict(sorted(kinds.items()))}")


def timing(repeats: int) -> None:
    base = [e for _, e in _example_cases()]
    cases = tuple(EvalText(f"{e.case_id}-x{i // len(base)}", e.partition, e.query, e.facts, e.fixtures_json)
                  for i, e in enumerate(base * (CONTEXT_CASES // len(base) + 1)))[:CONTEXT_CASES]
    text = (REPO / "skills" / "restaurant-booking" / "SKILL.md").read_text(encoding="utf-8")
    t0 = time.perf_counter()
    ctx = LeakContext(cases=cases)
    build = time.perf_counter() - t0
    scan_leaks(text, ctx)  # warm: first-use tables
    walls = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        scan_leaks(text, ctx)
        walls.append(time.perf_counter() - t0)
    print(f"\n{len(cases)}-case context built in {1000 * build:.1f} ms; a {len(text)}-char SKILL.md scanned in "
          f"median {1000 * statistics.median(walls):.2f} ms (min {1000 * min(walls):.2f}, {repeats} scans)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    corpus()
    examples()
    timing(args.repeats)


if __name__ == "__main__":
    main()
