"""Ctrl-C's last line names how each run it stopped goes on (QA 38 F8): the runs register their
resume command with runners.interrupt.stopping(), and the handler keeps it when it stops them."""

from __future__ import annotations

import pytest

from skillforge.cli import interrupt as cli_interrupt
from skillforge.runners import interrupt


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    monkeypatch.setattr(interrupt, "_stopped", [])


def test_a_ctrl_c_outside_any_run_says_only_interrupted():
    interrupt.stop_all()
    assert cli_interrupt.ended() == "interrupted"


def test_a_stopped_run_is_named_with_its_resume_command_and_its_threads_are_told():
    told: list[str] = []
    with interrupt.stopping(lambda: told.append("evolve"), "skillforge evolve --resume r1"):
        with interrupt.stopping(lambda: told.append("judge")):  # a driver with nothing to resume
            interrupt.stop_all()
            interrupt.stop_all()  # a second Ctrl-C names the run once
    assert told == ["evolve", "judge", "evolve", "judge"]
    assert cli_interrupt.ended() == "interrupted; the run stays open, go on with: skillforge evolve --resume r1"


def test_a_batch_is_named_not_the_run_inside_it():
    with interrupt.stopping(lambda: None, "skillforge evolve --resume batch-all-1"):
        with interrupt.stopping(lambda: None, "skillforge evolve --resume evolve-x-1"):
            interrupt.stop_all()
    assert cli_interrupt.ended() == "interrupted; the run stays open, go on with: skillforge evolve --resume batch-all-1"


def test_a_run_that_ended_before_the_ctrl_c_is_not_named():
    with interrupt.stopping(lambda: None, "skillforge evaluate --resume done-run"):
        pass
    with interrupt.stopping(lambda: None, "skillforge evaluate --resume live-run"):
        interrupt.stop_all()
    assert interrupt.stopped_runs() == ["skillforge evaluate --resume live-run"]
