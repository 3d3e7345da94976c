"""Approve never publishes onto a base it did not see (issue 21, item 5): a hand hotfix, a revert or
another run's release between PENDING_REVIEW and `review approve` is refused, naming both releases;
`review show` warns and diffs against the live release too; `review rebase` re-applies the candidate
on the new base and sends it through the checks and validation again. Real workspaces (git +
SQLite), the SqliteSaver checkpointer and the scripted world."""

from __future__ import annotations

import json

import pytest

from conftest import flat
from evolve_fakes import QUOTE_ETA, SKILL, World, eta_patch, examples_patch, new_workspace, seed_failures
from review_world import RUN, copy_of
from skillforge.runners.evolve import Runner
from skillforge.errors import BaseMoved, PublishRefused, UnpublishedChanges
from skillforge.library.registry import SkillRegistry
from skillforge.library.releases import ReleaseStateMachine
from skillforge.state.evolve import EvolveState
from skillforge.state.release import ReleaseStatus
from skillforge.library.store import Store

HOTFIX = "- HOTFIX-LINE：报价后提醒用户核对上车点。"


def live(ws):
    reg = SkillRegistry.load(ws)
    rel = reg.get(SKILL).release
    return rel, reg.repo.read(rel.commit_hash, f"{rel.skill_path}/SKILL.md").decode("utf-8")


def hotfix(ws, line: str = HOTFIX):
    """A person edits the skill's Constraints by hand and publishes it (0.3.2)."""
    path = ws.skills_dir / SKILL / "SKILL.md"
    path.write_text(path.read_text(encoding="utf-8").replace("## Constraints\n", f"## Constraints\n{line}\n"),
                    encoding="utf-8")
    return ReleaseStateMachine.open(ws).publish(SKILL, triggered_by="hand hotfix")


@pytest.fixture
def pending(template, tmp_path):
    """A workspace whose taxi-hailing run waits for review (an L2 ETA fix) on the imported 0.3.1."""
    return copy_of(template, tmp_path / "ws"), World(lambda r: [eta_patch(claimed=2)]), RUN


def _evolve_evidence(ws, run_id):
    return [r for r in Store(ws.db_path).releases(SKILL) if r.triggered_by == f"evolve:{run_id}"]


def test_approve_after_a_hand_hotfix_is_refused_naming_both_releases_and_the_way_forward(pending):
    ws, world, run_id = pending
    base, _ = live(ws)
    fix = hotfix(ws)
    with pytest.raises(BaseMoved) as e:
        Runner(ws, llm_factory=world.llm).answer_review(run_id, "approve", comment="ok")
    msg = str(e.value)
    assert base.version in msg and base.release_id[:8] in msg and fix.version in msg and fix.release_id[:8] in msg
    assert f"skillforge review rebase {run_id}" in msg
    rel, text = live(ws)
    assert rel.release_id == fix.release_id and "HOTFIX-LINE" in text and QUOTE_ETA not in text
    assert not _evolve_evidence(ws, run_id)  # no release row at all, not even an ABANDONED one
    again = Runner(ws, llm_factory=world.llm).summary(run_id)
    assert again["status"] == "PENDING_REVIEW"  # still waiting: rebase or reject are open
    assert not (ws.runs_dir / "reviews" / f"{run_id}.answer.json").exists()


def test_approve_after_a_revert_is_refused(tmp_path):
    """The run starts from a hotfix 0.3.2; a person reverts to 0.3.1; approving would bring the
    reverted hotfix line back."""
    ws = new_workspace(tmp_path / "ws")
    imported, _ = live(ws)
    hotfix(ws)
    world = World(lambda r: [eta_patch(claimed=2)])
    seed_failures(ws, world.llm())
    out = Runner(ws, llm_factory=world.llm).start(SKILL)
    assert out["status"] == "PENDING_REVIEW", out
    reverted = ReleaseStateMachine.open(ws).revert(SKILL, imported.release_id)
    with pytest.raises(BaseMoved) as e:
        Runner(ws, llm_factory=world.llm).answer_review(out["run_id"], "approve")
    assert reverted.release_id[:8] in str(e.value)
    assert "HOTFIX-LINE" not in live(ws)[1]


