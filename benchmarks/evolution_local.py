"""The proposer on the embedded model: do its proposals apply? (issue 24's embedded-model bar)

Three rounds of `propose` + `check` on restaurant-booking with the embedded model (the [local] build,
`skillforge llm serve`), the proposal format chosen as `evolve` chooses it (`auto`: ops on the
embedded server). The failures are restaurant-booking's repair cases of the shipped sets (the cases
the demo's prepared fix targets), the root cause is asked of the model once, and each round gets the
previous rounds' refusals as feedback, as `decide` gives them. Validation (the executor and the judge
on every case) is not run: `make demo` measures a whole round. Reported per round: candidates,
applied, passed the leak scan, passed every check, refusals by reason, the proposer's wall time.

    .venv/bin/python benchmarks/evolution_local.py [--rounds 3] [--json]     (needs `make test-local`)

Prints figures; exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("OMP_NUM_THREADS", "1")
SKILL = "restaurant-booking"


def workspace(root: Path):  # noqa: ANN201 - a Workspace
    from skillforge.config import init_workspace
    from skillforge.library.releases import ReleaseStateMachine
    from skillforge.skill import file as skillfile

    subprocess.run(["git", "init", "-q", str(root)], check=True)
    ws = init_workspace(root)
    shutil.copytree(REPO / "skills", ws.skills_dir, dirs_exist_ok=True)
    ReleaseStateMachine.open(ws).import_skills(skillfile.scan(ws.skills_dir, ws.root))
    shutil.copytree(REPO / "evaluation_sets", ws.evaluation_sets_dir, dirs_exist_ok=True)
    return ws


def run(rounds: int, keep: Path | None = None) -> dict[str, object]:
    from skillforge.evaluation.datasets import load_sets, proposer_bundle
    from skillforge.evolution.analyze import analyze as find_cause
    from skillforge.evolution.check import check_candidate, leak_context
    from skillforge.evolution.propose import propose
    from skillforge.library.registry import SkillRegistry
    from skillforge.llm.client import build_llm
    from skillforge.llm.config import LOCAL_SOURCE
    from skillforge.nodes.evolve import leak_kinds
    from skillforge.rules.memory import choose_format
    from skillforge.state.evolve import ProposerFormat
    from skillforge.state.evaluate import Partition
    from skillforge.state.evolve import Attempt, CandidateVerdict, Failure, FailureKind
    from skillforge.state.llm import Role

    with tempfile.TemporaryDirectory() as tmp:
        ws = workspace((keep or Path(tmp)) / "ws")
        exe = str(Path(sys.executable).parent / "skillforge")
        subprocess.run([exe, "llm", "serve", "-w", str(ws.root)], check=True)
        try:
            llm = build_llm(ws)
            cfg = llm.configs[Role.PROPOSER]
            fmt = choose_format(ProposerFormat.AUTO, cfg.source == LOCAL_SOURCE, [], "", "bench", 1)
            reg = SkillRegistry.load(ws)
            pub = reg.get(SKILL)
            text = reg.repo.read(pub.release.commit_hash, f"{pub.release.skill_path}/SKILL.md").decode("utf-8")
            sets = load_sets(ws)
            failures = [Failure(case=c, kind=FailureKind.TASK, reason="the answer misses a required fact", run_id="bench")
                        for s in sets.values() if s.meta.partition is Partition.REPAIR for c in s.cases
                        if c.skill == SKILL][:6]
            t0 = time.perf_counter()
            cause = find_cause(llm, text, failures)
            cause_s = time.perf_counter() - t0
            leaks = leak_context(ws, sets)
            bundle = proposer_bundle(sets)
            feedback: list[Attempt] = []
            seen: list[str] = []
            out_rounds = []
            for r in range(1, rounds + 1):
                t0 = time.perf_counter()
                cands, note = propose(llm, r, text, SKILL, cause, failures, bundle, feedback, fmt=fmt)
                wall = time.perf_counter() - t0
                checked = []
                for c in cands:
                    k = check_candidate(c, text, SKILL, leaks, seen, {})
                    if k.fingerprint:
                        seen.append(k.fingerprint)
                    checked.append(k)
                applied = [c for c in checked if c.text is not None]
                leak_free = [c for c in applied if not c.leaks]
                passed = [c for c in checked if c.verdict is CandidateVerdict.PENDING]
                out_rounds.append({"round": r, "format": str(fmt), "candidates": len(checked), "applied": len(applied),
                                   "leak_free": len(leak_free), "passed_checks": len(passed),
                                   "refused_by": dict(Counter(c.rejected_by for c in checked if c.rejected_by)),
                                   "proposer_s": round(wall, 1), "note": note})
                feedback += [Attempt(round=r, candidate_id=c.id, rationale=c.rationale, rejected_by=c.rejected_by or "unknown",
                                     why="; ".join([*c.notes[-2:], *leak_kinds(c.leaks)])[:400])
                             for c in checked if c.verdict is not CandidateVerdict.PENDING]
            totals = {k: sum(x[k] for x in out_rounds) for k in ("candidates", "applied", "leak_free", "passed_checks")}
            return {"model": " ".join(map(str, cfg.identity)), "root_cause_s": round(cause_s, 1),
                    "root_cause": cause.category.value, "rounds": out_rounds, "totals": totals,
                    "apply_share": round(totals["applied"] / totals["candidates"], 3) if totals["candidates"] else None,
                    "load": os.getloadavg()[0]}
        finally:
            subprocess.run([exe, "llm", "stop", "-w", str(ws.root)], check=False)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--keep", type=Path, help="make the workspace under this folder and keep it (server log, ledger)")
    args = ap.parse_args()
    res = run(args.rounds, args.keep)
    if args.json:
        print(json.dumps(res, ensure_ascii=False))
        return
    print(f"embedded proposer {res['model']}, load {res['load']:.1f}; root cause {res['root_cause']} in {res['root_cause_s']} s")
    for r in res["rounds"]:  # type: ignore[union-attr]
        print(f"round {r['round']} ({r['format']}): {r['candidates']} candidates, {r['applied']} applied, "
              f"{r['leak_free']} leak-free, {r['passed_checks']} passed every check; refused {r['refused_by']}; "
              f"proposer {r['proposer_s']} s" + (f"; {r['note']}" if r["note"] else ""))
    t = res["totals"]
    print(f"total: {t['candidates']} candidates, {t['applied']} applied ({res['apply_share']}), "  # type: ignore[index]
          f"{t['leak_free']} leak-free, {t['passed_checks']} passed every check")  # type: ignore[index]


if __name__ == "__main__":
    main()
