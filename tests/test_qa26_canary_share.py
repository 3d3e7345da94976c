"""QA 26 N6, N12: a canary share is bounded (0.01 % to 50 %) so that it never stores as 0, and is
refused before any release row or commit; a share is shown as given ("0.5%"), never a rounded "0%"."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from canary_world import SKILL, canary_workspace
from conftest import run_cli

from skillforge.library.store import Store
from skillforge.rules.canary import SHARE_MAX, SHARE_MIN, parse_share, shown_share


def _head(root: Path) -> str:
    return subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True).stdout


@pytest.mark.parametrize("text", ["1e-9%", "0.009%", "0.005", "0%", "-1%", "50.0000001%", "60", "nan", "inf%"])
def test_a_share_out_of_range_or_that_would_store_as_zero_is_refused(text: str) -> None:
    assert parse_share(text) is None


@pytest.mark.parametrize(("text", "share"), [("0.01%", SHARE_MIN), ("0.5", 0.005), ("10%", 0.1), ("50%", SHARE_MAX),
                                             ("49.99999999", SHARE_MAX)])
def test_a_share_in_range_is_kept(text: str, share: float) -> None:
    parsed = parse_share(text)
    assert parsed == share and parsed is not None and 0 < parsed < 1  # the canaries table's CHECK


@pytest.mark.parametrize(("share", "shown"), [(0.0001, "0.01%"), (0.005, "0.5%"), (0.1, "10%"), (0.5, "50%"),
                                              (0.123456, "12.3456%")])
def test_a_share_is_shown_as_given(share: float, shown: str) -> None:
    assert shown_share(share) == shown


def test_a_share_that_would_store_as_zero_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    ws, _, _ = canary_workspace(tmp_path / "ws", share=0.5)
    run_cli(["canary", "rollback", SKILL, "-w", str(ws.root)])
    (ws.skills_dir / SKILL / "SKILL.md").write_text((ws.skills_dir / SKILL / "SKILL.md").read_text() + "- more\n")
    head, store = _head(ws.root), Store(ws.db_path)
    before = len(store.releases(SKILL))
    store.close()
    for share in ("1e-9%", "0.001%", "0.009", "50.01%"):
        proc = run_cli(["release", "publish", SKILL, "--canary", share, "-w", str(ws.root)], ok=2)
        assert "from 0.01% to 50%" in proc.stderr and "CHECK" not in proc.stderr, proc.stderr
    store = Store(ws.db_path)
    assert len(store.releases(SKILL)) == before and _head(ws.root) == head
    store.close()
    proc = run_cli(["release", "publish", SKILL, "--canary", "0.5", "-w", str(ws.root)])
    assert "serves 0.5% of sessions" in proc.stdout
    status = run_cli(["canary", "status", SKILL, "-w", str(ws.root)]).stdout
    assert "0.5% of sessions" in status
    assert "(0.5% of sessions" in run_cli(["releases", "list", SKILL, "-w", str(ws.root)]).stdout


def test_a_plan_built_through_the_library_api_is_bounded_too():
    """A CanaryPlan made without the CLI (the library API) could carry a share the store's CHECK
    refuses only after the release began: the plan itself refuses it."""
    import pydantic

    from skillforge.state.canary import CanaryPlan

    for share in (1e-12, 0.0, 0.51):
        with pytest.raises(pydantic.ValidationError):
            CanaryPlan(share=share, min_sessions=100, max_age_hours=72)
    assert CanaryPlan(share=SHARE_MIN, min_sessions=100, max_age_hours=72).share == SHARE_MIN
