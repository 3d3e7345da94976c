"""QA 26 N2 (CLI side): a canary with nothing measured says so in status and tick and holds."""

from __future__ import annotations

from pathlib import Path

from canary_world import SKILL, Session, canary_workspace, feed
from conftest import run_cli

from skillforge.library.canaries import Canaries
from skillforge.library.store import Store
from skillforge.state.canary import CanaryState


def test_nothing_measured_is_said_in_status_and_tick(tmp_path: Path) -> None:
    ws, _, canary = canary_workspace(tmp_path / "ws", share=0.5, min_sessions=2)
    feed(ws, [Session(f"s-{i}") for i in range(12)])  # sessions, no feedback, no tool error
    status = run_cli(["canary", "status", SKILL, "-w", str(ws.root)]).stdout
    assert "no signal was measured" in " ".join(status.split())
    tick = run_cli(["canary", "tick", "-w", str(ws.root)]).stdout
    assert "held" in tick and "no signal was measured" in " ".join(tick.split())
    store = Store(ws.db_path)
    assert Canaries(store).get(canary).state is CanaryState.OPEN  # type: ignore[union-attr]
    store.close()
