"""The SkillForge demo: the whole loop on a fresh workspace, through the `skillforge` CLI.

    python scripts/demo.py          # make demo: the embedded local model unless an endpoint is set
    python scripts/demo.py --ci     # make demo-ci: the scripted world behind a local HTTP server

1. a fresh workspace outside the repository, one per checkout (`$TMPDIR/skillforge-demo-<hash of
   the checkout's path>/workspace`; `--ci`: `.../ci`, rebuilt each time) with the example skills;
2. the router calibrated on one half of the labelled queries and reported on the other half;
3. a handful of Chinese and English queries routed (NONE included), as a table;
4. an endpoint: SKILLFORGE_LLM_BASE_URL if set, else the embedded model (`skillforge llm serve`,
   stopped again when the demo ends if the demo started it), or with --ci the scripted world;
5. an evaluation of a prepared candidate release against the live one: verdict, its reasons and a
   one-line explanation, evidence and the HTML report. INVALID and DECLINED are results: the demo
   goes on;
6. the live release evaluated against itself (A/A) on its repair set, which records its failures,
   then one evolution round under a budget: what each gate said of each candidate, the diff of the
   one that got furthest, and, when the skill did not improve, one line saying why. Nothing is
   approved: an L2 result waits, and the exact `review approve` line is printed;
7. where everything was written.

The CLI's progress (case n of N, elapsed; in the evolution round for each case of each candidate's
validation) and messages go straight to the terminal, line by line; only the JSON the demo reads is
captured. A re-run resumes: finished steps are shown again from runs/demo.json,
not re-run, and a started evolve run continues with `--resume`. A failure the demo cannot get past
ends with one line naming the command to run next.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Collection
from pathlib import Path

from rich.console import Console
from rich.table import Table

REPO = Path(__file__).resolve().parents[1]
SESSIONS = REPO / "example_sessions"
"""Shipped agent transcripts (taxi-hailing) for the sessions round."""
console = Console(highlight=False)
QUERIES = ["帮我订明晚七点四个人的火锅", "where is my parcel 1Z999AA10123456784", "从公司打车去虹桥机场要多少钱",
           "write a commit message for my staged changes", "今天有什么科技新闻", "给我讲个笑话",
           "what's the capital of France", "book me a flight to Tokyo"]
CI_SKILL, LOCAL_SKILL = "taxi-hailing", "restaurant-booking"
LOCAL_CASES = 2
"""Cases per skill and set in the local demo for the skills it does not evaluate."""
LOCAL_PICKS = {"repair": (3, 5, 6, 1, 2, 7), "p0": (6,), "holdout": (3, 5, 8, 9, 11), "final_audit": (1, 2),
               "dev": (1, 2)}
"""restaurant-booking's cases per set in the local demo (the embedded model takes ~5-20 s per call, and
every case runs two agents and two judgements): the fewest each gate can decide on, the shortest
chosen. repair: 6 (an evaluation needs 5 valid cases, so one may fail to finish; 3, 5, 6 took 2 agent
turns on the embedded model, 1 and 2 took 3; 4 looped for 6 turns and is left out), each a failure of
the live release for the evolution round; p0: 1 (it joins every candidate's selection cases); holdout:
5, the least that can confirm a candidate (run only when one wins selection); final_audit: 2 (run only
before a review)."""
LOCAL_FIX = ("\n9. 复述预订信息时，如工具返回了定金、最低消费或用餐时长限制，必须一并告知用户，"
             "并在用户确认后再下单。\n")
CI_FIX = "\n- QUOTE-ETA：报价时同时告诉用户司机预计多久到达。\n"
WORLDS = {"ok": None, "declined": "loop", "invalid": "garbage"}
"""--world (with --ci): the scripted world's fault. declined: the prepared candidate's agent never
answers (it forfeits every case); invalid: the judge cannot judge the candidate's answers."""
EVAL_CODES = (0, 3, 4, 5)
"""`evaluate` exits with its verdict (PASS, REVIEW, DECLINED / A/A false alarm, INVALID): all results."""
EVOLVE_CODES = (0, 3, 4, 5)


def demo_cases(cases: list[dict], partition: str) -> list[dict]:  # type: ignore[type-arg]
    """The local demo's cases of one set: LOCAL_PICKS of restaurant-booking (in that order), the
    first LOCAL_CASES of every other skill."""
    picks = [f"{ {'final_audit': 'final'}.get(partition, partition)}-{LOCAL_SKILL}-{n:02d}"
             for n in LOCAL_PICKS.get(partition, ())]
    by_id = {c["id"]: c for c in cases}
    kept = [by_id[i] for i in picks if i in by_id]
    seen: dict[str, int] = {}
    for case in cases:
        if case["skill"] == LOCAL_SKILL:
            continue
        seen[case["skill"]] = seen.get(case["skill"], 0) + 1
        if seen[case["skill"]] <= LOCAL_CASES:
            kept.append(case)
    return kept


def say(text: str, style: str | None = None) -> None:
    """One line as it is: no markup, never wrapped (so a printed command can be pasted)."""
    console.print(text, markup=False, soft_wrap=True, style=style)


def exe() -> Path:
    """The skillforge executable beside the running Python (the checkout's .venv), else on PATH."""
    here = Path(sys.executable).parent / "skillforge"
    return here if here.exists() else Path(shutil.which("skillforge") or "skillforge")


def shown_exe() -> str:
    """The executable as a user types it from here: `.venv/bin/skillforge` below the current folder."""
    path = exe()
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def demo_root(repo: Path = REPO) -> Path:
    """This checkout's demo folder, outside it (a workspace inside would share its git):
    `$TMPDIR/skillforge-demo-<first 8 hex of sha256(checkout path)>`."""
    return Path(tempfile.gettempdir()) / f"skillforge-demo-{hashlib.sha256(str(repo).encode()).hexdigest()[:8]}"


class DemoStop(Exception):
    """A failure the demo cannot get past: what happened, and the command to run next."""

    def __init__(self, what: str, next_command: str) -> None:
        super().__init__(what)
        self.next_command = next_command


def sf(*args: str, ok: Collection[int] = (0,), json_out: bool = False) -> tuple[int, object]:
    """Run one skillforge command, shown first as a user would type it. Its stderr (progress, notes,
    errors) goes straight to the terminal; its stdout too, unless `json_out` (then it is read as JSON).
    An exit code outside `ok`, or output that is not JSON, stops the demo (DemoStop)."""
    cmd = " ".join([shown_exe(), *map(shlex.quote, args)])
    say(f"$ {cmd}", style="dim")
    proc = subprocess.run([str(exe()), *args], stdout=subprocess.PIPE if json_out else None, text=True,
                          env=os.environ.copy())
    if proc.returncode not in ok:
        raise DemoStop(f"`{cmd}` failed with exit code {proc.returncode} (its message is above)", cmd)
    if not json_out:
        return proc.returncode, None
    try:
        return proc.returncode, json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise DemoStop(f"`{cmd}` printed no JSON: {proc.stdout[:200]!r}", cmd) from None


def explain(out: dict, local: bool) -> str:  # type: ignore[type-arg]
    """One plain sentence saying what an evaluation's verdict means (`out`: its --json)."""
    m = out.get("measured") or {}
    total = m.get("valid_cases", 0) + m.get("invalid_cases", 0)
    lost = len((m.get("forfeits") or {}).get("candidate", []))
    reasons = out.get("reasons") or []
    verdict = out.get("verdict")
    if out.get("kind") == "aa" and verdict != "INVALID":
        if out.get("false_alarm"):
            return "false alarm: the live release came out different from itself: this judge and model are noisy here"
        own = f"; {verdict} is the live release's own result (see why)" if verdict != "PASS" else ""
        return f"no false alarm: the live release came out no different from itself{own}"
    if verdict == "INVALID":
        cause = next((r for r in reasons if r.startswith("most common cause")), "")
        what = "could not judge" if ": judge:" in cause else "did not finish"
        who = "the small local model" if local else "the model"
        fix = "; a configured endpoint (SKILLFORGE_LLM_BASE_URL) avoids this" if local else ""
        return f"the run cannot tell: {who} {what} {m.get('invalid_cases', 0)} of {total} cases{fix}"
    if verdict == "DECLINED":
        agent = f"; its agent gave no usable answer on {lost} of {total} cases, each counted as its loss" if lost else ""
        return f"the candidate is declined: {reasons[0] if reasons else 'evidence against it'}{agent}"
    if verdict == "REVIEW":
        return f"a person decides: a score moved by 10 points or more (improvement {out.get('improvement')})"
    return "no evidence that it is worse: it may be published"


def verdict_lines(out: dict, local: bool) -> list[str]:  # type: ignore[type-arg]
    """The verdict, every reason and the explanation, as the demo prints (and re-prints) them."""
    head = f"verdict {out['verdict']}, improvement {out.get('improvement')}"
    if out.get("kind") == "aa":  # an A/A decides no release: said as `evaluate --aa` and the report say it
        from skillforge.state.result import aa_outcome

        alarms = [f"{k} {e['outcome']}" for k, e in (out.get("evidence") or {}).items() if e["outcome"] != "INCONCLUSIVE"]
        head = "A/A: INVALID" if out["verdict"] == "INVALID" else aa_outcome(bool(out.get("false_alarm")), alarms)
    return [head, *(f"  why: {r}" for r in out.get("reasons", [])), f"  in short: {explain(out, local)}"]


JUDGE_NOISE = 0.30
"""A judge flip rate (the share of cases whose two orders disagree) at or above this is called noise."""
GATE_ORDER = ("PASSED", "HOLDOUT_LOSS", "NOT_SELECTED", "FAILED_VALIDATION", "LEAK", "NOOP", "DUPLICATE",
              "REFUSED", "BUDGET", "PENDING")
"""Candidate verdicts from the furthest a candidate got through the gates to the nearest."""
IMPROVED = ("PUBLISHED", "PENDING_REVIEW", "SUGGESTED")
"""Run statuses that leave a better skill (published, waiting for a person, or written as a suggestion)."""
DIFF_LINES = 40


def apply_reason(notes: list[str]) -> str:
    """Why a candidate could not be applied: the reason of its last `apply attempt N: REASON: ...` note."""
    for note in reversed(notes):
        if note.startswith("apply attempt "):
            parts = note.split(": ")
            return parts[1] if len(parts) > 1 else note
        if note.startswith("retry failed: "):
            return note
    return "unknown"


def gate_said(c: dict) -> str:  # type: ignore[type-arg]
    """What the gate that stopped a candidate said, in short (its last note), or that it passed."""
    v, notes = c.get("verdict"), c.get("notes") or []
    if v == "PASSED":
        return "passed selection and holdout"
    if v == "NOT_SELECTED":
        return "passed selection; another candidate was selected"
    if v == "REFUSED" and c.get("rejected_by") == "apply":
        return f"refused at apply ({apply_reason(notes)})"
    if v == "LEAK":
        return f"leak scan: {'; '.join(c.get('leaks') or notes[-1:])[:160]}"
    if v in ("NOOP", "DUPLICATE"):
        return f"{v.lower()}: {c.get('rejected_by')}"
    last = notes[-1] if notes else ""
    return f"{c.get('rejected_by') or v}: {last[:160]}" if last else str(c.get("rejected_by") or v)


APPLY_BAR = 3
"""The demo's bar: a round proposes at least this many candidates that apply to the file (issue 24)."""


def applied_count(out: dict) -> tuple[int, int]:  # type: ignore[type-arg]
    """(proposed, applied) over every round of an evolve run's --json: a candidate applied unless it
    was refused at apply (no block, no match, an edit outside the file)."""
    cands = out.get("candidates", [])
    refused = sum(c.get("verdict") == "REFUSED" and c.get("rejected_by") == "apply" for c in cands)
    return len(cands), len(cands) - refused


def best_candidate(out: dict) -> dict | None:  # type: ignore[type-arg]
    """The candidate that got furthest through the gates (the selected one first), with a diff."""
    ranked = sorted((c for c in out.get("candidates", []) if c.get("diff")),
                    key=lambda c: GATE_ORDER.index(c["verdict"]) if c["verdict"] in GATE_ORDER else len(GATE_ORDER))
    return ranked[0] if ranked else None


def why_no_improvement(out: dict, flips: dict[str, float] | None = None) -> str | None:  # type: ignore[type-arg]
    """One line saying why an evolve run (its --json / `runs show --json`) did not improve the skill,
    or None when it did. `flips`: the judge flip rate of each evaluation run id of the run
    (runs/evaluations.jsonl), to name a noisy judge behind the validation losses."""
    status = out.get("status")
    if status in IMPROVED:
        return None
    if status == "NO_FAILURES":
        return f"nothing to fix: {out.get('message') or 'no failures of the live release'}"
    if status in ("BUDGET", "RUNNING"):
        return f"the run stopped before it finished ({status}): {out.get('message') or 'resume it'}"
    cands = out.get("candidates") or []
    if not cands:  # the run's headline says it itself when the proposer gave nothing
        said = str(out.get("message") or status)
        return said if said.startswith("no candidate could be proposed") else f"no candidate was proposed: {said}"
    parts: list[str] = []
    refused = [c for c in cands if c["verdict"] == "REFUSED" and c.get("rejected_by") == "apply"]
    if refused:
        reasons: dict[str, int] = {}
        for c in refused:
            r = apply_reason(c.get("notes") or [])
            reasons[r] = reasons.get(r, 0) + 1
        said = next(iter(reasons)) if len(reasons) == 1 else ", ".join(f"{n} {r}" for r, n in reasons.items())
        parts.append(f"{len(refused)} refused at apply ({said})")
    checked = [c for c in cands if c["verdict"] in ("LEAK", "NOOP", "DUPLICATE")
               or (c["verdict"] == "REFUSED" and c.get("rejected_by") != "apply")]
    if checked:
        gates: dict[str, int] = {}
        for c in checked:
            g = {"LEAK": "leak scan", "NOOP": "no-op", "DUPLICATE": "duplicate"}.get(c["verdict"], c.get("rejected_by") or "check")
            gates[g] = gates.get(g, 0) + 1
        parts.append(f"{len(checked)} stopped by the checks ({', '.join(f'{n} {g}' for g, n in gates.items())})")
    declined = [c for c in cands if c["verdict"] == "FAILED_VALIDATION"]
    if declined:
        whys: dict[str, int] = {}
        for c in declined:  # the gate's words up to its details: "improvement INCONCLUSIVE on the ..."
            w = (c.get("notes") or ["?"])[-1].split(" (")[0].split(":")[0]
            whys[w] = whys.get(w, 0) + 1
        rates = [(flips or {}).get(f"{out.get('run_id')}-{c['id']}-selection") for c in declined]
        noisy = sorted(r for r in rates if r is not None and r >= JUDGE_NOISE)
        noise = (f"; judge noise: flip rate up to {noisy[-1]:.0%} (≥ {JUDGE_NOISE:.0%}) in {len(noisy)} of "
                 f"{len(declined)} selection run(s)") if noisy else ""
        said = ", ".join(f"{w} ×{n}" if n > 1 else w for w, n in whys.items())
        parts.append(f"{len(declined)} declined on validation ({said}){noise}")
    lost = [c for c in cands if c["verdict"] == "HOLDOUT_LOSS"]
    if lost:
        parts.append(f"{len(lost)} failed holdout ({(lost[0].get('notes') or ['?'])[-1][:120]})")
    said = [re.sub(r"^round \d+: ", "", n) for n in out.get("proposer_notes") or []]
    said += [n for c in cands for n in c.get("notes") or []]  # runs before proposer_notes kept it with each candidate
    few = next((n for n in said if n.startswith("the proposer gave ")), None)
    if few:  # the round's own note
        parts.append(few)
    applied = len(cands) - len(refused)
    head = "no candidate applied" if not applied else f"{applied} of {len(cands)} candidate(s) applied, none improved"
    return f"{head}: {'; '.join(parts) or out.get('message') or status}"


class Demo:
    """The steps, each run once per workspace (runs/demo.json remembers what is done)."""

    def __init__(self, ws: Path, ci: bool, world: str = "ok") -> None:
        self.ws, self.ci, self.world = ws, ci, world
        self.local = not ci and not os.environ.get("SKILLFORGE_LLM_BASE_URL")
        self.state_path = ws / "runs" / "demo.json"
        self.state: dict[str, object] = json.loads(self.state_path.read_text()) if self.state_path.exists() else {}
        self.skill = CI_SKILL if ci else LOCAL_SKILL
        self.started = time.monotonic()
        self.world_server: object | None = None
        self.model_server: bool | None = None
        """True: this demo started the embedded model server (so it stops it); False: one was running."""

    def save(self) -> None:
        self.state_path.parent.mkdir(parents=True, exist_ok=True)
        self.state_path.write_text(json.dumps(self.state, indent=1, ensure_ascii=False))

    def step(self, name: str, title: str) -> bool:
        """True when the step still has to run; prints its title either way."""
        done = name in self.state.get("done", [])  # type: ignore[operator]
        console.rule(f"[bold]{title}[/bold]")
        if done:
            say("(done before; shown again from runs/demo.json)", style="dim")
        self.started = time.monotonic()
        return not done

    def finish(self, name: str, lines: list[str] | None = None) -> None:
        """Mark a step done (with the lines a re-run shows again) and say how long it took."""
        if lines is not None:
            self.state[f"{name}_summary"] = lines
        self.state["done"] = [*self.state.get("done", []), name]  # type: ignore[misc]
        self.save()
        say(f"({name}: {time.monotonic() - self.started:.0f} s)", style="dim")

    def replay(self, name: str) -> None:
        for line in self.state.get(f"{name}_summary", []):  # type: ignore[union-attr]
            say(line)

    # ---- the steps ------------------------------------------------------------------------
    def workspace(self) -> None:
        if not self.step("workspace", f"1. a fresh workspace: {self.ws}"):
            say(f"commands below run with SKILLFORGE_WORKSPACE={self.ws}")
            return
        say(f"commands below run with SKILLFORGE_WORKSPACE={self.ws}")
        sf("init", str(self.ws))
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
                kept = demo_cases(data["cases"], data["meta"]["partition"])
                data["cases"] = kept
                data["meta"]["auto_case_ids"] = [c["id"] for c in kept if "_auto_" in c["id"]]
                (sets / path.name).write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
        self.finish("workspace")

    def router(self) -> None:
        if not self.step("router", "2. the router: calibrated on one half of the labelled queries, scored on the other"):
            return self.replay("router")
        router = self.ws / "evaluation_sets" / "router"
        lines = [x for f in ("dev.jsonl", "negatives.jsonl") for x in (router / f).read_text().splitlines() if x.strip()]
        random.Random(7).shuffle(lines)
        fit, held = lines[::2], lines[1::2]
        (self.ws / "runs").mkdir(exist_ok=True)
        (self.ws / "runs" / "router-calibrate.jsonl").write_text("\n".join(fit) + "\n")
        (self.ws / "runs" / "router-heldout.jsonl").write_text("\n".join(held) + "\n")
        sf("route", "calibrate", "--cases", str(self.ws / "runs" / "router-calibrate.jsonl"))
        _, ev = sf("route", "eval", "--cases", str(self.ws / "runs" / "router-heldout.jsonl"), "--json", "--no-llm",
                   json_out=True)
        keys = [k for k in ("accuracy", "recall_at_1", "none_recall", "answered_right", "rejected") if k in ev]  # type: ignore[operator]
        summary = (f"held-out half: {len(held)} queries (calibrated on the other {len(fit)}): "
                   + ", ".join(f"{k} {ev[k]:.3f}" if isinstance(ev[k], float) else f"{k} {ev[k]}" for k in keys))  # type: ignore[index]
        say(summary)
        self.finish("router", [summary])

    def routes(self) -> None:
        self.step("routes", "3. routing a few queries (rule and embed layers, no LLM)")
        table = Table("query", "skill", "layer", "ms")
        for q in QUERIES:
            _, r = sf("route", q, "--json", "--no-llm", json_out=True)
            table.add_row(q, r.get("chosen") or "NONE", str(r.get("hit_layer") or "-"),  # type: ignore[union-attr]
                          f"{sum(r.get('latency_ms', {}).values()):.0f}")  # type: ignore[union-attr]
        console.print(table)

    def endpoint(self) -> None:
        self.step("endpoint", "4. the models")
        if self.ci:
            sys.path.insert(0, str(REPO / "tests"))
            from world_server import WorldServer

            srv = self.world_server = WorldServer(fault=WORLDS[self.world]).start()
            os.environ.update({"SKILLFORGE_LLM_BASE_URL": srv.base_url, "SKILLFORGE_LLM_MODEL": "world",
                               "SKILLFORGE_JUDGE_MODEL": "world-judge", "SKILLFORGE_LLM_MAX_RETRIES": "0"})
            say(f"scripted world (executor, judge, proposer) at {srv.base_url}: --ci only, never a default"
                + (f"; fault: {WORLDS[self.world]}" if WORLDS[self.world] else ""))
        elif not self.local:
            say(f"configured endpoint: {os.environ['SKILLFORGE_LLM_BASE_URL']}")
        else:
            from skillforge.config import Workspace
            from skillforge.llm.local_server import find_server

            self.model_server = find_server(Workspace.open(self.ws)) is None
            sf("llm", "serve")
            info = find_server(Workspace.open(self.ws))
            if info is not None and "--n_threads" in info.command:
                say(f"model server threads: {info.command[info.command.index('--n_threads') + 1]} of "
                    f"{os.cpu_count()} cores (the cores other processes left idle when it started)")
            sf("llm", "status", ok=(0, 1))
        say(f"({time.monotonic() - self.started:.0f} s)", style="dim")

    def candidate_text(self, text: str) -> str:
        """The prepared candidate: the live SKILL.md with one instruction more (and, with a faulty
        --world, the marker that makes the scripted world fail on it)."""
        if not self.ci:
            return text.replace("\n## Examples", LOCAL_FIX + "\n## Examples", 1)
        marker = {"declined": "LOOP-MARKER", "invalid": "GARBAGE-MARKER"}.get(self.world, "")
        return text.replace("## Instructions\n", "## Instructions" + CI_FIX + (f"- {marker}\n" if marker else ""), 1)

    def evaluation(self) -> None:
        if not self.step("evaluation", f"5. a prepared candidate of {self.skill} against its live release"):
            return self.replay("evaluation")
        cand = self.ws / "runs" / "demo-candidate" / self.skill
        shutil.copytree(self.ws / "skills" / self.skill, cand, dirs_exist_ok=True)
        (cand / "SKILL.md").write_text(self.candidate_text((cand / "SKILL.md").read_text(encoding="utf-8")),
                                       encoding="utf-8")
        report = self.ws / "runs" / "reports" / f"{self.skill}-candidate.html"
        report.parent.mkdir(parents=True, exist_ok=True)
        _, out = sf("evaluate", self.skill, "--candidate", str(cand), "--set", "repair", "--json", "--report",
                    str(report), ok=EVAL_CODES, json_out=True)
        table = Table("dimension", "outcome", "wins", "losses", "ties", "p", "CI", "MDE")
        for dim, e in out.get("evidence", {}).items():  # type: ignore[union-attr]
            table.add_row(dim, e["outcome"], str(e["wins"]), str(e["losses"]), str(e["ties"]), f"{e['p_value']:.3g}",
                          f"[{e['ci'][0]:+.2f}, {e['ci'][1]:+.2f}]", f"{e['mde']:.2f}")
        if out.get("evidence"):  # type: ignore[union-attr]
            console.print(table)
        lines = [*verdict_lines(out, self.local), f"report {report}"]  # type: ignore[arg-type]
        for line in lines:
            say(line)
        self.finish("evaluation", lines)

    def sessions(self) -> None:
        if not self.step("sessions", "6. agent sessions: harvested into staged cases, reviewed by a person"):
            return self.replay("sessions")
        _, rep = sf("sessions", "harvest", str(SESSIONS), "--json", json_out=True)
        red = ", ".join(f"{k} {v}" for k, v in rep["redactions"].items()) or "nothing"  # type: ignore[union-attr]
        lines = [f"{rep['transcripts']} transcripts in {SESSIONS.relative_to(REPO)} (generic JSONL; Claude Code "  # type: ignore[index]
                 f"and Codex read the same way): {rep['with_skill']} loaded a skill, {rep['failing']} had a failure "  # type: ignore[index]
                 f"signal, {len(rep['staged'])} staged, {rep['duplicates']} near-duplicates folded, redacted: {red}"]  # type: ignore[index]
        for c in rep["cases"]:  # type: ignore[index]
            lines.append(f"  {c['id']}: {c['query'][:40]!r} — {c['why'][:60]}")
        lines.append("Nothing counts until a person accepts it. The demo accepts them for you, as a person would "
                     "after reading each (skillforge cases review):")
        ids = [c["id"] for c in rep["cases"]]  # type: ignore[index]
        if ids:
            _, done = sf("cases", "review", *[x for i in ids for x in ("--accept", i)], "--note", "demo", "--json",
                         json_out=True)
            for d in done["done"]:  # type: ignore[index]
                lines.append(f"  accepted {d['id']} -> {d['partition']}")
        lines.append("holdout and final_audit cases stay unseen by the proposer; repair cases become failures to fix")
        for line in lines:
            say(line)
        self.finish("sessions", lines)

    def evolution(self) -> None:
        first = "A/A skipped on the embedded model" if self.local else "the live " + self.skill + " against itself (A/A)"
        self.step("evolution", f"7. {first}, then one evolution round, under a budget")
        if "aa" in self.state.get("done", []):  # type: ignore[operator]
            self.replay("aa")
        elif self.local:  # ~200 s of the 12-minute budget; the round's own evaluations measure the judge
            lines = [f"A/A skipped: on the embedded model it takes ~200 s (6 cases, both sides run); each evaluation "
                     f"of the round below measures the judge's flip rate instead. To run it: {shown_exe()} evaluate "
                     f"{self.skill} --aa --set repair -w {shlex.quote(str(self.ws))}"]
            say(lines[0])
            self.finish("aa", lines)
        else:  # the live release's failures, in its traces
            _, out = sf("evaluate", self.skill, "--aa", "--set", "repair", "--json", ok=EVAL_CODES, json_out=True)
            lines = verdict_lines(out, self.local)  # type: ignore[arg-type]
            for line in lines:
                say(line)
            self.finish("aa", lines)
        run = self.state.get("evolve_run")
        if run:
            _, out = sf("runs", "show", str(run), "--json", json_out=True)
            if out["status"] in ("RUNNING", "BUDGET"):  # type: ignore[index]
                _, out = sf("evolve", "--resume", str(run), "--json", ok=EVOLVE_CODES, json_out=True)
        elif self.ci:  # the nightly loop: harvest (nothing new now), evolve the skills with reviewed failures
            say(f"the nightly loop: {shown_exe()} evolve --all --from-sessions {SESSIONS.relative_to(REPO)}")
            _, night = sf("evolve", "--all", "--from-sessions", str(SESSIONS), "--max-rounds", "1",
                          "--budget-calls", "1500", "--json", ok=EVOLVE_CODES, json_out=True)
            say(f"evolved: {', '.join(night['evolved']) or 'nothing'}; "  # type: ignore[index]
                f"{night['waiting_for_review']} staged cases still wait for a person")  # type: ignore[index]
            mine = [r for r in night["runs"] if r["skill"] == self.skill]  # type: ignore[index]
            if not mine:
                raise DemoStop(f"the nightly loop did not evolve {self.skill}", "skillforge cases review")
            _, out = sf("runs", "show", str(mine[0]["run_id"]), "--json", json_out=True)
        else:
            _, out = sf("evolve", self.skill, "--max-rounds", "1", "--budget-calls", "1500", "--json", ok=EVOLVE_CODES,
                        json_out=True)
        self.state["evolve_run"] = out["run_id"]  # type: ignore[index]
        self.save()
        self.show_evolve(out)  # type: ignore[arg-type]
        if not self.ci:
            say(f"The accepted session cases wait for the nightly loop (on the embedded model another evolve run, "
                f"tens of minutes): {shown_exe()} evolve --all --from-sessions {shlex.quote(str(SESSIONS))} "
                f"-w {shlex.quote(str(self.ws))}; {shown_exe()} schedule prints its cron line.")

    def show_evolve(self, out: dict) -> None:  # type: ignore[type-arg]
        table = Table("candidate", "kind", "claimed", "computed", "verdict", "rejected by")
        for c in out["candidates"]:
            table.add_row(c["id"], c["kind"], str(c["claimed_level"]), str(c["computed_level"]), c["verdict"],
                          c["rejected_by"] or "")
        say(f"status {out['status']} after {out['rounds']} round(s), {out['llm_calls']} LLM calls, {out['tokens']} tokens")
        console.print(table)
        proposed, applied = applied_count(out)
        say(f"candidates: {proposed} proposed, {applied} applied"
            + (f" (below the demo's bar of {APPLY_BAR})" if applied < APPLY_BAR else ""),
            style="bold red" if applied < APPLY_BAR else None)
        for c in out["candidates"]:
            say(f"  {c['id']}: {gate_said(c)}")
        for name in ("selection", "holdout"):
            s = out.get(name) or {}
            if s:
                say(f"{name}: {s['verdict']}, improvement {s['improvement']}, score {s.get('score')} vs live "
                    f"{s.get('baseline_score')} on {s['cases']} cases")
        best = best_candidate(out)
        if best is not None:
            diff = best["diff"].rstrip().splitlines()
            say(f"the diff of the best candidate, {best['id']} ({best['verdict']}):")
            for line in diff[:DIFF_LINES]:
                say(f"  {line}", style="green" if line.startswith("+") else "red" if line.startswith("-") else None)
            if len(diff) > DIFF_LINES:
                say(f"  ... {len(diff) - DIFF_LINES} more lines: {out.get('failure_report') or 'runs show --json'}")
        why = why_no_improvement(out, self.flip_rates(str(out["run_id"])))
        if why:
            say(f"why no improvement: {why}", style="bold")
        run, ws = out["run_id"], shlex.quote(str(self.ws))
        if out["status"] == "PENDING_REVIEW":
            say("Nothing was approved. To publish it, a person runs:")
            say(f"  {shown_exe()} review show {run} -w {ws}")
            say(f"  {shown_exe()} review approve {run} --comment \"...\" -w {ws}")
        elif out["status"] in ("RUNNING", "BUDGET"):
            say(f"The run is paused; it continues with: {shown_exe()} evolve --resume {run} -w {ws}")

    def flip_rates(self, run_id: str) -> dict[str, float]:
        """The judge flip rate of each evaluation the evolve run `run_id` ran (runs/evaluations.jsonl)."""
        path, rates = self.ws / "runs" / "evaluations.jsonl", {}
        if not path.exists():
            return {}
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            rid = str(row.get("run_id") or "")
            if rid.startswith(f"{run_id}-") and isinstance(row.get("flip_rate"), (int, float)):
                rates[rid] = float(row["flip_rate"])
        return rates

    def where(self, started: float) -> None:
        console.rule("[bold]8. where everything is[/bold]")
        for label, rel in (("workspace", ""), ("SQLite store", "runs/skillforge.db"), ("router log", "runs/router.jsonl"),
                           ("evaluations", "runs/evaluations.jsonl"), ("traces", "runs/traces"),
                           ("HTML reports", "runs/reports"), ("failed candidates", "runs/failures"),
                           ("reviews", "runs/reviews"), ("suggestions", "runs/suggestions"),
                           ("staged cases", "evaluation_sets/staged"), ("usage events", "runs/events"),
                           ("checkpoints", "checkpoints/graphs.sqlite")):
            path = self.ws / rel
            say(f"  {label:<18} {path}{'' if path.exists() else '  (none yet)'}")
        say(f"demo finished in {time.monotonic() - started:.0f} s")

    def close(self) -> None:
        """Stop what this demo started: the scripted world, and the model server (3.8 GB of RAM)."""
        if self.world_server is not None:
            self.world_server.stop()  # type: ignore[attr-defined]
        ws = shlex.quote(str(self.ws))
        if self.model_server:
            sf("llm", "stop", ok=(0, 1, 2))
            say(f"(the demo stopped the model server it started; `{shown_exe()} llm serve -w {ws}` starts it again)")
        elif self.model_server is False:
            say(f"(the model server was running before the demo and is left running; `{shown_exe()} llm stop -w {ws}` "
                "stops it)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ci", action="store_true", help="scripted models behind a local HTTP server (make demo-ci)")
    ap.add_argument("--world", choices=sorted(WORLDS), default="ok",
                    help="with --ci: make the scripted evaluation DECLINED or INVALID (the demo must go on)")
    ap.add_argument("--workspace", type=Path, default=None)
    args = ap.parse_args()
    started = time.monotonic()
    ws = (args.workspace or demo_root() / ("ci" if args.ci else "workspace")).resolve()
    if args.ci and ws.exists():
        shutil.rmtree(ws)  # the CI demo starts over (only this checkout's); the local one resumes
    os.environ["SKILLFORGE_WORKSPACE"] = str(ws)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # runs the finally below: the server is stopped
    demo = Demo(ws, args.ci, args.world)
    again = "make demo-ci" if args.ci else "make demo"
    code, last = 0, ""
    try:
        demo.workspace()
        demo.router()
        demo.routes()
        demo.endpoint()
        demo.evaluation()
        demo.sessions()
        demo.evolution()
        demo.where(started)
    except DemoStop as e:
        code, last = 1, (f"demo stopped: {e}. Next: fix that, then run `{again}` again"
                         f"{'' if args.ci else ' (it resumes where it stopped)'}, or `{e.next_command}` by itself.")
    except KeyboardInterrupt:
        code, last = 130, f"interrupted: `{again}` resumes ({ws})"
    finally:
        try:
            demo.close()
        except DemoStop as e:
            last = last or f"demo: {e}"
    if last:
        say(last, style="bold red")
    sys.exit(code)


if __name__ == "__main__":
    main()
