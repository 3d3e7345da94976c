"""`skillforge sessions harvest`, `skillforge cases review` and `skillforge schedule`: agent sessions
become staged cases, a person accepts or rejects them, and a cron line runs the nightly loop.
The work is in skillforge/sessions/; this module parses options and prints."""

from __future__ import annotations

import os
import shlex
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated

import typer

from skillforge.cli.common import JsonOpt, WorkspaceOpt, err, nonempty_path, out, print_json
from skillforge.cli.output import one_line, plain, revealed, styled
from skillforge.config import Workspace
from skillforge.errors import BadArgument

sessions_app = typer.Typer(no_args_is_help=True, help="Harvest agent sessions into staged cases.")
cases_app = typer.Typer(no_args_is_help=True, help="Review staged cases: accept, reject, edit.")
SOURCES = ("auto", "claude-code", "codex", "jsonl")
SourceOpt = Annotated[str, typer.Option("--source", help="claude-code, codex, jsonl (docs/sessions.md), or auto: "
                                                         "each file's own format.")]


def parse_since(value: str | None) -> datetime | None:
    """YYYY-MM-DD or an ISO time (UTC unless it says otherwise)."""
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(value.strip())
    except ValueError:
        raise BadArgument(f"--since {value!r}: give a date (2026-11-28) or an ISO time (2026-11-28T09:00)") from None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def check_source(source: str) -> str:
    if source not in SOURCES:
        raise BadArgument(f"--source {source!r}: use one of {', '.join(SOURCES)}")
    return source


def harvest_lines(report: dict[str, object], dry_run: bool = False) -> list[str]:
    """The harvest in a few lines (also the nightly summary's first part); `dry_run`: what it would
    stage, since nothing was written."""
    staged = report["staged"]
    red = report["redactions"]
    assert isinstance(staged, list) and isinstance(red, dict)
    lines = [f"read {report['transcripts']} sessions: {report['with_skill']} loaded a workspace skill "
             f"({report['spans']} skill loads), {report['failing']} with a failure signal",
             f"{'would stage' if dry_run else 'staged'} {len(staged)} new cases"
             f"{' (dry run: nothing written)' if dry_run else ''}; {report['known']} seen before, {report['duplicates']} near-duplicates "
             f"not staged" + (f"; {len(report['dropped'])} refused (a secret survived redaction)"  # type: ignore[arg-type]
                              if report["dropped"] else ""),
             "redacted: " + (", ".join(f"{k} {v}" for k, v in sorted(red.items())) or "nothing")]
    problems = report["problems"]
    assert isinstance(problems, list)
    files = [p for p in problems if not p.get("line")]  # whole files first: a link, a FIFO, an unreadable file
    lines_ = [p for p in problems if p.get("line")]
    shown = [*files[:5], *lines_[:max(0, 5 - len(files[:5]))]]
    if problems:
        lines.append(f"{len(problems)} lines or files could not be read (skipped): "
                     + "; ".join(f"{one_line(p['path'])}{':' + str(p['line']) if p.get('line') else ''} "
                                 f"({one_line(p['reason'])})" for p in shown)
                     + (f"; and {len(problems) - len(shown)} more (--json lists them all)" if len(problems) > len(shown) else ""))
    flagged = report.get("flagged") or []
    if isinstance(flagged, list) and flagged:
        lines.append(f"{len(flagged)} staged case(s) FLAGGED (prompt injection or hidden characters): read them before "
                     f"accepting; --accept needs --confirm-flagged for them")
    return lines


@sessions_app.command("harvest")
def harvest(path: Annotated[Path, typer.Argument(parser=nonempty_path, help="A transcript file or a folder of them.")],
            source: SourceOpt = "auto",
            since: Annotated[str | None, typer.Option(help="Only sessions that started at or after this date.")] = None,
            dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would be staged; write nothing.")] = False,
            as_json: JsonOpt = False, workspace: WorkspaceOpt = None) -> None:
    """Read transcripts (read-only), stage the failing requests of workspace skills for review."""
    from skillforge.sessions.harvest import harvest as run

    ws = Workspace.open(workspace)
    report = run(ws, check_source(source), path, since=parse_since(since), dry_run=dry_run)
    shown = report.as_dict()
    if as_json:
        print_json({**shown, "cases": [c.model_dump(mode="json") for c in report.staged]})
        return
    for line in harvest_lines(shown, dry_run=dry_run):
        out.print(plain(line), soft_wrap=True)
    for c in report.staged:
        out.print(styled((c.id, "bold"), f"  {c.skill}: ", revealed(c.query.splitlines()[0][:80]), "  — ",
                         revealed(c.why[:100]), *((("  [FLAGGED: " + revealed(c.flags[0]) + "]", "bold red"),)
                                                 if c.flags else ())), soft_wrap=True)
    if report.staged and not dry_run:
        out.print(plain("review them: skillforge cases review   (nothing counts until a person accepts it)"))


