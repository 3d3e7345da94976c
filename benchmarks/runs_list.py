"""`runs list`, `review list` and `runs show` over a workspace of many checkpointed evolve runs.

Builds a real workspace in a temp folder (git + SQLite, the scripted world of the tests), drives three
real evolve runs to PENDING_REVIEW, PUBLISHED and NO_FAILURES with the SqliteSaver checkpointer, then
copies their checkpoint rows (every checkpoint and pending write of each thread, so the file has the
size and shape of real history) under new thread ids until the file holds --runs runs. A quarter of
them wait for a review. Then it times the commands as a user runs them: each a new process of the
console script, median of --repeats. With --before DIR (a checkout of an older tree, say `git archive
main | tar -x -C DIR`), each command also runs from that tree (PYTHONPATH=DIR), interleaved with the
current one, so that both see the same load.

    python benchmarks/runs_list.py [--runs 1000] [--repeats 3] [--before DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]
os.environ.setdefault("OMP_NUM_THREADS", "1")

from evolve_fakes import SKILL, World, eta_patch, examples_patch, new_workspace, seed_failures  # noqa: E402

from skillforge.runners.evolve import GRAPHS_DB, Runner  # noqa: E402
from skillforge.config import Workspace  # noqa: E402

EXE = Path(sys.executable).parent / "skillforge"


def templates(ws: Workspace, other: Workspace) -> list[str]:
    """Four real runs: PENDING_REVIEW (L2) and NO_FAILURES in `ws`; REJECTED and PUBLISHED (L1) in
    `other`, whose checkpoint rows are then copied into `ws`. Returns their thread ids."""
    review = World(lambda r: [eta_patch(claimed=2)])
    seed_failures(ws, review.llm())
    pending = Runner(ws, llm_factory=review.llm).start(SKILL, run_id="tpl-pending")
    assert pending["status"] == "PENDING_REVIEW", pending
    none = Runner(ws, llm_factory=review.llm).start("hotel-booking", run_id="tpl-none")
    assert none["status"] == "NO_FAILURES", none
    seed_failures(other, review.llm())
    assert Runner(other, llm_factory=review.llm).start(SKILL, run_id="tpl-review")["status"] == "PENDING_REVIEW"
    Runner(other, llm_factory=review.llm).answer_review("tpl-review", "reject", comment="bench")
    l1 = World(lambda r: [examples_patch()])
    published = Runner(other, llm_factory=l1.llm).start(SKILL, run_id="tpl-l1")
    assert published["status"] == "PUBLISHED", published
    conn = sqlite3.connect(ws.checkpoints_dir / GRAPHS_DB)
    with conn:
        conn.execute("ATTACH DATABASE ? AS other", (str(other.checkpoints_dir / GRAPHS_DB),))
        conn.execute("INSERT INTO checkpoints SELECT * FROM other.checkpoints")
        conn.execute("INSERT INTO writes SELECT * FROM other.writes")
    conn.execute("DETACH DATABASE other")
    conn.close()
    return ["tpl-pending", "tpl-none", "tpl-review", "tpl-l1"]


def clone(db: Path, sources: list[str], total: int) -> None:
    """Copy the sources' checkpoints and writes under new thread ids until `total` threads exist."""
    conn = sqlite3.connect(db)
    with conn:
        have = conn.execute("SELECT COUNT(DISTINCT thread_id) FROM checkpoints").fetchone()[0]
        for i in range(total - have):
            src = sources[i % len(sources)]
            new = f"evolve-bench-{i:05d}-{src}"
            conn.execute("INSERT INTO checkpoints SELECT ?, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, "
                         "checkpoint, metadata FROM checkpoints WHERE thread_id = ?", (new, src))
            conn.execute("INSERT INTO writes SELECT ?, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, value "
                         "FROM writes WHERE thread_id = ?", (new, src))
    conn.close()


def timed(args: list[str], repeats: int, sources: dict[str, str | None]) -> dict[str, tuple[float, str]]:
    """Median wall of each source tree (None: this one) running `skillforge ARGS`, interleaved."""
    walls: dict[str, list[float]] = {k: [] for k in sources}
    outs: dict[str, str] = {}
    for _ in range(repeats):
        for label, src in sources.items():
            env = {**os.environ, "NO_COLOR": "1"} | ({"PYTHONPATH": src} if src else {})
            t0 = time.perf_counter()
            done = subprocess.run([str(EXE), *args], capture_output=True, text=True, timeout=900, env=env)
            walls[label].append(time.perf_counter() - t0)
            assert done.returncode == 0, (label, done.stderr)
            outs[label] = done.stdout
    return {k: (statistics.median(v), outs[k]) for k, v in walls.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--before", type=Path, default=None, help="an older source tree to compare with")
    args = ap.parse_args()
    sources: dict[str, str | None] = {"now": None}
    if args.before is not None:
        sources = {"before": str(args.before.resolve()), **sources}
    print(f"runs list benchmark: {os.cpu_count()} cores, python {sys.version.split()[0]}, {args.runs} runs, "
          f"load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        ws = new_workspace(Path(tmp) / "ws")
        sources_runs = templates(ws, new_workspace(Path(tmp) / "other"))
        db = ws.checkpoints_dir / GRAPHS_DB
        clone(db, sources_runs, args.runs)
        conn = sqlite3.connect(db)
        rows = conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0]
        conn.close()
        print(f"  {args.runs} runs, {rows} checkpoints, {db.stat().st_size / 1e6:.1f} MB")
        w = ["-w", str(ws.root)]
        for label, cmd in (("process start (--version)", ["--version"]),
                           ("runs list --json", ["runs", "list", "--json", *w]),
                           ("review list --json", ["review", "list", "--json", *w]),
                           ("runs list (table)", ["runs", "list", *w]),
                           ("runs show RUN", ["runs", "show", "tpl-pending", *w]),
                           ("review show RUN", ["review", "show", "tpl-pending", *w])):
            res = timed(cmd, args.repeats, sources)
            n = {k: len(json.loads(o)) for k, (_, o) in res.items()} if cmd[-3:-2] == ["--json"] else {}
            figures = ", ".join(f"{k} {wall:.2f} s" + (f" ({n[k]} rows)" if n else "") for k, (wall, _) in res.items())
            print(f"  {label}: {figures}")
        print(f"  load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
