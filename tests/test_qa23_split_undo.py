"""QA 23 F8 and F10: a split during an open canary is CanaryOpen, as every other command says; the
split's output and a `release revert` of its parent name the `release retire` of the children."""

from __future__ import annotations

from pathlib import Path

from skillforge.library.services import Services
from tests import test_qa23_split_files as base
from tests.conftest import FIXTURES, run_cli

PLAIN = (FIXTURES / "split" / "skills" / "convert-anything" / "SKILL.md").read_text(encoding="utf-8")


def test_split_during_an_open_canary_is_canary_open(tmp_path: Path) -> None:
    ws = base.workspace(tmp_path / "ws", PLAIN)
    with (ws.skills_dir / "convert-anything" / "SKILL.md").open("a", encoding="utf-8") as f:
        f.write("- canary line\n")
    run_cli(["release", "publish", "convert-anything", "--canary", "20%", "-w", str(ws.root)])
    refused = run_cli(["skills", "split", "convert-anything", "--publish", "-w", str(ws.root)], ok=2)
    flat = " ".join(refused.stderr.split())
    assert "cannot split 'convert-anything': its canary" in flat and "promote or roll it back first" in flat
    assert "PREPARING" not in flat and "watchdog" not in flat
    svc = Services(ws)
    assert svc.store.current(base.CURRENCY) is None and not (ws.skills_dir / base.CURRENCY).exists()


def test_split_and_revert_name_the_retire_of_the_children(tmp_path: Path) -> None:
    ws = base.workspace(tmp_path / "ws", PLAIN)
    done = " ".join(run_cli(["skills", "split", "convert-anything", "--publish", "-w", str(ws.root)]).stdout.split())
    assert "`skillforge release revert convert-anything`" in done
    assert f"`skillforge release retire {base.CURRENCY}`" in done and f"`skillforge release retire {base.UNITS}`" in done
    back = " ".join(run_cli(["release", "revert", "convert-anything", "-w", str(ws.root)]).stdout.split())
    assert f"note: convert-anything's split children {base.CURRENCY}, {base.UNITS} are still live" in back
    run_cli(["release", "retire", base.CURRENCY, "-w", str(ws.root)])
    run_cli(["release", "retire", "convert-anything", "-w", str(ws.root)])
    again = " ".join(run_cli(["release", "revert", "convert-anything", "-w", str(ws.root)]).stdout.split())
    assert f"split children {base.UNITS} are still live" in again and base.CURRENCY not in again
