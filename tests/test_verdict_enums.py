"""The verdict and decision enums (EvalVerdict, EvolveDecision, Outcome on SetScore) keep the strings
they replaced: JSON output, the JSONL logs, stored checkpoints and the CLI's exit codes are the same."""

from __future__ import annotations

import json

import pytest

from skillforge.cli.evaluate import EXIT
from skillforge.journal import read_jsonl
from skillforge.nodes.evaluate import record_result
from skillforge.rules.selection import BLOCKING_VERDICTS, ReleaseRoute, visible_pass
from skillforge.runners.checkpoint import serializer
from skillforge.state.evolve import EvolveDecision, EvolveState, SetScore
from skillforge.state.result import (DimensionScores, EvalKind, EvalResult, EvalVerdict, Measured, Outcome,
                                     RatchetVerdict)


def test_the_values_are_the_strings_they_replaced():
    assert [v.value for v in EvalVerdict] == ["PASS", "REVIEW", "DECLINED", "INVALID"]
    assert {d.value for d in EvolveDecision} == {"publish", "review", "suggest", "retry", "stop", "rebase"}
    assert all(EvalVerdict(v) == v.value == str(v) == f"{v}" for v in EvalVerdict)


def test_every_ratchet_verdict_and_release_route_has_its_member():
    assert {EvalVerdict(v) for v in RatchetVerdict} == set(EvalVerdict) - {EvalVerdict.INVALID}
    assert all(EvolveDecision(r).value == r.value for r in ReleaseRoute)


def test_exit_codes_by_verdict_are_unchanged_and_a_plain_string_still_finds_its_code():
    assert EXIT == {"PASS": 0, "REVIEW": 3, "DECLINED": 4, "INVALID": 5}
    assert [EXIT.get(v) for v in ("PASS", "REVIEW", "DECLINED", "INVALID")] == [0, 3, 4, 5]
    assert BLOCKING_VERDICTS == {"DECLINED", "INVALID"}


def result(verdict: str = "PASS") -> EvalResult:
    scores = DimensionScores(task=0.5, robustness=0.5, readability=0.5, efficiency=0.5)
    return EvalResult(run_id="run-1", skill="s", eval_set="dev", verdict=verdict, improvement="INCONCLUSIVE",
                      measured=Measured(old=scores, new=scores, valid_cases=5, invalid_cases=0, invalid_rate=0.0,
                                        flip_rate=0.0))


def test_evaluate_json_carries_the_same_strings():
    r = result("INVALID")
    assert r.verdict is EvalVerdict.INVALID and r.improvement is Outcome.INCONCLUSIVE
    shown = json.loads(r.model_dump_json())
    assert (shown["verdict"], shown["improvement"], shown["kind"]) == ("INVALID", "INCONCLUSIVE", "ab")
    assert json.loads(json.dumps(r.model_dump()))["verdict"] == "INVALID"  # the python dump serialises alike


def test_a_stored_evaluation_line_round_trips(tmp_path):
    log = tmp_path / "evaluations.jsonl"
    record_result(log, None, result("REVIEW"), [])
    line = read_jsonl(log)[0]
    assert (line["verdict"], line["improvement"], line["kind"]) == ("REVIEW", "INCONCLUSIVE", "ab")
    assert type(line["verdict"]) is str
    back = EvalResult.model_validate({k: v for k, v in line.items() if k in ("verdict", "improvement", "kind")}
                                     | {"run_id": "run-1", "skill": "s", "eval_set": "dev"})
    assert back.verdict is EvalVerdict.REVIEW and back.kind is EvalKind.AB


def test_a_set_score_of_an_older_checkpoint_reads_as_enums_and_dumps_as_before():
    stored = {"name": "selection", "cases": 8, "verdict": "DECLINED", "improvement": "WIN", "losses": ["task"],
              "p0_flips": [], "score": 0.4, "baseline_score": 0.5, "effect_wins": 1, "effect_losses": 5,
              "effect_ties": 2, "reasons": ["evidence of loss on task"], "run_id": "r"}
    score = SetScore.model_validate(stored)
    assert score.verdict is EvalVerdict.DECLINED and score.improvement is Outcome.WIN
    assert score.model_dump(mode="json") == stored and score.model_dump() == stored
    assert SetScore(name="routing", cases=0, verdict="INVALID").improvement is Outcome.INCONCLUSIVE
    assert visible_pass(score, None) == (False, "selection verdict DECLINED: evidence of loss on task")


@pytest.mark.parametrize("decision", ["publish", "review", "suggest", "retry", "stop", "rebase", None])
def test_a_stored_decision_reads_as_its_member(decision):
    state = EvolveState.model_validate({"run_id": "evolve-1", "skill": "weather-query", "decision": decision})
    assert state.decision == decision and (decision is None or isinstance(state.decision, EvolveDecision))
    assert state.model_dump(mode="json")["decision"] == decision


def test_enum_typed_state_round_trips_through_the_checkpoint_serializer():
    score = SetScore(name="holdout", cases=6, verdict=EvalVerdict.PASS, improvement=Outcome.WIN)
    state = EvolveState(run_id="evolve-1", skill="weather-query", decision=EvolveDecision.REBASE)
    blob = serializer().dumps_typed({"score": score, "payload": score.model_dump(), "decision": state.decision})
    back = serializer().loads_typed(blob)
    assert back["score"] == score and back["score"].verdict is EvalVerdict.PASS
    assert back["payload"]["verdict"] is EvalVerdict.PASS and back["decision"] is EvolveDecision.REBASE
