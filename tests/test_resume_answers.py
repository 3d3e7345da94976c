"""A paused run (review, budget) resumed with a value its pause does not accept (issue 21: after
`{"resume": {"action": "maybe"}}` every later command, even a valid approve, failed with the same
validation error). Through the graph API with the real SqliteSaver of the CLI: the bad answer is a
named error, nothing is stored, the run still waits, and the next valid answer is taken."""

from __future__ import annotations

import pytest
from evolve_fakes import SKILL, World, eta_patch, seed_failures, write_sets
from langgraph.types import Command

from skillforge.runners.evolve import Runner
from skillforge.errors import InvalidResume
from skillforge.llm.ledger import RunBudget
from skillforge.library.registry import SkillRegistry
from skillforge.state.evolve import ReviewAction, ReviewDecision
from skillforge.state.llm import BudgetCaps


@pytest.fixture
def world_ws(machine):
    write_sets(machine.ws)
    return machine.ws


def _send(runner: Runner, run_id: str, value: object) -> dict[str, object]:
    """Command(resume=value) through the graph API, as Studio and Python callers send it."""
    state = runner.state(run_id)
    budget = RunBudget(runner.ledger, run_id, state.budget.caps)  # the run's rows in the workspace ledger
    runner.graph.invoke(Command(resume=value), runner.config(run_id), context=runner.context(budget),
                        durability="sync")
    return runner.summary(run_id)


BAD_REVIEWS = [{"action": "maybe"}, "approve", {"action": "approve", "coment": "typo"}, {"comment": "no action"}, 7,
               {"action": ["approve"]}]  # (Command(resume=None) is a langgraph error before any node runs)


def test_bad_review_answers_are_refused_and_a_later_approve_still_publishes(world_ws):
    ws = world_ws
    world = World(lambda r: [eta_patch(claimed=2)])
    seed_failures(ws, world.llm())
    runner = Runner(ws, llm_factory=world.llm)
    out = runner.start(SKILL, run_id="evolve-bad-answer")
    assert out["status"] == "PENDING_REVIEW", out
    before = SkillRegistry.load(ws).get(SKILL).release.release_id
    for bad in BAD_REVIEWS:
        with pytest.raises(InvalidResume, match=r"review answer was refused .*still waits.*\"approve\" \| \"reject\""):
            _send(runner, "evolve-bad-answer", bad)
        after = Runner(ws, llm_factory=world.llm).summary("evolve-bad-answer")  # a new process sees the same
        assert after["status"] == "PENDING_REVIEW" and after["pending"]["kind"] == "review", after
    assert SkillRegistry.load(ws).get(SKILL).release.release_id == before  # nothing published, nothing rejected
    done = _send(runner, "evolve-bad-answer", {"action": "approve", "comment": "fine after all"})
    assert done["status"] == "PUBLISHED", done
    assert SkillRegistry.load(ws).get(SKILL).release.release_id == done["release_id"] != before
    taken = runner.state("evolve-bad-answer").review
    assert taken is not None and taken.answered_at.endswith("Z")  # stamped by the review node (QA 24 F6)
    assert taken.model_copy(update={"answered_at": ""}) == ReviewDecision(action=ReviewAction.APPROVE,
                                                                          comment="fine after all")


def test_after_a_bad_answer_the_cli_path_still_rejects(world_ws):
    ws = world_ws
    world = World(lambda r: [eta_patch(claimed=2)])
    seed_failures(ws, world.llm())
    runner = Runner(ws, llm_factory=world.llm)
    assert runner.start(SKILL, run_id="evolve-bad-then-cli")["status"] == "PENDING_REVIEW"
    with pytest.raises(InvalidResume):
        _send(runner, "evolve-bad-then-cli", {"action": "maybe"})
    done = Runner(ws, llm_factory=world.llm).answer_review("evolve-bad-then-cli", ReviewAction.REJECT, comment="no")
    assert done["status"] == "REJECTED" and "rejected in review: no" in str(done["message"]), done


def test_bad_budget_answers_are_refused_at_both_pauses_and_good_caps_go_on(world_ws):
    """The estimate pause (collect, before any call) and a hard cap hit inside a node (_metered)."""
    ws = world_ws
    world = World(lambda r: [eta_patch(claimed=2)])
    seed_failures(ws, world.llm())
    runner = Runner(ws, llm_factory=world.llm)
    out = runner.start(SKILL, run_id="evolve-bad-caps", caps=BudgetCaps(max_calls=5))
    assert out["status"] == "BUDGET" and "estimate above budget" in out["pending"]["reason"], out
    estimate = out["pending"]["estimate"]["calls"]
    for bad in ({"max_call": 10_000}, {"max_calls": "lots"}, "more", [1]):  # a typo must never mean "no cap"
        with pytest.raises(InvalidResume, match=r"budget answer was refused .*max_calls"):
            _send(runner, "evolve-bad-caps", bad)
        assert runner.summary("evolve-bad-caps")["status"] == "BUDGET"
    assert runner.summary("evolve-bad-caps")["llm_calls"] == 0
    # exactly the estimate: the round starts, and the real round costs more, so a hard cap pauses mid-node
    mid = _send(runner, "evolve-bad-caps", {"max_calls": estimate})
    assert mid["status"] == "BUDGET" and "estimate" not in mid["pending"], mid
    assert runner.state("evolve-bad-caps").budget.caps.max_calls == estimate
    with pytest.raises(InvalidResume, match="budget answer was refused"):
        _send(runner, "evolve-bad-caps", {"max_calls": 10_000, "max_tokens": "many"})
    assert runner.summary("evolve-bad-caps")["status"] == "BUDGET"
    done = _send(runner, "evolve-bad-caps", {"max_calls": 10_000})
    assert done["status"] == "PENDING_REVIEW", done
