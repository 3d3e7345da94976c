"""Child process of the kill -9 tests: start or resume an evolve run with the scripted world and the
workspace's LLM cache. With KILL_AT=<node>, the process SIGKILLs itself right after that node's
work and before LangGraph writes its checkpoint: the worst moment for durability.

    python evolve_child.py WORKSPACE start|resume|approve RUN_ID l1|l2

or as a fork server (test_evolve_durability's `EvolveForks`): the imports are paid once, and each
job is a fresh forked process that has run nothing before it, armed with its own KILL_AT, ending
with its own exit status or its SIGKILL:

    python evolve_child.py --serve     # tests/forkserve.py's protocol; a job: {"argv": [...], "kill_at": "node"}
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import NoReturn

sys.path.insert(0, str(Path(__file__).resolve().parent))

import skillforge.nodes.evolve as evolve_nodes  # noqa: E402  (patched before the graph is built)
import skillforge.nodes.outcome as outcome_nodes  # noqa: E402  (review, publish, suggest)
from evolve_fakes import SKILL, World, eta_patch, examples_patch  # noqa: E402
from forkserve import Job, run_as_script, serve  # noqa: E402


def arm(kill_at: str) -> None:
    """SIGKILL this process right after node `kill_at` returns (before its checkpoint is written).
    The graph is built per Runner from skillforge.graphs.evolve's names, so those are patched too
    when that module is already loaded (in the fork server)."""
    if not kill_at:
        return
    nodes = evolve_nodes if hasattr(evolve_nodes, kill_at) else outcome_nodes
    real = getattr(nodes, kill_at)

    def killed_after(state, runtime, **given):  # noqa: ANN001, ANN003, ANN201 - a node's signature (validate
        real(state, runtime, **given)            # and decide are also given the subgraphs)
        os.kill(os.getpid(), signal.SIGKILL)
    setattr(nodes, kill_at, killed_after)
    graphs = sys.modules.get("skillforge.graphs.evolve")
    if graphs is not None and getattr(graphs, kill_at, None) is real:
        setattr(graphs, kill_at, killed_after)


arm(os.environ.get("KILL_AT", ""))

from skillforge.runners.evolve import Runner  # noqa: E402
from skillforge.config import Workspace  # noqa: E402
from skillforge.llm.cache import CACHE_FILE, LLMCache  # noqa: E402


def main(argv: list[str]) -> None:
    root, action, run_id, scenario = argv[:4]
    ws = Workspace.open(root)
    world = World(lambda r: [examples_patch()] if scenario == "l1" else [eta_patch(claimed=2)],
                  call_log=ws.root / "model-calls.log")
    cache = LLMCache(ws.runs_dir / CACHE_FILE)
    runner = Runner(ws, llm_factory=lambda ledger: world.llm(ledger, cache))
    if action == "start":
        out = runner.start(SKILL, run_id=run_id)
    elif action == "approve":
        out = runner.answer_review(run_id, "approve", comment="ok")
    else:
        out = runner.resume(run_id)
    print(json.dumps(out, default=str))


def job(job: Job) -> NoReturn:
    """In the fork (stdin, stdout and stderr already set): arm, run one job, end as the script would."""
    arm(str(job.get("kill_at") or ""))
    run_as_script(lambda: main([str(a) for a in job["argv"]]))  # type: ignore[union-attr]


def serve_jobs() -> None:
    import skillforge.graphs.evolve  # noqa: F401  (LangGraph and the model layers: loaded before any fork)

    serve(job)


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve_jobs()
    else:
        main(sys.argv[1:5])
