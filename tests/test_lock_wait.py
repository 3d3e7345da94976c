"""A command that waits for another process's hold on a skill (a review answer while the run's own
process finishes) says so at once, naming the holder, instead of waiting silently; one that does
not wait (evolve, cancel) is refused at once, as before."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from skillforge.config import init_workspace
from skillforge.errors import RunBusy
from skillforge.evolution.locks import driving


def test_a_wait_for_the_skill_is_said_at_once_and_a_refusal_names_the_holder(tmp_path, caplog) -> None:
    ws = init_workspace(tmp_path / "ws")
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        with driving(ws, "taxi-hailing", "evolve-taxi-hailing-1"):
            held.set()
            release.wait(10)

    t = threading.Thread(target=holder)
    t.start()
    held.wait(10)
    with pytest.raises(RunBusy, match="evolve-taxi-hailing-1"):
        with driving(ws, "taxi-hailing", "other"):
            pass
    assert not caplog.records  # no wait, no waiting line
    threading.Timer(0.5, release.set).start()
    t0 = time.monotonic()
    with caplog.at_level(logging.WARNING), driving(ws, "taxi-hailing", "answer", wait_s=20):
        waited = time.monotonic() - t0
    t.join(10)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "run evolve-taxi-hailing-1" in lines[0] and "waiting up to 20 s" in lines[0]
    assert waited < 15  # it took the lock when the holder let go