def test_the_second_of_two_pending_runs_is_refused_after_the_first_is_approved(pending):
    """Two runs pending on one base (a workspace from before one open run per skill can hold
    them): approving the second would erase the first's release."""
    ws, world, first = pending
    other = World(lambda r: [eta_patch(claimed=2, line=f"- {QUOTE_ETA}：报价时说明司机到达时间。")])
    second = Runner(ws, llm_factory=other.llm)
    state = EvolveState(run_id="evolve-second", skill=SKILL)
    second._drive(state.run_id, state, state.budget)  # past the open-run guard, as older versions allowed
    assert second.summary("evolve-second")["status"] == "PENDING_REVIEW"
    done = Runner(ws, llm_factory=world.llm).answer_review(first, "approve")
    assert done["status"] == "PUBLISHED"
    with pytest.raises(BaseMoved):
        second.answer_review("evolve-second", "approve")
    text = live(ws)[1]
    assert "预计多久到达" in text and "说明司机到达时间" not in text


def test_review_show_warns_that_the_base_moved_and_diffs_against_the_live_release(pending, cli):
    ws, world, run_id = pending
    w = ["-w", str(ws.root)]
    fix = hotfix(ws)
    shown = cli.run(["review", "show", run_id, *w]).stdout
    assert "base moved" in shown and fix.version in shown and "HOTFIX-LINE" in shown  # the line approve would drop
    data = json.loads(cli.run(["review", "show", run_id, "--json", *w]).stdout)
    assert data["base_moved"] is True and data["live"]["release_id"] == fix.release_id
    assert "-" + HOTFIX in data["live_diff"] and QUOTE_ETA in data["diff"]
    refused = cli.run(["review", "approve", run_id, *w], ok=2)
    assert f"skillforge review rebase {run_id}" in flat(refused.stderr)


def test_rebase_reapplies_the_candidate_on_the_new_base_validates_again_and_approve_keeps_the_hotfix(pending):
    ws, world, run_id = pending
    fix = hotfix(ws)
    calls = world.executor.position + world.judge.position
    rebased = Runner(ws, llm_factory=world.llm).answer_review(run_id, "rebase", comment="keep the hotfix")
    assert rebased["status"] == "PENDING_REVIEW", rebased
    assert world.executor.position + world.judge.position > calls  # validated again, on the new base
    state = Runner(ws, llm_factory=world.llm).state(run_id)
    assert state.base_release_id == fix.release_id
    cand = next(c for c in state.candidates if c.id == state.selected)
    assert "HOTFIX-LINE" in cand.text and QUOTE_ETA in cand.text and "HOTFIX" not in cand.applied_diff
    assert {"selection", "holdout", "final_audit"} <= set(cand.validation)
    done = Runner(ws, llm_factory=world.llm).answer_review(run_id, "approve", comment="ok")
    assert done["status"] == "PUBLISHED"
    text = live(ws)[1]
    assert "HOTFIX-LINE" in text and QUOTE_ETA in text
    assert [lk.parent for lk in Store(ws.db_path).lineage(done["release_id"])] == [fix.release_id]


def test_rebase_onto_a_release_that_changed_only_other_files_keeps_the_candidate(pending):
    """QA pass 15: the live release changed a reference file only (SKILL.md: its version line). The
    re-applied SKILL.md then normalises to the candidate's own text, and the check refused it as a
    DUPLICATE of itself: the run ended NO_IMPROVEMENT and the fix was lost."""
    ws, world, run_id = pending
    ref = ws.skills_dir / SKILL / "references" / "fares.md"
    ref.parent.mkdir(exist_ok=True)
    ref.write_text("# Fares\n\nNight surcharge applies after 23:00.\n", encoding="utf-8")
    moved = ReleaseStateMachine.open(ws).publish(SKILL, triggered_by="hand: a reference file")
    rebased = Runner(ws, llm_factory=world.llm).answer_review(run_id, "rebase", comment="keep the reference")
    assert rebased["status"] == "PENDING_REVIEW", rebased
    state = Runner(ws, llm_factory=world.llm).state(run_id)
    cand = next(c for c in state.candidates if c.id == state.selected)
    assert cand.id.endswith("-rebase1") and cand.verdict.value != "DUPLICATE" and state.base_release_id == moved.release_id
    done = Runner(ws, llm_factory=world.llm).answer_review(run_id, "approve", comment="ok")
    assert done["status"] == "PUBLISHED", done
    assert QUOTE_ETA in live(ws)[1] and "Night surcharge" in ref.read_text(encoding="utf-8")


