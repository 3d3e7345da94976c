"""A run that ends without a candidate says when an endpoint, not the candidates, was the reason
(QA 21 MESSAGE-2): a judge that was down made every validation INVALID, and a proposer down in some
rounds only, and both read "no candidate passed in N round(s)", as if evolution had found nothing
better. The pure rules (rules/outage.py) first, then both runs end to end on scripted models."""

from __future__ import annotations

import pytest
from evolve_fakes import SKILL, World, eta_patch, examples_patch, seed_failures, write_sets

from skillforge.errors import LLMUnavailable
from skillforge.evolution.propose import ProposalSet
from skillforge.rules.outage import no_improvement, unjudged, unreachable
from skillforge.runners.evolve import Runner
from skillforge.state.evaluate import Case, CaseResult, Execution, ExecutionFailure
from skillforge.state.evolve import Candidate, CandidateVerdict, PatchFormatName, SetScore
from skillforge.state.result import EvalVerdict
from skillforge.testing.fake_chat import ScriptedChatModel

CASE = Case(id="c1", skill=SKILL, query="去机场多少钱")
INFRA, BAD = ExecutionFailure.INFRASTRUCTURE, ExecutionFailure.BAD_OUTPUT


def result(*, invalid: bool = True, judge: ExecutionFailure | None = None, side: ExecutionFailure | None = None,
           side_error: str | None = None) -> CaseResult:
    sick = Execution(error=side_error or ("boom" if side else None), failure=side)
    return CaseResult(case=CASE, baseline=Execution(answer="a"), candidate=sick, invalid=invalid, judge_failure=judge)


@pytest.mark.parametrize(("results", "roles"), [
    ([result(judge=INFRA)], ["judge"]),
    ([result(judge=BAD)], []),  # an unusable reply is the judge's answer, not its endpoint
    ([result(judge=ExecutionFailure.BUDGET)], []),
    ([result(side=INFRA)], ["executor"]),
    ([result(side=BAD), result(side=ExecutionFailure.TURN_LIMIT)], []),  # agent faults are evidence
    ([result(side_error="old trace without a kind")], ["executor"]),  # side_failure: infrastructure
    ([result(invalid=False, judge=INFRA)], []),  # a case that was measured says nothing of outages
    ([result(side=INFRA), result(judge=INFRA), result(judge=BAD)], ["executor", "judge"]),
    ([], []),
], ids=["judge-down", "judge-garbage", "judge-budget", "executor-down", "agent-faults", "old-trace",
        "valid-case", "both", "none"])
def test_unreachable_names_only_the_roles_whose_endpoint_failed(results, roles):
    assert unreachable(results) == roles


def candidate(cid: str, *scores: SetScore, verdict: CandidateVerdict = CandidateVerdict.FAILED_VALIDATION) -> Candidate:
    return Candidate(id=cid, target=SKILL, patch="p", patch_format=PatchFormatName.SEARCH_REPLACE, verdict=verdict,
                     validation={s.name: s for s in scores})


def score(verdict: EvalVerdict, unreachable: list[str] | None = None, name: str = "selection") -> SetScore:
    return SetScore(name=name, cases=4, verdict=verdict, unreachable=unreachable or [])


def test_unjudged_reads_only_invalid_validations():
    assert unjudged(candidate("a", score(EvalVerdict.INVALID, ["judge"])).validation) == ["judge"]
    assert unjudged(candidate("b", score(EvalVerdict.DECLINED, ["judge"])).validation) == []  # measured: a real verdict
    assert unjudged(candidate("c", score(EvalVerdict.INVALID)).validation) == []  # INVALID for another reason
    assert unjudged(candidate("d", verdict=CandidateVerdict.DUPLICATE).validation) == []


