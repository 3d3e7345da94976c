"""The nightly loop (`evolve --all`) and a skill whose earlier run is still open (QA 22 CRASH-1): a
run stopped by a named error (MissingCases: no holdout case) printed a whole traceback and stayed
open, and every later batch then failed on RunOpen until someone ran `runs cancel`. Now the error is
one line, and the next batch goes on from that run: once the holdout cases exist, it finishes."""

from __future__ import annotations

import logging

from evolve_fakes import SKILL, World, eta_patch, new_workspace, seed_failures, write_sets

from skillforge.runners.evolve import Runner
from skillforge.runners.evolve_batch import new_batch, run_batch


def test_a_batch_resumes_the_open_run_a_named_error_stopped_and_never_prints_a_traceback(tmp_path, caplog):
    ws = new_workspace(tmp_path / "ws")
    world = World(lambda r: [eta_patch(claimed=2)])
    seed_failures(ws, world.llm())
    (ws.evaluation_sets_dir / "holdout.json").unlink()  # the first night: no holdout case for the skill
    runner = Runner(ws, llm_factory=world.llm)
    _, runs = new_batch(ws, [SKILL])
    with caplog.at_level(logging.WARNING):
        [first] = run_batch(runner, runs)
    assert first["status"] == "FAILED" and first["message"].startswith("MissingCases: evolve needs holdout cases")
    warned = [r for r in caplog.records if "failed" in r.getMessage()]
    assert len(warned) == 1 and warned[0].exc_info is None and "MissingCases" in warned[0].getMessage()
    opened = first["run_id"]
    assert runner.open_run(SKILL) == opened  # left open on purpose: its message says to resume it

    _, runs = new_batch(ws, [SKILL])  # the next night, nothing fixed yet: the same run, the same one line
    caplog.clear()
    [second] = run_batch(runner, runs)
    assert second["run_id"] == opened and second["status"] == "FAILED" and "MissingCases" in second["message"]
    assert "RunOpen" not in second["message"]
    assert not any(r.exc_info for r in caplog.records)

    write_sets(ws)  # a person adds the holdout cases; the next night finishes the same run
    _, runs = new_batch(ws, [SKILL])
    [third] = run_batch(runner, runs)
    assert third["run_id"] == opened and third["status"] == "PENDING_REVIEW", third["message"]
    assert runner.open_run(SKILL) == opened
    _, runs = new_batch(ws, [SKILL])  # waiting for a person: shown as it stands, nothing run again
    [fourth] = run_batch(runner, runs)
    assert fourth["run_id"] == opened and fourth["status"] == "PENDING_REVIEW"


def test_evolve_again_continues_a_run_that_stopped_before_its_first_round(tmp_path):
    """QA 25: `evolve SKILL` refused by a named error before its first round (no holdout case) left
    its run open, and `evolve SKILL` again was RunOpen; the error itself says to resume it. Now the
    same command continues that run (same mode and rounds); another mode is still RunOpen."""
    import pytest

    from skillforge.errors import RunOpen
    from skillforge.evolution.preflight import MissingCases
    from skillforge.state.evolve import EvolveMode

    ws = new_workspace(tmp_path / "ws")
    world = World(lambda r: [eta_patch(claimed=2)])
    seed_failures(ws, world.llm())
    (ws.evaluation_sets_dir / "holdout.json").unlink()
    runner = Runner(ws, llm_factory=world.llm)
    with pytest.raises(MissingCases) as first:
        runner.start(SKILL)
    opened = runner.open_run(SKILL)
    assert opened is not None and f"evolve --resume {opened}" in str(first.value)
    with pytest.raises(MissingCases, match=f"evolve --resume {opened}"):  # the same run again, not RunOpen
        runner.start(SKILL)
    with pytest.raises(RunOpen, match=opened):  # another mode would be silently dropped: refused
        runner.start(SKILL, mode=EvolveMode.FIX_ONLY)
    write_sets(ws)
    done = runner.start(SKILL)
    assert done["run_id"] == opened and done["status"] == "PENDING_REVIEW"
    assert [r for r in runner.rows() if r["skill"] == SKILL and r["run_id"] != opened] == []


def test_a_skill_another_process_evolves_now_is_skipped_not_failed(tmp_path):
    """QA 25 M1: two `evolve --all` at once (cron and a person) each listed FAILED (RunBusy) rows for
    runs the other one completed, and exited 4."""
    from skillforge.evolution.locks import driving
    from skillforge.runners.evolve_batch import BUSY

    ws = new_workspace(tmp_path / "ws")
    world = World(lambda r: [eta_patch(claimed=2)])
    seed_failures(ws, world.llm())
    runner = Runner(ws, llm_factory=world.llm)
    _, runs = new_batch(ws, [SKILL])
    with driving(ws, SKILL, "evolve-held-by-another-process"):
        [row] = run_batch(runner, runs)
    assert row["status"] == BUSY and row["message"].startswith("skipped: ") and "RunBusy" not in row["message"]
    assert row["run_id"] is None  # QA 27 M2: the batch's own id named a run that never existed
    assert runner.open_run(SKILL) is None  # this batch opened no run for it


def test_a_run_another_process_just_started_is_not_continued(tmp_path, caplog):
    """QA 29 F2: two `evolve SKILL` a moment apart: the second saw the first's new run (round 0,
    RUNNING) as stopped before its first round, said "continuing run X", then was refused by the
    lock. Now the lock is taken before anything is said: RunBusy naming the run, no "continuing"."""
    import logging

    import pytest

    from skillforge.errors import RunBusy
    from skillforge.evolution.locks import driving
    from skillforge.evolution.preflight import MissingCases

    ws = new_workspace(tmp_path / "ws")
    world = World(lambda r: [eta_patch(claimed=2)])
    seed_failures(ws, world.llm())
    (ws.evaluation_sets_dir / "holdout.json").unlink()
    runner = Runner(ws, llm_factory=world.llm)
    with pytest.raises(MissingCases):
        runner.start(SKILL)
    opened = runner.open_run(SKILL)
    write_sets(ws)
    caplog.set_level(logging.WARNING)
    with driving(ws, SKILL, opened):  # another process drives it right now
        with pytest.raises(RunBusy, match=opened):
            runner.start(SKILL)
    assert "continuing run" not in caplog.text
    done = runner.start(SKILL)  # once it is free, the same command continues it
    assert done["run_id"] == opened and done["status"] == "PENDING_REVIEW"
    assert "continuing run" in caplog.text
