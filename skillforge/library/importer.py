"""Copying skill folders into a workspace (`skills import --from DIR`), and naming the folders whose
name or SKILL.md `name:` is not a valid skill name (real tools come as `PDF&URLTool`, `Man_of_Many`).

rules/names.py decides each new name (`import_name`) and where new names collide (`plan_names`).
Without `--rename` such a folder is refused with its proposed name; with it, the folder is copied
under the new name and only its `name:` field is rewritten (the source is never modified). A new
name that collides refuses the whole import (`NameClash`), unless the skill under that name is
this very folder, renamed, from an earlier `--rename` (so the command can be run again).
"""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import yaml
from yaml.nodes import MappingNode, ScalarNode

from skillforge.config import Workspace
from skillforge.errors import NameClash, SkillFileError, SkillForgeError, SourceError
from skillforge.library.gitrepo import STAGE_PREFIX, SWAP_DIR, not_writable
from skillforge.rules.names import NamePlan, SourceName, is_skill_name, plan_names
from skillforge.skill import file as skillfile
from skillforge.skill import yaml12
from skillforge.skill.tree import Entry, Tree, left_out, read_tree, write_tree

if TYPE_CHECKING:
    from skillforge.library.releases import ReleaseStateMachine

log = logging.getLogger(__name__)
SKILL_MD = skillfile.SKILL_FILENAME
NAME_RULE = "1-64 of a-z, 0-9 and single hyphens"


def check_source(source: Path) -> None:
    """SourceError unless `source` is a folder holding at least one SKILL.md."""
    if not source.exists():
        raise SourceError(f"{source} does not exist")
    if not source.is_dir():
        raise SourceError(f"{source} is not a folder; give the folder that holds the skill folders")
    if not skillfile.find_skill_folders(source.resolve()):
        raise SourceError(f"no skill under {source}: no {SKILL_MD} in it or its subfolders")