def test_the_headline_names_unjudged_candidates_and_rounds_without_a_proposer():
    declined = candidate("r1c1", score(EvalVerdict.DECLINED))
    blind = candidate("r1c2", score(EvalVerdict.INVALID, ["judge"]))
    both = candidate("r2c1", score(EvalVerdict.INVALID, ["executor"]), score(EvalVerdict.INVALID, ["judge"], "holdout"))
    assert no_improvement(2, [declined], [], []) == "no candidate passed in 2 round(s)"
    said = no_improvement(2, [declined, blind], [], [])
    assert said.startswith("no candidate passed in 2 round(s); 1 of 2 candidate(s) could not be judged: "
                           "the judge's endpoint failed (INVALID"), said
    assert "the executor's and the judge's endpoints failed" in no_improvement(2, [both, blind], [], [])
    assert no_improvement(2, [declined], ["round 2: the proposer is unavailable: x"], [2, 2]) == \
        "no candidate passed in 2 round(s); the proposer was unavailable in round(s) 2"
    assert no_improvement(1, [], ["round 1: the proposer is unavailable: LLMTimeout: t"], [1]) == \
        "no candidate could be proposed in 1 round(s): the proposer is unavailable: LLMTimeout: t"
    assert no_improvement(1, [], [], []) == "no candidate could be proposed in 1 round(s): no note"


@pytest.fixture
def world_ws(machine):
    write_sets(machine.ws)
    return machine.ws


def test_a_judge_that_is_down_stops_the_run_open_and_it_goes_on_once_the_judge_answers(world_ws):
    """QA 26 N0 then QA 37 F2: a judge that never answered made every validation INVALID and the run
    ended NO_IMPROVEMENT (closed, its candidates archived as tried, a nightly batch's turn spent).
    Now the run stops open at that validation (RUNNING, exit 4 in the CLI), and its resume, once the
    judge answers, judges the same candidate and reaches a person."""
    world = World(lambda r: [eta_patch(claimed=2)])
    seed_failures(world_ws, world.llm())
    judge = world.judge
    world.judge = ScriptedChatModel.responding(lambda m: LLMUnavailable("role 'judge': HTTP 500: judge down"))
    runner = Runner(world_ws, llm_factory=world.llm)
    out = runner.start(SKILL, max_rounds=2)
    run = out["run_id"]
    assert out["status"] == "RUNNING" and out["rounds"] == 1, out
    said = out["message"]
    assert said.startswith("stopped: LLMUnavailable: the judge's endpoint failed during the selection evaluation ("), said
    assert "judge down" in said and f"skillforge evolve --resume {run}" in said
    assert not (world_ws.runs_dir / "failures" / f"{run}.md").exists()   # nothing archived as tried
    assert Runner(world_ws).summary(run)["message"] == said              # `runs show` says why, later too
    assert [c.verdict for c in runner.state(run).candidates] == [CandidateVerdict.PENDING]
    world.judge = judge  # the endpoint answers again: the same run judges the fix, which reaches a person
    again = runner.resume(run)
    assert again["status"] == "PENDING_REVIEW", again["message"]
    assert not runner.stop_path(run).exists()                                # the stop is past


def test_a_proposer_down_in_a_later_round_stops_the_run_open(world_ws):
    class Flaky(World):
        down = True

        def proposer_reply(self, messages):  # noqa: ANN001, ANN202
            reply = super().proposer_reply(messages)
            if isinstance(reply, ProposalSet) and self.rounds >= 2 and self.down:
                return LLMUnavailable("role 'proposer': HTTP 500: qa down")
            return reply

    world = Flaky(lambda r: [eta_patch(claimed=1, line="- 回答要礼貌一些。"), examples_patch()][:1])
    seed_failures(world_ws, world.llm())
    runner = Runner(world_ws, llm_factory=world.llm)
    out = runner.start(SKILL, max_rounds=2)
    assert out["status"] == "RUNNING" and out["rounds"] == 1, out
    assert out["message"].startswith("stopped: LLMUnavailable: the proposer is unavailable: role 'proposer'"), out["message"]
    world.down = False
    again = runner.resume(out["run_id"])
    assert again["status"] == "NO_IMPROVEMENT" and again["rounds"] == 2, again
    assert "unavailable" not in again["message"]
