"""The budget as a user meets it: `evolve` processes against a real OpenAI-compatible HTTP server on
127.0.0.1 that counts every request it receives and fails some with 500 (so the openai client
retries). A run is killed (SIGKILL) with one request in flight, resumed to its BUDGET pause, and
resumed again with a higher cap: the server never receives more requests than the cap in force,
and its count equals the ledger's paid count. And a Ctrl-C during a slow model call stops the run
(exit 130, nothing published) and leaves it resumable."""

from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest

from conftest import SKILLFORGE_EXE, cli_env, run_cli
from evolve_fakes import SKILL, World, examples_patch, new_workspace, seed_failures
from metered_world import MeteredWorld, env_for, wait_until
from skillforge.runners.evolve import Runner
from skillforge.evolution.validate import EVAL_CONCURRENCY
from skillforge.llm.ledger import RequestLedger
from skillforge.library.registry import SkillRegistry
from skillforge.library.store import Store

PROPOSE = "You improve agent skills"
"""How the proposer's patch request begins (evolution/propose.py SYSTEM): one request, nothing else in flight."""
EXECUTOR = "You are a helpful assistant"
"""How an executor request begins: in evolve, the first one is a case of the selection evaluation."""


def started(ws, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([str(SKILLFORGE_EXE), "evolve", SKILL, "--json", "--max-rounds", "1", *args,
                             "-w", str(ws.root)], env=cli_env(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def only_run(ws) -> str:
    runs = Runner(ws).run_ids()
    assert len(runs) == 1, runs
    return runs[0]


def test_requests_never_pass_the_cap_across_a_kill_a_pause_and_a_resume(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    seed_failures(ws, World(lambda r: []).llm())  # in process: the server sees only the evolve run
    first_cap, second_cap = 140, 400  # the round's estimate is 128; it needs ~146 requests + retries
    with MeteredWorld(World(lambda r: [examples_patch()]), fail_every=9, hold=PROPOSE) as srv:
        env = env_for(srv, retries=3)
        proc = started(ws, env, "--budget-calls", str(first_cap))
        try:
            assert srv.held.wait(120), "the run never asked the proposer"
            proc.send_signal(signal.SIGKILL)  # the proposer's request is the only one in flight
            proc.wait(timeout=30)
        finally:
            srv.release.set()
            if proc.poll() is None:
                proc.kill()
        run_id = only_run(ws)
        ledger = RequestLedger.of_workspace(ws.runs_dir)
        assert ledger.spend(run_id).calls == srv.hits <= first_cap

        paused = json.loads(run_cli(["evolve", "--resume", run_id, "--json", "-w", str(ws.root)], env, ok=4).stdout)
        assert paused["status"] == "BUDGET" and "call cap" in paused["pending"]["reason"], paused
        assert paused["budget"]["paid"] == paused["llm_calls"] == srv.hits == first_cap
        assert paused["budget"]["refused"] >= 1 and srv.failed >= 1  # retried 500s were counted as sent

        done = json.loads(run_cli(["evolve", "--resume", run_id, "--budget-calls", str(second_cap), "--json",
                                   "-w", str(ws.root)], env).stdout)
        assert done["status"] == "PUBLISHED", done
        assert done["budget"]["paid"] == srv.hits <= second_cap
        assert done["budget"]["cached"] >= 1  # what the paused node had been answered came from the cache
        assert done["budget"]["caps"]["max_calls"] == second_cap
        # the paused nodes ran again under the new cap, not the old one (were: rows refused under 140)
        assert done["budget"]["refused"] == paused["budget"]["refused"], (paused["budget"], done["budget"])


@pytest.mark.parametrize(("hold", "in_flight"), [(PROPOSE, 1), (EXECUTOR, EVAL_CONCURRENCY)],
                         ids=["proposer-in-main-thread", "executor-in-worker-threads"])
def test_ctrl_c_during_a_slow_model_call_stops_the_run_unpublished_and_resumable(tmp_path, hold, in_flight):
    """The proposer's call runs in the main thread: Ctrl-C lands in it. Executor calls run in an
    evaluation's worker threads while the main thread waits: the run sends nothing more, and ends
    when the requests in flight come back."""
    ws = new_workspace(tmp_path / "ws")
    seed_failures(ws, World(lambda r: []).llm())
    live = SkillRegistry.load(ws).get(SKILL).release.release_id
    with MeteredWorld(World(lambda r: [examples_patch()]), hold=hold) as srv:  # an L1 fix: it would publish
        env = env_for(srv, retries=0)
        proc = started(ws, env)
        try:
            assert srv.held.wait(120), "the run never sent the request to hold"
            assert wait_until(lambda: srv.waiting == in_flight), "the run's requests were not all held"
            sent = srv.hits
            proc.send_signal(signal.SIGINT)  # the held request is slow: it is still waiting
            time.sleep(1)
            srv.release.set()
            out, errors = proc.communicate(timeout=60)
        finally:
            srv.release.set()
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 130, (proc.returncode, out, errors)
        assert "interrupted" in errors and "Traceback" not in errors and "unusable" not in errors
        assert srv.hits == sent  # no request was sent after the Ctrl-C
        assert SkillRegistry.load(ws).get(SKILL).release.release_id == live and not Store(ws.db_path).preparing()
        run_id = only_run(ws)
        assert Runner(ws).summary(run_id)["status"] == "RUNNING"
        # the one line names how the open run goes on, with -w (not a bare "interrupted", QA 38 F8)
        said = " ".join(errors.split())
        assert f"the run stays open, go on with: skillforge evolve --resume {run_id} -w" in said, errors
        if hold == EXECUTOR:
            return  # resumed below for the other interruption
        done = json.loads(run_cli(["evolve", "--resume", run_id, "--json", "-w", str(ws.root)], env).stdout)
    assert done["status"] == "PUBLISHED", done
    assert SkillRegistry.load(ws).get(SKILL).release.release_id == done["release_id"] != live
    assert done["budget"]["paid"] == srv.hits  # the interrupted requests were counted too
