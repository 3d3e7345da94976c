"""What the evolve graph's nodes share (moved out of nodes/evolve.py, which was at its size limit):
`_metered` runs a node's model calls against the run's ledger rows and caps (pausing at a hard cap),
`_live`/`_round` read the release the run works on and its sets, `_published` the skills an
executor sees, `mode_for` the execution mode a candidate is measured in."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from skillforge.context import EvolveContext
from skillforge.evaluation.datasets import load_sets
from skillforge.errors import BudgetExceeded
from skillforge.evaluation.executor import SkillUnderTest
from skillforge.nodes.answers import CAPS_EXAMPLE, ask
from skillforge.library.registry import SkillRegistry
from skillforge.state.evaluate import EvalSet, ExecutionMode
from skillforge.state.evolve import Baseline, Candidate, EvolveState
from skillforge.state.skill import SkillFile
from skillforge.state.llm import BudgetCaps, BudgetLedger

T = TypeVar("T")


def _metered(state: EvolveState, ctx: EvolveContext, work: Callable[[], T]) -> tuple[T, BudgetLedger]:
    """Run `work` counting in the run's ledger rows against the caps in force; on a hard cap, pause
    until resumed with new caps. Returns its result and the caps in force (the state's budget).
    The caps in force are those the request ledger recorded for the run (its start, or a resume
    that gave new ones before anything ran), else the state's: a node that paused is run again from
    its start when resumed, and replayed under the state's old caps its first uncached request
    was refused (and logged so) before the pause's answer was read."""
    caps = ctx.llm.ledger.store.caps(state.run_id) or state.budget.caps
    while True:
        ctx.llm.ledger = ctx.llm.ledger.bind(state.run_id, caps)
        try:
            return work(), BudgetLedger(caps=caps)
        except BudgetExceeded as e:  # refused by the batch's caps: the batch's are what to raise
            scope = ctx.llm.ledger.store.last_refusal(state.run_id)
            batch = {"batch": scope[0], "batch_cap": scope[1]} if scope and scope[0] != state.run_id else {}
            caps = _recorded(ctx, state, ask({"kind": "budget", "run_id": state.run_id, "reason": str(e),
                                              "caps": caps.model_dump(), **batch}, BudgetCaps, CAPS_EXAMPLE))


def _recorded(ctx: EvolveContext, state: EvolveState, caps: BudgetCaps) -> BudgetCaps:
    """The caps a budget pause was answered with, recorded in the request ledger as the run's caps in
    force (`runner.resume` records them before it drives; an answer given to the graph itself, from
    Studio or `Command(resume=...)`, is recorded here), so the run's next node counts against them."""
    ctx.llm.ledger.store.set_caps(state.run_id, caps)
    return caps


def _live(ctx: EvolveContext, skill: str, base: str | None = None) -> tuple[SkillRegistry, str, str]:
    """(registry, SKILL.md text, release id) of the skill's live release, or of the run's `base`
    release when it has one: a run keeps working on the release it started from."""
    reg = SkillRegistry.load(ctx.ws)
    rel = reg.get(skill).release
    if base and base != rel.release_id:
        rel = reg.store.release(base)
    path = f"{rel.skill_path}/SKILL.md"
    assert rel.commit_hash is not None
    text = reg.repo.read(rel.commit_hash, path).decode("utf-8")
    return reg, text, rel.release_id


def _round(ctx: EvolveContext, state: EvolveState) -> tuple[Baseline, dict[str, EvalSet], dict[str, object]]:
    """The round's baseline and sets, as the state keeps them (read once, by collect). Read here when
    the state has none (after a rebase; a run checkpointed before they were kept) or a baseline of
    another release than the run's base; the update that keeps them is the third item."""
    kept: dict[str, object] = {}
    base = state.baseline
    if base is None or (state.base_release_id is not None and base.release_id != state.base_release_id):
        _, text, release_id = _live(ctx, state.skill, state.base_release_id)
        base = kept["baseline"] = Baseline(release_id=release_id, text=text)
    sets = state.sets
    if sets is None:
        sets = kept["sets"] = load_sets(ctx.ws)
    return base, sets, kept


def mode_for(c: Candidate) -> ExecutionMode:
    """Edits of the routing surface only are measured in disclosure mode (does the agent now pick the
    skill?); anything that touches the body in behaviour mode (what do the instructions do?)."""
    return ExecutionMode.DISCLOSURE if c.metadata_only else ExecutionMode.BEHAVIOUR


def _published(ctx: EvolveContext) -> tuple[dict[str, SkillUnderTest], dict[str, SkillFile]]:
    """The published skills now (one registry load): as the executor sees them, and their files."""
    reg = SkillRegistry.load(ctx.ws)
    others = {n: SkillUnderTest(p.skill, p.skill.body, p.release.release_id) for n, p in reg.skills.items()}
    return others, {n: p.skill for n, p in reg.skills.items()}


__all__ = ["_live", "_metered", "_published", "_recorded", "_round", "mode_for"]
