"""Rules about evolve runs as a whole (pure): a run's status from what its checkpoint holds, which
runs keep a skill busy, and which options cannot go with `--resume`.

- **Status.** A pending interrupt says PENDING_REVIEW (a review) or BUDGET (a cap); otherwise the
  status the graph wrote. RUNNING with no interrupt is a run killed (or crashed) in a node: it
  resumes from its last checkpoint.
- **Open runs.** A run is open until it reaches a terminal status: RUNNING (live, killed or
  crashed), BUDGET (paused at a cap) and PENDING_REVIEW (waiting for a person). While a skill has
  an open run, no second run of it starts: two runs of one skill would each be validated against
  a release the other replaces. A person closes an open run by finishing it (`evolve --resume`,
  `review approve|reject`) or by `runs cancel`.
"""

from __future__ import annotations

from collections.abc import Iterable

from skillforge.state.evolve import TERMINAL, EvolveStatus

REVIEW, BUDGET = "review", "budget"
"""The kinds of interrupt an evolve run pauses at."""


def run_status(written: EvolveStatus, interrupt_kind: str | None) -> EvolveStatus:
    """Decide a run's status from the status its graph wrote and the kind of its pending interrupt."""
    if interrupt_kind == REVIEW:
        return EvolveStatus.PENDING_REVIEW
    if interrupt_kind is not None:
        return EvolveStatus.BUDGET
    return written


def is_open(status: EvolveStatus) -> bool:
    """Whether a run of this status keeps its skill busy (it is not finished)."""
    return status not in TERMINAL


def open_runs(runs: Iterable[tuple[str, str, EvolveStatus]], skill: str, except_run: str | None = None) -> list[str]:
    """The ids of the open runs of `skill` among (run id, skill, status), other than `except_run`."""
    return [rid for rid, name, status in runs if name == skill and rid != except_run and is_open(status)]


def resume_conflicts(*, skill: str | None, run_skill: str | None, mode_given: bool, max_rounds_given: bool,
                     all_skills: bool) -> list[str]:
    """The options given with `--resume RUN` that the stored run overrides (so they would be
    silently ignored): a SKILL other than the run's, --mode, --max-rounds, --all."""
    bad = []
    if skill is not None and skill != run_skill:
        bad.append(f"SKILL ({skill!r}; the run evolves {run_skill!r})" if run_skill else f"SKILL ({skill!r})")
    if mode_given:
        bad.append("--mode")
    if max_rounds_given:
        bad.append("--max-rounds")
    if all_skills:
        bad.append("--all")
    return bad