def test_rebase_on_an_unmoved_base_is_refused(pending):
    ws, world, run_id = pending
    from skillforge.errors import SkillForgeError
    with pytest.raises(SkillForgeError, match="nothing to rebase"):
        Runner(ws, llm_factory=world.llm).answer_review(run_id, "rebase")
    assert Runner(ws).summary(run_id)["status"] == "PENDING_REVIEW"


def test_a_publish_that_finds_the_base_moved_sends_the_run_back_to_review(pending, monkeypatch):
    """The last line of defence: the base moves after approve's own check (another process
    published in between); publish checks again under the release lock and the run waits for
    review again, with no release of this run."""
    ws, world, run_id = pending
    import skillforge.runners.evolve as evolve_run
    real = evolve_run.check_publishable

    def late_hotfix(*a, **kw):
        real(*a, **kw)
        hotfix(ws)  # right after approve's check passed
    monkeypatch.setattr(evolve_run, "check_publishable", late_hotfix)
    with pytest.raises(PublishRefused, match="rebase"):
        Runner(ws, llm_factory=world.llm).answer_review(run_id, "approve")
    monkeypatch.undo()
    summary = Runner(ws).summary(run_id)
    assert summary["status"] == "PENDING_REVIEW" and "HOTFIX-LINE" in live(ws)[1]
    assert [r.status for r in _evolve_evidence(ws, run_id)] in ([], [ReleaseStatus.ABANDONED])
    assert not (ws.runs_dir / "reviews" / f"{run_id}.answer.json").exists()
    # the new question takes a new answer (not the approve it was refused for)
    done = Runner(ws, llm_factory=world.llm).answer_review(run_id, "reject", comment="the base moved")
    assert done["status"] == "REJECTED" and "HOTFIX-LINE" in live(ws)[1]


def test_an_approve_refused_for_a_hand_edit_stays_in_review_and_force_saves_the_edit(pending, cli):
    ws, world, run_id = pending
    path = ws.skills_dir / SKILL / "SKILL.md"
    path.write_text(path.read_text(encoding="utf-8") + "\n- an unpublished note\n", encoding="utf-8")
    w = ["-w", str(ws.root)]
    refused = cli.run(["review", "approve", run_id, *w], ok=2)
    assert "unpublished changes" in refused.stderr and "--force" in refused.stderr
    assert [r["run_id"] for r in json.loads(cli.run(["review", "list", "--json", *w]).stdout)] == [run_id]
    with pytest.raises(UnpublishedChanges):
        Runner(ws, llm_factory=world.llm).answer_review(run_id, "approve")
    done = json.loads(cli.run(["review", "approve", run_id, "--force", "--json", *w]).stdout)
    assert done["status"] == "PUBLISHED" and QUOTE_ETA in live(ws)[1]
    backups = list((ws.runs_dir / "backups").glob(f"*-{SKILL}-*/SKILL.md"))
    assert len(backups) == 1 and "an unpublished note" in backups[0].read_text(encoding="utf-8")


