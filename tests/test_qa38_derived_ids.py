"""QA 38 F5: an evaluate run given the id `RUN-r1c1-selection` by hand made evolve run RUN stop at its
selection evaluation with RunIdTaken, after spending requests, and on every resume. Evolve now refuses
such a run id at its first node, before any request."""

from __future__ import annotations

import pytest
from evolve_fakes import SKILL, World, eta_patch, seed_failures, write_sets

from skillforge.context import eval_context
from skillforge.errors import RunIdTaken
from skillforge.evolution.preflight import derived_taken
from skillforge.graphs.evaluate import build_evaluate_graph
from skillforge.library.registry import SkillRegistry
from skillforge.runners.evolve import Runner
from skillforge.state.evaluate import SkillSide
from skillforge.state.evaluate_graph import EvalState


def test_an_evaluate_run_holding_a_derived_id_refuses_the_evolve_run_before_any_request(machine):
    ws = machine.ws
    write_sets(ws)
    world = World(lambda r: [eta_patch(claimed=2)])
    seed_failures(ws, world.llm())
    live = SkillRegistry.load(ws).get(SKILL)
    side = SkillSide(text=(ws.skills_dir / SKILL / "SKILL.md").read_text(encoding="utf-8"),
                     release_id=live.release.release_id, label="live")
    build_evaluate_graph(checkpointer=False).invoke(
        EvalState(run_id="squat-r1c1-selection", skill=SKILL, eval_set="repair", baseline=side, candidate=side),
        context=eval_context(ws, world.llm()))
    sent = len(world.proposer.received)
    with pytest.raises(RunIdTaken, match=r"run id 'squat' cannot be used: evaluations already took the ids its "
                                         r"validations record under \(squat-r1c1-selection in "):
        Runner(ws, llm_factory=world.llm).start(SKILL, run_id="squat", max_rounds=1)
    assert len(world.proposer.received) == sent                  # nothing was sent
    runner = Runner(ws, llm_factory=world.llm)
    runner.cancel("squat")  # refused at its first node, it is open (as after MissingCases): closed by hand
    out = runner.start(SKILL, run_id="squat-2", max_rounds=1)
    assert out["status"] == "PENDING_REVIEW", out                   # another id runs (and its own ids are its own)


def test_derived_ids_are_matched_exactly(tmp_path):
    traces = tmp_path / "traces"
    traces.mkdir()
    for name in ("run-r1c1-selection.claim", "run-r2c3-rebase1-holdout.jsonl", "run-other-r1c1-selection.claim",
                 "run-r1c1-selectionx.claim", "run-rich.claim"):
        (traces / name).write_text("thread-a", encoding="utf-8")
    assert derived_taken(traces, "run", None) == ["run-r1c1-selection", "run-r2c3-rebase1-holdout"]
    assert derived_taken(traces, "run", "thread-a") == ["run-r2c3-rebase1-holdout"]  # no claim: not this thread's
    assert derived_taken(traces, "run-other", None) == ["run-other-r1c1-selection"]
    assert derived_taken(traces, "nope", None) == []
