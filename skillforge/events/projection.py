"""The effective projection on disk: runs/events/effective.json, rebuilt from the public log.

`rules/events.project` decides; this module only reads the log and writes the result atomically
(a temp file, fsync, rename), as canonical JSON, so that two rebuilds of one log are byte-identical.
"""

from __future__ import annotations

import json
import logging

from skillforge.events.log import EventLog
from skillforge.rules.events import project
from skillforge.safewrite import write_text_atomic
from skillforge.state.events import Projection

log = logging.getLogger(__name__)


def render(projection: Projection) -> str:
    """The bytes of effective.json: sorted keys, two-space indent, one trailing newline."""
    return json.dumps(projection.model_dump(mode="json"), ensure_ascii=False, sort_keys=True, indent=2) + "\n"


def rebuild(events: EventLog) -> tuple[Projection, int]:
    """Project the public log, write effective.json, and return the projection and the number of
    log lines skipped (torn or corrupt)."""
    read = events.read_public()
    projection = project(read.events)
    write_text_atomic(events.effective_path, render(projection))
    log.info("%s: %d verdicts from %d public events", events.effective_path, len(projection.verdicts), len(read.events))
    return projection, read.skipped_lines


def load(events: EventLog) -> Projection | None:
    """The projection last written, or None when there is none yet."""
    try:
        text = events.effective_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    return Projection.model_validate_json(text)
