"""Budget checks made before the first model call, and `evaluate`'s budget: the cap options are
bounded to what a checkpoint can hold; `evaluate` prints its estimate first, refuses a run the cap
cannot cover, stops at its cap mid-run as a BUDGET result and resumes; `evolve` refuses a skill
without holdout cases before it asks any model."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import flat, run_cli
from evolve_fakes import INSTRUCTION_ANCHOR, QUOTE_ETA, SKILL, World, eta_patch, new_workspace, seed_failures, \
    write_sets
from skillforge.cli.budget import budget_caps
from skillforge.runners.evolve import Runner
from skillforge.errors import BadArgument
from skillforge.evolution.preflight import MissingCases
from skillforge.llm.ledger import RequestLedger
from skillforge.library.registry import SkillRegistry
from skillforge.state.llm import BudgetCaps
from metered_world import MeteredWorld, env_for
from world_server import WorldServer

HUGE = str(2**64)  # one past what msgpack (a checkpoint) can hold


def better_candidate(ws, tmp_path: Path) -> str:
    """The live taxi-hailing with the instruction the world's executor follows (the sides differ)."""
    folder = tmp_path / "cand" / SKILL
    folder.mkdir(parents=True)
    live = (ws.skills_dir / SKILL / "SKILL.md").read_text(encoding="utf-8")
    (folder / "SKILL.md").write_text(live.replace(INSTRUCTION_ANCHOR, f"{INSTRUCTION_ANCHOR}\n- {QUOTE_ETA}：说到达时间。", 1),
                                     encoding="utf-8")
    return str(folder)


@pytest.mark.parametrize("bad", [2**64, 2**63, 0, -3])
def test_cap_options_outside_what_a_checkpoint_holds_are_named_errors(bad):
    for calls, tokens in ((bad, None), (None, bad)):
        with pytest.raises(BadArgument, match="must be a positive number of at most 9223372036854775807"):
            budget_caps(calls, tokens)
    assert budget_caps(2**63 - 1, 1) == BudgetCaps(max_calls=2**63 - 1, max_tokens=1) and budget_caps(None, None) is None


