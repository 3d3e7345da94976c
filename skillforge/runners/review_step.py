"""The next step of a run waiting for review, as the workspace stands now: its base against the
live release, whether the skill is RETIRED, whether the candidate would re-apply on the live
release (the three-way merge of `review rebase`, made here on temporary files and recorded
nowhere), and the final_audit warning. `review show` and the run summary print it
(rules/review_next.py decides the words)."""

from __future__ import annotations

from skillforge.config import Workspace
from skillforge.errors import SkillForgeError
from skillforge.rules.review import BaseVerdict, base_verdict
from skillforge.rules.review_next import ReviewNext, audit_warning, review_next
from skillforge.state.evolve import CandidateKind, EvolveState


def review_step(ws: Workspace, state: EvolveState) -> ReviewNext:
    """The warning and the next command of `state`'s run, which waits for review."""
    from skillforge.evolution.review import rebase_candidate
    from skillforge.library.store import Store

    cand = next((c for c in state.candidates if c.id == state.selected), None)
    fix = cand is not None and cand.kind is CandidateKind.FIX
    store = Store(ws.db_path)
    live = store.current(state.skill)
    verdict = base_verdict(state.base_release_id, live.release_id if live else None)
    refusal = None
    if fix and verdict is BaseVerdict.MOVED:
        try:
            rebase_candidate(ws, state)  # read only: a merge on temporary files, the candidate it would make
        except SkillForgeError as e:
            refusal = str(e)
    return review_next(state.run_id, state.skill, fix=fix, base=verdict,
                       retired=store.retirement(state.skill) is not None, rebase_refusal=refusal)


def audit_line(state: EvolveState) -> str:
    """The final_audit warning of the run's selected candidate ("" when there is none)."""
    cand = next((c for c in state.candidates if c.id == state.selected), None)
    return audit_warning(cand.validation.get("final_audit")) if cand is not None else ""


__all__ = ["audit_line", "review_step"]
