"""The `skillforge` command line (typer + rich). Every command takes --workspace."""

from __future__ import annotations

import logging
import os
import shlex
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.logging import RichHandler
from rich.table import Table

from skillforge.cli.common import JsonOpt, WorkspaceOpt, err, fail, nonempty_path, out, pasteable, print_json, services
from skillforge.cli.canary import canary_app
from skillforge.cli.evaluate import evaluate
from skillforge.cli.evolve import evolve
from skillforge.cli.runs import runs_app
from skillforge.cli.feedback import feedback_app
from skillforge.cli.llm import llm_app
from skillforge.cli.mcp import mcp
from skillforge.cli.output import SafeLogRecords, one_line, plain, styled, unhidden
from skillforge.cli.release import release_app, releases_app
from skillforge.cli.judge import judge_app
from skillforge.cli.report import report
from skillforge.cli.skills_new import skills_new
from skillforge.cli.skills_read import skills_health, skills_show, skills_validate
from skillforge.cli.review import review_app
from skillforge.cli.route import route_app
from skillforge.cli.sessions import cases_app, schedule, sessions_app
from skillforge.cli.skills_split import split
from skillforge.cli.suggest import suggest
from skillforge.cli.use import skills_export, skills_index, skills_use
from skillforge.cli import interrupt, pipes
from skillforge.cli.global_opts import GlobalOptionsGroup
from skillforge.config import create_workspace
from skillforge.errors import OutputLost, PublishInterrupted, SkillForgeError
from skillforge.rules.watchdog import DEFAULT_STALE_HOURS

app = typer.Typer(cls=GlobalOptionsGroup, no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  help="Evolve agent skills safely.")
skills_app = typer.Typer(no_args_is_help=True, help="Import, list, show, validate, export and split skills; suggest and draft new ones.")
app.add_typer(skills_app, name="skills")
skills_app.command("new")(skills_new)
skills_app.command("split")(split)
skills_app.command("suggest")(suggest)
skills_app.command("use")(skills_use)
skills_app.command("export")(skills_export)
skills_app.command("index")(skills_index)
app.add_typer(releases_app, name="releases")
app.add_typer(release_app, name="release")
app.add_typer(canary_app, name="canary")
app.add_typer(llm_app, name="llm")
app.add_typer(route_app, name="route")
app.command("evaluate")(evaluate)
app.command("evolve")(evolve)
app.add_typer(runs_app, name="runs")
app.add_typer(review_app, name="review")
app.command("report")(report)
app.add_typer(feedback_app, name="feedback")
app.command("mcp")(mcp)
app.add_typer(sessions_app, name="sessions")
app.add_typer(cases_app, name="cases")
app.command("schedule")(schedule)
app.add_typer(judge_app, name="judge")


