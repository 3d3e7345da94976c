"""The rejected-edit buffer across runs of a skill (runs/rejected/<skill>.jsonl): an edit refused or
lost in run 1 is shown to the run-2 proposer ("already tried, and why it failed") and refused again
when re-proposed; a leak is remembered without its text, so no holdout text reaches the proposer."""

from __future__ import annotations

import json

import pytest

from evolve_fakes import QUOTE_ETA, SKILL, World, eta_patch, seed_failures, write_sets
from skillforge.evolution import memory
from skillforge.journal import read_jsonl
from skillforge.rules.memory import recent, to_remember, tried_line
from skillforge.runners.evolve import Runner
from skillforge.state.evolve import Candidate, CandidateVerdict, PatchFormatName

POLITE = "- 回复时语气礼貌、简洁。"
HOLDOUT_QUERY = "从球馆打车去中山公园要多少钱，车多久能到？（9号）"


@pytest.fixture
def world_ws(machine):
    write_sets(machine.ws)
    return machine.ws


def proposer_prompts(world: World) -> list[str]:
    return [str(m[-1].content) for m in world.proposer.received if str(m[0].content).startswith("You improve")]


def test_refused_in_run_1_is_shown_in_run_2_and_refused_again(world_ws):
    ws = world_ws
    polite = eta_patch(claimed=2, line=POLITE)  # changes nothing the cases measure: lost on selection
    leak = eta_patch(claimed=2, line=f"- {QUOTE_ETA}：{HOLDOUT_QUERY}")  # a copied holdout query
    world = World(lambda r: [polite, leak])
    seed_failures(ws, world.llm())
    runner = Runner(ws, llm_factory=world.llm)
    first = runner.start(SKILL, max_rounds=1)
    assert first["status"] == "NO_IMPROVEMENT", first
    by_id = {c.id: c for c in runner.state(first["run_id"]).candidates}
    assert by_id["r1c1"].verdict is CandidateVerdict.FAILED_VALIDATION and by_id["r1c2"].verdict is CandidateVerdict.LEAK
    rows = read_jsonl(memory.rejected_path(ws, SKILL))
    assert [(r["candidate_id"], r["verdict"], r["fingerprint"]) for r in rows] == [
        ("r1c1", "FAILED_VALIDATION", by_id["r1c1"].fingerprint), ("r1c2", "LEAK", by_id["r1c2"].fingerprint)]
    assert POLITE in rows[0]["change"] and rows[0]["reason"].startswith("selection: ")
    assert rows[1]["change"] == "" and HOLDOUT_QUERY not in json.dumps(rows, ensure_ascii=False)
    # the round's note (2 candidates where 3-5 were asked) is the run's, not a reason either edit failed
    assert first["proposer_notes"] == ["round 1: the proposer gave 2 candidate(s), fewer than 3"]
    assert not any("fewer than" in r["reason"] for r in rows), rows

    second = runner.start(SKILL, max_rounds=1)  # the same two edits again
    prompt = proposer_prompts(world)[-1]
    assert "Already tried in earlier runs, and why it failed" in prompt
    assert POLITE in prompt.split("Already tried in earlier runs", 1)[1] and "FAILED_VALIDATION" in prompt
    assert "leak_scan: it copied query" in prompt and HOLDOUT_QUERY not in prompt
    assert "the proposer gave" not in prompt
    again = {c.id: c for c in runner.state(second["run_id"]).candidates}
    for cid in ("r1c1", "r1c2"):
        assert (again[cid].verdict, again[cid].rejected_by) == (CandidateVerdict.DUPLICATE, "rejected_before")
        assert any(n.startswith(f"rejected_before: run {first['run_id']} {cid}") for n in again[cid].notes)
    assert not again["r1c1"].validation  # never validated again
    # the second run's refusals are not remembered twice (they are the same edits)
    assert len(read_jsonl(memory.rejected_path(ws, SKILL))) == 2


def test_the_buffer_is_read_tolerant_of_torn_lines_and_shows_the_most_recent_first(world_ws):
    ws = world_ws
    cands = [Candidate(id=f"r1c{i}", target=SKILL, patch="p", patch_format=PatchFormatName.OPS, text=f"t{i}\n",
                       applied_diff=f"+- rule {i}\n", verdict=CandidateVerdict.FAILED_VALIDATION,
                       rejected_by="selection", notes=[f"why {i}"]) for i in range(9)]
    memory.remember(ws, SKILL, "run-a", cands)
    with memory.rejected_path(ws, SKILL).open("a", encoding="utf-8") as fh:
        fh.write('{"run_id": "run-b", "candid')  # a torn last line
    assert memory.remember(ws, SKILL, "run-a", cands) == []  # idempotent
    records = memory.read_rejected(ws, SKILL)
    assert len(records) == 9
    shown = recent(records, "run-c")
    assert [r.candidate_id for r in shown] == ["r1c8", "r1c7", "r1c6", "r1c5", "r1c4", "r1c3"]  # MAX_SHOWN
    assert recent(records, "run-a") == []  # a run's own are in its feedback, not the buffer
    assert tried_line(shown[0]) == "- ops edit changed: +- rule 8 -> FAILED_VALIDATION: selection: why 8"


def test_holdout_losses_are_remembered_without_their_numbers():
    c = Candidate(id="r2c1", target=SKILL, patch="p", patch_format=PatchFormatName.FULL, text="x\n",
                  verdict=CandidateVerdict.HOLDOUT_LOSS, rejected_by="holdout",
                  notes=["holdout: 9 lost, 5 won on holdout-taxi-hailing-09"])
    [r] = to_remember("run-a", [c], set())
    assert r.reason == "holdout: not confirmed on held-out cases" and "9" not in r.reason


@pytest.mark.parametrize("rejected_by", ["review", "name", "publish"])
def test_a_candidate_that_passed_holdout_and_failed_later_is_remembered_without_the_holdout_numbers(rejected_by):
    """QA: rejected in review after holding on holdout, the buffer kept "review: holdout on effect
    (6 case(s), verdict REVIEW): ... 6 win(s) / 0 loss(es) ... score 0.750 vs live 0.250", and the next
    run's proposer read it word for word. The reviewer's comment is what is kept."""
    c = Candidate(id="r1c1", target=SKILL, patch="p", patch_format=PatchFormatName.FULL, text="x\n",
                  verdict=CandidateVerdict.FAILED_VALIDATION, rejected_by=rejected_by,
                  notes=["selection WIN on effect", "holdout on effect (6 case(s), verdict REVIEW): point estimate "
                         "improves: yes (6 win(s) / 0 loss(es) / 0 tie(s), score 0.750 vs live 0.250)",
                         "final_audit on effect (5 case(s)): 5 win(s)", "rejected in review: the tone is too pushy"])
    [r] = to_remember("run-b", [c], set())
    assert "holdout" not in r.reason and "final_audit" not in r.reason and "0.750" not in r.reason
    assert r.reason == f"{rejected_by}: selection WIN on effect; rejected in review: the tone is too pushy"
