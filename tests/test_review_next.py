"""What a run waiting for review tells a person to do next, and its warnings (QA qa10a F12, F18):
the run summary and `review show` never advise an answer that is known to be refused (approve when
the base moved, rebase when the candidate conflicts with the live release), an L2 candidate whose
final_audit goes down says so in both, and `evolve --resume` of a run whose skill was retired
while it was paused stops before spending. Real workspaces (git + SQLite), the SqliteSaver
checkpointer and the scripted world."""

from __future__ import annotations

import json
import re

import pytest
from langchain_core.messages import BaseMessage

from conftest import flat
from evolve_fakes import HOLDOUT_FROM, SKILL, World, eta_patch, examples_patch, new_workspace, seed_failures
from review_world import RUN, copy_of
from skillforge.evaluation.judge import Judgement
from skillforge.library.releases import ReleaseStateMachine
from skillforge.rules.review import BaseVerdict
from skillforge.rules.review_next import audit_warning, review_next
from skillforge.runners.evolve import Runner
from skillforge.state.evolve import SetScore
from skillforge.state.result import EvalVerdict
from skillforge.testing.evolve_world import judge_reply
from skillforge.testing.fake_chat import ScriptedChatModel

FINAL_AUDIT_FROM = HOLDOUT_FROM + 6
"""Case numbers of final_audit (after 6 holdout cases, write_sets' defaults)."""


def edit_constraints(ws, line: str) -> None:
    path = ws.skills_dir / SKILL / "SKILL.md"
    path.write_text(path.read_text(encoding="utf-8").replace("## Constraints\n", f"## Constraints\n{line}\n"),
                    encoding="utf-8")


def test_the_next_step_rule_offers_only_what_can_work():
    ok = review_next("r", "s", fix=True, base=BaseVerdict.CURRENT, retired=False)
    assert not ok.warning and ok.then.startswith("skillforge review approve r")
    moved = review_next("r", "s", fix=True, base=BaseVerdict.MOVED, retired=False)
    assert "base moved" in moved.warning and moved.then.startswith("skillforge review rebase r")
    stuck = review_next("r", "s", fix=True, base=BaseVerdict.MOVED, retired=False,
                        rebase_refusal="c1 and 0.3.2 change the same lines of s/SKILL.md: it cannot ...")
    assert "cannot be re-applied" in stuck.warning and "approve" not in stuck.then and "rebase" not in stuck.then
    assert stuck.then.startswith("skillforge review reject r") and "skillforge evolve s" in stuck.then
    gone = review_next("r", "s", fix=True, base=BaseVerdict.GONE, retired=True)
    assert "RETIRED" in gone.warning and "skillforge release revert s" in gone.then and "rebase" not in gone.then
    assert review_next("r", "s", fix=False, base=BaseVerdict.MOVED, retired=False).then.startswith(
        "skillforge review approve r")  # a new skill replaces no release


def test_the_audit_warning_fires_only_when_the_point_estimate_goes_down():
    def score(w: int, lo: int, s: float, b: float) -> SetScore:
        return SetScore(name="final_audit", cases=w + lo, verdict=EvalVerdict.REVIEW, score=s, baseline_score=b,
                        effect_wins=w, effect_losses=lo, effect_ties=0)
    said = audit_warning(score(0, 5, 0.25, 0.75))
    assert said.startswith("final_audit goes down on effect: 0 win(s) / 5 loss(es) / 0 tie(s) of 5 case(s)")
    assert "score 0.250 vs live 0.750" in said
    assert audit_warning(score(3, 1, 0.7, 0.4)) == "" and audit_warning(None) == ""
    assert audit_warning(score(2, 2, 0.4, 0.5))  # even counts, a lower score: down


def _against_audit(messages: list[BaseMessage]) -> object:
    """The scripted judge, reversed on final_audit queries only (it prefers the answer without the ETA)."""
    said = judge_reply(messages)
    number = re.search(r"（(\d+)号）", str(messages[-1].content))
    if not number or int(number.group(1)) < FINAL_AUDIT_FROM:
        return said
    flip = {"A": "B", "B": "A", "tie": "tie"}
    return Judgement(overall=flip[said.overall], task=flip[said.task], robustness=flip[said.robustness],
                     readability="tie", reason="fake: prefers the answer without the ETA on final_audit")


def test_an_l2_candidate_that_loses_final_audit_is_flagged_in_the_summary_and_review_show(tmp_path, cli):
    ws = new_workspace(tmp_path / "ws")
    world = World(lambda r: [eta_patch(claimed=2)])
    seed_failures(ws, world.llm())
    world.judge = ScriptedChatModel.responding(_against_audit)
    out = Runner(ws, llm_factory=world.llm).start(SKILL)
    assert out["status"] == "PENDING_REVIEW", out
    assert out["final_audit"]["effect_losses"] == 5 and out["audit_warning"].startswith(  # type: ignore[index]
        "final_audit goes down on effect: 0 win(s) / 5 loss(es)"), out["audit_warning"]
    w = ["-w", str(ws.root)]
    summary = flat(cli.run(["runs", "show", out["run_id"], *w]).stdout)  # the summary evolve prints
    assert "final_audit: REVIEW" in summary and "warning: final_audit goes down on effect" in summary, summary
    shown = flat(cli.run(["review", "show", out["run_id"], *w]).stdout)
    assert "warning: final_audit goes down on effect: 0 win(s) / 5 loss(es)" in shown, shown
    assert f"next: skillforge review approve {out['run_id']}" in shown  # it does not decide: a person does


