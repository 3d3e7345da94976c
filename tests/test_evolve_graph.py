"""The evolve graph end to end with scripted models: a real workspace (git + SQLite), real traces
from a real evaluation, the SqliteSaver checkpointer. Each test is a full graph run."""

from __future__ import annotations

import json

import pytest

from evolve_fakes import QUOTE_ETA, SKILL, World, eta_patch, examples_patch, new_workspace, seed_failures, \
    sets_dir_bytes, write_sets
from skillforge.runners.evolve import Runner
from skillforge.evolution.propose import PatchProposal, ProposalSet
from skillforge.journal import read_jsonl
from skillforge.library.registry import SkillRegistry
from skillforge.state.evolve import EvolveMode
from skillforge.state.llm import BudgetCaps
from skillforge.skill.tree import FileMode
from skillforge.state.release import LineageKind


@pytest.fixture
def world_ws(machine):
    ws = machine.ws
    write_sets(ws)
    return ws


def run(ws, world, **kw):
    seed_failures(ws, world.llm())
    runner = Runner(ws, llm_factory=world.llm)
    return runner, runner.start(SKILL, **kw)


def live_text(ws) -> str:
    reg = SkillRegistry.load(ws)
    pub = reg.get(SKILL)
    return reg.repo.read(pub.release.commit_hash, f"{pub.release.skill_path}/SKILL.md").decode("utf-8")


def test_l1_patch_that_wins_is_published_with_lineage_commit_and_evaluation(world_ws):
    ws = world_ws
    before = SkillRegistry.load(ws).get(SKILL).release
    world = World(lambda r: [examples_patch()])
    runner, out = run(ws, world)
    assert out["status"] == "PUBLISHED", out
    cand = out["candidates"][0]
    assert (cand["claimed_level"], cand["computed_level"], cand["verdict"]) == (1, 1, "PASSED")
    assert out["selection"]["improvement"] == "WIN" and out["holdout"]["verdict"] != "DECLINED"
    reg = SkillRegistry.load(ws)
    rel = reg.get(SKILL).release
    assert rel.release_id == out["release_id"] != before.release_id
    assert rel.triggered_by == f"evolve:{out['run_id']}" and rel.level.value == "L1"
    from skillforge.library.store import Store
    links = Store(ws.db_path).lineage(rel.release_id)
    assert [(lk.parent, lk.kind) for lk in links] == [(before.release_id, LineageKind.FIX)]
    text = live_text(ws)
    assert QUOTE_ETA in text and f'version: "{rel.version}"' in text  # metadata.version == release version
    evals = [e for e in read_jsonl(ws.evaluations_log) if e.get("release_id") == rel.release_id]
    assert len(evals) == 1 and evals[0]["kind"] == "evolve" and "holdout" in evals[0]


def test_claimed_l1_instruction_edit_is_l2_and_waits_for_review_then_approve_publishes(world_ws):
    ws = world_ws
    noop = PatchProposal(format="full", patch=live_text(ws), rationale="no change", claimed_level=1)
    world = World(lambda r: [eta_patch(claimed=1), noop, eta_patch(claimed=1)])
    runner, out = run(ws, world)
    assert out["status"] == "PENDING_REVIEW", out
    by_id = {c["id"]: c for c in out["candidates"]}
    assert (by_id["r1c1"]["claimed_level"], by_id["r1c1"]["computed_level"]) == (1, 2)
    assert (by_id["r1c2"]["verdict"], by_id["r1c2"]["rejected_by"]) == ("NOOP", "fingerprint")
    assert (by_id["r1c3"]["verdict"], by_id["r1c3"]["rejected_by"]) == ("DUPLICATE", "fingerprint")
    pending = out["pending"]
    assert pending["kind"] == "review" and QUOTE_ETA in pending["diff"] and "final_audit" in pending["scores"]
    assert {"selection", "holdout", "final_audit"} <= set(pending["scores"])
    review_file = (ws.runs_dir / "reviews" / f"{out['run_id']}.md").read_text(encoding="utf-8")
    assert QUOTE_ETA in review_file and f"skillforge review approve {out['run_id']}" in review_file
    assert SkillRegistry.load(ws).get(SKILL).release.triggered_by == "import"  # nothing published yet
    done = Runner(ws, llm_factory=world.llm).answer_review(out["run_id"], "approve", comment="ok")
    assert done["status"] == "PUBLISHED" and QUOTE_ETA in live_text(ws)


