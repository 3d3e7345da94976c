"""A damaged checkpoint file (issue 21: corrupt pages in checkpoints/graphs.sqlite, "database disk
image is malformed", were an internal error, exit 70). Every command that opens the checkpointer
names the file and what to do, exits 2, and leaves the file as it was; moving it aside, as the
message says, gives a working workspace back with its releases."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from conftest import flat, run_cli

from skillforge.runners.evolve import GRAPHS_DB, Runner
from skillforge.runners.checkpoint import CheckpointCorrupt, sqlite_saver
from skillforge.library.registry import SkillRegistry

MODELS = {"SKILLFORGE_LLM_MODEL": "m", "SKILLFORGE_LLM_BASE_URL": "http://127.0.0.1:9/v1"}
"""Configured but never called: every command below stops at the checkpoint file."""


def damaged_store(path: Path, *, header: bool = False) -> bytes:
    """A real checkpoint file (SqliteSaver's tables, 40 rows) whose pages after the first (or, with
    `header`, all of them) are overwritten with garbage; returns its bytes."""
    saver = sqlite_saver(path)
    with saver.cursor() as cur:
        cur.executemany("INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, checkpoint) VALUES (?, '', ?, ?)",
                        [(f"run-{i}", f"c{i}", b"x" * 500) for i in range(40)])
    saver.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    saver.conn.close()
    data = bytearray(path.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    for i in range(0 if header else page, len(data)):
        data[i] = (i * 7 + 3) & 0xFF
    path.write_bytes(bytes(data))
    return bytes(data)


@pytest.mark.parametrize("header", [False, True], ids=["malformed", "not-a-database"])
def test_every_runner_entry_names_a_damaged_file(machine, header):
    """What evolve (start, --resume), runs (list, show) and review (list, show, approve, reject) call."""
    from skillforge.state.evolve import ReviewAction

    ws = machine.ws
    path = ws.checkpoints_dir / GRAPHS_DB
    data = damaged_store(path, header=header)
    calls = [lambda r: r.run_ids(), lambda r: r.summary("run-1"), lambda r: r.resume("run-1"),
             lambda r: r.answer_review("run-1", ReviewAction.APPROVE), lambda r: r.start("taxi-hailing")]
    for call in calls:
        with pytest.raises(CheckpointCorrupt) as e:
            call(Runner(ws))
        assert str(e.value).startswith(f"{path} is damaged (") and "Move it aside" in str(e.value), e.value
        assert "releases and their history" in str(e.value)
    assert path.read_bytes() == data  # nothing "repaired" behind the user's back


def test_evaluate_resume_names_a_damaged_file(machine):
    from skillforge.runners.evaluate import CHECKPOINT_FILE, _saver
    from skillforge.graphs.evaluate import build_evaluate_graph

    path = machine.ws.checkpoints_dir / CHECKPOINT_FILE
    damaged_store(path)
    with pytest.raises(CheckpointCorrupt, match="is damaged"):
        build_evaluate_graph(checkpointer=_saver(machine.ws)).get_state({"configurable": {"thread_id": "run-1"}})


def test_the_cli_exits_2_with_the_message_and_moving_the_file_aside_works(machine):
    """Two real commands (the store's listing, and evaluate's own file); the Runner entries above
    share their code paths."""
    ws = machine.ws
    root = str(ws.root)
    graphs, evaluate = ws.checkpoints_dir / GRAPHS_DB, ws.checkpoints_dir / "evaluate.sqlite"
    damaged_store(graphs)
    damaged_store(evaluate)
    live = SkillRegistry.load(ws).get("taxi-hailing").release.release_id
    for args, file in ((["runs", "list"], graphs), (["evaluate", "--resume", "run-1"], evaluate)):
        proc = run_cli([*args, "-w", root], MODELS, ok=2)  # never a traceback (run_cli checks)
        said = flat(proc.stderr)
        assert f"{file} is damaged (database disk image is malformed)" in said, (args, proc.stderr)
        assert "Move it aside" in said and "releases and their history" in said, said
    graphs.rename(graphs.with_name(graphs.name + ".damaged"))  # what the message says to do
    assert run_cli(["runs", "list", "--json", "-w", root], MODELS).stdout.strip() == "[]"
    assert SkillRegistry.load(ws).get("taxi-hailing").release.release_id == live  # the releases were never in it


def test_a_lock_is_not_called_damage(machine):
    """Only SQLite's own corruption verdicts are CheckpointCorrupt: a busy file stays what it is."""
    ws = machine.ws
    path = ws.checkpoints_dir / GRAPHS_DB
    saver = sqlite_saver(path)
    holder = sqlite3.connect(path, timeout=0)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        saver.conn.execute("PRAGMA busy_timeout = 0")
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            with saver.cursor() as cur:
                cur.execute("SELECT count(*) FROM checkpoints").fetchall()
    finally:
        holder.rollback()
        holder.close()
