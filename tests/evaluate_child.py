"""Child process for the crash test: evaluates with a SqliteSaver and SIGKILLs itself at the 7th
judge call, once the checkpoint holds the writes of at least MIN_SAVED finished cases."""

from __future__ import annotations

import os
import signal
import sqlite3
import sys
import time
from pathlib import Path

import evaluate_fakes as fakes

from skillforge.runners.checkpoint import sqlite_saver
from skillforge.graphs.evaluate import build_evaluate_graph
from skillforge.state.evaluate import SkillSide
from skillforge.state.evaluate_graph import EvalState


MIN_SAVED = 2
SAVED_WAIT_S = 60.0  # only if the writes never come; the parent then sees fewer than MIN_SAVED


def saved_cases(db: Path) -> int:
    """How many tasks of the running superstep (the fan-out of run_case) have saved their writes."""
    conn = sqlite3.connect(db, timeout=5)
    try:
        return conn.execute("SELECT COUNT(DISTINCT task_id) FROM writes WHERE checkpoint_id = "
                            "(SELECT MAX(checkpoint_id) FROM checkpoints)").fetchone()[0]
    except sqlite3.OperationalError:  # the tables are not there yet
        return 0
    finally:
        conn.close()


def wait_until_saved(db: Path, count: int) -> None:
    """Block this judge call until `count` finished cases are in the checkpoint (polling the file
    the parent reads), instead of sleeping a guessed time."""
    deadline = time.monotonic() + SAVED_WAIT_S
    while saved_cases(db) < count and time.monotonic() < deadline:
        time.sleep(0.02)


def main() -> None:
    folder, db = Path(sys.argv[1]), Path(sys.argv[2])
    judged: list[int] = []
    real = fakes.judge_reply

    def dying(messages):  # noqa: ANN001, ANN202
        """SIGKILL at the 7th judge call (two per case), once MIN_SAVED finished cases are saved.
        (With max_concurrency 1 the checkpoint writes of finished cases queue behind the running
        case in the same one-thread pool and never come: keep concurrency >= 2.)"""
        judged.append(1)
        if len(judged) == 7:
            wait_until_saved(db, MIN_SAVED)
            os.kill(os.getpid(), signal.SIGKILL)
        return real(messages)

    fakes.judge_reply = dying
    llm = fakes.fake_llm()[0]
    ctx = fakes.context(llm, fakes.make_set(folder, 6))
    graph = build_evaluate_graph(checkpointer=sqlite_saver(db))
    state = EvalState(run_id="crash-run", skill="taxi-hailing", eval_set="t",
                      baseline=SkillSide(text=fakes.skill_text(), release_id="r-old"),
                      candidate=SkillSide(text=fakes.skill_text(fakes.BETTER), release_id="r-new"))
    graph.invoke(state, {"configurable": {"thread_id": "crash-run"}, "max_concurrency": 2}, context=ctx,
                 durability="sync")


if __name__ == "__main__":
    main()
