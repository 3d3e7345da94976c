"""`skills health`, `skills show` and `skills validate`: the skills commands that read and check
(moved out of cli/main.py, which was at its size limit; registered there on `skills_app`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from skillforge.cli.common import JsonOpt, WorkspaceOpt, err, fail, nonempty_path, out, print_json, services
from skillforge.cli.output import one_line, plain, styled, terminal_safe
from skillforge.config import Workspace
from skillforge.errors import BadArgument, SkillForgeError, SourceError
from skillforge.state.cliopts import DEFAULT_WINDOW_DAYS


def skills_health(window_days: Annotated[float, typer.Option("--window-days", help="Count use over this many days.")] = DEFAULT_WINDOW_DAYS,
                  workspace: WorkspaceOpt = None, as_json: JsonOpt = False) -> None:
    """Per skill: route hits and use_skill loads over the window, last evaluation, open failures,
    days since last use; and retirement proposals (no use in the window, no P0 case)."""
    from skillforge.library.health import p0_skills, workspace_health
    from skillforge.rules.health import retirement_proposals, valid_window

    if not valid_window(window_days):
        raise BadArgument(f"--window-days must be a positive number of days, not {window_days}")
    svc = services(workspace)
    records = workspace_health(svc.ws, svc.store, window_days)
    p0 = p0_skills(svc.ws)
    proposals = retirement_proposals(records, window_days, p0) if p0 is not None else []
    if as_json:
        print_json({"window_days": window_days, "skills": [r.model_dump(mode="json") for r in records],
                    "p0_known": p0 is not None, "retirement_proposals": [p.model_dump() for p in proposals]})
        return
    table = Table("name", "route hits", "use_skill", "days since use", "last evaluation", "open failures", "state")
    for r in records:
        ev = r.last_evaluation or {}
        table.add_row(*map(plain, (r.name, str(r.route_hits), str(r.use_skill),
                                   "-" if r.days_since_last_use is None else f"{r.days_since_last_use:.1f}",
                                   str(ev.get("verdict", "-")), "-" if r.open_failures is None else str(r.open_failures),
                                   "RETIRED" if r.retired else "live")))
    out.print(table)
    if p0 is None:
        err.print(plain("no retirement proposals: the evaluation sets do not load, so P0 roles are unknown"))
    for p in proposals:
        out.print(plain(f"propose retiring {p.name}: {p.reason} (`skillforge release retire {p.name}`)"))


def skills_show(name: str, release: Annotated[str | None, typer.Option(help="Release id, prefix or version.")] = None,
                workspace: WorkspaceOpt = None, as_json: JsonOpt = False) -> None:
    """A skill's SKILL.md at its current release (or at --release)."""
    from skillforge.skill import file as skillfile
    if release is not None and not release.strip():  # was: "" silently showed the current release
        raise BadArgument("--release \"\": give a release id, id prefix or version, or leave --release out for the "
                          "current one")
    svc = services(workspace)
    rel = svc.store.find_release(name, release) if release else svc.registry.get(name).release
    if rel.commit_hash is None:
        fail(f"release {rel.release_id} has no commit (status {rel.status})")
    label = f"{rel.skill_path}/SKILL.md@{rel.commit_hash[:10]}"
    raw = svc.repo.read(rel.commit_hash, f"{rel.skill_path}/SKILL.md")
    skill = skillfile.parse(skillfile.decode(raw, label), label)
    if as_json:
        print_json({"release": rel.model_dump(mode="json"), "skill": skill.model_dump(mode="json")})
        return
    # The header goes to stderr and the file's own bytes to stdout: `show NAME > file` is the stored
    # SKILL.md; on a terminal, control characters are neutralised.
    err.print(styled((skill.name, "bold"), f" {rel.version} ({rel.status.value}, release {rel.release_id})"))
    if out.is_terminal:
        out.print(terminal_safe(skillfile.decode(raw, label), out), markup=False, highlight=False)
    else:
        sys.stdout.flush()
        sys.stdout.buffer.write(raw)
        sys.stdout.buffer.flush()


def skills_validate(path: Annotated[Path | None, typer.Argument(parser=nonempty_path, metavar="PATH",
                                                                help="A skill folder, a SKILL.md or a folder of skills.")] = None,
                    strict: Annotated[bool, typer.Option("--strict", help="Warnings count as errors.")] = False,
                    workspace: WorkspaceOpt = None, as_json: JsonOpt = False) -> None:
    """Check SKILL.md files against the contract. Exit 1 if any file fails."""
    from skillforge.skill import file as skillfile
    from skillforge.skill.secrets import folder_secrets, why
    from skillforge.skill.tree import read_tree, skill_source
    from skillforge.state.skill import Severity

    if path is None:
        path = Workspace.open(workspace).skills_dir
    path = path.absolute()  # not resolved: a linked folder or SKILL.md is refused below (skill_source), not followed
    if path.is_file() or (path.is_symlink() and path.name == skillfile.SKILL_FILENAME):
        if path.name != skillfile.SKILL_FILENAME:  # never scan the folder of, say, /etc/passwd
            raise SourceError(f"{path} is not a {skillfile.SKILL_FILENAME}; give a skill folder, a "
                              f"{skillfile.SKILL_FILENAME} or a folder of skills")
        path = path.parent
    if not path.exists():
        raise SourceError(f"{path} does not exist")
    folders = [path] if (path / skillfile.SKILL_FILENAME).is_file() else skillfile.find_skill_folders(path)
    if not folders:
        raise SourceError(f"no {skillfile.SKILL_FILENAME} found under {path}")
    root = path if folders != [path] else path.parent
    issues: list[dict[str, str]] = []
    for folder in folders:
        file = folder / skillfile.SKILL_FILENAME
        try:
            skill_source(folder)  # the same refusals as evaluate --candidate and release publish --from
            _, found = skillfile.check_text(skillfile.decode(file.read_bytes(), str(file)), str(file), folder.name)
            if not file.resolve().is_relative_to(root.resolve()):
                raise skillfile.SkillFileError(str(file), "path", "symlink escapes the folder being validated")
            read_tree(folder, contents=False)  # symlinks leaving the skill folder, nested skills, FIFOs
            secrets = folder_secrets(folder)  # every text file, scripts/ and references/ too
        except SkillForgeError as e:
            issues.append({"file": getattr(e, "file", str(file)), "field": getattr(e, "field", "file"), "rule": getattr(e, "rule", str(e)),
                           "severity": "error"})
            continue
        issues += [i.model_dump(mode="json") for i in found]
        issues += [{"file": one_line(folder / s.where), "field": "secret", "severity": "warning",
                    "rule": f"{s.kind} ({one_line(s.shown)}): {why(s)}"} for s in secrets]
    failing = [i for i in issues if i["severity"] == Severity.ERROR or strict]
    if as_json:
        print_json({"checked": len(folders), "issues": issues, "ok": not failing})
    else:
        for i in issues:
            colour = "red" if i["severity"] == "error" or strict else "yellow"
            label = "error" if colour == "red" else "warning"
            out.print(styled((label, colour), f" {i['file']}: field '{i['field']}': {i['rule']}"))
        out.print(plain(f"checked {len(folders)} skill(s): {len(failing)} failing issue(s)"))
    if failing:
        raise typer.Exit(1)


__all__ = ["skills_health", "skills_show", "skills_validate"]
