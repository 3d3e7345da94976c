"""Publishes a killed process left PREPARING, as `skills list` and `releases list` name them.

Read only: nothing is abandoned here. The next publish or revert of the skill, `evolve --resume
RUN` (when an evolve run began the release) or the watchdog abandons such a release and puts the
live bytes back (releases.py, recovery.py); a listing only says that a publish was interrupted and
which of those to run. A release whose process still runs is a publish in progress, not named.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from skillforge.library.owners import ReleaseOwner
from skillforge.library.store import Store
from skillforge.rules.watchdog import is_stale
from skillforge.state.release import Release

EVOLVE_TRIGGER = "evolve:"
"""triggered_by of a release an evolve run began: `evolve:<run id>`."""
SPLIT_OF = "split of "
"""triggered_by of a split's child release: `split of <parent>` (library/split.py)."""


@dataclass(frozen=True)
class Orphan:
    """A PREPARING release whose process is gone, and the command that finishes it off."""

    release: Release
    run_id: str | None
    """The evolve run that began it, when that run can still be resumed."""

    @property
    def command(self) -> str:
        if self.run_id is not None:
            return f"skillforge evolve --resume {self.run_id}"
        # the watchdog abandons only releases at least --hours old; 0 takes this one now
        return "skillforge watchdog --hours 0"

    def note(self) -> str:
        """`db-backup: a publish of 1.0.1 was interrupted (release 82e129b0 is PREPARING ...): ...`"""
        rel = self.release
        split = rel.triggered_by[len(SPLIT_OF):] if rel.triggered_by.startswith(SPLIT_OF) else None
        what = (f"`{self.command}` finishes it, or `skillforge runs cancel {self.run_id}` gives it up"
                if self.run_id is not None else  # a split's child has no release to publish over (QA 49 F2)
                f"`skillforge skills split {split} --publish` again finishes the split, or `{self.command}` gives it up"
                if split else
                f"`{self.command}`, or the next `skillforge release publish {rel.skill_name}`, gives it up")
        return (f"{rel.skill_name}: a publish of {rel.version} was interrupted (release {rel.release_id[:8]} is "
                f"PREPARING and its process is gone): {what}; either first puts back the live files")

    def as_json(self) -> dict[str, object]:
        return {"version": self.release.version, "release_id": self.release.release_id,
                "run_id": self.run_id, "command": self.command}


def orphans(store: Store, owner: ReleaseOwner, skill: str | None = None,
            run_open: Callable[[str], bool] | None = None) -> list[Orphan]:
    """The PREPARING releases (of `skill`, else of every skill; never an open canary's) whose
    process is gone, oldest first. `run_open(run_id)` says whether the evolve run that began one
    can still be resumed (without it, any run counts as resumable)."""
    rows = store.preparing_of(skill) if skill is not None else [r for r, _ in store.preparing()]
    found = []
    for rel in rows:
        if owner.alive(rel.owner):
            continue
        run = rel.triggered_by[len(EVOLVE_TRIGGER):] if rel.triggered_by.startswith(EVOLVE_TRIGGER) else None
        if run is not None and run_open is not None and not run_open(run):
            run = None
        found.append(Orphan(rel, run))
    return found


def in_flight(store: Store, owner: ReleaseOwner, hours: float) -> list[Release]:
    """The PREPARING releases at least `hours` old that the watchdog keeps (`rules/watchdog.is_stale`)
    because their process still runs and they are younger than IN_FLIGHT_HOURS."""
    return [rel for rel, age in store.preparing() if age >= hours and owner.alive(rel.owner)
            and not is_stale(age, hours, owner_alive=True)]


__all__ = ["EVOLVE_TRIGGER", "Orphan", "in_flight", "orphans"]