def _show_case(c) -> None:  # noqa: ANN001 - a StagedCase
    """One staged case for a reviewer. Every field is one line, with control, invisible and bidi
    characters escaped (`revealed`), so a transcript cannot print a line of its own or reorder one."""
    from skillforge.sessions.staging import flags_of

    out.print(styled((revealed(c.id), "bold"), f"  [{revealed(c.skill)}] ",
                     (c.status, "yellow" if c.status == "pending" else "green")), soft_wrap=True)
    for flag in dict.fromkeys([*c.flags, *flags_of(c)]):
        out.print(styled(("  FLAGGED: ", "bold red"), revealed(flag)), soft_wrap=True)
    out.print(plain(f"  why: {revealed(c.why)}"), soft_wrap=True)
    out.print(plain(f"  query: {revealed(c.query)}"), soft_wrap=True)
    if c.fixtures:
        out.print(plain(f"  fixtures: {', '.join(map(revealed, c.fixtures))}"), soft_wrap=True)
    if c.expect.must_include or c.expect.must_not_include:
        out.print(plain(f"  expect: must_include {revealed(c.expect.must_include)}, "
                        f"must_not_include {revealed(c.expect.must_not_include)}"), soft_wrap=True)
    else:
        out.print(plain("  expect: none (judged pairwise only)"))
    if c.answer:
        out.print(plain(f"  the agent answered: {revealed(' '.join(c.answer.split())[:200])}"), soft_wrap=True)
    p = c.provenance
    out.print(plain(f"  from: {p.source.value} session {revealed(p.session_id)}, message {p.request_index} "
                    f"({revealed(p.path)})"
                    + (f"; {c.redactions} redactions" if c.redactions else "")
                    + (f"; {len(c.duplicates)} near-duplicate sessions" if c.duplicates else "")), soft_wrap=True)


@cases_app.command("review")
def review(accept: Annotated[list[str] | None, typer.Option("--accept", metavar="ID", help="Accept a staged case.")] = None,
           reject: Annotated[list[str] | None, typer.Option("--reject", metavar="ID", help="Reject a staged case.")] = None,
           edit: Annotated[str | None, typer.Option("--edit", metavar="ID", help="Edit a pending case's query, "
                                                    "fixtures or expectation in $EDITOR (or from --from-file).")] = None,
           from_file: Annotated[Path | None, typer.Option("--from-file", help="With --edit: the edited JSON.")] = None,
           note: Annotated[str | None, typer.Option("--note", help="Kept with the decision.")] = None,
           confirm_flagged: Annotated[bool, typer.Option("--confirm-flagged", help="With --accept: accept cases harvest "
                                                         "flagged (prompt injection, hidden characters) after reading "
                                                         "them.")] = False,
           skill: Annotated[str | None, typer.Option("--skill", help="Only this skill's cases (listing).")] = None,
           show_all: Annotated[bool, typer.Option("--all", help="List accepted and rejected cases too.")] = False,
           as_json: JsonOpt = False, workspace: WorkspaceOpt = None) -> None:
    """List the staged cases waiting for review, or accept / reject / edit them by id."""
    from skillforge.sessions import review as rv
    from skillforge.sessions.staging import read_staged, staged_skills

    ws = Workspace.open(workspace)
    if from_file is not None and edit is None:
        raise BadArgument("--from-file goes with --edit ID")
    if confirm_flagged and not accept:
        raise BadArgument("--confirm-flagged goes with --accept ID")
    done: list[dict[str, object]] = []
    if accept or reject:
        rv.check_note(note)  # before the edit too: a refused note leaves nothing half done
    if edit is not None:
        _, case = rv.find(ws, edit)
        if from_file is not None:
            text = from_file.read_text(encoding="utf-8")
        else:
            if not sys.stdin.isatty():
                raise BadArgument("--edit opens $EDITOR in a terminal; without one, give --from-file FILE")
            text = typer.edit(rv.editable_json(case), extension=".json")
            if text is None:
                raise BadArgument("the editor was closed without saving; nothing changed")
        case = rv.edit(ws, edit, text)
        done.append({"id": case.id, "action": "edited"})
    for cid in accept or ():
        case, where, already = rv.accept_case(ws, cid, note=note, shares=rv.shares_setting(ws),
                                              confirm_flagged=confirm_flagged)
        done.append({"id": case.id, "action": "accepted", "partition": case.partition, "set_file": str(where),
                     "already": already})
    for cid in reject or ():
        case = rv.reject(ws, cid, note=note)
        done.append({"id": case.id, "action": "rejected"})
    if done:
        if as_json:
            print_json({"done": done})
        else:
            for d in done:
                extra = f" -> {d['partition']} ({d['set_file']})" if d["action"] == "accepted" else ""
                said = "already accepted" if d.get("already") else d["action"]
                out.print(plain(f"{said} {one_line(d['id'])}{extra}"
                                + ("; nothing written" if d.get("already") else "")), soft_wrap=True)
        return
    if skill is not None and skill not in staged_skills(ws):
        from skillforge.events import known_skill

        known_skill(ws, skill)  # InvalidId, UnknownSkill (did you mean): never an empty listing for a typo
    names = [skill] if skill else staged_skills(ws)
    every = [c for n in names for c in read_staged(ws, n).cases]
    cases = [c for c in every if show_all or c.status == "pending"]
    for line in rv.disagreements(ws, every):  # the staged file and the sets disagree: say how to settle it
        err.print(plain(f"warning: {line}"), soft_wrap=True)
    if as_json:
        print_json({"cases": [c.model_dump(mode="json") for c in cases]})
        return
    if not cases:
        out.print(plain("no staged case waits for review" + ("" if show_all else " (--all lists decided ones)")))
        return
    for c in cases:
        _show_case(c)
    out.print(plain("accept: skillforge cases review --accept ID   reject: --reject ID   edit: --edit ID"))


