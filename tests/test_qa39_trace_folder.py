"""QA 39 G5: a folder named like a trace file (runs/traces/x.jsonl/) made `evolve` an internal error
(IsADirectoryError, exit 70): collect and the nonce check read every *.jsonl. It is no trace now."""

from __future__ import annotations

from evolve_fakes import SKILL, World, eta_patch, seed_failures, write_sets

from skillforge.evolution.harvest import trace_files
from skillforge.runners.evolve import Runner


def test_a_folder_named_like_a_trace_is_skipped(machine):
    ws = machine.ws
    write_sets(ws)
    world = World(lambda r: [eta_patch(claimed=2)])
    seed_failures(ws, world.llm())
    (ws.traces_dir / "dj.jsonl").mkdir()
    assert all(p.is_file() for p in trace_files(ws, 100)) and trace_files(ws, 100)
    out = Runner(ws, llm_factory=world.llm).start(SKILL, max_rounds=1)
    assert out["status"] == "PENDING_REVIEW", out
