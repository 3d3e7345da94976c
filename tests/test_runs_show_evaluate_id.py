"""`runs show` given the id `evaluate` printed says it is an evaluate run and where its result is
(QA pass 16 M8: it said only "no evolve run"). An unknown id still says no evolve run."""

from __future__ import annotations

import json

from conftest import flat, run_cli
from evolve_fakes import SKILL, new_workspace
from metered_world import env_for
from test_budget_preflight import better_candidate
from world_server import WorldServer


def test_runs_show_of_an_evaluate_run_points_to_its_result(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    w = ["-w", str(ws.root)]
    cand = better_candidate(ws, tmp_path)
    with WorldServer() as srv:
        env = env_for(srv, retries=0)
        done = json.loads(run_cli(["evaluate", SKILL, "--candidate", cand, "--set", "repair", "--json", *w], env,
                                  ok=None).stdout)
    run_id = done["run_id"]
    said = flat(run_cli(["runs", "show", run_id, *w], ok=2).stderr)
    assert f"'{run_id}' is an evaluate run, not an evolve run" in said, said
    assert "evaluations.jsonl" in said and f"skillforge evaluate --rejudge {run_id}" in said
    other = flat(run_cli(["runs", "show", "evolve-nope-1", *w], ok=2).stderr)
    assert "no evolve run 'evolve-nope-1'" in other
