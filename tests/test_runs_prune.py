"""`skillforge runs prune` on a real workspace (git, SQLite, the SqliteSaver checkpointer, the
request ledger and the response cache): an evolve run that ended loses all but its last checkpoint
and its request rows, an evaluation with its verdict loses its thread, and a run paused at review
keeps everything and is still approved from the CLI and published. A prune killed mid-way leaves a
working workspace and a second prune finishes."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import time
from contextlib import closing

from conftest import SKILLFORGE_EXE, cli_env, run_cli
from evolve_fakes import QUOTE_ETA, SKILL, World, eta_patch, examples_patch, new_workspace, seed_failures

from skillforge.graphs.evaluate import build_evaluate_graph
from skillforge.library.registry import SkillRegistry
from skillforge.llm.cache import CACHE_FILE, LLMCache
from skillforge.llm.ledger import RunBudget
from skillforge.runners.checkpoint import sqlite_saver
from skillforge.runners.evolve import Runner
from skillforge.runners.prune import prune_runs
from skillforge.runners.reader import RunReader
from skillforge.state.evaluate import SkillSide
from skillforge.state.evaluate_graph import EvalState


def rows(path, sql: str, *args: object) -> int:
    with closing(sqlite3.connect(path)) as conn:
        return int(conn.execute(sql, args).fetchall()[0][0])


def cached_world(ws, world: World):  # noqa: ANN201 - an llm_factory writing the workspace's cache
    return lambda budget: world.llm(budget, cache=LLMCache(ws.runs_dir / CACHE_FILE))


def evaluate_with_checkpoints(ws, world: World, run_id: str) -> None:
    """The live release against itself on `repair`, checkpointed in checkpoints/evaluate.sqlite (as
    `skillforge evaluate` does), counted in the ledger under `run_id`."""
    from skillforge.context import eval_context

    reg = SkillRegistry.load(ws)
    rel = reg.get(SKILL).release
    side = SkillSide(text=reg.repo.read(rel.commit_hash, f"{rel.skill_path}/SKILL.md").decode(), label="live",
                     release_id=rel.release_id)
    saver = sqlite_saver(ws.checkpoints_dir / "evaluate.sqlite")
    runner = Runner(ws)
    llm = world.llm(RunBudget(runner.ledger, run_id), cache=LLMCache(ws.runs_dir / CACHE_FILE))
    build_evaluate_graph(checkpointer=saver).invoke(
        EvalState(run_id=run_id, skill=SKILL, eval_set="repair", baseline=side, candidate=side),
        {"configurable": {"thread_id": run_id}, "max_concurrency": 4}, context=eval_context(ws, llm),
        durability="sync")
    saver.conn.close()


def test_prune_keeps_the_paused_run_whole_and_it_still_publishes(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    w = ["-w", str(ws.root)]
    graphs, ledger = ws.checkpoints_dir / "graphs.sqlite", ws.runs_dir / "llm_ledger.db"
    ended_world = World(lambda r: [eta_patch(claimed=2)])
    seed_failures(ws, ended_world.llm())
    runner = Runner(ws, llm_factory=cached_world(ws, ended_world))
    ended = runner.answer_review(runner.start(SKILL)["run_id"], "reject", comment="not this one")
    assert ended["status"] == "REJECTED", ended
    evaluate_with_checkpoints(ws, ended_world, "eval-done")
    paused_world = World(lambda r: [eta_patch(claimed=2, line=f"- {QUOTE_ETA}：告诉用户司机还要几分钟到。")])
    paused = Runner(ws, llm_factory=cached_world(ws, paused_world)).start(SKILL)
    assert paused["status"] == "PENDING_REVIEW", paused
    e, p = ended["run_id"], paused["run_id"]
    count = "SELECT count(*) FROM checkpoints WHERE thread_id = ?"
    before = {rid: rows(graphs, count, rid) for rid in (e, p)}
    paused_writes = rows(graphs, "SELECT count(*) FROM writes WHERE thread_id = ?", p)
    assert before[e] > 1 and before[p] > 1 and rows(ws.checkpoints_dir / "evaluate.sqlite", count, "eval-done") > 1
    shown_before = json.loads(json.dumps(RunReader(ws).summary(e), default=str))

    dry = json.loads(run_cli(["runs", "prune", "--older-than", "0", "--dry-run", "--json", *w]).stdout)
    assert dry["evolve_runs"] == [e] and dry["evaluate_runs"] == ["eval-done"] and dry["kept"] == {"open": [p]}
    assert dry["checkpoint_rows"] > 0 and dry["checkpoint_bytes"] > 10_000 and dry["ledger_rows"] > 0
    assert rows(graphs, count, e) == before[e]  # a dry run changes nothing
    assert prune_runs(ws, 30, dry_run=True).evolve_runs == []

    done = json.loads(run_cli(["runs", "prune", "--older-than", "0", "--json", *w]).stdout)
    assert done["evolve_runs"] == [e] and done["ledger_rows"] == dry["ledger_rows"] and done["busy"] == []
    assert all(f["after"] <= f["before"] for f in done["files"].values())
    assert rows(graphs, count, e) == 1 and rows(graphs, count, p) == before[p]
    assert rows(graphs, "SELECT count(*) FROM writes WHERE thread_id = ?", p) == paused_writes
    assert rows(ws.checkpoints_dir / "evaluate.sqlite", count, "eval-done") == 0
    assert rows(ledger, "SELECT count(*) FROM requests WHERE run_id = ?", e) == 0
    assert rows(ledger, "SELECT count(*) FROM requests WHERE run_id = ?", p) > 0
    # the paused run is open: the cache answers written since it began stay, for its resume
    assert rows(ws.runs_dir / CACHE_FILE, "SELECT count(*) FROM responses") > 0

    shown = json.loads(run_cli(["runs", "show", e, "--json", *w]).stdout)
    assert shown == shown_before  # its summary, spend included (the ledger's totals stay)
    listed = {r["run_id"]: r["status"] for r in RunReader(ws).rows()}
    assert listed == {e: "REJECTED", p: "PENDING_REVIEW"}
    approved = json.loads(run_cli(["review", "approve", p, "--comment", "ok", "--json", *w]).stdout)
    assert approved["status"] == "PUBLISHED" and approved["release_id"]
    assert SkillRegistry.load(ws).get(SKILL).release.release_id == approved["release_id"]
    again = prune_runs(ws, 0)
    assert again.evolve_runs == [p] and again.plan.kept == {}


def test_a_prune_killed_mid_way_leaves_a_working_workspace_and_a_second_one_finishes(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    w = ["-w", str(ws.root)]
    world = World(lambda r: [examples_patch()])
    seed_failures(ws, world.llm())
    ended = Runner(ws, llm_factory=cached_world(ws, world)).start(SKILL)
    evaluate_with_checkpoints(ws, world, "eval-done")
    graphs, evals = ws.checkpoints_dir / "graphs.sqlite", ws.checkpoints_dir / "evaluate.sqlite"
    count = "SELECT count(*) FROM checkpoints WHERE thread_id = ?"
    # another process holds the evaluation store's write lock: the prune compacts the evolve run,
    # then waits for that lock; it is killed there
    holder = sqlite3.connect(evals, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    proc = subprocess.Popen([str(SKILLFORGE_EXE), "runs", "prune", "--older-than", "0", "--json", *w],
                            env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while rows(graphs, count, ended["run_id"]) > 1 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    holder.execute("ROLLBACK")
    holder.close()
    assert rows(graphs, count, ended["run_id"]) == 1 and rows(evals, count, "eval-done") > 1
    shown = json.loads(run_cli(["runs", "show", ended["run_id"], "--json", *w]).stdout)
    assert shown["status"] == "PUBLISHED"
    done = json.loads(run_cli(["runs", "prune", "--older-than", "0", "--json", *w]).stdout)
    assert done["evolve_runs"] == [] and done["evaluate_runs"] == ["eval-done"] and done["busy"] == []
    assert rows(evals, count, "eval-done") == 0
    assert rows(ws.runs_dir / "llm_ledger.db", "SELECT count(*) FROM requests WHERE run_id = ?", ended["run_id"]) == 0
    with closing(sqlite3.connect(graphs)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA freelist_count").fetchall()[0][0] == 0  # the space was given back


def test_bad_ages_are_refused_and_an_empty_workspace_prunes_nothing(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    w = ["-w", str(ws.root)]
    assert "--older-than" in run_cli(["runs", "prune", "--older-than", "-1", *w], ok=2).stderr
    out = json.loads(run_cli(["runs", "prune", "--older-than", "0", "--json", *w]).stdout)
    assert out["evolve_runs"] == out["evaluate_runs"] == out["ledger_runs"] == [] and out["kept"] == {}
    assert not (ws.checkpoints_dir / "graphs.sqlite").exists()  # nothing is created by a prune