def test_review_reject_publishes_nothing_and_archives_the_failure(world_ws):
    ws = world_ws
    world = World(lambda r: [eta_patch(claimed=2)])
    runner, out = run(ws, world)
    assert out["status"] == "PENDING_REVIEW"
    done = runner.answer_review(out["run_id"], "reject", comment="too broad")
    assert done["status"] == "REJECTED" and QUOTE_ETA not in live_text(ws)
    report = (ws.runs_dir / "failures" / f"{out['run_id']}.md").read_text(encoding="utf-8")
    assert "rejected in review: too broad" in report


def test_winners_curse_wins_on_repair_loses_on_holdout_is_not_published(world_ws):
    ws = world_ws
    overfit = eta_patch(claimed=1, line=f"- {QUOTE_ETA}：报价时告诉用户司机多久到。OVERFIT-MARKER")
    world = World(lambda r: [overfit])
    runner, out = run(ws, world, max_rounds=1)
    assert out["status"] == "NO_IMPROVEMENT", out
    state = runner.state(out["run_id"])
    cand = state.candidates[0]
    assert cand.verdict.value == "HOLDOUT_LOSS" and cand.rejected_by == "holdout"
    assert cand.validation["selection"].improvement == "WIN"  # it did win where it was selected
    holdout, selection = cand.validation["holdout"], cand.validation["selection"]
    assert holdout.verdict == "DECLINED" and holdout.score < holdout.baseline_score  # lost where confirmed
    assert selection.score > selection.baseline_score  # both scores are kept, apart
    assert QUOTE_ETA not in live_text(ws)


def test_no_failures_ends_without_any_model_call(world_ws):
    world = World(lambda r: [examples_patch()])
    out = Runner(world_ws, llm_factory=world.llm).start(SKILL)  # no evaluation ran: no traces
    assert out["status"] == "NO_FAILURES" and out["llm_calls"] == 0 and world.proposer.position == 0


def test_audit_only_writes_findings_and_changes_nothing(world_ws):
    ws = world_ws
    world = World(lambda r: [examples_patch()])
    seed_failures(ws, world.llm())
    sets_before = sets_dir_bytes(ws)
    release_before = SkillRegistry.load(ws).get(SKILL).release
    out = Runner(ws, llm_factory=world.llm).start(SKILL, mode=EvolveMode.AUDIT_ONLY)
    assert out["status"] == "AUDITED" and out["candidates"] == []
    assert "answers omit the pickup ETA" in (ws.runs_dir / "audits" / f"{out['run_id']}.md").read_text(encoding="utf-8")
    assert sets_dir_bytes(ws) == sets_before and SkillRegistry.load(ws).get(SKILL).release == release_before
    from conftest import flat, run_cli

    shown = flat(run_cli(["runs", "show", out["run_id"], "-w", str(ws.root)]).stdout)  # what evolve prints too
    assert shown.count(f"{out['run_id']}.md") == 1, shown  # was: "findings written to X" and "failure report: X"


def test_fix_only_turns_a_derived_proposal_into_a_suggestion(world_ws):
    ws = world_ws
    derived_text = live_text(ws).replace("name: taxi-hailing", "name: taxi-eta").replace(
        "## Instructions", f"## Instructions\n- {QUOTE_ETA}：报价时同时告诉用户司机预计多久到达。")
    derived = PatchProposal(kind="DERIVED", target_name="taxi-eta", format="full", patch=derived_text,
                            rationale="a variant that quotes the ETA", claimed_level=2)
    world = World(lambda r: [derived])
    runner, out = run(ws, world, mode=EvolveMode.FIX_ONLY)
    assert out["status"] == "SUGGESTED", out
    assert "taxi-eta" in (ws.runs_dir / "suggestions" / f"{out['run_id']}.md").read_text(encoding="utf-8")
    assert "taxi-eta" not in SkillRegistry.load(ws).names()