# ---- reading and rewriting the name field ----------------------------------------------------
def _frontmatter(text: str, file: str) -> tuple[int, str, dict[str, object], MappingNode | None]:
    """(offset of the frontmatter in `text`, its YAML text, its mapping, its root node);
    SkillFileError when there is none or it is not a YAML mapping."""
    fm, _ = skillfile.split_frontmatter(text, file)
    bom = 1 if text.startswith("\ufeff") else 0
    offset = text.index("\n", bom) + 1
    assert text[offset:offset + len(fm)] == fm
    try:
        node, data = yaml12.load_bounded(fm, line_offset=1)
    except (yaml.YAMLError, yaml12.ExpansionError) as e:
        raise SkillFileError(file, "frontmatter", f"cannot be read to set its name: {e}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict) or not (node is None or isinstance(node, MappingNode)):
        raise SkillFileError(file, "frontmatter", f"must be a YAML mapping, got {type(data).__name__}")
    return offset, fm, data, node


def declared_name(text: str) -> str | None:
    """The `name:` of a SKILL.md text when it is text; None when it is missing or not a string.
    SkillFileError when the frontmatter cannot be read (then the name is not the problem)."""
    name = _frontmatter(text, SKILL_MD)[2].get("name")
    return name if isinstance(name, str) else None


def with_name(text: str, name: str, file: str) -> str:
    """`text` (a SKILL.md) with its `name:` value replaced by `name` (added as the first key when
    missing); every other byte is kept. SkillFileError when the frontmatter cannot be read or the
    result would not read back as exactly the old fields with the new name."""
    offset, fm, data, node = _frontmatter(text, file)
    value = next((v for k, v in (node.value if node is not None else []) if isinstance(k, ScalarNode) and k.value == "name"), None)
    for written in (name, f'"{name}"'):  # `name: true` or `name: 1e3` would not read as text: quote it
        if value is None:
            new_fm = f"name: {written}\n{fm}"
        else:
            start, end = value.start_mark.index, value.end_mark.index
            while end > start and fm[end - 1] in " \t\r\n":
                end -= 1  # a block scalar's span ends with its line break: keep it
            new_fm = fm[:start] + written + fm[end:]
        try:
            new = yaml12.load_bounded(new_fm, line_offset=1)[1]
        except (yaml.YAMLError, yaml12.ExpansionError):
            continue
        if isinstance(new, dict) and new.get("name") == name and \
                {k: v for k, v in new.items() if k != "name"} == {k: v for k, v in data.items() if k != "name"}:
            return text[:offset] + new_fm + text[offset + len(fm):]
    raise SkillFileError(file, "name", f"cannot be set to '{name}' without changing another field; set it by hand")


def renamed_tree(folder: Path, name: str) -> Tree:
    """The files of `folder` (read_tree's rules) with SKILL.md's `name:` set to `name`."""
    tree = read_tree(folder)
    label = str(folder / SKILL_MD)
    old = tree[SKILL_MD]
    tree[SKILL_MD] = Entry(with_name(skillfile.decode(old.data, label), name, label).encode("utf-8"), old.mode)
    return tree


# ---- the plan -------------------------------------------------------------------------------
@dataclass
class ImportPlan:
    """The skill folders of a source and the names rules/names.py gives them (a folder whose SKILL.md
    frontmatter cannot be read is left out: its own error is reported, as without a plan)."""

    source: Path
    folders: dict[str, Path] = field(default_factory=dict)
    """where (as messages show it) -> the folder."""
    names: NamePlan = field(default_factory=NamePlan)
    again: set[str] = field(default_factory=set)
    """Folders whose new name is already this folder, renamed (an earlier `--rename`): not copied."""

    sources: dict[str, SourceName] = field(default_factory=dict)
    """where -> its folder name and `name:` as the name rules saw them."""
    taken: set[str] = field(default_factory=set)
    """The workspace's skill names when planned, case-folded."""

    def path(self, where: str) -> Path:
        return self.folders[where]

    def problem(self, where: str) -> str:
        """What is wrong with the names of the folder at `where`, in a user's words."""
        s = self.sources[where]
        bad = [f"folder name '{s.folder}'"] if not is_skill_name(s.folder) else []
        if s.declared is None:
            bad.append("`name:` (missing or not text)")
        elif not is_skill_name(s.declared):
            bad.append(f"`name:` '{s.declared}'")
        return f"{' and '.join(bad)} {'is not a valid skill name' if len(bad) == 1 else 'are not valid skill names'} ({NAME_RULE})"

    def clash(self) -> NameClash | None:
        """The error refusing `--rename` when new names collide, or None. A folder of a clash that
        keeps its name as is (valid, perhaps the workspace's skill already) is named as such: only
        the others need renaming."""
        parts, rename, hints = [], [], []
        for name, wheres in sorted(self.names.clashes.items()):
            as_is = [w for w in wheres if w not in self.names.renames]
            renamed = [w for w in wheres if w in self.names.renames]
            rename += renamed
            note = ""
            if as_is:
                has = name.casefold() in self.taken
                note = (f" ({', '.join(as_is)} keep{'s' if len(as_is) == 1 else ''} that name as is"
                        + (f": the workspace's skill '{name}' already" if has else "") + ")")
                hints.append(f"or leave {', '.join(renamed)} out: import the other folders without {'it' if len(renamed) == 1 else 'them'}")
            elif name.casefold() not in self.taken:  # importing one of them alone gives it the name
                hints.append("or give the name to one of them by importing its folder alone")
            parts.append(f"'{name}' <- {', '.join(wheres)}{note}")
        for where, name in sorted(self.names.existing.items()):
            if where not in self.again:  # no order helps against a skill the workspace has
                parts.append(f"'{name}' <- {where} (the workspace already has a skill '{name}')")
                rename.append(where)
        if not parts:
            return None
        hint = f" ({'; '.join(dict.fromkeys(hints))})" if hints else ""
        return NameClash(f"import --rename would give two skills one name, so nothing was imported: {'; '.join(parts)}. "
                         f"Rename {', '.join(dict.fromkeys(rename))} by hand{hint}")

    def clashing(self, where: str) -> list[str]:
        """The other folders of the source that would take the name `where` is proposed (none: [])."""
        name = self.names.renames.get(where)
        group = self.names.clashes.get(name, []) if name is not None else []
        return [w for w in group if w != where]

    def proposed(self) -> dict[str, str]:
        """where -> new name of the folders `--rename` would import: a name no other folder of the
        source takes and the workspace has no skill of (unless it is this folder, renamed before)."""
        return {w: n for w, n in self.names.renames.items()
                if not self.clashing(w) and (w not in self.names.existing or w in self.again)}

    def refusals(self) -> dict[str, SkillFileError]:
        """where -> why the folder is not imported without `--rename` (its proposed name), and
        the folders no name can be made for (with `--rename` too)."""
        out = {where: SkillFileError(str(self.path(where) / SKILL_MD), "name",
                                     f"{self.problem(where)} and none can be made from it (only a-z, 0-9 and "
                                     "hyphens are kept): rename the folder and its `name:` by hand")
               for where in self.names.unnamed}
        for where, name in self.names.renames.items():
            if where in self.names.existing and where not in self.again:  # --rename would clash: say so now
                out[where] = SkillFileError(str(self.path(where) / SKILL_MD), "name",
                                            f"{self.problem(where)}, and the name made from it, {name}, is a skill "
                                            "the workspace has: rename the folder and its `name:` by hand")
                continue
            if others := self.clashing(where):  # so would two folders taking one name
                kept = [w for w in others if w not in self.names.renames]  # a valid name, imported under it
                out[where] = SkillFileError(str(self.path(where) / SKILL_MD), "name", (
                    f"{self.problem(where)}, and the name made from it, {name}, is the name of {', '.join(kept)} "
                    f"(imported under it as is): rename {where} and its `name:` by hand") if kept else (
                    f"{self.problem(where)}, and the name made from it, {name}, is the one {', '.join(others)} "
                    "would take too: these folders would take one name, so rename them and their `name:` by hand"))
                continue
            out[where] = SkillFileError(str(self.path(where) / SKILL_MD), "name",
                                        f"{self.problem(where)}; --rename imports it as {name}")
        return out


def plan_import(source: Path, ws: Workspace, registered: list[str]) -> ImportPlan:
    """Read the name of every skill folder under `source` and plan the new names against the
    workspace's skills (`registered` and the folders under skills/)."""
    base = source.resolve()
    plan = ImportPlan(source=base)
    for folder in skillfile.find_skill_folders(base):
        where = folder.name if folder == base else folder.relative_to(base).as_posix()
        plan.folders[where] = folder
        file = folder / SKILL_MD
        if not file.is_file() or file.is_symlink():  # a link is refused at copy time; never read through it
            continue
        try:
            declared = declared_name(file.read_bytes().decode("utf-8"))
        except (OSError, UnicodeDecodeError, SkillFileError):
            continue  # an unreadable file: its own error says what is wrong, not its name
        plan.sources[where] = SourceName(where=where, folder=folder.name, declared=declared)
    taken = set(registered)
    if ws.skills_dir.is_dir():
        taken |= {p.name for p in ws.skills_dir.iterdir() if not p.name.startswith(".")}
    plan.names = plan_names(list(plan.sources.values()), taken)
    plan.taken = {t.casefold() for t in taken}
    for where, name in plan.names.existing.items():
        try:
            if renamed_tree(plan.path(where), name) == read_tree(ws.skills_dir / name, check=False):
                plan.again.add(where)
        except (SkillForgeError, OSError):
            pass  # cannot tell it is the same skill: a clash
    return plan


# ---- copying --------------------------------------------------------------------------------
@dataclass
class Copied:
    """What copy_skills did."""

    errors: list[SkillForgeError] = field(default_factory=list)
    renamed: dict[str, str] = field(default_factory=dict)
    """where -> new name of each folder copied under a new name."""
    names: set[str] = field(default_factory=set)
    """The skill names the source's folders have in skills/ (copied, or there already)."""
    held: set[str] = field(default_factory=set)
    """Names whose unregistered skills/<name> differs from the source's folder: not to be registered."""
    left_out: dict[Path, list[str]] = field(default_factory=dict)
    """Source folder -> what its copy left out (tree.left_out: nested .git folders, empty folders)."""


def copy_skills(source: Path, ws: Workspace, plan: ImportPlan | None = None, rename: bool = False,
                registered: set[str] | frozenset[str] = frozenset()) -> Copied:
    """Copy every loadable skill folder under `source` into skills/<name> (existing folders
    kept), byte for byte with modes; symlinks stay symlinks and one leaving its folder refuses
    that skill. Each copy is built aside and renamed in, so a folder is never half-copied.
    With a `plan`, folders it names are refused with their proposed name, or (`rename`) copied
    under it. An existing skills/<name> that is not `registered` and holds other files than the
    source's folder is an error and `held`: registering it would publish, as imported from the
    source, files the source does not have (an edit made after a killed import, say)."""
    report = skillfile.scan(source.resolve(), source.resolve())
    named = plan.names.renames if plan is not None else {}
    refused = plan.refusals() if plan is not None else {}
    handled = {plan.path(w): w for w in refused} if plan is not None else {}
    errors: list[SkillForgeError] = []
    path_errors: set[Path] = set()
    for e in report.errors:
        folder = Path(e.file).parent
        if folder in handled and e.field != "path":
            continue  # its name is the problem: said below (a path problem stands, and stops a rename)
        errors.append(e)
        path_errors.add(folder)
    copies: list[tuple[str, Tree | Path]] = [(name, loaded.path) for name, loaded in report.skills.items()]
    sources = {name: loaded.path for name, loaded in report.skills.items()}
    renamed: dict[str, str] = {}
    again: set[str] = set()
    for folder, where in handled.items():
        if folder in path_errors:
            continue
        if not rename or where not in named:
            errors.append(refused[where])
            continue
        if plan is not None and where in plan.again:
            again.add(named[where])
            continue  # already in skills/ under its new name, from an earlier --rename
        label = str(folder / SKILL_MD)
        try:
            tree = renamed_tree(folder, named[where])
            skillfile.parse(skillfile.decode(tree[SKILL_MD].data, label), label, named[where])
        except SkillForgeError as e:
            errors.append(e)
            continue
        copies.append((named[where], tree))
        sources[named[where]] = folder
        renamed[where] = named[where]
    held: set[str] = set()
    left: dict[Path, list[str]] = {}
    for name, what in copies:
        target = ws.skills_dir / name
        if target.exists() or target.is_symlink():
            renamed = {w: n for w, n in renamed.items() if n != name}
            if name not in registered and not _same_files(what, target):
                errors.append(SkillFileError(str(target / SKILL_MD), "path", (
                    f"skills/{name} is already there, not registered, and its files differ from the source's "
                    f"({what if isinstance(what, Path) else 'renamed copy'}): nothing imported for '{name}'. To "
                    f"register the folder's own files run `skillforge skills import` without --from; to import the "
                    f"source's, move skills/{name} aside and run this again")))
                held.add(name)
            elif name in registered and not _same_files(what, target):  # QA 33 F6: say why nothing changed
                log.warning("%s: '%s' is already registered and the source's files differ from skills/%s: import never "
                            "replaces a release; to publish the source's files run `skillforge release publish %s "
                            "--from %s`", what if isinstance(what, Path) else "renamed copy", name, name, name,
                            shlex.quote(str(sources[name])))
            continue
        try:
            tree = read_tree(what) if isinstance(what, Path) else what
        except SkillForgeError as e:
            errors.append(e)
            continue
        _place(ws, name, tree)
        if dropped := left_out(sources[name]):
            left[sources[name]] = dropped
    return Copied(errors=errors, renamed=renamed, names={name for name, _ in copies} | again, held=held, left_out=left)


def settle_preparing(machine: ReleaseStateMachine, report: skillfile.ScanReport) -> list[str]:
    """Before `skills import` registers the scanned folders (QA 23 F15): abandon what a killed
    process left PREPARING under a name not yet registered (a split killed half-way; a folder holding
    only what it wrote is removed, as the watchdog does; an evolve run's publish of a live skill is
    left to `evolve --resume`), then take out of `report` every folder that is gone now or is
    still some live process's PREPARING release: those are no skills to import, and committing a
    folder the recovery removed failed with a raw git error. The names taken out, sorted."""
    fresh = [n for n in report.skills if machine.store.current(n) is None and machine.store.retirement(n) is None]
    for name in fresh:  # only what import_skills would begin a release of (and so recover) anyway
        machine.recover(name)
    busy = {rel.skill_name for rel, _ in machine.store.preparing()}
    out = sorted(n for n in fresh if n in busy or not report.skills[n].path.is_dir())
    for name in out:
        report.skills.pop(name)
    return out


def _same_files(what: Tree | Path, folder: Path) -> bool:
    """Whether skills/<name> holds exactly the source folder's files (a killed import's copy)."""
    try:
        return (read_tree(what) if isinstance(what, Path) else dict(what)) == read_tree(folder, check=False)
    except (SkillForgeError, OSError):
        return False


def _place(ws: Workspace, name: str, tree: Mapping[str, Entry]) -> None:
    """Write `tree` to skills/<name>: built aside, then renamed in."""
    target = ws.skills_dir / name
    stage = ws.skills_dir / SWAP_DIR / f"{STAGE_PREFIX}{name}-{uuid.uuid4().hex[:8]}"
    try:
        stage.parent.mkdir(exist_ok=True)
        write_tree(stage, dict(tree))
        os.rename(stage, target)
    except OSError as e:
        shutil.rmtree(stage, ignore_errors=True)  # no half-copied skill left behind
        raise not_writable(target, e) from None
    try:
        stage.parent.rmdir()
    except OSError:
        pass  # another swap in progress
