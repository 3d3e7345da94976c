"""Skill health and retirement proposals (`skills health`). Pure: usage events in, records out.

- A **route hit** is a routing decision whose chosen skill is the skill; a **use** is a `use_skill`
  load of it (CLI or MCP). Both are counted over the window; `days_since_last_use` looks at every
  event given, in or out of the window.
- **Retirement** is proposed for a skill with no route hit and no use over the window, that plays
  no P0 role (no P0 case names it), is not already retired, and is at least as old as the window
  (a skill imported yesterday has had no chance to be used). A proposal is only a proposal: a
  person runs `skillforge release retire NAME`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, JsonValue

from skillforge.state.cliopts import DEFAULT_WINDOW_DAYS  # noqa: F401  (the CLI reads it from there, without pydantic)


SECONDS_PER_DAY = 86400.0


class UseKind(StrEnum):
    ROUTE = "route"
    USE_SKILL = "use_skill"


@dataclass(frozen=True)
class UseEvent:
    skill: str
    at: datetime
    kind: UseKind


def latest_uses(events: Iterable[UseEvent]) -> list[UseEvent]:
    """The newest event of each skill and kind: what `runs prune` keeps of the router log lines it
    archives, so that `days_since_last_use` reads the same after a prune (counts over a window
    that reaches before the archived lines see only these)."""
    latest: dict[tuple[str, UseKind], UseEvent] = {}
    for e in events:
        key = (e.skill, e.kind)
        if key not in latest or e.at > latest[key].at:
            latest[key] = e
    return sorted(latest.values(), key=lambda e: (e.skill, e.kind.value))


class SkillHealth(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    route_hits: int
    """Routing decisions that chose the skill, within the window."""
    use_skill: int
    """use_skill loads of the skill, within the window."""
    last_used: str | None
    """ISO time of the last route hit or use_skill load in the logs, None if none."""
    days_since_last_use: float | None
    age_days: float | None
    """Days since the skill's first release (None: unknown)."""
    last_evaluation: dict[str, JsonValue] | None = None
    open_failures: int | None = None
    """Bad verdicts on its live release (None: not known)."""
    retired: bool = False


class RetirementProposal(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    reason: str


def valid_window(window_days: float) -> bool:
    """A window the rules accept: a positive, finite number of days (not 0, negative, NaN or inf)."""
    return isinstance(window_days, int | float) and 0 < window_days < float("inf")


def check_window(window_days: float) -> float:
    """The window in days, or ValueError (the CLI checks `valid_window` first and names the error)."""
    if not valid_window(window_days):
        raise ValueError(f"window must be a positive number of days, not {window_days}")
    return window_days


def window_start(now: datetime, window_days: float) -> datetime:
    """`window_days` before `now`; the calendar's first instant when the window reaches before it (a
    window of 3 000 000 or 1e10 days covers everything: timedelta and datetime overflow there)."""
    try:
        return now - timedelta(days=window_days)
    except OverflowError:
        return datetime.min.replace(tzinfo=now.tzinfo)


def _days(later: datetime, earlier: datetime) -> float:
    return round((later - earlier).total_seconds() / SECONDS_PER_DAY, 3)


def health_records(skills: Sequence[str], events: Iterable[UseEvent], *, now: datetime, window_days: float,
                   created: Mapping[str, datetime] | None = None, retired: Collection[str] = (),
                   evaluations: Mapping[str, dict[str, JsonValue]] | None = None,
                   failures: Mapping[str, int] | None = None) -> list[SkillHealth]:
    """One record per skill in `skills` (by name). Events of other skills are ignored; events
    after `now` count as in the window (a clock that moved back must not hide use)."""
    check_window(window_days)
    start = window_start(now, window_days)
    wanted = set(skills)
    hits = dict.fromkeys(wanted, 0)
    uses = dict.fromkeys(wanted, 0)
    last: dict[str, datetime] = {}
    for e in events:
        if e.skill not in wanted:
            continue
        if e.skill not in last or e.at > last[e.skill]:
            last[e.skill] = e.at
        if e.at >= start:
            if e.kind is UseKind.ROUTE:
                hits[e.skill] += 1
            else:
                uses[e.skill] += 1
    created = created or {}
    return [SkillHealth(
        name=name, route_hits=hits[name], use_skill=uses[name],
        last_used=last[name].isoformat() if name in last else None,
        days_since_last_use=max(0.0, _days(now, last[name])) if name in last else None,
        age_days=max(0.0, _days(now, created[name])) if name in created else None,
        last_evaluation=(evaluations or {}).get(name),
        open_failures=failures.get(name, 0) if failures is not None else None,
        retired=name in retired) for name in sorted(wanted)]


def retirement_proposals(records: Iterable[SkillHealth], window_days: float,
                         p0_skills: Collection[str]) -> list[RetirementProposal]:
    """Skills with zero use over the window (no route hit, no use_skill), no P0 role, not retired,
    and known to be at least `window_days` old, by name."""
    check_window(window_days)
    out = []
    for r in sorted(records, key=lambda r: r.name):
        if r.retired or r.name in p0_skills or r.route_hits or r.use_skill:
            continue
        if r.age_days is None or r.age_days < window_days:
            continue
        if r.days_since_last_use is not None and r.days_since_last_use < window_days:
            continue  # used inside the window (an event the counts missed cannot make it idle)
        since = "never used" if r.last_used is None else f"last used {r.days_since_last_use:g} days ago"
        out.append(RetirementProposal(name=r.name, reason=f"no route hit and no use_skill in {window_days:g} days "
                                                           f"({since}); no P0 case"))
    return out
