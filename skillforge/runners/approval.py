"""What an approve of a pending review is refused for, checked before the run is resumed (publish
checks the base and the name again under the release lock)."""

from __future__ import annotations

from skillforge.config import Workspace
from skillforge.evolution.archive import check_base, check_name
from skillforge.evolution.review import selected
from skillforge.library.unsaved import unsaved
from skillforge.state.evolve import CandidateKind, EvolveState


def check_publishable(ws: Workspace, state: EvolveState, force: bool = False, embedder: object | None = None) -> None:
    """What an approve would be refused for, before the run is resumed (publish checks again
    under the release lock): the base moved, a new skill's name is taken, unpublished edits."""
    from skillforge.library.releases import ReleaseStateMachine

    cand = selected(state)
    m = ReleaseStateMachine.open(ws)

    def instead() -> str | None:  # the step review show names, not a rebase that cannot re-apply it (QA 41 M1)
        from skillforge.runners.review_step import review_step

        step = review_step(ws, state)
        return None if step.rebase else f"{step.warning}. Next: {step.then}"
    check_base(m.store, state, cand, next_step=instead)
    check_name(ws, m.store, state, cand)
    if state.need and cand.text is not None:
        check_still_new(ws, state, cand.text, embedder)
    if cand.kind is CandidateKind.FIX:
        unsaved(m, cand.target, m.folder_of(cand.target), refuse=not force)  # publish's own pre-check


def check_still_new(ws: Workspace, state: EvolveState, text: str, embedder: object | None = None) -> None:
    """NeedServed when a capture run's skill now conflicts with the library (a skill published since
    its draft serves the need): the conflict rule on the live skills as they are now, with the
    runner's embedder (else the process's shared one, loaded once)."""
    from skillforge.context import shared_embedder
    from skillforge.errors import NeedServed
    from skillforge.evolution.capture import recheck
    from skillforge.graphs.route import route
    from skillforge.library.registry import SkillRegistry

    published = {n: p.skill for n, p in SkillRegistry.load(ws).skills.items()}
    verdict = recheck(ws, route, embedder or shared_embedder(), state.skill, text, state.registration, published)
    if verdict.refused:
        raise NeedServed(f"the library changed since {state.skill} was drafted: {'; '.join(verdict.reasons)} "
                         f"(nearest: {verdict.nearest}, score {verdict.score:.3f}). Nothing was published; the run still "
                         f"waits: reject it (skillforge review reject {state.run_id}) and draft the need again")
