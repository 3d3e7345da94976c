"""QA 36 F5: the answers of a paused run are strict about types. `{"action": "approve", "force":
"yes"}` was taken as force=True (pydantic's lax bool) and published; a budget cap of "400", 400.0
or true was taken as 400 / 1. Each is InvalidResume naming the field and what was given, nothing
is stored, and the next valid answer is taken. Through the graph API with the CLI's SqliteSaver."""

from __future__ import annotations

import pytest
from evolve_fakes import SKILL, World, eta_patch, seed_failures

from skillforge.errors import InvalidResume
from skillforge.library.registry import SkillRegistry
from skillforge.nodes.answers import strict
from skillforge.runners.evolve import Runner
from skillforge.state.evolve import ReviewAction, ReviewDecision
from skillforge.state.llm import BudgetCaps
from test_resume_answers import _send, world_ws  # noqa: F401 - the fixture


LAX_REVIEWS = [
    ({"action": "approve", "force": "yes"}, "force: should be a valid boolean, got 'yes' (str)"),
    ({"action": "approve", "force": 1}, "force: should be a valid boolean, got 1 (int)"),
    ({"action": "approve", "force": "true"}, "force: should be a valid boolean, got 'true' (str)"),
    ({"action": "approve", "comment": 5}, "comment: should be a valid string, got 5 (int)"),
    ({"action": "approve", "reviewer": None}, "reviewer: should be a valid string, got None (NoneType)"),
    ({"action": "approve", "reviewer": ["alice"]}, "reviewer: should be a valid string, got ['alice'] (list)"),
]


def test_a_review_answer_of_the_wrong_type_is_refused_and_a_real_approve_publishes(world_ws):  # noqa: F811
    ws = world_ws
    world = World(lambda r: [eta_patch(claimed=2)])
    seed_failures(ws, world.llm())
    runner = Runner(ws, llm_factory=world.llm)
    assert runner.start(SKILL, run_id="evolve-lax")["status"] == "PENDING_REVIEW"
    before = SkillRegistry.load(ws).get(SKILL).release.release_id
    for bad, says in LAX_REVIEWS:
        with pytest.raises(InvalidResume) as e:
            _send(runner, "evolve-lax", bad)
        assert says in str(e.value) and "review answer was refused" in str(e.value), str(e.value)
        assert "still waits" in str(e.value) and "errors.pydantic.dev" not in str(e.value)
        assert runner.summary("evolve-lax")["status"] == "PENDING_REVIEW"
    assert SkillRegistry.load(ws).get(SKILL).release.release_id == before  # nothing published
    done = _send(runner, "evolve-lax", {"action": "approve", "force": False, "comment": "ok", "reviewer": "ana"})
    assert done["status"] == "PUBLISHED", done
    taken = runner.state("evolve-lax").review
    assert taken is not None and taken.force is False and taken.reviewer == "ana"


def test_strict_schemas_take_real_types_and_enum_strings():
    review, caps = strict(ReviewDecision), strict(BudgetCaps)
    ok = review.model_validate({"action": "rebase", "force": True, "comment": "c", "reviewer": "r"})
    assert ok.action is ReviewAction.REBASE and ok.force is True
    assert review.model_validate(ReviewDecision(action="approve")).action is ReviewAction.APPROVE  # an instance
    assert caps.model_validate({"max_calls": 400, "max_tokens": None, "max_cost_usd": 2}).max_cost_usd == 2.0
    assert ReviewDecision.model_validate({"action": "approve", "force": False}).force is False  # the state model itself
    assert review.model_json_schema()["properties"]["force"]["type"] == "boolean"  # what Studio is shown


@pytest.mark.parametrize("bad,says", [
    ({"max_calls": "400"}, "max_calls: should be a valid integer, got '400' (str)"),
    ({"max_calls": 400.0}, "max_calls: should be a valid integer, got 400.0 (float)"),
    ({"max_calls": True}, "max_calls: should be a valid integer, got True (bool)"),
    ({"max_tokens": "9000"}, "max_tokens: should be a valid integer, got '9000' (str)"),
    ({"max_cost_usd": "2.5"}, "max_cost_usd: should be a valid number, got '2.5' (str)"),
    ({"max_cost_usd": True}, "max_cost_usd: should be a valid number, got True (bool)"),
])
def test_budget_caps_answer_of_the_wrong_type_is_refused(bad, says):
    from pydantic import ValidationError

    from skillforge.state.inputs import problems

    with pytest.raises(ValidationError) as e:
        strict(BudgetCaps).model_validate(bad)
    assert says in problems(e.value)


def test_a_budget_answer_of_the_wrong_type_is_refused_at_the_pause_and_a_real_one_goes_on(world_ws):  # noqa: F811
    ws = world_ws
    world = World(lambda r: [eta_patch(claimed=2)])
    seed_failures(ws, world.llm())
    runner = Runner(ws, llm_factory=world.llm)
    out = runner.start(SKILL, run_id="evolve-lax-caps", caps=BudgetCaps(max_calls=5))
    assert out["status"] == "BUDGET", out
    for bad in ({"max_calls": "10000"}, {"max_calls": 10000.0}, {"max_calls": True}):
        with pytest.raises(InvalidResume, match=r"budget answer was refused \(max_calls: should be a valid integer"):
            _send(runner, "evolve-lax-caps", bad)
        assert runner.summary("evolve-lax-caps")["status"] == "BUDGET"
    assert runner.summary("evolve-lax-caps")["llm_calls"] == 0
    done = _send(runner, "evolve-lax-caps", {"max_calls": 10_000})
    assert done["status"] == "PENDING_REVIEW", done
