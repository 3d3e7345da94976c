"""Child process of the Postgres batch test: one worker of a shared batch, with the scripted world
(SKILLFORGE_CHECKPOINT_URL names the database). With KILL_AT=<node>
and KILL_ON_RUN=<n>, the process SIGKILLs itself right after that node's work in its n-th run, before
LangGraph writes the node's checkpoint, and only once every other row of the batch is DONE: the
other worker has then nothing left to claim and must wait for this run rather than leave.

    python evolve_worker_child.py WORKSPACE BATCH_ID
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
from evolve_fakes import World, examples_patch  # noqa: E402

def wait_until_only_mine_is_open(batch_id: str) -> None:
    import time

    import psycopg

    with psycopg.connect(os.environ["SKILLFORGE_CHECKPOINT_URL"], autocommit=True) as conn:
        for _ in range(1200):
            n = conn.execute("SELECT count(*) FROM skillforge_batches.claims WHERE batch_id = %s AND status <> 'DONE'",
                             (batch_id,)).fetchone()
            if n is not None and n[0] <= 1:
                return
            time.sleep(0.1)


KILL_AT, KILL_ON_RUN = os.environ.get("KILL_AT", ""), int(os.environ.get("KILL_ON_RUN", "1"))
nodes = evolve_nodes if hasattr(evolve_nodes, KILL_AT or "-") else outcome_nodes
if KILL_AT:
    real = getattr(nodes, KILL_AT)
    seen = [0]

    def killed_after(state, runtime, **given):  # noqa: ANN001, ANN003, ANN201 - a node's signature
        out = real(state, runtime, **given)
        seen[0] += 1
        if seen[0] == KILL_ON_RUN:
            wait_until_only_mine_is_open(sys.argv[2])
            os.kill(os.getpid(), signal.SIGKILL)
        return out
    setattr(nodes, KILL_AT, killed_after)

from skillforge.runners.batch import work_batch  # noqa: E402
from skillforge.runners.evolve import Runner  # noqa: E402
from skillforge.config import Workspace  # noqa: E402
from skillforge.runners.checkpoint import checkpoint_url  # noqa: E402
from skillforge.llm.cache import CACHE_FILE, LLMCache  # noqa: E402


def main() -> None:
    import logging

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    root, batch_id = sys.argv[1:3]
    ws = Workspace.open(root)
    world = World(lambda r: [examples_patch()])
    # both workers share the workspace's one LLM cache file, as two `evolve --all --worker` would
    cache = LLMCache(ws.runs_dir / CACHE_FILE)
    runner = Runner(ws, llm_factory=lambda ledger: world.llm(ledger, cache))
    url = checkpoint_url()
    assert url is not None
    def done(res: dict[str, object]) -> None:  # one line per finished run, as it finishes
        print(json.dumps({k: res.get(k) for k in ("skill", "run_id", "status", "worker", "attempt", "message")}),
              flush=True)
    work_batch(runner, url, batch_id, max_rounds=1, on_done=done)


if __name__ == "__main__":
    main()
