"""What agents are served, from the shell: `skills use NAME [--session S]` (what the use_skill tool
serves), `skills export NAME` (the live release as a SKILL.md) and `skills index` (the index agents see)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from skillforge.cli.common import JsonOpt, WorkspaceOpt, err, out, print_json, services
from skillforge.cli.output import one_line, plain, safe


def skills_use(name: str, reason: Annotated[str, typer.Option(help="Why the agent loads it (logged).")] = "cli",
               session: Annotated[str | None, typer.Option("--session", help="The agent's session id: recorded "
                                                           "(skill_used), and it decides whether a canary is served.")] = None,
               workspace: WorkspaceOpt = None, as_json: JsonOpt = False) -> None:
    """Print the body of the release `use_skill` gives this session: the live release, or the
    skill's canary for a session in its bucket (never without --session); stderr says which."""
    served = services(workspace).registry.use(name, reason, session)
    rel = served.release
    if as_json:
        print_json({"name": name, "release_id": rel.release_id, "version": rel.version, "arm": served.arm,
                    "canary": served.canary_id, "body": served.body})
        return
    err.print(plain(f"{name} {rel.version} (release {rel.release_id[:8]}, {served.arm or 'live'})"))
    sys.stdout.write(safe(served.body) if sys.stdout.isatty() else served.body)  # exact bytes for an agent or a pipe


def skills_export(name: str, strict: Annotated[bool, typer.Option("--strict", help="Pure agentskills.io spec.")] = False,
                  out_file: Annotated[Path | None, typer.Option("--out", help="Write here instead of stdout.")] = None,
                  workspace: WorkspaceOpt = None) -> None:
    """Render the current release of a skill; --strict moves extensions under metadata."""
    from skillforge.skill import file as skillfile
    from skillforge.skill.export import export_strict

    if out_file is not None:  # checked as report --html is, before any work: no folder is ever made
        from skillforge.library.lineage import check_output
        check_output(out_file, "the skill")  # NotWritable: a folder, a device, a missing folder, no permission
    published = services(workspace).registry.get(name)
    skill = published.skill  # metadata.version says the live release's version (a revert keeps the old line)
    skill = skill.model_copy(update={"metadata": {**skill.metadata, "version": published.release.version}})
    text = export_strict(skill) if strict else skillfile.render(skill)
    if out_file is None:
        sys.stdout.write(text)
        return
    from skillforge.safewrite import write_text_atomic

    write_text_atomic(out_file, text)  # only a regular file or a new name; NotWritable otherwise
    out.print(plain(f"wrote {one_line(out_file)}"))


def skills_index(workspace: WorkspaceOpt = None) -> None:
    """The skill index an agent sees (name, description, use_when of every published skill)."""
    registry = services(workspace).registry
    sys.stdout.write(safe(registry.build_index()))
    for e in registry.errors:  # a published skill that no longer loads is missing from the index: say so
        err.print(plain(f"warning: not in the index: {e}"))
