"""QA 24 finding 13: evaluate of a skill the workspace does not have is UnknownSkill (with the
closest names) through the API, as evolve says it; a known skill with no cases in the set is still
the set's DatasetError."""

from __future__ import annotations

import pytest

from evolve_fakes import SKILL, World, write_sets
from skillforge.context import eval_context
from skillforge.errors import UnknownSkill
from skillforge.evaluation.datasets import DatasetError
from skillforge.graphs.evaluate import build_evaluate_graph
from skillforge.library.registry import SkillRegistry
from skillforge.state.evaluate import SkillSide
from skillforge.state.evaluate_graph import EvalState


def test_unknown_skill_is_named_with_the_closest(machine):
    ws = machine.ws
    write_sets(ws)
    live = SkillRegistry.load(ws).get(SKILL)
    side = SkillSide(text=ws.skills_dir.joinpath(SKILL, "SKILL.md").read_text(encoding="utf-8"),
                     release_id=live.release.release_id, label="live")
    g = build_evaluate_graph(checkpointer=False)
    ctx = eval_context(ws, World(lambda r: []).llm())
    with pytest.raises(UnknownSkill, match="unknown skill 'taxi-hailin'. Did you mean: taxi-hailing"):
        g.invoke(EvalState(run_id="b1", skill="taxi-hailin", eval_set="repair", baseline=side, candidate=side),
                 context=ctx)
    other = next(n for n in SkillRegistry.load(ws).names() if n != SKILL and
                 not any(c.skill == n for c in ctx.sets["repair"].cases))
    with pytest.raises(DatasetError, match=f"set 'repair' has no cases for skill '{other}'"):
        g.invoke(EvalState(run_id="b2", skill=other, eval_set="repair", baseline=side, candidate=side), context=ctx)
