"""What `evolve` and `runs` tell a user about a run's budget and its lock, through the CLI against
the scripted world on a real HTTP server: a run paused at its budget says why (the estimate, or the
cap reached), what it paid and the command that goes on; the cap it shows is the one in force (the
last given, also on resume), the same in the summary, `runs show` and `runs show --json`, and a
later resume without a cap keeps it. A `runs cancel` of a run another process is driving is
refused at once, naming that process."""

from __future__ import annotations

import json
import subprocess
import time

from conftest import SKILLFORGE_EXE, cli_env, flat, run_cli
from evolve_fakes import SKILL, World, eta_patch, new_workspace, seed_failures
from metered_world import MeteredWorld, env_for
from skillforge.runners.evolve import Runner
from skillforge.llm.ledger import RequestLedger
from world_server import WorldServer

PROPOSE = "You improve agent skills"
"""How the proposer's patch request begins (evolution/propose.py SYSTEM)."""


def only_run(ws) -> str:
    runs = Runner(ws).run_ids()
    assert len(runs) == 1, runs
    return runs[0]


def shown(ws, run_id: str, env: dict[str, str]) -> tuple[str, dict[str, object]]:
    """`runs show RUN` as text (wrapping undone) and as --json."""
    w = ["-w", str(ws.root)]
    text = flat(run_cli(["runs", "show", run_id, *w], env, ok=None).stdout)
    return text, json.loads(run_cli(["runs", "show", run_id, "--json", *w], env, ok=None).stdout)


