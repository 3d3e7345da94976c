"""Leak-scan benchmark: catch rate of disguised leaks, false positives on the example skills, scan time.

1. corpus     tests/fixtures/leaks/corpus.jsonl (disguised copies of holdout / final_audit data) and
              clean.jsonl (texts that must not be flagged), scanned against a context of the corpus's
              cases. Reported: caught / total per disguise, clean texts flagged.
2. examples   Each SKILL.md under skills/, scanned whole as if newly added, against the example sets
              under evaluation_sets/ of the OTHER skills, then of its own. Reported: findings per kind.
3. qa29       The disguises QA 29 found passing (percent-encoded, base64, hyphenated over a line break, spaced
              letters, leetspeak, reversed, rot13, an English ordinal), against its bike-rental holdout cases.
4. shipped    skills/, docs/ and tests/fixtures cut into 40-line patches, scanned against the holdout and
              final_audit cases of evaluation_sets/: findings as written and found only in a decoded view
              (false flags: none of that text copies a held-out case), and the scan time per patch.
5. time       One realistic SKILL.md (skills/restaurant-booking) scanned against a 300-case context
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


QA29_CASES = (  # the QA 29 bike-rental holdout (its repro's sets), and each disguise that passed the scan then
    ("holdout-q", "Reserve a bike at Quenby Wharf station for 73019 riders, code HX-4417", {}),
    ("holdout-l", "Is Lindqvist Terrace dock full today? ticket 58260", {"station": "Lindqvist Terrace"}),
    ("holdout-m", "bikes near Marigold Crescent please", {"station": "Marigold Crescent"}),
    ("holdout-z", "any docks at Zephyrine Plaza?", {"station": "Zephyrine Plaza"}),
)
QA29_DISGUISES = {
    "url": "- See https://example.org/?q=Reserve%20a%20bike%20at%20Quenby%20Wharf%20station%20for%2073019%20riders",
    "base64": "```\nUmVzZXJ2ZSBhIGJpa2UgYXQgUXVlbmJ5IFdoYXJmIHN0YXRpb24gZm9yIDczMDE5IHJpZGVycywgY29kZSBIWC00NDE3\n```",
    "base64q": "```\nSXMgTGluZHF2aXN0IFRlcnJhY2UgZG9jayBmdWxsIHRvZGF5PyB0aWNrZXQgNTgyNjA=\n```",
    "name_hyphen": "- long station names may be hyphenated: Lindq-\n  vist Terrace",
    "name_spaced": "- e.g. Z e p h y r i n e Plaza",
    "name_leet": "- e.g. Mar1gold Cr3scent",
    "name_reversed": "- e.g. tnecserC dlogiraM",
    "rot13": "- Rkner n ovxr ng Dhraol Jusne fgngvba",
    "ordinal": "- the fifty-eight thousand two hundred sixtieth ticket",
}


def qa29() -> None:
    ctx = LeakContext(cases=tuple(EvalText(i, "holdout", q, (), json.dumps(f)) for i, q, f in QA29_CASES))
    caught = [k for k, text in QA29_DISGUISES.items() if scan_leaks(text, ctx)]
    print(f"\nQA 29 disguises caught {len(caught)}/{len(QA29_DISGUISES)}: "
          f"{', '.join(caught) or '-'}; missed: {', '.join(k for k in QA29_DISGUISES if k not in caught) or '-'}")


SHIPPED = ("skills", "docs", "tests/fixtures")
CHUNK_LINES = 40


def shipped(limit: int = 0) -> None:
    """Shipped text (skills/, docs/, tests/fixtures), cut into CHUNK_LINES-line patches, scanned as added text
    against the holdout and final_audit cases of evaluation_sets/: findings as written and in a view."""
    ctx = LeakContext(cases=tuple(e for s, e in _example_cases() if e.partition in ("holdout", "final_audit")))
    files = sorted(p for root in SHIPPED for p in (REPO / root).rglob("*")
                   if p.is_file() and p.suffix in (".md", ".txt", ".json", ".jsonl", ".yaml", ".yml", ".py", ".sh"))
    chunks: list[tuple[str, str]] = []
    for path in files:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        chunks += [(f"{path.relative_to(REPO)}:{i + 1}", "\n".join(lines[i:i + CHUNK_LINES]))
                   for i in range(0, len(lines), CHUNK_LINES)]
    chunks = chunks[:limit] if limit else chunks
    plain, viewed, walls = Counter(), Counter(), []
    for where, text in chunks:
        t0 = time.perf_counter()
        found = scan_leaks(text, ctx)
        walls.append(time.perf_counter() - t0)
        for f in found:
            (viewed if getattr(f, "view", "") else plain)[f"{where} {f.kind.value}"] += 1
            if getattr(f, "view", ""):
                print(f"  view finding: {where}: {f}")
    print(f"\nshipped text: {len(files)} files, {len(chunks)} patches of {CHUNK_LINES} lines vs {len(ctx.cases)} held-out "
          f"cases: {sum(plain.values())} finding(s) as written, {sum(viewed.values())} only in a view; scan median "
          f"{1000 * statistics.median(walls):.2f} ms, p95 {1000 * sorted(walls)[int(0.95 * len(walls))]:.2f} ms, "
          f"total {sum(walls):.1f} s")
    for key, n in sorted(plain.items()):
        print(f"  as written: {key} x{n}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    corpus()
    qa29()
    examples()
    shipped()
    timing(args.repeats)


if __name__ == "__main__":
    main()
