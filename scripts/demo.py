"""The SkillForge demo: the whole loop on a fresh workspace, through the `skillforge` CLI.

    python scripts/demo.py          # make demo: the embedded local model unless an endpoint is set
    python scripts/demo.py --ci     # make demo-ci: the scripted world behind a local HTTP server

1. a fresh workspace outside the repository (`$TMPDIR/skillforge-demo/workspace`; `--ci`:
   `.../ci`, rebuilt each time) with the example skills imported;
2. the router calibrated on one half of the labelled queries and reported on the other half;
3. a handful of Chinese and English queries routed (NONE included), as a table;
4. an endpoint: SKILLFORGE_LLM_BASE_URL if set, else the embedded model (`skillforge llm serve`),
   or with --ci the scripted world;
5. an evaluation of a prepared candidate release against the live one: verdict, improvement,
   evidence and the HTML report;
6. the live release evaluated against itself (A/A) on its repair set, which records its failures,
   then one evolution round under a budget. Nothing is approved: an L2 result waits, and the exact
   `skillforge review approve ...` line is printed;
7. where everything was written.

A re-run after Ctrl-C resumes: finished steps are skipped (runs/demo.json) and a started evolve run
continues with `--resume`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

REPO = Path(__file__).resolve().parents[1]
console = Console(highlight=False)
QUERIES = ["帮我订明晚七点四个人的火锅", "where is my parcel 1Z999AA10123456784", "从公司打车去虹桥机场要多少钱",
           "write a commit message for my staged changes", "今天有什么科技新闻", "给我讲个笑话",
           "what's the capital of France", "book me a flight to Tokyo"]
CI_SKILL, LOCAL_SKILL = "taxi-hailing", "restaurant-booking"
LOCAL_CASES = 6
"""Cases per skill and set in the local demo: the embedded model takes ~5-20 s per call."""
LOCAL_FIX = ("\n9. 复述预订信息时，如工具返回了定金、最低消费或用餐时长限制，必须一并告知用户，"
             "并在用户确认后再下单。\n")


def sf(*args: str, check: bool = True, capture: bool = True) -> subprocess.CompletedProcess[str]:
    """Run one skillforge command, showing it as a user would type it."""
    exe = shutil.which("skillforge") or str(Path(sys.executable).parent / "skillforge")
    console.print(f"[dim]$ skillforge {' '.join(args)}[/dim]")
    proc = subprocess.run([exe, *args], text=True, capture_output=capture, env=os.environ.copy())
    if check and proc.returncode not in (0, 3, 4):
        console.print(proc.stderr or proc.stdout, markup=False)
        raise SystemExit(f"demo: `skillforge {' '.join(args)}` failed with exit code {proc.returncode}")
    return proc


class Demo:
    """The steps, each run once per workspace (runs/demo.json remembers what is done)."""

    def __init__(self, ws: Path, ci: bool) -> None:
        self.ws, self.ci = ws, ci
        self.state_path = ws / "runs" / "demo.json"
        self.state: dict[str, object] = json.loads(self.state_path.read_text()) if self.state_path.exists() else {}
        self.skill = CI_SKILL if ci else LOCAL_SKILL

    def save(self) -> None:
        self.state_path.parent.mkdir(parents=True, exist_ok=True)
        self.state_path.write_text(json.dumps(self.state, indent=1))

    def step(self, name: str, title: str) -> bool:
        """True when the step still has to run; prints its title either way."""
        done = name in self.state.get("done", [])  # type: ignore[operator]
        console.rule(f"[bold]{title}[/bold]" + (" [dim](done before; skipped)[/dim]" if done else ""))
        return not done

    def finish(self, name: str) -> None:
        self.state["done"] = [*self.state.get("done", []), name]  # type: ignore[misc]
        self.save()

    # ---- the steps ------------------------------------------------------------------------
    def workspace(self) -> None:
        if not self.step("workspace", f"1. a fresh workspace: {self.ws}"):
            return
        sf("init", str(self.ws))
        os.environ["SKILLFORGE_WORKSPACE"] = str(self.ws)
        sf("skills", "import", "--from", str(REPO / "skills"))
        sets = self.ws / "evaluation_sets"
        shutil.copytree(REPO / "evaluation_sets" / "router", sets / "router", dirs_exist_ok=True)
        if self.ci:
            sys.path.insert(0, str(REPO / "tests"))
            from evolve_fakes import write_sets  # the scripted world's sets (taxi-hailing, planted failure)

            from skillforge.config import Workspace
            write_sets(Workspace.open(self.ws))
        else:
            for path in sorted((REPO / "evaluation_sets").glob("*.json")):
                data = json.loads(path.read_text(encoding="utf-8"))
                kept, seen = [], {}
                for case in data["cases"]:  # demo-sized: a few cases per skill and set
                    seen[case["skill"]] = seen.get(case["skill"], 0) + 1
                    if seen[case["skill"]] <= LOCAL_CASES:
                        kept.append(case)
                data["cases"] = kept
                data["meta"]["auto_case_ids"] = [c["id"] for c in kept if "_auto_" in c["id"]]
                (sets / path.name).write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
        self.finish("workspace")

    def router(self) -> None:
        if not self.step("router", "2. the router: calibrated on one half of the labelled queries, scored on the other"):
            console.print(self.state.get("router_summary", ""), markup=False)
            return
        router = self.ws / "evaluation_sets" / "router"
        lines = [x for f in ("dev.jsonl", "negatives.jsonl") for x in (router / f).read_text().splitlines() if x.strip()]
        random.Random(7).shuffle(lines)
        fit, held = lines[::2], lines[1::2]
        (self.ws / "runs").mkdir(exist_ok=True)
        (self.ws / "runs" / "router-calibrate.jsonl").write_text("\n".join(fit) + "\n")
        (self.ws / "runs" / "router-heldout.jsonl").write_text("\n".join(held) + "\n")
        sf("route", "calibrate", "--cases", str(self.ws / "runs" / "router-calibrate.jsonl"))
        ev = json.loads(sf("route", "eval", "--cases", str(self.ws / "runs" / "router-heldout.jsonl"), "--json",
                           "--no-llm").stdout)
        keys = [k for k in ("accuracy", "recall_at_1", "none_recall", "answered_right", "rejected") if k in ev]
        summary = (f"held-out half: {len(held)} queries (calibrated on the other {len(fit)}): "
                   + ", ".join(f"{k} {ev[k]:.3f}" if isinstance(ev[k], float) else f"{k} {ev[k]}" for k in keys))
        console.print(summary, markup=False)
        self.state["router_summary"] = summary
        self.finish("router")

    def routes(self) -> None:
        self.step("routes", "3. routing a few queries (rule and embed layers, no LLM)")
        table = Table("query", "skill", "layer", "ms")
        for q in QUERIES:
            r = json.loads(sf("route", q, "--json", "--no-llm").stdout)
            table.add_row(q, r.get("chosen") or "NONE", str(r.get("hit_layer") or "-"),
                          f"{sum(r.get('latency_ms', {}).values()):.0f}")
        console.print(table)

    def endpoint(self) -> object | None:
        console.rule("[bold]4. the models[/bold]")
        if self.ci:
            sys.path.insert(0, str(REPO / "tests"))
            from world_server import WorldServer

            srv = WorldServer().start()
            os.environ.update({"SKILLFORGE_LLM_BASE_URL": srv.base_url, "SKILLFORGE_LLM_MODEL": "world",
                               "SKILLFORGE_JUDGE_MODEL": "world-judge", "SKILLFORGE_LLM_MAX_RETRIES": "0"})
            console.print(f"scripted world (executor, judge, proposer) at {srv.base_url}: --ci only, never a default")
            return srv
        if os.environ.get("SKILLFORGE_LLM_BASE_URL"):
            console.print(f"configured endpoint: {os.environ['SKILLFORGE_LLM_BASE_URL']}")
            return None
        sf("llm", "serve")
        sf("llm", "status", check=False, capture=False)
        return None

    def evaluation(self) -> None:
        if not self.step("evaluation", f"5. a prepared candidate of {self.skill} against its live release"):
            console.print(self.state.get("evaluation_summary", ""), markup=False)
            return
        cand = self.ws / "runs" / "demo-candidate" / self.skill
        shutil.copytree(self.ws / "skills" / self.skill, cand, dirs_exist_ok=True)
        text = (cand / "SKILL.md").read_text(encoding="utf-8")
        if self.ci:
            fix = "\n- QUOTE-ETA：报价时同时告诉用户司机预计多久到达。\n"
            text = text.replace("## Instructions\n", "## Instructions" + fix, 1)
        else:
            text = text.replace("\n## Examples", LOCAL_FIX + "\n## Examples", 1)
        (cand / "SKILL.md").write_text(text, encoding="utf-8")
        report = self.ws / "runs" / "reports" / f"{self.skill}-candidate.html"
        report.parent.mkdir(parents=True, exist_ok=True)
        out = json.loads(sf("evaluate", self.skill, "--candidate", str(cand), "--set", "repair", "--json",
                            "--report", str(report)).stdout)
        table = Table("dimension", "outcome", "wins", "losses", "ties", "p", "CI", "MDE")
        for dim, e in out.get("evidence", {}).items():
            table.add_row(dim, e["outcome"], str(e["wins"]), str(e["losses"]), str(e["ties"]), f"{e['p_value']:.3g}",
                          f"[{e['ci'][0]:+.2f}, {e['ci'][1]:+.2f}]", f"{e['mde']:.2f}")
        console.print(f"verdict [bold]{out['verdict']}[/bold], improvement [bold]{out.get('improvement')}[/bold]")
        console.print(table)
        for reason in out.get("reasons", []):
            console.print(f"  why: {reason}", markup=False)
        summary = f"verdict {out['verdict']}, improvement {out.get('improvement')}; report {report}"
        console.print(summary, markup=False)
        self.state["evaluation_summary"] = summary
        self.finish("evaluation")

    def evolution(self) -> None:
        self.step("evolution", f"6. one evolution round on {self.skill} (planted failures), under a budget")
        if "aa" not in self.state.get("done", []):  # type: ignore[operator]
            sf("evaluate", self.skill, "--aa", "--set", "repair")  # the live release's failures, in its traces
            self.finish("aa")
        run = self.state.get("evolve_run")
        if run:
            status = json.loads(sf("runs", "show", str(run), "--json").stdout)["status"]
            out = json.loads(sf("evolve", "--resume", str(run), "--json").stdout) if status in ("RUNNING", "BUDGET") \
                else json.loads(sf("runs", "show", str(run), "--json").stdout)
        else:
            proc = sf("evolve", self.skill, "--max-rounds", "1", "--budget-calls", "1500", "--json", check=False)
            if proc.returncode not in (0, 3, 4):
                console.print(proc.stderr, markup=False)
                raise SystemExit("demo: evolve failed")
            out = json.loads(proc.stdout)
        self.state["evolve_run"] = out["run_id"]
        self.save()
        table = Table("candidate", "kind", "claimed", "computed", "verdict", "rejected by")
        for c in out["candidates"]:
            table.add_row(c["id"], c["kind"], str(c["claimed_level"]), str(c["computed_level"]), c["verdict"],
                          c["rejected_by"] or "")
        console.print(f"status [bold]{out['status']}[/bold] after {out['rounds']} round(s), {out['llm_calls']} LLM calls, "
                      f"{out['tokens']} tokens")
        console.print(table)
        for name in ("selection", "holdout"):
            s = out.get(name) or {}
            if s:
                console.print(f"{name}: {s['verdict']}, improvement {s['improvement']}, score {s.get('score')} vs "
                              f"live {s.get('baseline_score')} on {s['cases']} cases", markup=False)
        if out["status"] == "PENDING_REVIEW":
            console.print("Nothing was approved. To publish it, a person runs:")
            console.print(f"  skillforge review show {out['run_id']} -w {self.ws}", markup=False)
            console.print(f"  skillforge review approve {out['run_id']} --comment \"...\" -w {self.ws}", markup=False)

    def where(self, started: float) -> None:
        console.rule("[bold]7. where everything is[/bold]")
        for label, rel in (("workspace", ""), ("SQLite store", "runs/skillforge.db"), ("router log", "runs/router.jsonl"),
                           ("evaluations", "runs/evaluations.jsonl"), ("traces", "runs/traces"),
                           ("HTML reports", "runs/reports"), ("failed candidates", "runs/failures"),
                           ("reviews", "runs/reviews"), ("suggestions", "runs/suggestions"),
                           ("checkpoints", "checkpoints/graphs.sqlite")):
            path = self.ws / rel
            console.print(f"  {label:<18} {path}{'' if path.exists() else '  (none yet)'}", markup=False)
        console.print(f"demo finished in {time.monotonic() - started:.0f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ci", action="store_true", help="scripted models behind a local HTTP server (make demo-ci)")
    ap.add_argument("--workspace", type=Path, default=None)
    args = ap.parse_args()
    started = time.monotonic()
    # outside this repository: a workspace inside it would share (and be ignored by) its git
    ws = (args.workspace or Path(tempfile.gettempdir()) / "skillforge-demo" / ("ci" if args.ci else "workspace")).resolve()
    if args.ci and ws.exists():
        shutil.rmtree(ws)  # the CI demo starts over; the local one resumes
    os.environ["SKILLFORGE_WORKSPACE"] = str(ws)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    demo = Demo(ws, args.ci)
    try:
        demo.workspace()
        demo.router()
        demo.routes()
        srv = demo.endpoint()
        try:
            demo.evaluation()
            demo.evolution()
        finally:
            if srv is not None:
                srv.stop()  # type: ignore[attr-defined]
        demo.where(started)
    except KeyboardInterrupt:
        console.print(f"\ninterrupted: run the demo again to resume ({ws})")
        raise SystemExit(130) from None


if __name__ == "__main__":
    main()
