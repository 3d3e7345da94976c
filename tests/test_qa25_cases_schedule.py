"""QA 25 M4/M5: `schedule` refuses a path with a line break (a crontab line has no continuation) and
notes that a --from-sessions file is harvested alone each night (allowed: harvest reads a file)."""

from __future__ import annotations

from conftest import run_cli

from skillforge.testing.evolve_world import new_workspace


def test_a_sessions_path_with_a_newline_is_refused_and_nothing_is_printed(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    odd = tmp_path / "nl\ndir"
    odd.mkdir()
    r = run_cli(["schedule", "--from-sessions", str(odd), "-w", str(ws.root)], ok=2)
    assert r.stdout == "" and "line break" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_a_sessions_file_is_fine_and_noted(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    one = tmp_path / "one.jsonl"
    one.write_text("", encoding="utf-8")
    r = run_cli(["schedule", "--from-sessions", str(one), "-w", str(ws.root)])
    assert len(r.stdout.strip().splitlines()) == 1 and str(one) in r.stdout
    assert "is a file" in r.stderr and "folder" in r.stderr
    folder = run_cli(["schedule", "--from-sessions", str(tmp_path), "-w", str(ws.root)])
    assert "is a file" not in folder.stderr
