"""Watchdog rules: when a PREPARING release is stale, and whether its folder may be restored."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from typing import TypeVar

DEFAULT_STALE_HOURS = 24.0
T = TypeVar("T")


def valid_stale_hours(max_hours: float) -> bool:
    """An age limit the watchdog accepts: a finite number of hours, 0 or more (not -1, NaN, inf)."""
    return isinstance(max_hours, int | float) and math.isfinite(max_hours) and max_hours >= 0


IN_FLIGHT_HOURS = 0.25
"""A release whose process still runs is taken as in flight for this long, whatever `--hours`
says: a publish takes seconds, so `watchdog --hours 0` (what `skills list` offers for a dead
publish) never abandons another terminal's publish half-way through."""


def is_stale(age_hours: float, max_hours: float, *, owner_alive: bool = False) -> bool:
    """A PREPARING release at least `max_hours` old (by SQLite's clock) is abandoned; one whose
    process is alive only once it is also at least IN_FLIGHT_HOURS old (a process that left it
    open, not one still writing it)."""
    return age_hours >= (max(max_hours, IN_FLIGHT_HOURS) if owner_alive else max_hours)


def may_restore_folder(worktree: Mapping[str, object], abandoned: Mapping[str, object] | None,
                       current: Mapping[str, object] | None) -> bool:
    """Put the published bytes back only when the working tree holds exactly what the abandoned
    release wrote. Anything else is a person's edit, and edits are never overwritten."""
    return may_restore(worktree, [] if abandoned is None else [abandoned], current)


def may_restore(worktree: T, written: Collection[T], live: T | None) -> bool:
    """Whether a dead or abandoned release's folder gets the live bytes back. Yes only when the
    folder holds exactly one of the states the release itself `written` (the tree it recorded
    before its swap, what it staged, what it committed) and not already `live` (None: nothing to
    restore to). Any other content is a person's edit and is never overwritten; an empty
    `written` (nothing proves who wrote the folder) restores nothing."""
    if live is None or not written:
        return False
    return worktree != live and any(worktree == w for w in written)
