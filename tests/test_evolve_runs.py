"""Evolve runs as a whole (issue 21, item 6): read without the graph (the same status as the graph's
own snapshot), one open run per skill across processes, `runs cancel`, `--resume` that refuses
options it would ignore, and what `--json` and `runs show` say about each candidate."""

from __future__ import annotations

import json
import re

import pytest

from cli_fork import ForkCLI
from conftest import flat
from evolve_fakes import QUOTE_ETA, SKILL, World, eta_patch, new_workspace, seed_failures
from skillforge.runners.evolve import Runner
from skillforge.runners.reader import RunReader
from skillforge.errors import RunOpen
from skillforge.state.llm import BudgetCaps


def _graph_status(runner: Runner, run_id: str) -> str:
    """The status as the graph's own snapshot tells it (next nodes and interrupts)."""
    snap = runner.graph.get_state(runner.config(run_id))
    kinds = [i.value.get("kind") for t in snap.tasks for i in t.interrupts if isinstance(i.value, dict)]
    if kinds:
        return "PENDING_REVIEW" if kinds[0] == "review" else "BUDGET"
    return "RUNNING" if snap.next else snap.values["status"].value


def test_the_reader_tells_every_status_as_the_graph_does(tmp_path, monkeypatch):
    ws = new_workspace(tmp_path / "ws")
    world = World(lambda r: [eta_patch(claimed=2)])
    seed_failures(ws, world.llm())
    runner = Runner(ws, llm_factory=world.llm)
    pending = runner.start(SKILL, run_id="r-pending")["run_id"]
    runner.answer_review(pending, "reject", comment="no")  # REJECTED
    runner.start(SKILL, run_id="r-budget", caps=BudgetCaps(max_calls=5))  # BUDGET before any call
    runner.cancel("r-budget")  # CANCELLED
    runner.start("hotel-booking", run_id="r-none")  # NO_FAILURES

    import skillforge.graphs.evolve as graphs

    def broken(state, runtime, **given):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(graphs, "validate", broken)
    with pytest.raises(OSError):
        Runner(ws, llm_factory=world.llm).start(SKILL, run_id="r-crashed")  # RUNNING: crashed in validate
    monkeypatch.undo()
    Runner(ws, llm_factory=world.llm).cancel("r-crashed")
    other = World(lambda r: [eta_patch(claimed=2, line=f"- {QUOTE_ETA}：报价时说明司机多久到。")])
    # another edit: the one rejected in r-pending is in the rejected-edit buffer and would be refused again
    Runner(ws, llm_factory=other.llm).start(SKILL, run_id="r-review")  # PENDING_REVIEW
    reader = RunReader(ws)
    rows = {r["run_id"]: r["status"] for r in reader.rows()}
    assert rows == {"r-pending": "REJECTED", "r-budget": "CANCELLED", "r-none": "NO_FAILURES",
                    "r-crashed": "CANCELLED", "r-review": "PENDING_REVIEW"}
    for run_id, status in rows.items():
        assert _graph_status(runner, run_id) == status, run_id
        assert reader.summary(run_id) == runner.summary(run_id)


def test_a_crashed_run_reads_as_running_and_resumes(tmp_path, monkeypatch):
    ws = new_workspace(tmp_path / "ws")
    world = World(lambda r: [eta_patch(claimed=2)])
    seed_failures(ws, world.llm())
    import skillforge.graphs.evolve as graphs

    def broken(state, runtime, **given):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(graphs, "decide", broken)
    with pytest.raises(OSError):
        Runner(ws, llm_factory=world.llm).start(SKILL, run_id="r-crashed")
    monkeypatch.undo()
    runner = Runner(ws, llm_factory=world.llm)
    assert RunReader(ws).summary("r-crashed")["status"] == "RUNNING" == _graph_status(runner, "r-crashed")
    with pytest.raises(RunOpen, match="evolve --resume r-crashed"):
        runner.start(SKILL)
    assert runner.resume("r-crashed")["status"] == "PENDING_REVIEW"


def test_a_second_run_of_a_skill_is_refused_while_one_is_open_until_it_is_closed(tmp_path, cli):
    ws = new_workspace(tmp_path / "ws")
    world = World(lambda r: [eta_patch(claimed=2)])
    seed_failures(ws, world.llm())
    first = Runner(ws, llm_factory=world.llm).start(SKILL)
    assert first["status"] == "PENDING_REVIEW"
    w = ["-w", str(ws.root)]
    env = {"SKILLFORGE_LLM_BASE_URL": "http://127.0.0.1:9/v1", "SKILLFORGE_LLM_MODEL": "m"}
    refused = cli.run(["evolve", SKILL, *w], env, ok=2)
    said = flat(refused.stderr)
    assert f"already has an open run {first['run_id']} (PENDING_REVIEW)" in said
    assert f"skillforge review approve|reject {first['run_id']}" in said and f"runs cancel {first['run_id']}" in said
    assert len(json.loads(cli.run(["runs", "list", "--json", *w]).stdout)) == 1  # nothing was started
    cancelled = cli.run(["runs", "cancel", first["run_id"], "--comment", "superseded", "--json", *w], ok=3)
    assert json.loads(cancelled.stdout)["status"] == "CANCELLED"
    assert "nothing to cancel" in cli.run(["runs", "cancel", first["run_id"], *w], ok=2).stderr
    assert "not waiting for a review (status CANCELLED)" in flat(cli.run(["review", "approve", first["run_id"], *w],
                                                                         ok=2).stderr)
    again = Runner(ws, llm_factory=world.llm).start(SKILL)
    assert again["status"] == "PENDING_REVIEW" and again["run_id"] != first["run_id"]