@pytest.mark.parametrize("leak,reason", [
    ("从球馆打车去中山公园要多少钱，车多久能到？（9号）", "query"),          # a copied holdout query
    ("遇到打车去豫园要多少钱这类问题先报价", "query_ngram"),               # an 8-char n-gram of a final_audit query
    ("参考编号 sfn-1a2b3c4d5e6f 的格式", "nonce"),
    ("api_key = 'sk-abcdefghijklmnopqrstuvwx0123'", "secret"),
    ("先运行 ../../other-skill/tool.sh 获取报价", "path_escape"),
])
def test_leak_scan_rejects_with_the_reason_recorded(world_ws, leak, reason):
    world = World(lambda r: [eta_patch(claimed=2, line=f"- {QUOTE_ETA}：{leak}")])
    runner, out = run(world_ws, world, max_rounds=1)
    assert out["status"] == "NO_IMPROVEMENT"
    cand = runner.state(out["run_id"]).candidates[0]
    assert cand.verdict.value == "LEAK" and cand.rejected_by == "leak_scan"
    assert any(x.startswith(reason) for x in cand.leaks), cand.leaks


def test_reasoning_tag_and_unparseable_output_are_refused(world_ws):
    ws = world_ws
    tagged = PatchProposal(format="full", patch="<think>make it better</think>\n" + live_text(ws), rationale="x")
    broken = PatchProposal(format="full", patch="---\nname: [unclosed\n---\nbody\n", rationale="y")
    world = World(lambda r: [tagged, broken])
    runner, out = run(ws, world, max_rounds=1)
    cands = runner.state(out["run_id"]).candidates
    assert [(c.verdict.value, c.rejected_by) for c in cands] == [("REFUSED", "apply")] * 2
    assert "reasoning_tag" in cands[0].notes[0] and "not_a_skill" in cands[1].notes[0]
    # two candidates where 3-5 were asked: said once for the run (summary and failures file), never
    # as a candidate's note, so no candidate's failure reason in the rejected-edit buffer is about it
    few = "the proposer gave 2 candidate(s), fewer than 3"
    assert out["proposer_notes"] == [f"round 1: {few}"]
    assert not any(few in n for c in cands for n in c.notes)
    failures = (ws.runs_dir / "failures" / f"{out['run_id']}.md").read_text(encoding="utf-8")
    assert f"- proposer: round 1: {few}" in failures and f"- note: {few}" not in failures


def test_search_block_matching_twice_is_retried_with_the_file_content(world_ws):
    ws = world_ws
    twice = PatchProposal(format="search_replace", rationale="z", claimed_level=2,
                          patch="<<<<<<< SEARCH\n## \n=======\n## X\n>>>>>>> REPLACE\n")
    world = World(lambda r: [twice], retry=eta_patch(claimed=2))
    runner, out = run(ws, world)
    cand = runner.state(out["run_id"]).candidates[0]
    assert "ambiguous" in cand.notes[0] and cand.text is not None and QUOTE_ETA in cand.text
    assert len(world.retries) == 1 and live_text(ws) in world.retries[0]  # the real file was fed back
    assert out["status"] == "PENDING_REVIEW"


def test_budget_runs_out_mid_round_then_resume_with_more_completes(world_ws, tmp_path):
    """The ledger counts every request the models received, across the pause and the resume; what
    the paused node had been answered comes back from the cache (counted apart, not paid)."""
    from skillforge.llm.cache import CACHE_FILE, LLMCache

    def sent(world: World) -> int:
        return world.executor.position + world.judge.position + world.proposer.position

    reference = World(lambda r: [eta_patch(claimed=2)])
    _, out = run(world_ws, reference)
    assert out["status"] == "PENDING_REVIEW"
    needed = out["llm_calls"]
    assert needed == sent(reference) - 36  # minus the seeding evaluation (6 cases x 6 requests)
    ws = new_workspace(tmp_path / "second")  # the same world again, with one call too few
    world = World(lambda r: [eta_patch(claimed=2)])
    seed_failures(ws, world.llm())
    seeded = sent(world)
    cache = LLMCache(ws.runs_dir / CACHE_FILE)
    runner = Runner(ws, llm_factory=lambda ledger: world.llm(ledger, cache))
    small = runner.start(SKILL, caps=BudgetCaps(max_calls=needed - 1), run_id="evolve-budget-test")
    assert small["status"] == "BUDGET" and small["llm_calls"] == needed - 1 == sent(world) - seeded, small
    assert small["budget"]["refused"] >= 1 and small["budget"]["caps"]["max_calls"] == needed - 1
    assert small["pending"]["kind"] == "budget" and "call cap" in small["pending"]["reason"]
    done = Runner(ws, llm_factory=lambda ledger: world.llm(ledger, cache)).resume(
        "evolve-budget-test", caps=BudgetCaps(max_calls=needed * 2))
    assert done["status"] == "PENDING_REVIEW", done
    assert done["llm_calls"] == sent(world) - seeded == needed  # the calls made before the pause were not paid twice
    assert done["budget"]["cached"] > 0 and done["budget"]["caps"]["max_calls"] == needed * 2