def test_numeric_options_are_bounded_before_anything_is_written(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    w = ["-w", str(ws.root)]
    env = {"SKILLFORGE_LLM_BASE_URL": "http://127.0.0.1:9/v1", "SKILLFORGE_LLM_MODEL": "m"}
    evaluate = ["evaluate", SKILL, "--candidate", SkillRegistry.load(ws).get(SKILL).release.release_id]
    for cmd in (["evolve", SKILL], evaluate):
        proc = run_cli([*cmd, "--budget-calls", HUGE, *w], env, ok=2)  # was msgpack's internal error (exit 70)
        assert "--budget-calls must be a positive number of at most 9223372036854775807" in flat(proc.stderr)
    for cmd, opt in ((["evolve", "--all"], "--max-concurrency"), (evaluate, "--concurrency")):
        proc = run_cli([*cmd, opt, HUGE, *w], {**env, "COLUMNS": "200"}, ok=2)  # a thread each: a usage error
        assert f"Invalid value for '{opt}': Input should be less than or equal to 64" in proc.stderr
    assert not (ws.checkpoints_dir / "graphs.sqlite").exists() and not (ws.checkpoints_dir / "evaluate.sqlite").exists()


def test_evaluate_prints_its_estimate_and_refuses_a_run_its_cap_cannot_cover(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    w = ["-w", str(ws.root)]
    cand = better_candidate(ws, tmp_path)
    with WorldServer() as srv:
        env = env_for(srv, retries=0)
        proc = run_cli(["evaluate", SKILL, "--candidate", cand, "--set", "repair", "--budget-calls", "35", *w], env, ok=6)
        assert "estimate: at least 36 requests (6 cases x 6" in flat(proc.stderr) and srv.hits == 0
        assert proc.stdout.startswith("BUDGET") and "next: run it again with --budget-calls 36" in flat(proc.stdout)
        out = json.loads(run_cli(["evaluate", SKILL, "--candidate", cand, "--set", "repair", "--budget-calls", "35",
                                  "--json", *w], env, ok=6).stdout)
        assert out["verdict"] == "BUDGET" and out["cases_done"] == 0 and out["cases"] == 6 and srv.hits == 0
        assert out["budget"]["paid"] == 0 and out["budget"]["caps"]["max_calls"] == 35
        fits = json.loads(run_cli(["evaluate", SKILL, "--candidate", cand, "--set", "repair", "--budget-calls", "36",
                                   "--json", *w], env, ok=None).stdout)
        assert fits["verdict"] in ("PASS", "REVIEW") and fits["budget"]["paid"] == 36 == srv.hits
        assert (fits["budget"]["cached"], fits["budget"]["refused"]) == (0, 0)


def test_evaluate_stops_at_its_cap_mid_run_then_resumes_with_a_higher_one(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    w = ["-w", str(ws.root)]
    cand = better_candidate(ws, tmp_path)
    with MeteredWorld(World(lambda r: []), fail_every=4) as srv:  # retried 500s: more requests than estimated
        env = env_for(srv, retries=2)
        args = ["evaluate", SKILL, "--candidate", cand, "--set", "repair", "--json", "--concurrency", "2", *w]
        stopped = json.loads(run_cli([*args, "--budget-calls", "40"], env, ok=6).stdout)
        run_id = stopped["run_id"]
        assert stopped["verdict"] == "BUDGET" and "call cap reached: 40 of 40" in stopped["reasons"][0]
        assert stopped["budget"]["paid"] == srv.hits == 40 and stopped["budget"]["refused"] >= 1 and srv.failed >= 1
        assert stopped["cases_done"] < 6 and stopped["next"].startswith(f"skillforge evaluate --resume {run_id}")
        resume = ["evaluate", "--resume", run_id, "--json", *w]
        again = json.loads(run_cli(resume, env, ok=6).stdout)  # the run keeps its cap: refused before any request
        assert again["verdict"] == "BUDGET" and "estimate above budget" in again["reasons"][0] and srv.hits == 40
        resumed = run_cli([*resume, "--budget-calls", "200"], env, ok=None)
        done = json.loads(resumed.stdout)
    # the progress counts the cases that run, not "case 1 of 0" (QA19 MESSAGE-1)
    progress = re.findall(r"case (\d+) of (\d+) done", resumed.stderr)
    left = 6 - stopped["cases_done"]
    assert [int(n) for n, _ in progress] == list(range(1, left + 1)) and {int(t) for _, t in progress} == {left}, \
        resumed.stderr
    assert done["verdict"] in ("PASS", "REVIEW") and done["run_id"] == run_id, done["reasons"]
    assert done["budget"]["paid"] == srv.hits <= 200 and done["budget"]["caps"]["max_calls"] == 200
    # the stopped cases' finished halves come from the cache: no answered request is paid for twice
    # (how many halves were finished when the cap hit depends on timing, so `cached` may be 0)
    assert len(srv.bodies) == len(set(srv.bodies)), "a request answered before the stop was sent again"
    assert RequestLedger.of_workspace(ws.runs_dir).spend(run_id).calls == srv.hits


@pytest.mark.parametrize("holdout", ["empty", "missing"])
def test_evolve_without_holdout_cases_is_refused_before_any_model_call(tmp_path, holdout):
    ws = new_workspace(tmp_path / "ws")
    world = World(lambda r: [eta_patch(claimed=2)])
    seed_failures(ws, world.llm())
    if holdout == "empty":
        write_sets(ws, holdout=0)
    else:
        (ws.evaluation_sets_dir / "holdout.json").unlink()
    asked = world.executor.position + world.judge.position + world.proposer.position
    runner = Runner(ws, llm_factory=world.llm)
    with pytest.raises(MissingCases) as refused:
        runner.start(SKILL, run_id="evolve-no-holdout")
    message = str(refused.value)
    assert "holdout" in message and "Nothing was sent to a model" in message
    assert "skillforge evolve --resume evolve-no-holdout" in message and '"skill": "taxi-hailing"' in message
    assert (str(ws.evaluation_sets_dir / "holdout.json") + " (partition holdout) has no case") in message \
        if holdout == "empty" else "no set file declares partition holdout" in message
    assert world.executor.position + world.judge.position + world.proposer.position == asked
    assert RequestLedger.of_workspace(ws.runs_dir).spend("evolve-no-holdout").calls == 0
    write_sets(ws)  # the fix the message names: add holdout cases, then resume
    assert runner.resume("evolve-no-holdout")["status"] == "PENDING_REVIEW"


def test_evaluate_refused_by_its_token_cap_says_that_cap_and_asks_to_raise_it_not_the_call_cap(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    w = ["-w", str(ws.root)]
    cand = better_candidate(ws, tmp_path)
    with WorldServer() as srv:
        env = env_for(srv, retries=0)
        args = ["evaluate", SKILL, "--candidate", cand, "--set", "repair", *w]
        proc = run_cli([*args, "--budget-tokens", "5000", "--budget-calls", "36"], env, ok=6)
        said, out = flat(proc.stderr), flat(proc.stdout)
        # was: "...; no cap (--budget-calls N sets one); ..." and "next: run it again with --budget-calls 36"
        assert "estimate: at least 36 requests (6 cases x 6" in said and ", about 63000 tokens; cap 36 requests, " \
            "5000 tokens; 0 paid so far, 0 tokens" in said, said
        assert "next: run it again with --budget-tokens 63000 or more, or on a smaller set" in out, out
        assert "--budget-calls 36 or more" not in out and srv.hits == 0
        both = flat(run_cli([*args, "--budget-tokens", "5000", "--budget-calls", "10"], env, ok=6).stdout)
        assert "next: run it again with --budget-calls 36 --budget-tokens 63000 or more" in both and srv.hits == 0


def test_the_evaluate_next_command_names_the_cap_that_blocks():
    from skillforge.rules.evolve_budget import estimate_evaluation, evaluate_next

    est = estimate_evaluation(6)
    assert evaluate_next("r", BudgetCaps(max_calls=36, max_tokens=5000), est, 0, 0) == \
        "skillforge evaluate --resume r --budget-tokens 63000"
    assert evaluate_next("r", BudgetCaps(max_calls=40), est, 40, 0) == "skillforge evaluate --resume r --budget-calls 76"
    # the token cap reached mid-run by answers longer than estimated: that cap, not the call cap
    assert evaluate_next("r", BudgetCaps(max_calls=500, max_tokens=70000), est, 20, 7000) == \
        "skillforge evaluate --resume r --budget-tokens 133000"
    assert evaluate_next(None, BudgetCaps(max_calls=35), est, 0, 0) == \
        "run it again with --budget-calls 36 or more, or on a smaller set"


def test_a_no_cache_evaluation_stopped_at_its_cap_keeps_no_cache_in_its_next_step(tmp_path):
    """QA 21 TRUST-5: the `next:` of a `--no-cache` run dropped `--no-cache`, so the cases left read
    the cached answers the run was started to replace (a broken judge's)."""
    ws = new_workspace(tmp_path / "ws")
    cand = better_candidate(ws, tmp_path)
    with MeteredWorld(World(lambda r: []), fail_every=4) as srv:  # retried 500s: more requests than estimated
        args = ["evaluate", SKILL, "--candidate", cand, "--set", "repair", "--json", "--no-cache", "--concurrency", "2",
                "-w", str(ws.root)]
        stopped = json.loads(run_cli([*args, "--budget-calls", "40"], env_for(srv, retries=2), ok=6).stdout)
    assert stopped["verdict"] == "BUDGET" and stopped["next"].startswith(f"skillforge evaluate --resume {stopped['run_id']}")
    assert stopped["next"].endswith(" --no-cache"), stopped["next"]
