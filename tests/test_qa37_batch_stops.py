"""QA 37 F1/F2 on a shared (Postgres) batch: a run stopped open by an endpoint that did not answer is
claimed again when the batch is resumed (`evolve --resume BATCH --worker`), and a run the batch gave
up on (its workers died MAX_ATTEMPTS times) is closed FAILED, so the run and its row agree."""

from __future__ import annotations

import pytest
from evolve_fakes import SKILL, World, eta_patch, seed_failures, write_sets
from test_postgres import pg_url  # noqa: F401 - the session's PostgreSQL server

from skillforge.errors import LLMUnavailable
from skillforge.evolution.propose import ProposalSet
from skillforge.rules.claims import MAX_ATTEMPTS


class Flaky(World):
    """A proposer whose endpoint is down while `down` is set."""

    down = True

    def proposer_reply(self, messages):  # noqa: ANN001, ANN202
        reply = super().proposer_reply(messages)
        if isinstance(reply, ProposalSet) and self.down:
            return LLMUnavailable("role 'proposer': cannot connect: [Errno 111] Connection refused")
        return reply


@pytest.fixture
def pg_world(pg_url, machine, monkeypatch):  # noqa: ANN001, F811
    monkeypatch.setenv("SKILLFORGE_CHECKPOINT_URL", pg_url)
    write_sets(machine.ws)
    world = Flaky(lambda r: [eta_patch(claimed=2)])
    seed_failures(machine.ws, world.llm())
    return machine.ws, world, pg_url


def row_of(url: str, ws, batch: str) -> dict:  # noqa: ANN001
    from skillforge.runners.batch import batch_rows

    [row] = batch_rows(url, batch, ws.workspace_id)
    return row


def test_a_run_stopped_by_an_outage_is_claimed_again_when_the_batch_resumes(pg_world):
    from skillforge.runners.batch import register, work_batch
    from skillforge.runners.evolve import Runner

    ws, world, url = pg_world
    register(url, "batch-outage", {SKILL: "evolve-outage-1"}, ws.workspace_id)
    runner = Runner(ws, llm_factory=world.llm)
    [first] = work_batch(runner, url, "batch-outage")
    assert first["status"] == "RUNNING" and "stays open" in first["message"], first
    assert (row_of(url, ws, "batch-outage")["status"], row_of(url, ws, "batch-outage")["result"]) == ("DONE", "RUNNING")
    assert runner.summary("evolve-outage-1")["status"] == "RUNNING"          # open: not NO_IMPROVEMENT
    world.down = False                                                       # the endpoint is back
    [again] = work_batch(Runner(ws, llm_factory=world.llm), url, "batch-outage")
    assert again["run_id"] == "evolve-outage-1" and again["status"] == "PENDING_REVIEW", again
    row = row_of(url, ws, "batch-outage")
    assert (row["status"], row["result"], row["attempts"]) == ("DONE", "PENDING_REVIEW", 1)
    assert work_batch(Runner(ws, llm_factory=world.llm), url, "batch-outage") == []   # a finished row stays
    assert row_of(url, ws, "batch-outage")["result"] == "PENDING_REVIEW"


def test_a_run_the_batch_gives_up_on_is_closed_failed(pg_world):
    from skillforge.runners.batch import connect, register, work_batch
    from skillforge.runners.evolve import Runner

    ws, world, url = pg_world
    runner = Runner(ws, llm_factory=world.llm)
    out = runner.start(SKILL, run_id="evolve-dies-1", max_rounds=1)        # stands for a run its workers died in
    assert out["status"] == "RUNNING"
    register(url, "batch-dies", {SKILL: "evolve-dies-1"}, ws.workspace_id)
    with connect(url) as conn, conn.transaction():
        conn.execute("UPDATE skillforge_batches.claims SET status = 'CLAIMED', attempts = %s, worker = 'dead' "
                     "WHERE batch_id = 'batch-dies'", (MAX_ATTEMPTS,))
    world.down = False
    mine = work_batch(Runner(ws, llm_factory=world.llm), url, "batch-dies")
    assert [(r["skill"], r["status"], r["run_id"]) for r in mine] == [(SKILL, "FAILED", "evolve-dies-1")]
    assert mine[0]["message"] == f"gave up: its worker died {MAX_ATTEMPTS} times on this run"
    row = row_of(url, ws, "batch-dies")
    assert (row["status"], row["result"]) == ("DONE", "FAILED")
    shown = Runner(ws, llm_factory=world.llm).summary("evolve-dies-1")
    assert shown["status"] == "FAILED" and shown["message"].startswith("gave up: its worker died"), shown
    resumed = Runner(ws, llm_factory=world.llm).resume("evolve-dies-1")   # closed: the row and the run agree
    assert resumed["status"] == "FAILED"


def test_a_worker_leaves_the_rows_it_stopped_open_to_other_workers(pg_world):
    """QA 38 F7: a worker still polling with a dead endpoint re-claimed the row a newly joined worker
    had reopened, and stopped it again; the healthy worker exited 0 having resumed nothing."""
    from skillforge.runners.batch import claim_next, connect, open_rows, register, reopen_stopped, work_batch
    from skillforge.runners.evolve import Runner

    ws, world, url = pg_world
    register(url, "batch-two", {SKILL: "evolve-two-1"}, ws.workspace_id)
    [first] = work_batch(Runner(ws, llm_factory=world.llm), url, "batch-two")   # the endpoint is down
    assert first["status"] == "RUNNING"
    assert reopen_stopped(url, "batch-two", ws.workspace_id) == [SKILL]         # a worker joins later
    with connect(url) as conn:
        assert claim_next(conn, ws.workspace_id, "batch-two", "w-old", skip=[SKILL]) is None
        assert open_rows(conn, ws.workspace_id, "batch-two", [SKILL]) == 0       # the old worker may leave
        assert open_rows(conn, ws.workspace_id, "batch-two") == 1
        conn.commit()
    world.down = False
    [again] = work_batch(Runner(ws, llm_factory=world.llm), url, "batch-two")  # the new worker takes it
    assert again["status"] == "PENDING_REVIEW", again