def test_estimate_above_the_budget_refuses_to_start(world_ws):
    ws = world_ws
    world = World(lambda r: [eta_patch(claimed=2)])
    seed_failures(ws, world.llm())
    out = Runner(ws, llm_factory=world.llm).start(SKILL, caps=BudgetCaps(max_calls=5))
    assert out["status"] == "BUDGET" and out["llm_calls"] == 0 and world.proposer.position == 0
    assert "estimate above budget" in out["pending"]["reason"]


def test_description_or_example_edit_that_captures_another_skills_queries_is_refused(world_ws):
    ws = world_ws
    grabbed = "今晚七点想在外婆家订个八人包厢"
    router = ws.evaluation_sets_dir / "router"
    router.mkdir(parents=True, exist_ok=True)
    (router / "dev.jsonl").write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in [
        {"query": grabbed, "expected": "restaurant-booking"},
        {"query": "帮我叫辆车去虹桥火车站", "expected": SKILL},
        {"query": "明天早上的酒店还能退吗", "expected": "hotel-booking"}]) + "\n", encoding="utf-8")
    (router / "negatives.jsonl").write_text(json.dumps({"query": "给我讲个笑话", "expected": None},
                                                       ensure_ascii=False) + "\n", encoding="utf-8")
    text = live_text(ws)
    old_examples = text.split("examples: ", 1)[1].split("\n", 1)[0]
    new_examples = old_examples.rstrip("]") + f', "{grabbed}"]'
    patch = PatchProposal(format="search_replace", claimed_level=1, rationale="more examples",
                          patch=f"<<<<<<< SEARCH\nexamples: {old_examples}\n=======\nexamples: {new_examples}\n>>>>>>> REPLACE\n")
    world = World(lambda r: [patch])
    runner, out = run(ws, world, max_rounds=1)
    assert out["status"] == "NO_IMPROVEMENT", out
    cand = runner.state(out["run_id"]).candidates[0]
    assert cand.computed_level == 1 and cand.metadata_only
    assert (cand.verdict.value, cand.rejected_by) == ("FAILED_VALIDATION", "routing")
    assert any("interference" in r for r in cand.validation["routing"].reasons), cand.validation["routing"]
    assert "selection" not in cand.validation  # refused before any evaluation call


def test_batch_runs_each_skill_skips_those_without_failures_survives_a_failing_one_and_resumes(world_ws):
    from skillforge.runners.evolve_batch import run_batch
    from skillforge.errors import LLMUnavailable

    ws = world_ws
    world = World(lambda r: [eta_patch(claimed=2)])
    seed_failures(ws, world.llm())

    class Flaky(Runner):
        def start(self, skill, **kw):
            if skill == "hotel-booking":
                raise LLMUnavailable("endpoint down (injected)")
            return super().start(skill, **kw)

    runs = {SKILL: "evolve-b-taxi", "hotel-booking": "evolve-b-hotel", "restaurant-booking": "evolve-b-rest"}
    first = {r["skill"]: r["status"] for r in run_batch(Flaky(ws, llm_factory=world.llm), runs)}
    assert first == {SKILL: "PENDING_REVIEW", "hotel-booking": "FAILED", "restaurant-booking": "NO_FAILURES"}
    calls = world.proposer.position + world.executor.position
    again = {r["skill"]: r["status"] for r in run_batch(Runner(ws, llm_factory=world.llm), runs)}
    assert again == {SKILL: "PENDING_REVIEW", "hotel-booking": "NO_FAILURES", "restaurant-booking": "NO_FAILURES"}
    assert world.proposer.position + world.executor.position == calls  # finished runs were not run again