def test_an_l1_run_refused_for_a_moved_base_ends_by_advising_rebase_not_approve(tmp_path, monkeypatch, cli):
    ws = new_workspace(tmp_path / "ws")
    world = World(lambda r: [examples_patch()])
    seed_failures(ws, world.llm())
    import skillforge.graphs.evolve as graphs
    import skillforge.nodes.evolve as nodes
    real = nodes.decide

    def decide_then_hotfix(state, runtime, **given):
        done = real(state, runtime, **given)
        edit_constraints(ws, "- HOTFIX-LINE：报价后提醒用户核对上车点。")
        ReleaseStateMachine.open(ws).publish(SKILL, triggered_by="hand hotfix")
        return done
    monkeypatch.setattr(nodes, "decide", decide_then_hotfix)
    monkeypatch.setattr(graphs, "decide", decide_then_hotfix)
    out = Runner(ws, llm_factory=world.llm).start(SKILL)
    run_id = out["run_id"]
    assert out["status"] == "PENDING_REVIEW" and f"review rebase {run_id}" in out["message"], out
    said = flat(cli.run(["runs", "show", run_id, *["-w", str(ws.root)]]).stdout)
    # was: "then: skillforge review approve RUN" after "not published: ... review rebase RUN"
    assert f"then: skillforge review rebase {run_id}" in said and f"review approve {run_id}" not in said, said
    assert "warning: the base moved: approving is refused" in said


def test_review_show_after_a_conflicting_hotfix_advises_reject_not_rebase(template, tmp_path, cli):
    ws = copy_of(template, tmp_path / "ws")
    w = ["-w", str(ws.root)]
    path = ws.skills_dir / SKILL / "SKILL.md"  # the hotfix changes the very line the candidate edits
    path.write_text(path.read_text(encoding="utf-8").replace("## Instructions\n", "## Instructions\n- HOTFIX：先确认上车点。\n"),
                    encoding="utf-8")
    ReleaseStateMachine.open(ws).publish(SKILL, triggered_by="hand hotfix")
    from skillforge.errors import RebaseConflict
    with pytest.raises(RebaseConflict, match="change the same lines"):  # the CLI asks for models first
        Runner(ws, llm_factory=World(lambda r: []).llm).answer_review(RUN, "rebase")
    from skillforge.errors import BaseMoved
    with pytest.raises(BaseMoved) as refused:  # approve names the step review show names, not that rebase (QA 41 M1)
        Runner(ws, llm_factory=World(lambda r: []).llm).answer_review(RUN, "approve")
    said = " ".join(str(refused.value).split())
    assert "approving would undo what" in said and f"Next: skillforge review reject {RUN}" in said, said
    assert "review rebase" not in said and "approving and rebasing are both refused" in said, said
    shown = flat(cli.run(["review", "show", RUN, *w]).stdout)
    assert "cannot be re-applied on the live release" in shown and f"next: skillforge review reject {RUN}" in shown
    assert f"review rebase {RUN}" not in shown, shown  # was: "`skillforge review rebase RUN` re-applies ..."
    data = json.loads(cli.run(["review", "show", RUN, "--json", *w]).stdout)
    assert data["next"]["then"].startswith(f"skillforge review reject {RUN}")


@pytest.fixture
def paused(tmp_path):
    """A taxi-hailing run paused at its budget mid-way (130 requests)."""
    ws = new_workspace(tmp_path / "ws")
    world = World(lambda r: [eta_patch(claimed=2)])
    seed_failures(ws, world.llm())
    from skillforge.state.llm import BudgetCaps

    out = Runner(ws, llm_factory=world.llm).start(SKILL, caps=BudgetCaps(max_calls=60))
    assert out["status"] == "BUDGET", out
    return ws, world, out["run_id"]


def test_evolve_resume_of_a_run_whose_skill_was_retired_stops_before_spending(paused, cli):
    ws, world, run_id = paused
    w = ["-w", str(ws.root)]
    cli.run(["release", "retire", SKILL, *w])
    asked = world.executor.position + world.judge.position + world.proposer.position
    dead = {"SKILLFORGE_LLM_BASE_URL": "http://127.0.0.1:9/v1", "SKILLFORGE_LLM_MODEL": "m"}  # never reached
    refused = cli.run(["evolve", "--resume", run_id, "--budget-calls", "400", *w], dead, ok=2)
    said = flat(refused.stderr)
    assert f"'{SKILL}' was retired while run {run_id} was paused" in said, said
    assert f"skillforge release revert {SKILL}" in said and f"skillforge runs cancel {run_id}" in said
    from skillforge.errors import SkillRetired
    with pytest.raises(SkillRetired):
        Runner(ws, llm_factory=world.llm).resume(run_id)
    assert world.executor.position + world.judge.position + world.proposer.position == asked
    assert Runner(ws).summary(run_id)["status"] == "BUDGET"
