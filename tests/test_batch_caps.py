"""A batch's own caps (`evolve --all --batch-budget-calls N`): every run of the batch counts in the
batch's totals in the request ledger, a request that would pass the batch's caps is refused there
(atomically, across threads and connections), a run not started yet is not started once they are
reached, and the batch's resume with higher caps goes on. Before, `--budget-calls` with `--all` capped
each run only (200 skills x 100 requests), and nothing capped the night."""

from __future__ import annotations

import json
import threading

import pytest

from conftest import flat, run_cli
from evolve_fakes import SKILL, World, eta_patch, new_workspace, seed_failures
from metered_world import MeteredWorld, env_for
from skillforge.errors import BudgetExceeded
from skillforge.llm.ledger import RequestLedger
from skillforge.runners.evolve import Runner
from skillforge.runners.evolve_batch import NOT_STARTED, new_batch, run_batch
from skillforge.state.llm import BudgetCaps, Role

NO_CAPS = BudgetCaps()


def test_a_group_cap_holds_across_threads_and_connections(tmp_path):
    path = tmp_path / "ledger.db"
    ledgers = [RequestLedger(path), RequestLedger(path)]  # two connections, as two processes have
    ledgers[0].set_caps("batch-x", BudgetCaps(max_calls=17))
    runs = [f"evolve-r{i}" for i in range(4)]
    for i, run in enumerate(runs):
        ledgers[i % 2].join("batch-x", run)
    paid: list[int] = []
    refused: list[str] = []
    lock = threading.Lock()

    def spend(run: str, ledger: RequestLedger) -> None:
        for _ in range(10):
            try:
                seq = ledger.admit(run, Role.EXECUTOR, NO_CAPS, 10, 0.0)
            except BudgetExceeded as e:
                with lock:
                    refused.append(str(e))
                continue
            ledger.settle(seq, 3, 2, 0.0)
            with lock:
                paid.append(seq)

    threads = [threading.Thread(target=spend, args=(run, ledgers[i % 2])) for i, run in enumerate(runs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(paid) == 17 and len(refused) == 40 - 17
    assert all("batch batch-x: call cap reached: 17 of 17 requests sent" in r for r in refused)
    group = ledgers[0].spend("batch-x")
    assert (group.calls, group.refused, group.tokens, group.reserved_tokens) == (17, 23, 17 * 5, 0)
    assert sum(ledgers[1].spend(run).calls for run in runs) == 17  # the runs' own totals agree
    assert {ledgers[0].last_refusal(run) for run in runs} - {None} == {("batch-x", "calls")}  # a run may have had no refusal
    held = ledgers[1].reached("batch-x")
    assert held is not None and held.cap == "calls" and ledgers[1].reached("batch-other") is None


def test_a_run_s_own_cap_is_its_own_and_a_moved_run_settles_where_it_was_admitted(tmp_path):
    ledger = RequestLedger(tmp_path / "ledger.db")
    ledger.set_caps("batch-a", BudgetCaps(max_tokens=250))
    ledger.join("batch-a", "evolve-r")
    first = ledger.admit("evolve-r", Role.PROPOSER, NO_CAPS, 100, 0.0)  # 100 reserved in the batch too
    assert ledger.spend("batch-a").reserved_tokens == 100
    ledger.admit("evolve-r", Role.PROPOSER, NO_CAPS, 100, 0.0)
    with pytest.raises(BudgetExceeded, match="batch batch-a: token cap: 200 spent or reserved"):
        ledger.admit("evolve-r", Role.PROPOSER, NO_CAPS, 100, 0.0)
    assert ledger.last_refusal("evolve-r") == ("batch-a", "tokens")
    with pytest.raises(BudgetExceeded, match="call cap reached: 2 of 2") as own:  # the run's cap, before the batch's
        ledger.admit("evolve-r", Role.PROPOSER, BudgetCaps(max_calls=2), 10, 0.0)
    assert "batch" not in str(own.value) and ledger.last_refusal("evolve-r") == ("evolve-r", "calls")

    ledger.join("batch-b", "evolve-r")  # the next night's batch goes on with the run (no caps: counted only)
    ledger.settle(first, 20, 10, 0.0)  # admitted in batch-a: settles there
    a, b = ledger.spend("batch-a"), ledger.spend("batch-b")
    assert (a.tokens, a.reserved_tokens, b.tokens, b.calls) == (30, 100, 0, 0)
    ledger.admit("evolve-r", Role.PROPOSER, NO_CAPS, 100, 0.0)  # batch-a's cap no longer holds the run
    assert ledger.spend("batch-b").calls == 1 and ledger.spend("batch-a").calls == 2
    assert ledger.forget_requests(["evolve-r"]) == 5  # `runs prune`: the rows go, the totals stay
    assert ledger.spend("batch-a").calls == 2 and ledger.last_refusal("evolve-r") is None


def test_a_batch_stops_at_its_cap_names_it_and_goes_on_when_it_is_raised(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    world = World(lambda r: [eta_patch(claimed=2)])
    seed_failures(ws, world.llm())
    runner = Runner(ws, llm_factory=world.llm)
    batch, runs = new_batch(ws, [SKILL, "hotel-booking"])
    runner.ledger.set_caps(batch, BudgetCaps(max_calls=20))
    first, second = run_batch(runner, runs, concurrency=1, batch_id=batch)
    assert runner.ledger.spend(batch).calls == runner.ledger.spend(first["run_id"]).calls == 20
    assert first["status"] == "BUDGET" and f"batch {batch}: call cap reached: 20 of 20" in first["pending"]["reason"]
    assert first["next"] == f"skillforge evolve --resume {batch} --batch-budget-calls N"  # not the run's own cap
    assert first["budget"]["caps"]["max_calls"] is None
    assert second["status"] == NOT_STARTED and second["run_id"] is None
    assert f"go on with: skillforge evolve --resume {batch} --batch-budget-calls N" in second["message"]
    assert [r["skill"] for r in runner.rows()] == [SKILL]  # no run was opened for the skill not started

    again = run_batch(runner, runs, concurrency=1, batch_id=batch)  # the same caps: nothing more is spent
    assert runner.ledger.spend(batch).calls == 20 and [r["status"] for r in again] == ["BUDGET", NOT_STARTED]
    assert "not resumed: the batch's call cap reached" in again[0]["message"]

    runner.ledger.set_caps(batch, BudgetCaps(max_calls=1000))
    done = {r["skill"]: r for r in run_batch(runner, runs, concurrency=1, batch_id=batch)}
    assert done[SKILL]["status"] == "PENDING_REVIEW" and done[SKILL]["run_id"] == first["run_id"]
    assert done["hotel-booking"]["status"] == "NO_FAILURES" and done["hotel-booking"]["run_id"] == runs["hotel-booking"]
    assert runner.ledger.spend(batch).calls == runner.ledger.spend(first["run_id"]).calls <= 1000


def test_the_cli_caps_the_batch_and_its_resume_raises_the_cap(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    w = ["-w", str(ws.root)]
    seed_failures(ws, World(lambda r: []).llm())  # in process: the server sees only the batch
    with MeteredWorld(World(lambda r: [eta_patch(claimed=2)])) as srv:
        env = env_for(srv, retries=0)
        for bad, says in ((["evolve", SKILL, "--batch-budget-calls", "5"], "give them with --all or --resume BATCH"),
                          (["evolve", "--all", "--batch-budget-calls", "0"], "--batch-budget-calls must be a positive"),
                          (["evolve", "--all", "--batch-budget-tokens", str(2**64)], "--batch-budget-tokens must be")):
            assert says in flat(run_cli([*bad, *w], env, ok=2).stderr)
        assert srv.hits == 0 and Runner(ws).run_ids() == []

        first = run_cli(["evolve", "--all", "--batch-budget-calls", "30", "--max-concurrency", "2", "--json", *w], env,
                        ok=4)
        out = json.loads(first.stdout)
        batch = out["batch_id"]
        assert out["batch_budget"]["paid"] == srv.hits == 30 and out["batch_budget"]["caps"]["max_calls"] == 30
        [taxi] = [r for r in out["runs"] if r["skill"] == SKILL]
        assert taxi["status"] == "BUDGET", taxi
        assert f"skillforge evolve --resume {batch} --batch-budget-calls N" in taxi["message"]

        table = run_cli(["evolve", "--resume", batch, *w], env, ok=4)  # the same caps: nothing sent, the cap said
        assert srv.hits == 30
        assert (f"batch {batch}: its call cap reached: 30 of 30 requests sent; go on with: skillforge evolve --resume "
                f"{batch} --batch-budget-calls N") in flat(table.stdout)

        done = json.loads(run_cli(["evolve", "--resume", batch, "--batch-budget-calls", "1000", "--json", *w],
                                  env).stdout)
        [taxi] = [r for r in done["runs"] if r["skill"] == SKILL]
        assert taxi["status"] == "PENDING_REVIEW", taxi
        assert done["batch_budget"]["paid"] == srv.hits <= 1000 and done["batch_budget"]["caps"]["max_calls"] == 1000
        assert not [r for r in done["runs"] if r["status"] in (NOT_STARTED, "BUDGET")]


def test_new_batch_caps_replace_only_the_caps_given(tmp_path):
    """QA 48 F5: `--resume BATCH --batch-budget-calls N` dropped the batch's token cap unsaid."""
    from skillforge.cli.budget import set_batch_caps

    ledger = RequestLedger(tmp_path / "ledger.db")
    set_batch_caps(ledger, "batch-x", BudgetCaps(max_calls=10, max_tokens=1000))
    set_batch_caps(ledger, "batch-x", BudgetCaps(max_calls=20))
    assert ledger.caps("batch-x") == BudgetCaps(max_calls=20, max_tokens=1000)
    set_batch_caps(ledger, "batch-x", BudgetCaps(max_tokens=5000))
    assert ledger.caps("batch-x") == BudgetCaps(max_calls=20, max_tokens=5000)
