"""QA 23 F4, F5, F7, F9, F14: `canary promote` against a rollback verdict needs --force; of several
ticks at once only the one that closed the canary says so; --min-sessions is bounded before anything
is written; CanaryOpen during ROLLING_BACK says how to finish it; a reaped line says "reaped:" once."""

from __future__ import annotations

import random
import subprocess
import time
from pathlib import Path

from canary_world import SKILL, Session, canary_sessions, canary_workspace, feed, traffic
from conftest import run_cli

from skillforge.config import Workspace
from skillforge.library.canaries import Canaries
from skillforge.library.canary import CanaryDriver
from skillforge.library.gitrepo import SkillsRepo
from skillforge.library.store import Store
from skillforge.state.canary import CanaryState


def _worse(ws: Workspace, n: int = 120) -> None:
    ids = [f"w-{i}" for i in range(n)]
    feed(ws, traffic(random.Random(5), n, "w", canary_sessions(ws, ids), live_bad=0.1, canary_bad=0.8))


def _driver(ws: Workspace) -> CanaryDriver:
    return CanaryDriver(ws, Store(ws.db_path), SkillsRepo(ws.root))


def test_promote_by_hand_against_a_rollback_verdict_needs_force(tmp_path: Path) -> None:
    ws, live, canary = canary_workspace(tmp_path / "ws", share=0.5, min_sessions=10)
    _worse(ws)
    proc = run_cli(["canary", "promote", SKILL, "-w", str(ws.root)], ok=2)
    assert "the rules say roll back" in proc.stderr and "negative_feedback" in proc.stderr and "--force" in proc.stderr
    store = Store(ws.db_path)
    assert Canaries(store).get(canary).state is CanaryState.OPEN and store.current(SKILL).release_id == live  # type: ignore[union-attr]
    store.close()
    proc = run_cli(["canary", "promote", SKILL, "--force", "--reason", "ship it", "-w", str(ws.root)])
    assert "warning: promoting" in proc.stderr and "promoted:" in proc.stdout
    store = Store(ws.db_path)
    c = Canaries(store).get(canary)
    assert c is not None and c.state is CanaryState.PROMOTED and "with --force against a rollback verdict" in (c.reason or "")
    assert c.decision.get("against_the_rules") is True  # type: ignore[union-attr]


def test_a_second_finisher_and_a_second_decider_know_they_came_second(tmp_path: Path) -> None:
    ws, _, canary = canary_workspace(tmp_path / "ws")
    first, second = _driver(ws), _driver(ws)
    _, won = first.canaries.claim(canary, CanaryState.ROLLING_BACK, "first", {})
    _, again = second.canaries.claim(canary, CanaryState.ROLLING_BACK, "second", {})
    assert won and not again
    done, closed = second.finish_report(canary)
    assert closed and done.state is CanaryState.ROLLED_BACK and done.reason == "first"
    assert first.finish_report(canary) == (done, False)


def test_a_tick_that_finds_its_canary_closed_meanwhile_says_so(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    ws, _, canary = canary_workspace(tmp_path / "ws", share=0.5, min_sessions=10)
    _worse(ws)
    driver = _driver(ws)
    stale = driver.canaries.unfinished()  # read before another tick decided and closed it
    other = _driver(ws)
    other.rollback(SKILL, "another tick", {})
    monkeypatch.setattr(Canaries, "unfinished", lambda self: stale)
    (result,) = driver.tick()
    assert result.already and result.verdict is None and result.done == "rolled back"


def test_four_ticks_at_once_one_says_rolled_back(tmp_path: Path) -> None:
    ws, _, _ = canary_workspace(tmp_path / "ws", share=0.5, min_sessions=10)
    _worse(ws)
    from conftest import SKILLFORGE_EXE, cli_env

    procs = [subprocess.Popen([str(SKILLFORGE_EXE), "canary", "tick", "-w", str(ws.root)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=cli_env(None)) for _ in range(4)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    said = "".join(outs)
    assert said.count(": rolled back:") == 1, said
    assert said.count("already rolled back by another tick") + said.count("no open canary") == 3, said
    assert "interrupted transition" not in said


def test_min_sessions_out_of_range_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    ws, _, _ = canary_workspace(tmp_path / "ws", share=0.5)
    run_cli(["canary", "rollback", SKILL, "-w", str(ws.root)])
    head = subprocess.run(["git", "-C", str(ws.root), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    (ws.skills_dir / SKILL / "SKILL.md").write_text((ws.skills_dir / SKILL / "SKILL.md").read_text() + "- more\n")
    store = Store(ws.db_path)
    before = len(store.releases(SKILL))
    store.close()
    for value in ("99999999999999999999999", "1000000001", "0"):
        proc = run_cli(["release", "publish", SKILL, "--canary", "10%", "--min-sessions", value, "-w", str(ws.root)],
                       ok=2)
        assert "--min-sessions must be a whole number from 1 to 1000000000" in proc.stderr
    store = Store(ws.db_path)
    assert len(store.releases(SKILL)) == before
    assert subprocess.run(["git", "-C", str(ws.root), "rev-parse", "HEAD"], capture_output=True, text=True).stdout == head
    run_cli(["release", "publish", SKILL, "--canary", "10%", "--max-age-hours", "1e300", "-w", str(ws.root)])


def test_canary_open_while_rolling_back_says_run_tick(tmp_path: Path) -> None:
    ws, _, canary = canary_workspace(tmp_path / "ws")
    store = Store(ws.db_path)
    Canaries(store).decide(canary, CanaryState.ROLLING_BACK, "killed mid-way", {})
    store.close()
    proc = run_cli(["release", "retire", SKILL, "-w", str(ws.root)], ok=2)
    assert "canary tick" in proc.stderr and "promote or roll it back" not in proc.stderr
    assert f"canary rollback {SKILL}" in proc.stderr
    run_cli(["canary", "rollback", SKILL, "-w", str(ws.root)])  # the remedy works


def test_a_reaped_line_says_reaped_once_with_a_comparable_age(tmp_path: Path) -> None:
    ws, _, _ = canary_workspace(tmp_path / "ws", max_age_hours=0.0002)
    feed(ws, [Session("only-one", bad=False)])
    time.sleep(1.0)
    line = run_cli(["canary", "tick", "-w", str(ws.root)]).stdout
    assert line.count("reaped:") == 1 and "0.0 h old" not in line and "(maximum 0.0002 h)" in line, line
