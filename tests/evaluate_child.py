"""Child process for the crash test: evaluates with a SqliteSaver, SIGKILLs itself on the 3rd case."""

from __future__ import annotations

import os
import signal
import time
import sys
from pathlib import Path

import evaluate_fakes as fakes

from skillforge.graphs.checkpoint import sqlite_saver
from skillforge.graphs.evaluate import build_evaluate_graph
from skillforge.state.evaluate import SkillSide
from skillforge.state.evaluate_graph import EvalState


def main() -> None:
    folder, db = Path(sys.argv[1]), Path(sys.argv[2])
    judged: list[int] = []
    real = fakes.judge_reply

    def dying(messages):  # noqa: ANN001, ANN202
        """SIGKILL at the 7th judge call: with two cases at a time, at least two are finished.
        (With max_concurrency 1 the checkpoint writes of finished cases queue behind the running
        case in the same one-thread pool, so a kill loses them: keep concurrency >= 2.)"""
        judged.append(1)
        if len(judged) == 7:
            time.sleep(0.5)  # let the finished cases' tasks return and write
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
