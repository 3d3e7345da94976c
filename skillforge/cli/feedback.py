"""`skillforge feedback`: record a verdict on a skill in a session, list the public events, and
rebuild the effective projection (runs/events/effective.json). Same events as the Python API
(`skillforge.events`); bad input is a named error, exit 2, and nothing is written."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from skillforge.cli.common import JsonOpt, WorkspaceOpt, err, out, print_json
from skillforge.cli.output import plain, styled
from skillforge.config import Workspace

feedback_app = typer.Typer(no_args_is_help=True, help="Record feedback on a skill; list events; rebuild the projection.")


def _ws(workspace: Path | None) -> Workspace:
    return Workspace.open(workspace)


@feedback_app.command("add")
def add(session: Annotated[str, typer.Option("--session", help="The session the verdict is about.")],
        skill: Annotated[str, typer.Option("--skill", help="The skill's name.")],
        outcome: Annotated[str, typer.Option("--outcome", help="good, bad or neutral.")],
        comment: Annotated[str | None, typer.Option("--comment", help="Free text kept with the verdict.")] = None,
        private: Annotated[bool, typer.Option("--private", help="Keep it in private.jsonl: never listed, "
                                                               "never in a prompt or report; only counted.")] = False,
        release: Annotated[str | None, typer.Option("--release", help="The release served (id or prefix; "
                                                                      "default: the one the session's skill_used "
                                                                      "event names; without one, give it).")] = None,
        corrects: Annotated[int | None, typer.Option("--corrects", metavar="SEQ",
                                                     help="Replace the outcome of the earlier feedback #SEQ.")] = None,
        tokens: Annotated[int | None, typer.Option("--tokens", min=0, help="Tokens the session spent with the "
                                                   "skill (a canary's cost signal; 0 to 2**63-1).")] = None,
        as_json: JsonOpt = False, workspace: WorkspaceOpt = None) -> None:
    """Record one verdict (a correction with --corrects)."""
    from skillforge.events import event_json, record_feedback, unserved_release

    ws = _ws(workspace)
    event = record_feedback(ws, session, skill, outcome, comment, private=private,
                            release_id=release, corrects=corrects, tokens=tokens)
    warnings = [w for w in [unserved_release(ws, event) if release is not None else None] if w]
    for w in warnings:  # an explicit --release is the override: accepted, but never silently
        err.print(styled(("warning", "yellow"), " ", w), soft_wrap=True)
    if as_json:
        shown = event_json(event)
        if event.private:
            shown.pop("comment", None)  # stdout may be a log or a report: the private text stays in its file
        print_json({**shown, "warnings": warnings})
        return
    where = "private" if event.private else "public"
    out.print(styled(f"recorded {event.kind.value} #{event.seq}: ", (event.outcome or "", "bold"),
                     f" for {event.skill} (release {(event.release_id or 'none')[:8]}), session ",
                     plain(event.session_id), f" [{where}]"))


@feedback_app.command("list")
def list_events(skill: Annotated[str | None, typer.Option("--skill", help="Only this skill.")] = None,
                as_json: JsonOpt = False, workspace: WorkspaceOpt = None) -> None:
    """The public events in seq order; private events are only counted (with --skill, that skill's)."""
    from skillforge.events import EventLog, event_json, known_skill

    ws = _ws(workspace)
    if skill is not None:
        known_skill(ws, skill)  # InvalidId, UnknownSkill (did you mean): never an empty list for a typo
    events = EventLog(ws)
    read, counts = events.read_public(), events.counts(skill)
    shown = [e for e in read.events if skill is None or e.skill == skill]
    if as_json:
        print_json({"events": [event_json(e) for e in shown], "private_count": counts.private,
                    "skipped_lines": counts.skipped_lines})
        return
    table = Table("seq", "ts", "kind", "skill", "release", "session", "outcome", "comment / reason")
    for e in shown:
        table.add_row(*map(plain, (e.seq, e.at, e.kind.value, e.skill, (e.release_id or "")[:8], e.session_id,
                                   e.outcome or "", (f"corrects #{e.corrects} " if e.corrects else "")
                                   + (e.comment or e.reason or ""))))
    out.print(table)
    out.print(plain(f"{len(shown)} public events shown; {counts.private} private events not shown"
                    + (f"; {counts.skipped_lines} torn or corrupt lines skipped" if counts.skipped_lines else "")))


@feedback_app.command("rebuild")
def rebuild_projection(as_json: JsonOpt = False, workspace: WorkspaceOpt = None) -> None:
    """Rebuild runs/events/effective.json from the public log (the same log gives the same bytes)."""
    from skillforge.events import EventLog, rebuild

    events = EventLog(_ws(workspace))
    projection, skipped = rebuild(events)
    if as_json:
        print_json({"path": str(events.effective_path), "skipped_lines": skipped, **projection.model_dump(mode="json")})
        return
    for t in projection.releases:
        out.print(plain(f"{t.skill} {(t.release_id or 'none')[:8]}: {t.uses} uses, {t.tool_errors} tool errors, "
                        f"good {t.good} / bad {t.bad} / neutral {t.neutral}"))
    out.print(plain(f"wrote {events.effective_path}: {len(projection.verdicts)} verdicts up to #{projection.last_seq}"
                    + (f"; {skipped} torn or corrupt lines skipped" if skipped else "")))