def test_an_evolve_release_keeps_the_skills_other_files_modes_and_links(world_ws):
    ws = world_ws
    folder = ws.skills_dir / SKILL
    (folder / "scripts").mkdir()
    (folder / "scripts" / "fare.sh").write_text("#!/bin/sh\necho fare\n")
    (folder / "scripts" / "fare.sh").chmod(0o755)
    (folder / "README-link.md").symlink_to("SKILL.md")
    from skillforge.library.releases import ReleaseStateMachine
    ReleaseStateMachine.open(ws).publish(SKILL, triggered_by="test")  # the live release has them
    world = World(lambda r: [examples_patch()])
    runner, out = run(ws, world)
    assert out["status"] == "PUBLISHED", out
    rel = SkillRegistry.load(ws).get(SKILL).release
    tree = SkillRegistry.load(ws).repo.tree_at(rel.commit_hash, rel.skill_path)
    assert tree["scripts/fare.sh"].mode is FileMode.EXECUTABLE and tree["README-link.md"].mode is FileMode.SYMLINK
    assert QUOTE_ETA in tree["SKILL.md"].data.decode()


def test_collect_harvests_new_failures_as_auto_cases_with_the_manifest_and_drops_near_duplicates(world_ws):
    ws = world_ws
    from evolve_fakes import _case

    traffic = [_case("traffic-1", 30), _case("traffic-2", 31), _case("traffic-3", 31)]
    traffic[2]["query"] = traffic[1]["query"].replace("？", "?")  # the same request again, near-identical
    path = ws.evaluation_sets_dir / "traffic.json"
    path.write_text(json.dumps({"meta": {"name": "traffic", "partition": "dev", "skills": [SKILL],
                                         "auto_case_ids": []}, "cases": traffic}, ensure_ascii=False), encoding="utf-8")
    world = World(lambda r: [examples_patch()])
    seed_failures(ws, world.llm(), eval_set="traffic")
    path.unlink()  # what was evaluated is gone from the sets: only the traces remember it
    out = Runner(ws, llm_factory=world.llm).start(SKILL, mode=EvolveMode.AUDIT_ONLY)
    assert out["status"] == "AUDITED"
    repair = json.loads((ws.evaluation_sets_dir / "repair.json").read_text(encoding="utf-8"))
    auto = [c for c in repair["cases"] if "_auto_" in c["id"]]
    assert [c["id"] for c in auto] == [f"{SKILL}_auto_01", f"{SKILL}_auto_02"]  # 3 failures, 2 distinct
    assert repair["meta"]["auto_case_ids"] == [c["id"] for c in auto]
    assert {c["query"] for c in auto} == {traffic[0]["query"], traffic[1]["query"]}
    assert set(out["failures"]) >= {f"{SKILL}_auto_01", f"{SKILL}_auto_02"}
    from skillforge.evaluation.datasets import load_sets
    load_sets(ws)  # the workspace's sets still load together


def test_a_proposer_that_is_down_is_named_in_the_headline_not_no_candidate_passed(world_ws):
    """QA19 MESSAGE-2: HTTP 500 on every proposal request ended "no candidate passed in 1 round(s)",
    read as "evolution found nothing better". Since QA 37 F2 the run does not end at all: it stops
    open in round 1, saying why, and resumes once the proposer answers (tests/test_outage.py)."""
    from skillforge.errors import LLMUnavailable

    class Down(World):
        def proposer_reply(self, messages):  # noqa: ANN001, ANN202 - diagnosis answers, proposals do not
            reply = super().proposer_reply(messages)
            return LLMUnavailable("role 'proposer': HTTP 500: qa down") if isinstance(reply, ProposalSet) else reply

    runner, out = run(world_ws, Down(lambda r: [eta_patch(claimed=2)]), max_rounds=2)
    assert out["status"] == "RUNNING" and not runner.state(out["run_id"]).candidates
    assert out["message"].startswith("stopped: LLMUnavailable: the proposer is unavailable: "
                                     "role 'proposer': HTTP 500: qa down. The run stays open"), out["message"]


def test_candidates_that_were_tried_and_failed_still_say_no_candidate_passed(world_ws):
    overfit = eta_patch(claimed=1, line=f"- {QUOTE_ETA}：报价时告诉用户司机多久到。OVERFIT-MARKER")
    _, out = run(world_ws, World(lambda r: [overfit]), max_rounds=1)
    assert out["status"] == "NO_IMPROVEMENT" and out["message"] == "no candidate passed in 1 round(s)", out