# ---- top level ----------------------------------------------------------------------------
def package_version() -> str:
    """The installed package's version (its metadata), else the source tree's."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("skillforge")
    except PackageNotFoundError:
        from skillforge import __version__

        return __version__


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"skillforge {package_version()}")
        raise typer.Exit(0)


@app.callback()
def _root(show_version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                                     help="Print the version and exit.")] = False,
          workspace: Annotated[str | None, typer.Option(
              "--workspace", "-w", metavar="PATH",
              help="Workspace folder for the command that follows (before or after it; after it wins).")] = None,
          as_json: Annotated[bool, typer.Option("--json", help="JSON output, for a command that has --json.")] = False) -> None:
    """Evolve agent skills safely."""
    # -w and --json before the command are handed to it (cli/global_opts.py); here they only reach
    # the root when no command follows (help, a usage error), so there is nothing to do with them


@app.command()
def init(directory: Annotated[Path, typer.Argument(help="Folder to create or complete.",
                                                   parser=nonempty_path)]) -> None:
    """Create a workspace: skills/ (inside git), evaluation_sets/, checkpoints/, runs/."""
    ws, outer = create_workspace(directory)
    out.print(plain(f"workspace ready at {ws.root}"))
    if outer is not None:  # documented, but said where it matters
        out.print(plain(f"note: skills/ is inside the git repository at {outer}: imports and releases are committed "
                        "to its current branch (a workspace outside it gets a repository of its own)"), soft_wrap=True)


@app.command()
def watchdog(hours: Annotated[float, typer.Option(help="Abandon PREPARING releases at least this old.")] = DEFAULT_STALE_HOURS,
             workspace: WorkspaceOpt = None, as_json: JsonOpt = False) -> None:
    """Mark stale PREPARING releases ABANDONED (SQLite's clock); put untouched folders back."""
    from skillforge.library.orphans import in_flight
    machine = services(workspace).machine
    with interrupt.deferred():
        swept = machine.watchdog_sweep(hours)  # a live process's release only past IN_FLIGHT_HOURS
    if as_json:
        print_json([r.model_dump(mode="json") for r in swept])
        return
    out.print(plain(f"abandoned {len(swept)} stale release(s)"))
    for r in swept:
        out.print(plain(f"  {r.skill_name} {r.version} {r.release_id}"))
    for r in in_flight(machine.store, machine.owner, hours):  # the watchdog's rules: rules/watchdog.py
        out.print(plain(f"  kept {r.skill_name} {r.version} {r.release_id}: its process still runs"), soft_wrap=True)


# ---- skills -------------------------------------------------------------------------------
@skills_app.command("import")
def skills_import(source: Annotated[Path | None, typer.Option("--from", help="Copy skills from this folder first.",
                                                                            parser=nonempty_path, metavar="PATH")] = None,
                  rename: Annotated[bool, typer.Option("--rename", help="With --from: import a folder whose name is "
                                                       "not a valid skill name under the proposed kebab-case name.")] = False,
                  workspace: WorkspaceOpt = None, as_json: JsonOpt = False) -> None:
    """Register every skill in skills/ as an IMPORTED release. Bad skills are reported; good ones import."""
    from skillforge.cli.release import left_out_note
    from skillforge.library.importer import check_source, copy_skills, plan_import, settle_preparing
    from skillforge.skill import file as skillfile

    if rename and source is None:
        raise typer.BadParameter("names the folders copied with --from; rename a folder under skills/ by hand",
                                 param_hint="--rename")
    svc = services(workspace)
    plan = None
    if source is not None:
        check_source(source)
        plan = plan_import(source, svc.ws, svc.store.skill_names())
        if rename and (clash := plan.clash()) is not None:
            raise clash  # nothing copied, nothing registered
        svc.repo.check_writable(svc.ws.skills_dir)  # nothing copied into a workspace that cannot take it
    with err.status("importing skills…"), interrupt.deferred():
        copied = (copy_skills(source, svc.ws, plan, rename, set(svc.store.skill_names())) if source is not None
                  else None)
        settle_preparing(svc.machine, report := skillfile.scan(svc.ws.skills_dir, svc.ws.root))  # a killed split's folders
        for name in copied.held if copied is not None else ():
            report.skills.pop(name, None)  # its folder is not what --from holds: not registered as imported
        try:
            result = svc.machine.import_skills(report, interrupted=interrupt.pending)
        except Exception as e:
            if not isinstance(e, PublishInterrupted) and not interrupt.pending():
                raise
            # a Ctrl-C that killed git mid-commit surfaces as a GitError: still an interruption
            why = str(e) if isinstance(e, PublishInterrupted) else "interrupted while git committed them; none was registered"
            copied = " (the copied folders stay in skills/: `skillforge skills import` registers them)" if source else ""
            fail(f"{why}{copied}", interrupt.EXIT_INTERRUPTED)
    errors = [*(copied.errors if copied is not None else []), *result.errors]
    imported = {r.skill_name for r in result.imported}
    from skillforge.skill.chars import imported_hidden
    from skillforge.skill.secrets import imported_secrets
    secrets, hidden = imported_secrets(svc.machine, result.imported), imported_hidden(svc.machine, result.imported)
    renamed = {where: name for where, name in (copied.renamed if copied is not None else {}).items() if name in imported}
    skipped = [n for n in result.skipped if copied is None or n in copied.names]  # with --from: the source's
    proposed = {} if rename or plan is None else plan.proposed()  # a taken or shared name: not proposed
    blocked = None if rename or plan is None else plan.clash()  # then --rename would refuse the whole import
    if as_json:
        print_json({"imported": [r.model_dump(mode="json") for r in result.imported], "skipped": skipped,
                    "renamed": [{"from": w, "to": n} for w, n in sorted(renamed.items())],
                    "proposed": [{"from": w, "to": n} for w, n in sorted(proposed.items())],
                    "errors": [str(e) for e in errors], "secrets": secrets, "hidden_characters": hidden})
    else:
        for where, name in sorted(renamed.items()):
            kept = where.rpartition("/")[2] == name  # the folder's name was right, its `name:` was not
            out.print(plain(f"imported {one_line(where)} with its `name:` set to {one_line(name)}" if kept
                            else f"imported {one_line(where)} as {one_line(name)}"))
        out.print(plain(f"imported {len(result.imported)} skill(s), {len(skipped)} already registered"))
        for e in errors:
            err.print(styled(("skipped", "red"), " ", one_line(e)), soft_wrap=True)  # a folder "a\nb" stays on its line
        for w in [*report.warnings, *secrets, *hidden]:
            err.print(styled(("warning", "yellow"), " ", one_line(w)), soft_wrap=True)
        for folder, dropped in (copied.left_out if copied is not None else {}).items():
            err.print(styled(("warning", "yellow"), " ", one_line(left_out_note(folder, dropped))), soft_wrap=True)
        if proposed and blocked is not None:  # never suggest a command certain to fail
            err.print(plain(f"{len(proposed)} folder(s) need a valid skill name (proposed above), but --rename "
                            "refuses the whole import while a folder above must be renamed by hand: rename those "
                            "first"), soft_wrap=True)
        elif proposed:
            again = ["skillforge", "skills", "import", "--from", str(source), "--rename",
                     *(["-w", str(workspace)] if workspace is not None else [])]
            err.print(plain(f"{len(proposed)} folder(s) need a valid skill name; to import them under the names "
                            f"proposed above: {shlex.join(again)}"), soft_wrap=True)
    if errors:
        raise typer.Exit(1)


@skills_app.command("list")
def skills_list(workspace: WorkspaceOpt = None, as_json: JsonOpt = False) -> None:
    """Published skills, current release, working-tree state; a killed publish named with its way out (nothing changes)."""
    from skillforge.cli.interrupted import interrupted_publishes
    from skillforge.library.unsaved import worktree_state
    from skillforge.skill import file as skillfile

    svc = services(workspace)
    stuck = interrupted_publishes(svc)
    rows = [{"name": rel.skill_name, "version": rel.version, "release_id": rel.release_id,
             "published_at": rel.published_at, "worktree": worktree_state(svc.machine, rel),
             "interrupted": [o.as_json() for o in stuck if o.release.skill_name == rel.skill_name]}
            for rel in svc.store.current_releases()]
    retired = svc.store.retired_names()
    registered = {r["name"] for r in rows} | set(retired) | {r.skill_name for r, _ in svc.store.preparing()}  # killed mid-way
    unregistered = sorted(set(skillfile.scan(svc.ws.skills_dir, svc.ws.root).skills) - registered)
    if as_json:
        print_json({"skills": rows, "unregistered": unregistered, "retired": retired,
                    "interrupted": [{"skill": o.release.skill_name, **o.as_json()} for o in stuck]})
        return
    table = Table("name", "version", "release", "published", "working tree")
    for r in rows:
        table.add_row(*map(plain, (r["name"], r["version"], r["release_id"][:8], r["published_at"], r["worktree"])))
    out.print(table)
    if unregistered:
        out.print(plain(f"not yet imported: {', '.join(map(one_line, unregistered))}"))
    if retired:
        out.print(plain(f"retired (out of the index and the router): {', '.join(retired)}"))
    if missing := [one_line(r["name"]) for r in rows if r["worktree"] == "missing"]:  # served from git all the same
        out.print(plain(f"missing: {', '.join(missing)}: still served from git (its live release); `skillforge release revert NAME` brings the folder back, `skillforge release retire NAME` stops serving it"), soft_wrap=True)
    for o in stuck:
        out.print(plain(o.note()), soft_wrap=True)


skills_app.command("health")(skills_health)
skills_app.command("show")(skills_show)
skills_app.command("validate")(skills_validate)


def main() -> None:
    """Console entry point: named errors become one red line and exit code 2, never a traceback.
    An unexpected error (a bug) gets exit code 70; SKILLFORGE_DEBUG=1 shows its traceback."""
    handler = RichHandler(console=err, show_time=False, show_path=False, markup=False)
    handler.addFilter(SafeLogRecords())
    logging.basicConfig(level=logging.WARNING, format="%(message)s", handlers=[handler])
    pipes.install()
    interrupt.install()
    try:
        app()  # standalone: usage errors and typer.Exit codes become sys.exit by typer itself
    except SkillForgeError as e:
        say(styled(("error:", "red"), " ", unhidden(pasteable(str(e)))))  # one line, however long; its commands with -w
        sys.exit(2)
    except (interrupt.CtrlC, KeyboardInterrupt):
        say(pasteable(interrupt.ended()))
        sys.exit(interrupt.EXIT_INTERRUPTED)
    except Exception as e:
        if os.environ.get("SKILLFORGE_DEBUG"):
            raise
        say(styled(("internal error:", "red"), f" {type(e).__name__}: {unhidden(e)} (SKILLFORGE_DEBUG=1 shows the traceback)"))
        sys.exit(70)
    finally:
        interrupt.ignore_from_now()  # the command has said how it ended; shutdown is not interruptible
        try:
            pipes.flush()
        except OutputLost as e:  # the command's last output never reached its file: not a success
            say(styled(("error:", "red"), " ", e))
            sys.exit(2)


def say(message: object) -> None:
    """How the command ended, on stderr, if stderr can still be written."""
    try:
        err.print(message, soft_wrap=True, highlight=False)
    except OutputLost:
        pass


__all__ = ["app", "main"]


if __name__ == "__main__":  # `python -m skillforge.cli.main ARGS` (it printed nothing and exited 0)
    import sys

    sys.exit(main())
