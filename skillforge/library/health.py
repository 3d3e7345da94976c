"""Reading what `skills health` aggregates: the router log (route decisions and use_skill loads,
CLI and MCP), the evaluations log, the feedback projection, the P0 cases and the release store.
The decisions are in rules/health.py."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from pydantic import JsonValue

from skillforge.config import Workspace
from skillforge.errors import SkillForgeError
from skillforge.evaluation.datasets import load_sets
from skillforge.events.log import EventLog
from skillforge.journal import read_jsonl
from skillforge.library.store import Store
from skillforge.rules.events import project
from skillforge.rules.health import SkillHealth, UseEvent, UseKind, health_records
from skillforge.safewrite import write_text_atomic
from skillforge.state.evaluate import Partition
from skillforge.state.events import FeedbackOutcome

log = logging.getLogger(__name__)
EVAL_SOURCE = "route eval"
"""Route decisions of `route eval` are measurements, not traffic: never counted as hits."""
EVAL_FIELDS = ("ts", "release_id", "kind", "verdict", "improvement", "primary", "structure_score", "effect_score")


def parse_ts(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        return None
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def use_event(line: Mapping[str, object]) -> UseEvent | None:
    """A router log record as a use: a route hit (chosen skill, `route eval` left out) or a
    use_skill load; None for anything else."""
    at = parse_ts(line.get("ts"))
    if at is None:
        return None
    if line.get("event") == "route" and line.get("source") != EVAL_SOURCE and isinstance(line.get("chosen"), str):
        return UseEvent(str(line["chosen"]), at, UseKind.ROUTE)
    if line.get("event") == "use_skill" and isinstance(line.get("name"), str):
        return UseEvent(str(line["name"]), at, UseKind.USE_SKILL)
    return None


def use_events(ws: Workspace) -> list[UseEvent]:
    """The uses in runs/router.jsonl, and the newest of each skill's among the lines `runs prune`
    archived (runs/archive/router-uses.json)."""
    events = archived_uses(ws)[0]
    for line in read_jsonl(ws.router_log):
        event = use_event(line)
        if event is not None:
            events.append(event)
    return events


ARCHIVE_DIR = "archive"
"""Under runs/: the router log lines `runs prune` moved (library/logarchive.py), and their uses."""


def uses_file(ws: Workspace) -> Path:
    return ws.runs_dir / ARCHIVE_DIR / "router-uses.json"


def archived_uses(ws: Workspace) -> tuple[list[UseEvent], datetime | None]:
    """The newest use of each skill and kind among the archived router log lines, and the horizon
    of the latest archive (lines written before it are in runs/archive/, not in the log). A file
    that cannot be read counts as none, with a warning."""
    path = uses_file(ws)
    if not path.exists():
        return [], None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        events = [UseEvent(str(u["skill"]), at, UseKind(u["kind"])) for u in data["uses"]
                  if (at := parse_ts(u.get("at"))) is not None]
        return events, parse_ts(data.get("archived_before"))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        log.warning("%s cannot be read, archived uses left out: %s", path, e)
        return [], None


def save_archived_uses(ws: Workspace, events: list[UseEvent], horizon: datetime) -> None:
    """Write the archived uses and the horizon (atomically: the old file or the new, never half)."""
    _, before = archived_uses(ws)
    latest = max(t for t in (before, horizon) if t is not None)
    write_text_atomic(uses_file(ws), json.dumps(
        {"archived_before": latest.isoformat(),
         "uses": [{"skill": e.skill, "kind": e.kind.value, "at": e.at.isoformat()} for e in events]},
        ensure_ascii=False, indent=1) + "\n")


def last_evaluations(ws: Workspace) -> dict[str, dict[str, JsonValue]]:
    """Each skill's last evaluation with a verdict in runs/evaluations.jsonl (publish/revert notes left out)."""
    last: dict[str, dict[str, JsonValue]] = {}
    for line in read_jsonl(ws.evaluations_log):
        if isinstance(line.get("skill"), str) and line.get("verdict") is not None:
            summary: dict[str, JsonValue] = {k: line[k] for k in EVAL_FIELDS if k in line}  # type: ignore[misc]
            scores = line.get("scores")
            if isinstance(scores, dict) and isinstance(scores.get("candidate"), dict):
                summary["scores"] = scores["candidate"]
            last[str(line["skill"])] = summary
    return last


def open_failures(ws: Workspace, live: dict[str, str]) -> dict[str, int] | None:
    """Bad verdicts (feedback) on each skill's live release; None when the event log cannot be read."""
    try:
        projection = project(EventLog(ws).read_public().events)
    except (SkillForgeError, OSError) as e:
        log.warning("open failures unknown: %s", e)
        return None
    counts: dict[str, int] = {}
    for v in projection.verdicts:
        if v.outcome is FeedbackOutcome.BAD and live.get(v.skill) == v.release_id:
            counts[v.skill] = counts.get(v.skill, 0) + 1
    return counts


def p0_skills(ws: Workspace) -> set[str] | None:
    """Skills named by a P0 case (a p0 case, or any case of a p0 set); None when the sets do not load."""
    try:
        sets = load_sets(ws)
    except (SkillForgeError, OSError) as e:
        log.warning("P0 roles unknown, no retirement proposed: %s", e)
        return None
    return {c.skill for s in sets.values() for c in s.cases if c.p0 or s.meta.partition is Partition.P0}


def first_release_times(store: Store) -> dict[str, datetime]:
    out = {}
    for name in store.skill_names():
        releases = store.releases(name)
        at = parse_ts(releases[0].created_at) if releases else None
        if at is not None:
            out[name] = at
    return out


def workspace_health(ws: Workspace, store: Store, window_days: float, now: datetime | None = None) -> list[SkillHealth]:
    """One record per registered skill (live or RETIRED)."""
    live = {r.skill_name: r.release_id for r in store.current_releases()}
    retired = store.retired_names()
    return health_records(sorted({*live, *retired}), use_events(ws), now=now or datetime.now(UTC),
                          window_days=window_days, created=first_release_times(store), retired=retired,
                          evaluations=last_evaluations(ws), failures=open_failures(ws, live))
