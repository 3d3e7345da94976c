"""`evaluate` of a candidate whose SKILL.md is the baseline's own text says so before anything is
sent: such a run can only measure the judge's noise (what `--aa` is for), never an improvement. A
candidate that differs gets no such note. The budget cap stops both runs before any request."""

from __future__ import annotations

from conftest import flat, run_cli
from evolve_fakes import SKILL, new_workspace
from skillforge.library.registry import SkillRegistry
from test_budget_preflight import better_candidate
from world_server import WorldServer
from metered_world import env_for

NOTE = "is the same text as the baseline's"


def test_a_candidate_with_the_baseline_text_is_named_before_the_run(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    w = ["-w", str(ws.root)]
    live = SkillRegistry.load(ws).get(SKILL).release
    copy = tmp_path / "copy" / SKILL
    copy.mkdir(parents=True)
    (copy / "SKILL.md").write_text((ws.skills_dir / SKILL / "SKILL.md").read_text(encoding="utf-8"), encoding="utf-8")
    changed = better_candidate(ws, tmp_path)
    with WorldServer() as srv:
        env = env_for(srv, retries=0)
        for cand in (live.release_id, str(copy)):  # the live release by id, and a folder holding its text
            proc = run_cli(["evaluate", SKILL, "--candidate", cand, "--set", "repair", "--budget-calls", "1", *w],
                           env, ok=6)
            said = flat(proc.stderr)
            assert NOTE in said and "--aa" in said and "cannot find an improvement" in said, said
        proc = run_cli(["evaluate", SKILL, "--candidate", changed, "--set", "repair", "--budget-calls", "1", *w],
                       env, ok=6)
        assert NOTE not in flat(proc.stderr)
        assert srv.hits == 0
