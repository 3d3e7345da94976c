"""The next steps a command prints work when pasted into another terminal (QA pass 16 M1): with a
workspace given by -w that is not the current folder (nor $SKILLFORGE_WORKSPACE), each
`skillforge ...` command in them carries `-w WS`, quoted; run from the workspace itself, none."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from conftest import flat, run_cli
from evolve_fakes import SKILL, World, new_workspace, seed_failures
from metered_world import env_for
from skillforge.cli.common import pasteable
from skillforge.config import WORKSPACE_ENV, Workspace
from world_server import WorldServer


@pytest.fixture
def opened(monkeypatch, tmp_path):
    root = (tmp_path / "my ws").resolve()
    monkeypatch.setattr(Workspace, "opened", root)
    monkeypatch.delenv(WORKSPACE_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    return root


def test_each_command_gets_the_flag_before_what_follows_it(opened):
    flag = f"-w {shlex.quote(str(opened))}"
    said = pasteable('then: skillforge review approve R1 --comment "..."  (or: skillforge review reject R1)')
    assert said == (f'then: skillforge review approve R1 --comment "..." {flag}  '
                    f"(or: skillforge review reject R1 {flag})")
    assert pasteable("(if it stops: skillforge evaluate --resume R)") == f"(if it stops: skillforge evaluate --resume R {flag})"
    assert pasteable("`skillforge review rebase R` re-applies") == f"`skillforge review rebase R {flag}` re-applies"
    kept = f"skillforge skills import --from x --rename -w {shlex.quote(str(opened))}"
    assert pasteable(kept) == kept  # a command that names its workspace already
    assert pasteable("skillforge.toml [llm]: SkillForge workspace") == "skillforge.toml [llm]: SkillForge workspace"
    # a command ends at ", " (QA 43 M3: the flag landed after ", and start a new run on the live release")
    assert pasteable("Next: skillforge review reject R, and start a new run (skillforge evolve s)") == \
        f"Next: skillforge review reject R {flag}, and start a new run (skillforge evolve s {flag})"
    assert pasteable("skillforge route eval --k 1,3") == f"skillforge route eval --k 1,3 {flag}"


def test_no_flag_where_a_bare_command_finds_the_workspace(opened, monkeypatch):
    monkeypatch.chdir(opened.parent)
    opened.mkdir()
    monkeypatch.chdir(opened)
    assert pasteable("next: skillforge evolve --resume R") == "next: skillforge evolve --resume R"
    monkeypatch.chdir(opened.parent)
    monkeypatch.setenv(WORKSPACE_ENV, str(opened))
    assert pasteable("next: skillforge evolve --resume R") == "next: skillforge evolve --resume R"
    monkeypatch.setattr(Workspace, "opened", None)
    monkeypatch.delenv(WORKSPACE_ENV)
    assert pasteable("next: skillforge evolve --resume R") == "next: skillforge evolve --resume R"


def test_a_paused_evolve_prints_its_next_step_with_the_workspace(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    seed_failures(ws, World(lambda r: []).llm())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with WorldServer() as srv:
        env = env_for(srv, retries=0)
        away = flat(run_cli(["evolve", SKILL, "--budget-calls", "5", "-w", str(ws.root)], env, cwd=elsewhere, ok=4).stdout)
        run_id = next(w for w in away.split() if w.startswith("evolve-")).rstrip(",)")
        flag = f"-w {shlex.quote(str(Path(ws.root).resolve()))}"
        assert f"skillforge evolve --resume {run_id} --budget-calls" in away and flag in away, away
        assert f"skillforge runs cancel {run_id} {flag}" in away
        home = flat(run_cli(["runs", "show", run_id], env, cwd=ws.root).stdout)
        assert f"skillforge runs cancel {run_id}" in home and " -w " not in home