def test_two_evolve_processes_of_one_skill_at_once_end_with_one_open_run(tmp_path):
    from world_server import WorldServer

    ws = new_workspace(tmp_path / "ws")
    seed_failures(ws, World(lambda r: []).llm())
    w = ["-w", str(ws.root)]
    with WorldServer() as srv:
        env = {"SKILLFORGE_LLM_BASE_URL": srv.base_url, "SKILLFORGE_LLM_MODEL": "world",
               "SKILLFORGE_JUDGE_MODEL": "world-judge", "SKILLFORGE_LLM_MAX_RETRIES": "0"}
        servers = [ForkCLI(), ForkCLI()]
        for server in servers:
            server.send(["evolve", SKILL, "--json", "--max-rounds", "1", *w], env)
        done = [server.result() for server in servers]
        for server in servers:
            server.close()
    codes = sorted(d.returncode for d in done)
    assert codes == [0, 2], [(d.returncode, d.stderr[-300:]) for d in done]
    loser = next(d for d in done if d.returncode == 2)
    assert "is being evolved by process" in flat(loser.stderr) or "already has an open run" in flat(loser.stderr)
    assert [r["status"] for r in RunReader(ws).rows()] == ["PENDING_REVIEW"]


def test_resume_refuses_a_skill_and_options_it_would_ignore(tmp_path, cli):
    ws = new_workspace(tmp_path / "ws")
    world = World(lambda r: [eta_patch(claimed=2)])
    seed_failures(ws, world.llm())
    run_id = Runner(ws, llm_factory=world.llm).start(SKILL, caps=BudgetCaps(max_calls=5))["run_id"]  # BUDGET
    w = ["-w", str(ws.root)]
    env = {"SKILLFORGE_LLM_BASE_URL": "http://127.0.0.1:9/v1", "SKILLFORGE_LLM_MODEL": "m"}
    other = flat(cli.run(["evolve", "weather-query", "--resume", run_id, "--mode", "audit_only", *w], env, ok=2).stderr)
    assert "drop SKILL ('weather-query'; the run evolves 'taxi-hailing'), --mode" in other
    assert "drop --max-rounds" in flat(cli.run(["evolve", "--resume", run_id, "--max-rounds", "1", *w], env, ok=2).stderr)
    assert "drop --mode" in flat(cli.run(["evolve", "--resume", "batch-x", "--mode", "fix_only", *w], env, ok=2).stderr)
    assert RunReader(ws).summary(run_id)["status"] == "BUDGET"  # untouched


def test_json_and_runs_show_give_each_candidates_rationale_and_leaks_and_round_scores(tmp_path, cli):
    ws = new_workspace(tmp_path / "ws")
    leaky = eta_patch(claimed=2, line=f"- {QUOTE_ETA}：从球馆打车去中山公园要多少钱，车多久能到？（9号）")
    world = World(lambda r: [leaky, eta_patch(claimed=2)])
    seed_failures(ws, world.llm())
    out = Runner(ws, llm_factory=world.llm).start(SKILL)
    w = ["-w", str(ws.root)]
    data = json.loads(cli.run(["runs", "show", out["run_id"], "--json", *w]).stdout)
    by_id = {c["id"]: c for c in data["candidates"]}
    assert by_id["r1c1"]["verdict"] == "LEAK" and by_id["r1c1"]["leaks"] and by_id["r1c1"]["rationale"]
    assert by_id["r1c2"]["rationale"] == "answers must state the ETA" and by_id["r1c2"]["leaks"] == []
    assert data["base"]["version"] == "0.3.1"
    shown = cli.run(["runs", "show", out["run_id"], *w]).stdout
    assert "answers must state the ETA" in shown and "score 0.750 vs live 0.250" in shown
    assert not re.search(r"\d\.\d{4,}", shown), shown  # no raw floats


def test_a_copied_workspace_names_its_own_failure_report_not_the_originals(tmp_path):
    """A run's checkpoint records where its report was written; a copy of the workspace reads that
    report from its own runs/, not from the folder it was copied from (QA 40 F5)."""
    import shutil

    from skillforge.config import Workspace

    ws = new_workspace(tmp_path / "ws")
    world = World(lambda r: [eta_patch(claimed=2)])
    seed_failures(ws, world.llm())
    runner = Runner(ws, llm_factory=world.llm)
    run_id = runner.start(SKILL)["run_id"]
    done = runner.answer_review(run_id, "reject", comment="no")
    assert done["failure_report"] == str(ws.runs_dir / "failures" / f"{run_id}.md")
    shutil.copytree(ws.root, tmp_path / "copy")
    copy = Workspace.open(tmp_path / "copy")
    assert RunReader(copy).summary(run_id)["failure_report"] == str(copy.runs_dir / "failures" / f"{run_id}.md")
    (copy.runs_dir / "failures" / f"{run_id}.md").unlink()  # not in the copy: said as recorded, not made up
    assert RunReader(copy).summary(run_id)["failure_report"] == done["failure_report"]
