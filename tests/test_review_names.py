"""A DERIVED or CAPTURED candidate never takes an existing skill's name (issue 21, item 5): the rule
on its edges, the check stage (it never reaches review), publish (defence in depth), and what
`review show` shows for a new skill: its name and its whole file."""

from __future__ import annotations

import json

import pytest

from cli_fork import ForkCLI
from evolve_fakes import QUOTE_ETA, SKILL, World, new_workspace, seed_failures
from skillforge.runners.evolve import Runner
from skillforge.errors import NameTaken
from skillforge.evolution.archive import publish_candidate
from skillforge.evolution.propose import PatchProposal
from skillforge.library.registry import SkillRegistry
from skillforge.state.evolve import Candidate, CandidateKind, EvolveState, PatchFormatName


def _live_text(ws, name=SKILL) -> str:
    reg = SkillRegistry.load(ws)
    rel = reg.get(name).release
    return reg.repo.read(rel.commit_hash, f"{rel.skill_path}/SKILL.md").decode("utf-8")


def _renamed(ws, name: str) -> str:
    return _live_text(ws).replace(f"name: {SKILL}", f"name: {name}").replace(
        "## Instructions", f"## Instructions\n- {QUOTE_ETA}：报价时同时告诉用户司机预计多久到达。")


@pytest.mark.parametrize("kind,target", [("CAPTURED", "hotel-booking"), ("DERIVED", "sql-query-helper"),
                                         ("DERIVED", "half-made")])
def test_a_new_skill_candidate_with_a_taken_name_is_refused_at_check(tmp_path, kind, target):
    ws = new_workspace(tmp_path / "ws")
    (ws.skills_dir / "half-made").mkdir()
    (ws.skills_dir / "half-made" / "notes.txt").write_text("a folder someone is filling by hand\n")
    before = _live_text(ws, "hotel-booking")
    taker = PatchProposal(kind=kind, target_name=target, format="full", patch=_renamed(ws, target),
                          rationale="a taxi skill under another name", claimed_level=2)
    world = World(lambda r: [taker])
    seed_failures(ws, world.llm())
    runner = Runner(ws, llm_factory=world.llm)
    out = runner.start(SKILL, max_rounds=1)
    assert out["status"] == "NO_IMPROVEMENT", out
    cand = runner.state(out["run_id"]).candidates[0]
    assert (cand.verdict.value, cand.rejected_by) == ("REFUSED", "name")
    assert any(target in n for n in cand.notes), cand.notes
    assert "selection" not in cand.validation  # never evaluated, never in review
    assert _live_text(ws, "hotel-booking") == before


def test_publish_refuses_a_taken_name_even_when_the_check_was_passed(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    before = SkillRegistry.load(ws).get("hotel-booking").release
    state = EvolveState(run_id="evolve-takeover", skill=SKILL)
    cand = Candidate(id="r1c1", kind=CandidateKind.CAPTURED, target="hotel-booking", patch="",
                     patch_format=PatchFormatName.FULL, text=_renamed(ws, "hotel-booking"), level=2)
    with pytest.raises(NameTaken, match="hotel-booking"):
        publish_candidate(ws, state, cand, {})
    assert SkillRegistry.load(ws).get("hotel-booking").release == before
    from skillforge.library.store import Store
    assert [r.triggered_by for r in Store(ws.db_path).releases("hotel-booking")] == ["import"]


def test_review_show_names_the_new_skill_and_prints_its_whole_file(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    text = _renamed(ws, "taxi-eta")
    new = PatchProposal(kind="DERIVED", target_name="taxi-eta", format="full", patch=text,
                        rationale="a variant that quotes the ETA", claimed_level=2)
    world = World(lambda r: [new])
    seed_failures(ws, world.llm())
    out = Runner(ws, llm_factory=world.llm).start(SKILL)
    assert out["status"] == "PENDING_REVIEW", out
    w = ["-w", str(ws.root)]
    cli = ForkCLI()
    shown = cli.run(["review", "show", out["run_id"], *w]).stdout
    assert "new skill taxi-eta" in shown and "DERIVED" in shown
    assert "name: taxi-eta" in shown and "## Overview" in shown and "## Constraints" in shown  # the whole file
    data = json.loads(cli.run(["review", "show", out["run_id"], "--json", *w]).stdout)
    assert data["target"] == "taxi-eta" and data["kind"] == "DERIVED" and data["new_file"] == text
    done = json.loads(cli.run(["review", "approve", out["run_id"], "--json", *w]).stdout)
    cli.close()
    assert done["status"] == "PUBLISHED" and "taxi-eta" in SkillRegistry.load(ws).names()
