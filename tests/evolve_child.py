"""Child process of the kill -9 tests: start or resume an evolve run with the scripted world and the
workspace's LLM cache. With KILL_AT=<node>, the process SIGKILLs itself right after that node's
work and before LangGraph writes its checkpoint: the worst moment for durability.

    python evolve_child.py WORKSPACE start|resume RUN_ID l1|l2 [approve]
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import skillforge.nodes.evolve as evolve_nodes  # noqa: E402  (patched before the graph is built)
import skillforge.nodes.outcome as outcome_nodes  # noqa: E402  (review, publish, suggest)
from evolve_fakes import SKILL, World, eta_patch, examples_patch  # noqa: E402

KILL_AT = os.environ.get("KILL_AT", "")
nodes = evolve_nodes if hasattr(evolve_nodes, KILL_AT or "-") else outcome_nodes
if KILL_AT:
    real = getattr(nodes, KILL_AT)

    def killed_after(state, runtime, **given):  # noqa: ANN001, ANN003, ANN201 - a node's signature (validate
        real(state, runtime, **given)            # and decide are also given the subgraphs)
        os.kill(os.getpid(), signal.SIGKILL)
    setattr(nodes, KILL_AT, killed_after)

from skillforge.runners.evolve import Runner  # noqa: E402
from skillforge.config import Workspace  # noqa: E402
from skillforge.llm.cache import CACHE_FILE, LLMCache  # noqa: E402


def main() -> None:
    root, action, run_id, scenario = sys.argv[1:5]
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


if __name__ == "__main__":
    main()
