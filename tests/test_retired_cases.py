"""A skill retired with `release retire` keeps its evaluation cases in the sets (for a `release
revert`), and they never stop the evaluation of another skill: before, `load_sets` refused every
set with "cases for unknown skill(s)", so evaluate and evolve of every other skill failed. Router
lines labelled with it are refused as retired (with the way back), not as an unknown skill.
A real workspace: SQLite store, git, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import flat, run_cli
from evaluate_fakes import fake_llm
from test_skill_split import split_workspace

from skillforge.context import eval_context
from skillforge.evaluation.datasets import DatasetError, cases_for, load_sets
from skillforge.library.registry import SkillRegistry
from skillforge.library.splitlinks import workspace_retired
from skillforge.routing.eval import load_eval_cases

GONE, LIVE = "weather-brief", "convert-anything"


def test_a_retired_skills_cases_stay_and_evaluating_another_skill_works(tmp_path: Path) -> None:
    ws = split_workspace(tmp_path / "ws")
    before = {c.id for c in cases_for(load_sets(ws)["split-dev"], GONE)}
    assert before
    run_cli(["release", "retire", GONE, "-w", str(ws.root)])
    assert workspace_retired(ws) == [GONE]

    registry = SkillRegistry.load(ws)
    assert GONE not in registry.names()
    sets = load_sets(ws, registry.names())  # what eval_context loads for any skill
    assert {c.id for c in cases_for(sets["split-dev"], GONE)} == before  # kept, labelled as written
    assert len(cases_for(sets["split-dev"], LIVE)) == 12
    ctx = eval_context(ws, fake_llm()[0])  # evaluate and evolve of a live skill start from this
    assert ctx.sets["split-dev"] == sets["split-dev"]

    # a case for a skill the store never had is still refused: a typo is not a retirement
    path = ws.evaluation_sets_dir / "typo.json"
    path.write_text(json.dumps({"meta": {"name": "typo", "partition": "dev", "skills": ["wether-brief"]},
                                "cases": [{"id": "typo-1", "skill": "wether-brief", "query": "rain in Oslo?"}]}),
                    encoding="utf-8")
    with pytest.raises(DatasetError, match="typo.json: cases for unknown skill"):
        load_sets(ws, registry.names())
    path.unlink()

    # the retired skill itself is refused as retired, with the way back
    refused = run_cli(["evaluate", GONE, "--aa", "-w", str(ws.root)], ok=2)
    assert "retired" in flat(refused.stderr).lower() and "release revert" in flat(refused.stderr)

    run_cli(["release", "revert", GONE, "-w", str(ws.root)])
    assert workspace_retired(ws) == []
    assert {c.id for c in cases_for(load_sets(ws, SkillRegistry.load(ws).names())["split-dev"], GONE)} == before


def test_a_router_line_for_a_retired_skill_is_refused_as_retired(tmp_path: Path) -> None:
    ws = split_workspace(tmp_path / "ws")
    cases = tmp_path / "route.jsonl"
    cases.write_text(json.dumps({"query": "will it rain in Oslo tomorrow", "expected": GONE}) + "\n"
                     + json.dumps({"query": "convert 5 miles to km", "expected": LIVE}) + "\n", encoding="utf-8")
    names = SkillRegistry.load(ws).names()
    assert [c.expected for c in load_eval_cases(cases, names)] == [GONE, LIVE]

    run_cli(["release", "retire", GONE, "-w", str(ws.root)])
    for command in (["route", "eval", "--cases", str(cases), "--no-llm"], ["route", "calibrate", "--cases", str(cases)],
                    ["route", "fit", "--cases", str(cases)]):
        refused = flat(run_cli([*command, "-w", str(ws.root)], ok=2).stderr)
        assert f"route.jsonl:1: '{GONE}' is retired" in refused, command
        assert f"skillforge release revert {GONE}" in refused and "unknown skill" not in refused
