"""QA 26 N2, N14 (CLI side): a canary with nothing measured says so in status and tick and holds;
`canary promote` on a canary being rolled back says so at once (no --force offered), and `canary
rollback` on one being promoted likewise."""

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


def test_promote_on_a_canary_being_rolled_back_says_so_at_once(tmp_path: Path) -> None:
    ws, live, canary = canary_workspace(tmp_path / "ws")
    store = Store(ws.db_path)
    Canaries(store).decide(canary, CanaryState.ROLLING_BACK, "killed mid-way", {})
    store.close()
    for extra in ([], ["--force"]):
        proc = run_cli(["canary", "promote", SKILL, *extra, "-w", str(ws.root)], ok=2)
        said = " ".join(proc.stderr.split())
        assert "is being rolled back" in said and "canary tick" in said and "--force" not in said, said
        assert "warning" not in said
    store = Store(ws.db_path)
    assert Canaries(store).get(canary).state is CanaryState.ROLLING_BACK  # type: ignore[union-attr]
    store.close()
    assert "rolled back" in run_cli(["canary", "tick", "-w", str(ws.root)]).stdout
    store = Store(ws.db_path)
    assert store.current(SKILL).release_id == live  # type: ignore[union-attr]
    store.close()


def test_rollback_on_a_canary_being_promoted_says_so_and_promote_finishes_it(tmp_path: Path) -> None:
    ws, _, canary = canary_workspace(tmp_path / "ws")
    store = Store(ws.db_path)
    Canaries(store).decide(canary, CanaryState.PROMOTING, "killed mid-way", {})
    store.close()
    proc = run_cli(["canary", "rollback", SKILL, "-w", str(ws.root)], ok=2)
    assert "is being promoted" in " ".join(proc.stderr.split())
    assert "promoted:" in run_cli(["canary", "promote", SKILL, "-w", str(ws.root)]).stdout
    store = Store(ws.db_path)
    assert store.current(SKILL).release_id == canary  # type: ignore[union-attr]
    store.close()