def test_an_l1_run_whose_base_moves_mid_run_waits_for_a_person_instead_of_publishing(tmp_path, monkeypatch):
    ws = new_workspace(tmp_path / "ws")
    world = World(lambda r: [examples_patch()])
    seed_failures(ws, world.llm())
    import skillforge.nodes.evolve as nodes
    real = nodes.decide

    def decide_then_hotfix(state, runtime, **given):  # given: the subgraphs
        out = real(state, runtime, **given)
        hotfix(ws)  # a person publishes while the run is deciding
        return out
    monkeypatch.setattr(nodes, "decide", decide_then_hotfix)
    from skillforge.graphs import evolve as graphs
    monkeypatch.setattr(graphs, "decide", decide_then_hotfix)
    out = Runner(ws, llm_factory=world.llm).start(SKILL)
    assert out["status"] == "PENDING_REVIEW", out
    assert "base" in out["message"] and "HOTFIX-LINE" in live(ws)[1]
    assert not _evolve_evidence(ws, out["run_id"]) or all(
        r.status is ReleaseStatus.ABANDONED for r in _evolve_evidence(ws, out["run_id"]))


def test_a_rebase_that_conflicts_inside_the_run_ends_it_with_nothing_published(pending, monkeypatch):
    """The live release moves again between rebase's own check and the review node, and the merge
    now conflicts: the review node does not fail (LangGraph would give it the same answer again);
    the run ends NO_IMPROVEMENT saying why, and nothing is published."""
    ws, world, run_id = pending
    fix = hotfix(ws)
    from skillforge.errors import RebaseConflict
    import skillforge.runners.evolve as evolve_run
    import skillforge.evolution.review as reviewing

    def conflicts(*a, **kw):
        raise RebaseConflict("r1c1 and 0.3.2 change the same lines (injected)")
    monkeypatch.setattr(reviewing, "rebase_candidate", conflicts)
    monkeypatch.setattr(evolve_run, "rebase_candidate", lambda ws, state: None)  # its own check passed
    done = Runner(ws, llm_factory=world.llm).answer_review(run_id, "rebase")
    assert done["status"] == "NO_IMPROVEMENT" and "not rebased" in done["message"], done
    assert not (ws.runs_dir / "reviews" / f"{run_id}.answer.json").exists()
    assert live(ws)[0].release_id == fix.release_id and not _evolve_evidence(ws, run_id)


def test_review_of_a_retired_skill_says_retired_and_offers_reject_or_revert_not_rebase(pending, cli):
    """`release retire` while a run waits: `review show` said "live: unknown" and advised a rebase
    that then failed with "nothing to rebase onto"."""
    ws, world, run_id = pending
    w = ["-w", str(ws.root)]
    cli.run(["release", "retire", SKILL, *w])
    shown = flat(cli.run(["review", "show", run_id, *w]).stdout)
    assert "RETIRED" in shown and "unknown" not in shown and "rebase" not in shown, shown
    assert f"skillforge review reject {run_id}" in shown and f"skillforge release revert {SKILL}" in shown
    data = json.loads(cli.run(["review", "show", run_id, "--json", *w]).stdout)
    assert data["retired"] is True and data["live"] is None
    refused = flat(cli.run(["review", "approve", run_id, *w], ok=2).stderr)
    assert "RETIRED" in refused and f"skillforge release revert {SKILL}" in refused, refused
    from skillforge.errors import SkillForgeError
    with pytest.raises(SkillForgeError, match=f"RETIRED.*skillforge release revert {SKILL}"):
        Runner(ws, llm_factory=world.llm).answer_review(run_id, "rebase")  # the CLI asks for models first
    assert Runner(ws).summary(run_id)["status"] == "PENDING_REVIEW"
    cli.run(["release", "revert", SKILL, *w])  # brought back on the run's base: approving works again
    shown = flat(cli.run(["review", "show", run_id, *w]).stdout)
    assert "RETIRED" not in shown and "the base moved" not in shown, shown
    # QA: the revert is a new release on the base's very commit; approve was refused as "base moved",
    # and the rebase it advised closed the run as a DUPLICATE of its own candidate
    assert json.loads(cli.run(["review", "show", run_id, "--json", *w]).stdout)["base_moved"] is False
    out = Runner(ws, llm_factory=world.llm).answer_review(run_id, "approve", comment="ok")
    assert out["status"] == "PUBLISHED", out
    rel, text = live(ws)
    assert rel.triggered_by == f"evolve:{run_id}" and QUOTE_ETA in text
