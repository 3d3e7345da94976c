"""End to end in the scripted world: shipped transcripts -> harvest -> a person accepts -> evolve
-> PENDING_REVIEW, with no transcript-derived holdout case in any proposer prompt; and the nightly
loop through the CLI (`evolve --all --from-sessions`, `schedule`)."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pytest
from conftest import flat, run_cli

from skillforge.evaluation.datasets import load_sets
from skillforge.runners.evolve import Runner
from skillforge.sessions import review as rv
from skillforge.sessions.harvest import harvest
from skillforge.sessions.staging import read_staged
from skillforge.state.evaluate import VISIBLE_TO_PROPOSER, Partition
from skillforge.testing.evolve_world import SKILL, World, eta_patch, new_workspace

SESSIONS = Path(__file__).resolve().parents[1] / "example_sessions"


class Recording(World):
    """The scripted world, keeping the text of every proposer request."""

    def __init__(self, *a, **kw) -> None:
        super().__init__(*a, **kw)
        self.prompts: list[str] = []

    def proposer_reply(self, messages):  # noqa: ANN001, ANN201
        self.prompts.append("\n".join(str(m.content) for m in messages))
        return super().proposer_reply(messages)


def test_transcripts_to_pending_review_with_the_holdout_kept_blind(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    report = harvest(ws, "auto", SESSIONS)
    assert len(report.staged) >= 4 and report.duplicates >= 1 and report.redactions["phone"] >= 1
    world = Recording(lambda r: [eta_patch(claimed=2)])
    runner = Runner(ws, llm_factory=world.llm)
    assert runner.start(SKILL)["status"] == "NO_FAILURES"  # staged, not reviewed: nothing counts yet
    assert world.prompts == []
    for case in report.staged:
        rv.accept(ws, case.id)
    accepted = read_staged(ws, SKILL).cases
    hidden = [c for c in accepted if c.partition not in VISIBLE_TO_PROPOSER]
    visible = [c for c in accepted if c.partition in VISIBLE_TO_PROPOSER]
    assert hidden and visible, [c.partition for c in accepted]  # the shipped ids hash to both sides
    out = runner.start(SKILL)
    assert out["status"] == "PENDING_REVIEW", out
    prompts = "\n".join(world.prompts)
    assert prompts and any(c.query in prompts for c in visible)  # the proposer learnt from the reviewed failures
    for c in hidden:
        assert c.query not in prompts and c.id not in prompts
        for value in c.fixtures.values():
            assert json.dumps(value, ensure_ascii=False) not in prompts
    sets = load_sets(ws)
    holdout_ids = {c.id for s in sets.values() if s.meta.partition is Partition.HOLDOUT for c in s.cases}
    assert {c.id for c in hidden if c.partition is Partition.HOLDOUT} <= holdout_ids
    assert "[REDACTED:phone]" in json.dumps([c.query for c in accepted], ensure_ascii=False)
    assert "138 0013 8000" not in (ws.evaluation_sets_dir / "staged" / f"{SKILL}.json").read_text(encoding="utf-8")


def test_the_nightly_loop_stages_accepts_nothing_and_evolves_nothing_unreviewed(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    env = {"SKILLFORGE_LLM_MODEL": "m", "SKILLFORGE_LLM_BASE_URL": "http://127.0.0.1:9/v1"}  # never reached
    proc = run_cli(["evolve", "--all", "--from-sessions", str(SESSIONS), "--json", "-w", str(ws.root)], env=env)
    out = json.loads(proc.stdout)
    assert out["evolved"] == [] and out["runs"] == [] and out["waiting_for_review"] == len(out["harvest"]["staged"]) >= 4
    assert all(c.status == "pending" for c in read_staged(ws, SKILL).cases)
    again = run_cli(["evolve", "--all", "--from-sessions", str(SESSIONS), "-w", str(ws.root)], env=env)
    assert "staged 0 new cases" in flat(again.stdout) and "nothing to evolve" in flat(again.stdout)
    refused = run_cli(["evolve", SKILL, "--from-sessions", str(SESSIONS), "-w", str(ws.root)], env=env, ok=2)
    assert "--all" in flat(refused.stderr)


def test_harvest_cli_dry_run_writes_nothing_and_bad_input_is_named(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    dry = run_cli(["sessions", "harvest", str(SESSIONS), "--dry-run", "-w", str(ws.root)])
    assert "staged" in dry.stdout and not (ws.evaluation_sets_dir / "staged").exists()
    for args, why in [(["sessions", "harvest", str(tmp_path / "nope")], "no such file"),
                      (["sessions", "harvest", str(SESSIONS), "--source", "cursor"], "--source"),
                      (["sessions", "harvest", str(SESSIONS), "--since", "last tuesday"], "--since")]:
        bad = run_cli([*args, "-w", str(ws.root)], ok=None)
        assert bad.returncode != 0 and why in flat(bad.stderr), bad.stderr
    later = run_cli(["sessions", "harvest", str(SESSIONS), "--since", "2026-11-27", "--json", "-w", str(ws.root)])
    got = json.loads(later.stdout)
    assert got["transcripts"] == 3 and len(got["staged"]) == 2  # only the sessions of Nov 27 and after


@pytest.mark.parametrize("at", ["03:17", "23:05"])
def test_schedule_prints_a_cron_line_and_installs_nothing(tmp_path, at):
    ws = new_workspace(tmp_path / "ws")
    line = run_cli(["schedule", "--at", at, "--from-sessions", str(SESSIONS), "-w", str(ws.root)]).stdout.strip()
    hour, minute = at.split(":")
    fields = line.split(" ", 5)
    assert fields[:5] == [str(int(minute)), str(int(hour)), "*", "*", "*"]
    assert "evolve --all --from-sessions" in line and str(SESSIONS) in line and str(ws.root) in line
    assert "runs/nightly.log" in line
    program = shlex.split(fields[5])[0]  # QA pass 16 M5: was the package's __main__.py (not executable) under -m
    assert Path(program).is_file() and os.access(program, os.X_OK), program
    noted = run_cli(["schedule", "--from-sessions", str(SESSIONS), "-w", str(ws.root)],
                    {"SKILLFORGE_LLM_BASE_URL": "http://127.0.0.1:9/v1", "SKILLFORGE_LLM_MODEL": "m"})
    said = flat(noted.stderr)
    assert "will not reach it" in said and "SKILLFORGE_LLM_BASE_URL" in said and "SKILLFORGE_LLM_MODEL" in said
    assert "127.0.0.1" not in said  # names only: a value may be a key
    bad = run_cli(["schedule", "--at", "25:00", "-w", str(ws.root)], ok=2)
    assert "HH:MM" in flat(bad.stderr)


def test_schedule_escapes_percent_for_cron_and_warns_of_a_missing_folder(tmp_path):
    """QA 22 MESSAGE-1/2: cron ends a command at a bare % (the rest becomes its stdin), so a path
    holding one ran the harvest on a cut path without -w or the log; a folder that does not exist was
    printed without a word, and every night would fail into nightly.log."""
    ws = new_workspace(tmp_path / "ws%d")
    folder = tmp_path / "pct%dir"
    folder.mkdir()
    line = run_cli(["schedule", "--from-sessions", str(folder), "-w", str(ws.root)]).stdout.strip()
    command = line.split(" ", 5)[5]
    assert "%" not in command.replace("\\%", "") and command.count("\\%") == 3  # the folder, -w and the log
    assert "does not exist" not in run_cli(["schedule", "--from-sessions", str(folder), "-w", str(ws.root)]).stderr
    missing = run_cli(["schedule", "--from-sessions", str(tmp_path / "nope"), "-w", str(ws.root)])
    assert missing.stdout.startswith("17 3 * * * ") and "does not exist (yet)" in flat(missing.stderr)
