"""What a newcomer meets first (QA pass 16): the error outside a workspace names -w before `init`;
`init` inside another git repository says where releases will be committed; a dry-run harvest
says it would stage; an evaluation in a workspace with no sets says where sets come from."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from conftest import EXAMPLE_SKILLS, REPO, flat, run_cli


def test_outside_a_workspace_the_error_names_w_before_init(tmp_path):
    proc = run_cli(["skills", "list"], cwd=tmp_path, ok=2)
    said = flat(proc.stderr)
    assert "is not a SkillForge workspace" in said and "-w DIR" in said and "SKILLFORGE_WORKSPACE" in said
    assert said.index("-w DIR") < said.index("skillforge init DIR")
    assert f"skillforge init {tmp_path}" not in said  # was its first remedy: making the wrong folder a workspace


def test_init_inside_another_repository_says_so_and_a_new_one_does_not(tmp_path):
    outer = tmp_path / "project"
    outer.mkdir()
    subprocess.run(["git", "init", "-q", str(outer)], check=True)
    inside = run_cli(["init", str(outer / "ws")])
    assert "inside the git repository at" in flat(inside.stdout) and str(outer) in flat(inside.stdout)
    alone = run_cli(["init", str(tmp_path / "own")])
    assert "inside the git repository" not in alone.stdout and (tmp_path / "own" / ".git").is_dir()


def test_a_dry_run_harvest_says_it_would_stage(tmp_path):
    ws = tmp_path / "ws"
    run_cli(["init", str(ws)])
    run_cli(["skills", "import", "--from", str(EXAMPLE_SKILLS), "-w", str(ws)])
    sessions = REPO / "example_sessions"
    dry = flat(run_cli(["sessions", "harvest", str(sessions), "--dry-run", "-w", str(ws)]).stdout)
    assert "would stage" in dry and "(dry run: nothing written)" in dry and not re.search(r"\bstaged \d", dry)
    assert not list((ws / "evaluation_sets").glob("staged/*"))


def test_evaluate_in_a_workspace_with_no_sets_says_where_sets_come_from(tmp_path):
    ws = tmp_path / "ws"
    run_cli(["init", str(ws)])
    run_cli(["skills", "import", "--from", str(EXAMPLE_SKILLS), "-w", str(ws)])
    proc = run_cli(["evaluate", "taxi-hailing", "--candidate", str(Path(ws) / "skills" / "taxi-hailing"), "-w", str(ws)],
                   {"SKILLFORGE_LLM_BASE_URL": "http://127.0.0.1:9/v1", "SKILLFORGE_LLM_MODEL": "m"}, ok=2)
    said = flat(proc.stderr)
    assert "this workspace has none" in said and "evaluation_sets/" in said and "copies skills only" in said


def test_skills_show_with_an_empty_release_is_a_usage_error(tmp_path):
    """QA pass 15 MESSAGE-6: `skills show NAME --release ""` showed the current release (exit 0)."""
    ws = tmp_path / "ws"
    run_cli(["init", str(ws)])
    run_cli(["skills", "import", "--from", str(EXAMPLE_SKILLS), "-w", str(ws)])
    said = flat(run_cli(["skills", "show", "taxi-hailing", "--release", "", "-w", str(ws)], ok=2).stderr)
    assert '--release "": give a release id' in said
    assert run_cli(["skills", "show", "taxi-hailing", "-w", str(ws)]).stdout.strip()
