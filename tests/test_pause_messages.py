"""`evolve --json` says in `message` why a paused run stopped and what to do next, as the other
outcomes do (QA msgs15 item 2: a run paused at its BUDGET, and a DERIVED candidate (a new skill)
waiting for review, had an empty message; the reason was only in `pending` / `next`). The CLI runs
for real against the scripted world behind a real HTTP server; the text output says each once."""

from __future__ import annotations

import json

from conftest import flat, run_cli
from evolve_fakes import QUOTE_ETA, SKILL, World, new_workspace, seed_failures
from metered_world import env_for
from skillforge.evolution.propose import PatchProposal
from skillforge.library.registry import SkillRegistry
from world_server import WorldServer


def _new_skill_text(ws, name: str) -> str:
    reg = SkillRegistry.load(ws)
    rel = reg.get(SKILL).release
    live = reg.repo.read(rel.commit_hash, f"{rel.skill_path}/SKILL.md").decode("utf-8")
    return live.replace(f"name: {SKILL}", f"name: {name}").replace(
        "## Instructions", f"## Instructions\n- {QUOTE_ETA}：报价时同时告诉用户司机预计多久到达。")


def test_a_run_paused_at_its_budget_says_why_and_the_command_that_goes_on(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    seed_failures(ws, World(lambda r: []).llm())
    w = ["-w", str(ws.root)]
    with WorldServer() as srv:
        env = env_for(srv, retries=0)
        out = json.loads(run_cli(["evolve", SKILL, "--budget-calls", "5", "--json", *w], env, ok=4).stdout)
        text = flat(run_cli(["runs", "show", out["run_id"], *w], env).stdout)
    assert out["status"] == "BUDGET" and srv.hits == 0, out
    run_id, reason = out["run_id"], out["pending"]["reason"]
    assert out["message"] == (f"paused at its budget ({reason}): nothing more is spent until it is resumed: "
                              f"{out['next']} (or close it: skillforge runs cancel {run_id})"), out["message"]
    assert "estimate above budget" in out["message"] and f"evolve --resume {run_id} --budget-calls " in out["message"]
    # the text says it line by line (paused: ..., next: ...), not a second time as the message
    assert text.count(reason) == 1 and "paused at its budget" not in text and "next: skillforge evolve --resume" in text


def test_a_new_skill_waiting_for_review_says_so_and_how_to_decide_it(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    new = PatchProposal(kind="DERIVED", target_name="taxi-eta", format="full", patch=_new_skill_text(ws, "taxi-eta"),
                        rationale="a variant that quotes the ETA", claimed_level=2)
    world = World(lambda r: [new, new, new])  # three candidates: the proposer leaves no note in the message
    seed_failures(ws, world.llm())
    w = ["-w", str(ws.root)]
    with WorldServer(world) as srv:
        env = env_for(srv, retries=0)
        out = json.loads(run_cli(["evolve", SKILL, "--json", *w], env, ok=None).stdout)
        text = flat(run_cli(["runs", "show", out["run_id"], *w], env).stdout)
    assert out["status"] == "PENDING_REVIEW" and out["pending"]["candidate_kind"] == "DERIVED", out
    run_id, cand = out["run_id"], out["pending"]["candidate"]
    assert out["message"] == (f"candidate {cand}, a new skill taxi-eta (DERIVED from {SKILL}, level 2), waits for a "
                              f"person's review: nothing is published until one approves it. Read it: skillforge "
                              f"review show {run_id}; then: {out['review_next']['then']}"), out["message"]
    assert f"review approve {run_id}" in out["message"]
    assert "waits for a person's review" not in text and f"waiting for a person: skillforge review show {run_id}" in text
