"""QA28 F4 and F5: `--min-reject` says what is wrong with nan / inf / out-of-range values, and the
`--rename` clash with a folder that keeps its name (a registered skill) names it and gives the way out."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import flat, run_cli
from test_import_rename import registered, write_skill


@pytest.mark.parametrize(("value", "said"), [
    ("nan", "'nan' is not a number"), ("NaN", "'NaN' is not a number"), ("abc", "'abc' is not a number"),
    ("inf", "inf must be between 0 and 1"), ("-inf", "-inf must be between 0 and 1"),
    ("-0.1", "-0.1 must be between 0 and 1"), ("1.5", "1.5 must be between 0 and 1"),
])
def test_min_reject_says_what_is_wrong(tmp_path: Path, value: str, said: str) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text('{"query": "q", "expected": null}\n', encoding="utf-8")
    for cmd in ("fit", "calibrate"):
        proc = run_cli(["route", cmd, "--cases", str(cases), f"--min-reject={value}", "-w", str(tmp_path)], ok=2)
        text = flat(proc.stderr)
        assert f"Invalid value for '--min-reject': {said}" in text and "less than or equal" not in text


def test_rename_clash_with_a_folder_kept_as_is_names_it(tmp_path: Path) -> None:
    src, ws = tmp_path / "src", tmp_path / "ws"
    write_skill(src / "My_Tool", "My_Tool")
    write_skill(src / "my-tool", "my-tool")
    run_cli(["init", str(ws)])
    run_cli(["skills", "import", "--from", str(src), "-w", str(ws)], ok=1)   # imports my-tool, refuses My_Tool
    assert registered(ws) == ["my-tool"]
    said = flat(run_cli(["skills", "import", "--from", str(src), "--rename", "-w", str(ws)], ok=2).stderr)
    assert "'my-tool' <- My_Tool, my-tool (my-tool keeps that name as is: the workspace's skill 'my-tool' already)" in said
    assert "Rename My_Tool by hand (or leave My_Tool out: import the other folders without it)" in said
    assert "Rename those folders" not in said and registered(ws) == ["my-tool"]


def test_rename_clash_of_two_renamed_folders_keeps_the_alone_hint(tmp_path: Path) -> None:
    src, ws = tmp_path / "src", tmp_path / "ws"
    write_skill(src / "Foo_Bar", "Foo_Bar")
    write_skill(src / "Foo Bar", "Foo Bar")
    run_cli(["init", str(ws)])
    said = flat(run_cli(["skills", "import", "--from", str(src), "--rename", "-w", str(ws)], ok=2).stderr)
    assert "'foo-bar' <- Foo Bar, Foo_Bar. Rename Foo Bar, Foo_Bar by hand (or give the name to one of them by " \
           "importing its folder alone)" in said