def test_a_cap_below_the_estimate_says_the_estimate_and_the_command_and_a_new_cap_is_the_one_shown(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    seed_failures(ws, World(lambda r: []).llm())
    w = ["-w", str(ws.root)]
    with WorldServer() as srv:
        env = env_for(srv, retries=0)
        first = flat(run_cli(["evolve", SKILL, "--budget-calls", "5", *w], env, ok=4).stdout)
        run_id = only_run(ws)
        _, data = shown(ws, run_id, env)
        need = data["pending"]["estimate"]["calls"]  # type: ignore[index]
        assert first.startswith("BUDGET") and "requests: 0 paid (cap 5)" in first and srv.hits == 0
        assert f"paused: estimate above budget: needs about {need} calls (" in first and "0 paid, cap 5" in first
        assert f"next: skillforge evolve --resume {run_id} --budget-calls {need}" in first

        again = flat(run_cli(["evolve", "--resume", run_id, "--budget-calls", "60", *w], env, ok=4).stdout)
        assert "requests: 0 paid (cap 60)" in again, again  # was: (cap 5), the first cap
        assert f"needs about {need} calls" in again and "0 paid, cap 60" in again
        assert f"next: skillforge evolve --resume {run_id} --budget-calls {need}" in again
        text, data = shown(ws, run_id, env)
        assert "requests: 0 paid (cap 60)" in text and f"--budget-calls {need}" in text
        assert data["budget"]["caps"]["max_calls"] == 60 and data["status"] == "BUDGET"  # type: ignore[index]
        assert data["next"] == f"skillforge evolve --resume {run_id} --budget-calls {need}"
        assert "cap 60" in data["pending"]["reason"]  # type: ignore[index]

        kept = flat(run_cli(["evolve", "--resume", run_id, *w], env, ok=4).stdout)  # no cap given: the last one
        assert "requests: 0 paid (cap 60)" in kept and "0 paid, cap 60" in kept and srv.hits == 0


def test_a_cap_raised_on_resume_is_the_cap_shown_never_below_what_was_paid(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    seed_failures(ws, World(lambda r: []).llm())
    w = ["-w", str(ws.root)]
    with WorldServer() as srv:
        env = env_for(srv, retries=0)
        first = flat(run_cli(["evolve", SKILL, "--budget-calls", "130", *w], env, ok=4).stdout)
        run_id = only_run(ws)
        assert "requests: 130 paid (cap 130)" in first and srv.hits == 130, first
        assert "paused: " in first and "call cap reached: 130 of 130" in first
        assert f"next: skillforge evolve --resume {run_id} --budget-calls N -w " in first  # pasteable elsewhere
        assert " (N: more than the 130 paid" in first

        again = flat(run_cli(["evolve", "--resume", run_id, "--budget-calls", "140", *w], env, ok=4).stdout)
        assert "requests: 140 paid (cap 140)" in again and srv.hits == 140, again  # was: 140 paid (cap 130)
        assert "call cap reached: 140 of 140" in again and "more than the 140 paid" in again
        text, data = shown(ws, run_id, env)
        assert "requests: 140 paid (cap 140)" in text
        assert data["budget"]["caps"]["max_calls"] == 140 and data["budget"]["paid"] == 140  # type: ignore[index]
        assert RequestLedger.of_workspace(ws.runs_dir).caps(run_id).max_calls == 140  # type: ignore[union-attr]

        done = json.loads(run_cli(["evolve", "--resume", run_id, "--budget-calls", "400", "--json", *w], env).stdout)
    assert done["status"] == "PENDING_REVIEW" and done["next"] is None and done["budget"]["caps"]["max_calls"] == 400
    assert done["budget"]["paid"] == srv.hits <= 400


def test_runs_cancel_of_a_run_another_process_drives_is_refused_at_once_naming_it(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    seed_failures(ws, World(lambda r: []).llm())
    w = ["-w", str(ws.root)]
    with MeteredWorld(World(lambda r: [eta_patch(claimed=2)]), hold=PROPOSE) as srv:
        env = env_for(srv, retries=0)
        proc = subprocess.Popen([str(SKILLFORGE_EXE), "evolve", SKILL, "--json", *w], env=cli_env(env),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert srv.held.wait(120), "the run never asked the proposer"
            run_id = only_run(ws)
            began = time.monotonic()
            refused = run_cli(["runs", "cancel", run_id, *w], env, ok=2)  # was: silent, blocked until the run ended
            took = time.monotonic() - began
            said = flat(refused.stderr)
            assert took < 15, took
            assert f"is being evolved by process {proc.pid} (run {run_id}," in said, said
            assert f"skillforge runs cancel {run_id} again" in said and not refused.stdout
        finally:
            srv.release.set()
            out, _ = proc.communicate(timeout=180)
    assert json.loads(out)["status"] == "PENDING_REVIEW"  # the refusal left the run alone
    cancelled = json.loads(run_cli(["runs", "cancel", run_id, "--json", *w], ok=3).stdout)
    assert cancelled["status"] == "CANCELLED"


def test_the_next_command_asks_for_what_the_estimate_needs_after_what_was_paid():
    from skillforge.rules.evolve_budget import evolve_next
    from skillforge.state.llm import BudgetCaps

    est = {"calls": 128, "tokens": 262000}
    assert evolve_next("r", BudgetCaps(max_calls=60), est, 10, 0) == "skillforge evolve --resume r --budget-calls 138"
    assert evolve_next("r", BudgetCaps(max_calls=500, max_tokens=1000), est, 10, 300) == \
        "skillforge evolve --resume r --budget-tokens 262300"
    assert evolve_next("r", BudgetCaps(max_calls=5, max_tokens=1000), est, 0, 0) == \
        "skillforge evolve --resume r --budget-calls 128 --budget-tokens 262000"
    assert evolve_next("r", BudgetCaps(max_calls=140), None, 140, 9) == "skillforge evolve --resume r --budget-calls N"
    assert evolve_next("r", BudgetCaps(max_tokens=900), None, 12, 850) == "skillforge evolve --resume r --budget-tokens N"


def test_a_token_caps_hint_names_tokens_not_requests(capsys):
    """QA 38 F3: a run paused at its token cap said `--budget-tokens N (N: more than the 126 paid ...)`:
    126 was the request count; following it literally paused again."""
    from skillforge.cli.evolve import show_summary

    caps = {"max_calls": None, "max_tokens": 30000, "max_cost_usd": None}
    budget = {"paid": 126, "cached": 0, "refused": 1, "tokens": 1440, "reserved_tokens": 66147, "cost_usd": 0.0,
              "caps": caps}
    show_summary({"run_id": "r", "skill": "s", "status": "BUDGET", "rounds": 1, "budget": budget, "pending": None,
                  "next": "skillforge evolve --resume r --budget-tokens N", "candidates": []}, as_json=False)
    said = " ".join(capsys.readouterr().out.split())
    assert "--budget-tokens N" in said and "(N: more than the 1440 tokens spent + 66147 reserved" in said, said
    assert "126 paid" not in said.split("(N:")[1]  # (a workspace given with -w is pasted into the command)
