"""A retired skill's name is taken (the outside check found `skills new --name <retired skill>`
turning an unrelated new skill into the next release of the retired one, silently bringing it
back): `skills new` refuses it before any model call, and so does the names rule every DERIVED or
CAPTURED candidate goes through at proposal and at publish."""

from __future__ import annotations

import shutil

import pytest
from conftest import run_cli
from evolve_fakes import SKILL, new_workspace

from skillforge.errors import NameTaken
from skillforge.evolution.archive import check_name, name_verdict
from skillforge.library.store import Store
from skillforge.rules.names import NameVerdict
from skillforge.runners.evolve import Runner
from skillforge.state.evolve import Candidate, CandidateKind, EvolveState


def retired_without_folder(tmp_path):  # noqa: ANN001, ANN201 - a Workspace
    ws = new_workspace(tmp_path / "ws")
    run_cli(["release", "retire", SKILL, "-w", str(ws.root)])
    shutil.rmtree(ws.skills_dir / SKILL)
    return ws


def test_skills_new_refuses_a_retired_name_before_anything_runs(tmp_path) -> None:
    ws = retired_without_folder(tmp_path)
    calls = []
    runner = Runner(ws, llm_factory=lambda budget: calls.append(budget))
    with pytest.raises(NameTaken, match="retired skill.*release revert"):
        runner.capture("track a flight's status", name=SKILL)
    assert calls == [] and runner.rows() == []
    proc = run_cli(["skills", "new", "track a flight's status", "--name", SKILL, "-w", str(ws.root)], ok=2)
    assert "is a retired skill" in proc.stderr
    assert not (ws.skills_dir / SKILL).exists()
    assert Store(ws.db_path).retired_names() == [SKILL]


def test_a_new_skill_candidate_may_not_take_a_retired_name(tmp_path) -> None:
    ws = retired_without_folder(tmp_path)
    store = Store(ws.db_path)
    state = EvolveState(run_id="new-x-1", skill=SKILL, need="track flights", max_rounds=1)
    for kind in (CandidateKind.CAPTURED, CandidateKind.DERIVED):
        cand = Candidate(id="c1", kind=kind, target=SKILL, patch="x", patch_format="full")
        assert name_verdict(ws, store, state, cand) is NameVerdict.REGISTERED
        with pytest.raises(NameTaken):
            check_name(ws, store, state, cand)
    free = Candidate(id="c2", kind=CandidateKind.CAPTURED, target="flight-status", patch="x", patch_format="full")
    assert name_verdict(ws, store, state, free) is NameVerdict.NEW
