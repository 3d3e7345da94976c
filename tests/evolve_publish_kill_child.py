"""Child of test_publish_kills: start an L1 evolve run of the scripted world (with the workspace's
LLM cache) that SIGKILLs itself at one publish boundary (release_worker.die_at).

    python evolve_publish_kill_child.py WORKSPACE RUN_ID POINT
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from evolve_fakes import SKILL, World, examples_patch  # noqa: E402
from release_worker import die_at  # noqa: E402

from skillforge.runners.evolve import Runner  # noqa: E402
from skillforge.config import Workspace  # noqa: E402
from skillforge.llm.cache import CACHE_FILE, LLMCache  # noqa: E402


def main() -> None:
    root, run_id, point = sys.argv[1:4]
    ws = Workspace.open(root)
    cache = LLMCache(ws.runs_dir / CACHE_FILE)
    world = World(lambda r: [examples_patch()])
    die_at(point)
    Runner(ws, llm_factory=lambda ledger: world.llm(ledger, cache)).start(SKILL, run_id=run_id)
    sys.exit(3)  # never reached `point`


if __name__ == "__main__":
    main()
