"""Who published, reverted or retired a release, and why (QA 18 MESSAGE-3): `release publish`,
`release revert` and `release retire` record the login name and an optional `--comment/-m` in the
release's "triggered by", which `releases list` shows."""

from __future__ import annotations

import getpass
import json
import os
import shutil
from pathlib import Path

from conftest import EXAMPLE_SKILLS, run_cli

SKILL = "news-digest"


def test_publish_revert_and_retire_say_who_and_why(examples_ws: Path, tmp_path: Path) -> None:
    ws, user = str(examples_ws), getpass.getuser()
    cand = tmp_path / SKILL
    shutil.copytree(EXAMPLE_SKILLS / SKILL, cand)
    (cand / "SKILL.md").write_text((cand / "SKILL.md").read_text() + "- Name the source of every item.\n")
    run_cli(["release", "publish", SKILL, "--from", str(cand), "-m", "sources\nmust be   named", "-w", ws])
    run_cli(["release", "revert", SKILL, "1.2.0", "--comment", "readers complained", "-w", ws])
    run_cli(["release", "retire", SKILL, "-m", "replaced by a digest skill", "-w", ws])
    rows = json.loads(run_cli(["releases", "list", SKILL, "-w", ws, "--json"]).stdout)
    triggers = [r["triggered_by"] for r in rows]
    assert triggers[-2:] == [f"cli publish by {user}: sources must be named",
                             f"revert to 1.2.0 (cli by {user}: readers complained)"]
    [retired] = [t for r in rows for t in r["retirements"]]
    assert retired["triggered_by"] == f"cli retire by {user}: replaced by a digest skill"
    shown = run_cli(["releases", "list", SKILL, "-w", ws]).stdout
    assert f"cli retire by {user}: replaced by a digest skill" in " ".join(shown.split())


def test_without_a_comment_the_user_is_still_recorded(examples_ws: Path, tmp_path: Path) -> None:
    ws = str(examples_ws)
    cand = tmp_path / SKILL
    shutil.copytree(EXAMPLE_SKILLS / SKILL, cand)
    (cand / "SKILL.md").write_text((cand / "SKILL.md").read_text() + "- Keep it short.\n")
    run_cli(["release", "publish", SKILL, "--from", str(cand), "-w", ws])
    rows = json.loads(run_cli(["releases", "list", SKILL, "-w", ws, "--json"]).stdout)
    assert rows[-1]["triggered_by"] == f"cli publish by {getpass.getuser()}"


def test_without_a_login_name_the_uid_is_recorded(monkeypatch):
    """A bare container has no LOGNAME/USER and no passwd entry: getpass.getuser() raises there, and
    publish, revert, review and runs cancel all record `uid N` instead (they share common.login_name)."""
    from skillforge.cli import common

    def nobody() -> str:
        raise OSError("No username set in the environment")
    monkeypatch.setattr(getpass, "getuser", nobody)
    assert common.login_name() == f"uid {os.getuid()}"
    assert common.by_user("cli publish", " fix \n the name ") == f"cli publish by uid {os.getuid()}: fix the name"
