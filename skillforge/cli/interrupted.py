"""What `skills list` and `releases list` say about publishes a killed process left PREPARING
(library/orphans.py): read only, the run's checkpoint is read only when an evolve run began one."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from skillforge.library.orphans import Orphan
    from skillforge.library.services import Services


def interrupted_publishes(svc: Services, skill: str | None = None) -> list[Orphan]:
    """The dead PREPARING releases (of `skill`, else of every skill), each with the command that
    finishes it off: `evolve --resume RUN` while the run that began it is open, else the watchdog."""
    from skillforge.errors import SkillForgeError
    from skillforge.library.orphans import orphans
    from skillforge.rules.runs import is_open

    readers: list[object] = []

    def run_open(run_id: str) -> bool:
        from skillforge.runners.reader import RunReader

        if not readers:
            readers.append(RunReader(svc.ws))
        try:
            state, _ = readers[0].read(run_id)  # type: ignore[attr-defined]
        except SkillForgeError:
            return False
        return is_open(state.status)

    return orphans(svc.store, svc.machine.owner, skill, run_open)


__all__ = ["interrupted_publishes"]
