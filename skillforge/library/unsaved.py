"""What writing a skill's folder would lose: files no commit holds (HEAD or the skill's current
release), and files those commits hold that the folder no longer has (a deletion is an edit too,
listed as `deleted: PATH`). A publish or revert refuses them (UnpublishedChanges), or with `force`
first backs them up under runs/backups/ (the machine's `backups` lists where; the deletions are
listed in `<backup>.deleted.txt` beside the copy, since the copy itself cannot show a missing file)."""

from __future__ import annotations

import logging
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from skillforge.errors import NestedSkill, UnpublishedChanges
from skillforge.skill.tree import Tree, nested_skills, read_tree, unsaved_files, write_tree

if TYPE_CHECKING:
    from skillforge.library.releases import ReleaseStateMachine
    from skillforge.state.release import Release

log = logging.getLogger(__name__)
BACKUPS_DIR = "backups"
"""Under runs/: where `force` saves unpublished edits before a folder is overwritten."""
DELETED = "deleted: "
"""How a file deleted from the folder is listed among the unpublished changes."""


def unsaved(machine: ReleaseStateMachine, skill: str, folder: Path, *, refuse: bool,
            writing: Tree | None = None) -> list[str]:
    """Files of `folder` that no commit holds (HEAD or the skill's current release), then
    `deleted: PATH` for each file every one of those commits holds and the folder lacks: what
    writing the folder would lose. A deletion the written tree `writing` makes too (the candidate
    deletes that file itself) loses nothing. A folder that is gone or empty as a whole is not an
    edit (`release revert` restores it). UnpublishedChanges if `refuse`; NestedSkill always."""
    work = read_tree(folder, check=False)
    nested = nested_skills(work)
    if nested:
        raise NestedSkill(str(folder / nested[0]), "path", f"another skill inside skill folder {folder}; "
                                                           "nested skills are refused: move it out first")
    if not work:
        return []
    repo = machine.repo
    rel = repo.rel(folder)
    head = repo.head()
    saved = [repo.tree_at(head, rel, missing_ok=True)] if head else []
    current = machine.store.current(skill)
    if current is not None and current.commit_hash != head and current.skill_path == rel:
        saved.append(machine.tree_of(current))
    lost = unsaved_files(work, *saved)
    gone = set(saved[0]).intersection(*saved[1:]) - set(work) if saved else set()
    lost += [DELETED + p for p in sorted(gone) if writing is None or p in writing]
    if lost and refuse:
        raise UnpublishedChanges(rel, lost)
    return lost


def save_unpublished(machine: ReleaseStateMachine, skill: str, folder: Path, force: bool,
                     writing: Tree | None = None) -> None:
    """Under the repo lock, right before `folder` is overwritten with `writing`: refuse, or back it
    up (the folder as it was, and its deletions in `<backup>.deleted.txt`)."""
    lost = unsaved(machine, skill, folder, refuse=not force, writing=writing)
    if not lost:
        return
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    backup = machine.ws.runs_dir / BACKUPS_DIR / f"{stamp}-{skill}-{uuid.uuid4().hex[:6]}"
    write_tree(backup, read_tree(folder, check=False), check=False)
    deleted = [p for p in lost if p.startswith(DELETED)]
    if deleted:
        manifest = backup.with_name(backup.name + ".deleted.txt")
        manifest.write_text(f"# files {machine.repo.rel(folder)} no longer had (deleted by hand, not published); "
                            "this release brings them back\n" + "".join(f"{p}\n" for p in deleted), encoding="utf-8")
        log.warning("%s: this release brings back what was deleted from %s by hand: %s (listed in %s)", skill,
                    machine.repo.rel(folder), ", ".join(p[len(DELETED):] for p in deleted), manifest)
    machine.backups.append(backup)
    log.info("%s: saved the unpublished edits of %s to %s", skill, folder, backup)


def worktree_state(machine: ReleaseStateMachine, rel: Release) -> str:
    """What the folder of `rel` (a skill's current release) holds, for `skills list`: "clean" (the
    release's files), "canary X.Y.Z" (the open canary's, as a working-tree canary leaves it),
    "missing" (the folder was deleted: `release revert` restores it) or "modified"."""
    from skillforge.errors import SkillForgeError
    from skillforge.library.canaries import Canaries

    folder = machine.repo.workdir / rel.skill_path
    if not folder.exists() and not folder.is_symlink():
        return "missing"
    try:
        work = read_tree(folder, check=False)
        if rel.commit_hash is not None and work == machine.repo.tree_at(rel.commit_hash, rel.skill_path):
            return "clean"
        canary = Canaries(machine.store).open_of(rel.skill_name)
        trial = machine.store.release(canary.release_id) if canary is not None else None
        if trial is not None and trial.commit_hash and work == machine.repo.tree_at(trial.commit_hash, rel.skill_path):
            return f"canary {trial.version}"
    except SkillForgeError:
        pass
    return "modified"
