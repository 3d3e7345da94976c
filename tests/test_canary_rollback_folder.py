"""A canary published from the working tree and rolled back leaves the live bytes in the skill
folder and in git (the outside check found the declined bytes left there, and the next plain
`release publish` shipped them to everyone). An edit made after the canary began is left alone."""

from __future__ import annotations

import json
import shlex
import subprocess
import time
from pathlib import Path

from conftest import run_cli

from skillforge.config import Workspace

SKILL = "news-digest"
EXAMPLES = Path(__file__).resolve().parents[1] / "skills"


def git(ws: Workspace, *args: str) -> str:
    return subprocess.run(["git", "-C", str(ws.root), *args], capture_output=True, text=True, check=True).stdout


def workspace(tmp_path: Path) -> tuple[Workspace, bytes]:
    root = tmp_path / "ws"
    run_cli(["init", str(root)])
    run_cli(["skills", "import", "--from", str(EXAMPLES), "-w", str(root)])
    ws = Workspace.open(root)
    return ws, (ws.skills_dir / SKILL / "SKILL.md").read_bytes()


def canary_from_worktree(ws: Workspace, line: str) -> None:
    with (ws.skills_dir / SKILL / "SKILL.md").open("a", encoding="utf-8") as fh:
        fh.write(f"- {line}\n")
    run_cli(["release", "publish", SKILL, "--canary", "10%", "-w", str(ws.root)])


def test_rollback_puts_the_live_bytes_back_and_nothing_ships_the_declined_canary(tmp_path: Path) -> None:
    ws, live_bytes = workspace(tmp_path)
    canary_from_worktree(ws, "CANARY line")
    out = run_cli(["canary", "rollback", SKILL, "--reason", "bad", "-w", str(ws.root)]).stdout
    assert "holds release 1.2.0 again" in " ".join(out.split())
    assert (ws.skills_dir / SKILL / "SKILL.md").read_bytes() == live_bytes
    assert git(ws, "status", "--porcelain", "skills") == ""
    assert git(ws, "show", f"HEAD:skills/{SKILL}/SKILL.md").encode() == live_bytes
    listed = json.loads(run_cli(["skills", "list", "--json", "-w", str(ws.root)]).stdout)
    assert next(r for r in listed["skills"] if r["name"] == SKILL)["worktree"] == "clean"
    refused = run_cli(["release", "publish", SKILL, "-w", str(ws.root)], ok=2)
    assert "nothing to publish" in refused.stderr
    rows = json.loads(run_cli(["releases", "list", SKILL, "--json", "-w", str(ws.root)]).stdout)
    statuses = sorted(r["status"] for r in rows)
    assert statuses == ["DECLINED", "PUBLISHED"]
    commit = next(r for r in rows if r["status"] == "DECLINED")["commit_hash"]
    assert b"CANARY line" in git(ws, "show", f"{commit}:skills/{SKILL}/SKILL.md").encode()  # kept in git


def test_an_edit_made_after_the_canary_began_is_left_alone(tmp_path: Path) -> None:
    ws, live_bytes = workspace(tmp_path)
    canary_from_worktree(ws, "CANARY line")
    path = ws.skills_dir / SKILL / "SKILL.md"
    path.write_bytes(path.read_bytes() + b"- a later edit\n")
    edited = path.read_bytes()
    proc = run_cli(["canary", "rollback", SKILL, "--reason", "bad", "-w", str(ws.root)])
    assert "was edited after the canary began and is left as it is" in " ".join(proc.stderr.split())
    assert path.read_bytes() == edited != live_bytes


def test_tick_warns_of_an_edited_folder_and_names_the_git_command_that_gives_the_live_bytes(tmp_path: Path) -> None:
    """QA: `canary tick` (what cron runs) rolled back without a word about an edited folder, and the
    rollback warning said "discard the edits", whose git way (`git checkout -- DIR`) gives the declined
    bytes, since HEAD is the declined commit. Now the tick warns too, naming a command that works."""
    from canary_world import canary_workspace

    ws, _, _ = canary_workspace(tmp_path / "ws", max_age_hours=0.0002, files=False)  # expires in 0.72 s
    path = ws.skills_dir / SKILL / "SKILL.md"
    path.write_bytes(path.read_bytes() + b"- a later edit\n")
    time.sleep(1.0)
    proc = run_cli(["canary", "tick", "-w", str(ws.root)])
    said = " ".join(proc.stderr.split())
    assert "was edited after the canary began and is left as it is" in said, proc.stdout + proc.stderr
    assert b"a later edit" in path.read_bytes()
    command = said.split("putting the live bytes back: ", 1)[1].split(" (a plain", 1)[0]
    subprocess.run(shlex.split(command), check=True, capture_output=True)
    assert path.read_bytes() == (EXAMPLES / SKILL / "SKILL.md").read_bytes()