def schedule(at: Annotated[str, typer.Option("--at", help="Time of day, HH:MM (local time of the cron host).")] = "03:17",
             from_sessions: Annotated[Path, typer.Option("--from-sessions", parser=nonempty_path,
                                                         help="Where the agents write transcripts.")] = "~/.claude/projects",  # type: ignore[assignment]
             source: SourceOpt = "auto", workspace: WorkspaceOpt = None) -> None:
    """Print (never install) a cron line that runs the nightly loop: harvest, evolve what people accepted."""
    ws = Workspace.open(workspace)
    try:
        hour, minute = (int(x) for x in at.split(":"))
        if not (0 <= hour < 24 and 0 <= minute < 60):
            raise ValueError
    except ValueError:
        raise BadArgument(f"--at {at!r}: give HH:MM, e.g. 03:17") from None
    exe = _program()
    root = ws.root.resolve()
    log = root / "runs" / "nightly.log"
    where = from_sessions.expanduser().resolve()
    for name, path in (("--from-sessions", where), ("the workspace", root), ("the program", exe)):
        if any(ch in str(path) for ch in "\n\r"):  # a crontab line has no continuation: it would be two lines
            raise BadArgument(f"{name} {str(path)!r} holds a line break, which a crontab line cannot carry; "
                              "rename it or link it from a path without one")
    cmd = (f"{exe} evolve --all --from-sessions {shlex.quote(str(where))} --source {check_source(source)} "
           f"-w {shlex.quote(str(root))} >> {shlex.quote(str(log))} 2>&1")
    typer.echo(f"{minute} {hour} * * * {cmd.replace('%', chr(92) + '%')}")  # cron ends the command at a bare %
    if not where.is_dir() and not where.is_file():
        err.print(styled(("warning", "yellow"), " ", f"{where} does not exist (yet): each night's harvest will fail "
                         "with SourceError until the agents write transcripts there"), soft_wrap=True)
    elif where.is_file():  # harvest reads one file too; new sessions elsewhere are never picked up
        err.print(plain(f"note: {where} is a file: each night harvests this one file only; to pick up new sessions, "
                        "give the folder the agents write transcripts to"), soft_wrap=True)
    settings = sorted(k for k in os.environ if k.startswith(("SKILLFORGE_", "OPENAI_")) and k != "SKILLFORGE_WORKSPACE")
    if settings:  # names only: their values may be keys
        err.print(plain(f"note: cron starts the line with almost no environment, so {', '.join(settings)} set here "
                        "will not reach it: put them as NAME=value lines at the top of the crontab"), soft_wrap=True)


def _program() -> str:
    """The command that starts this SkillForge from cron, shell-quoted: the console script beside the
    running interpreter, else the one on PATH, else the interpreter with `-m skillforge` (run as
    `python -m skillforge`, argv[0] is the package's __main__.py: not a program)."""
    import shutil

    beside = Path(sys.executable).with_name("skillforge")
    if beside.is_file() and os.access(beside, os.X_OK):
        return shlex.quote(str(beside))
    found = shutil.which("skillforge")
    return shlex.quote(found) if found else f"{shlex.quote(sys.executable)} -m skillforge"