def test_a_declined_canarys_version_is_not_given_again_and_names_it(tmp_path: Path) -> None:
    """QA: after a rollback the next publish was numbered 1.2.1 again (two 1.2.1 rows, other bytes),
    and `skills show --release 1.2.1` called its one match ambiguous."""
    ws, _ = workspace(tmp_path)
    canary_from_worktree(ws, "CANARY line")  # 1.2.1
    listed = json.loads(run_cli(["skills", "list", "--json", "-w", str(ws.root)]).stdout)
    assert next(r for r in listed["skills"] if r["name"] == SKILL)["worktree"] == "canary 1.2.1"  # not "modified"
    run_cli(["canary", "rollback", SKILL, "--reason", "bad", "-w", str(ws.root)])
    shown = run_cli(["skills", "show", SKILL, "--release", "1.2.1", "-w", str(ws.root)])
    assert "CANARY line" in shown.stdout and "DECLINED" in shown.stderr
    with (ws.skills_dir / SKILL / "SKILL.md").open("a", encoding="utf-8") as fh:
        fh.write("- a better line\n")
    refused = run_cli(["release", "publish", SKILL, "--version", "1.2.1", "-w", str(ws.root)], ok=2)
    assert "is not above 1.2.1, the highest version published or served to a canary" in " ".join(refused.stderr.split())
    done = run_cli(["release", "publish", SKILL, "-w", str(ws.root)])
    assert f"published {SKILL} 1.2.2 " in done.stdout
    rows = json.loads(run_cli(["releases", "list", SKILL, "--json", "-w", str(ws.root)]).stdout)
    assert sorted((r["version"], r["status"]) for r in rows) == [("1.2.0", "PUBLISHED"), ("1.2.1", "DECLINED"),
                                                                  ("1.2.2", "PUBLISHED")]


def test_a_rollback_after_the_live_bytes_were_put_back_by_hand_says_git_head_still_differs(tmp_path: Path) -> None:
    """QA 49 F4: after `git checkout <live> -- folder`, a rollback made no restore commit and said only
    that the folder holds the live release; git HEAD still held the declined bytes, which a `git reset
    --hard` brings back. The rollback now says so. F5: "which git HEAD is" only when it is."""
    ws, live_bytes = workspace(tmp_path)
    canary_from_worktree(ws, "CANARY line")
    rows = json.loads(run_cli(["releases", "list", SKILL, "--json", "-w", str(ws.root)]).stdout)
    live = next(r for r in rows if r["status"] == "PUBLISHED")["commit_hash"]
    git(ws, "checkout", live, "--", f"skills/{SKILL}")
    proc = run_cli(["canary", "rollback", SKILL, "--reason", "bad", "-w", str(ws.root)])
    said = " ".join(proc.stderr.split())
    assert "holds release 1.2.0 again" in " ".join(proc.stdout.split())
    assert git(ws, "show", f"HEAD:skills/{SKILL}/SKILL.md").encode() != live_bytes  # no restore commit was made
    assert f"git HEAD ({git(ws, 'rev-parse', 'HEAD')[:10]}) does not hold release 1.2.0 of skills/{SKILL}" in said, said


def test_the_edited_folder_warning_names_git_head_only_when_it_is_the_declined_commit(tmp_path: Path) -> None:
    ws, _ = workspace(tmp_path)
    canary_from_worktree(ws, "CANARY line")
    path = ws.skills_dir / SKILL / "SKILL.md"
    path.write_bytes(path.read_bytes() + b"- a later edit\n")
    git(ws, "add", "-A")
    git(ws, "-c", "user.name=u", "-c", "user.email=u@example.org", "commit", "-qm", "user edit")
    said = " ".join(run_cli(["canary", "rollback", SKILL, "--reason", "bad", "-w", str(ws.root)]).stderr.split())
    assert "was edited after the canary began" in said and "which git HEAD is" not in said, said
