"""What writing a skill's folder would lose: files no commit holds (HEAD or the skill's current
release). A publish or revert refuses them (UnpublishedChanges), or with `force` first backs them
up under runs/backups/ (the machine's `backups` lists where)."""

from __future__ import annotations

import logging
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from skillforge.errors import NestedSkill, UnpublishedChanges
from skillforge.skill.tree import nested_skills, read_tree, unsaved_files, write_tree

if TYPE_CHECKING:
    from skillforge.library.releases import ReleaseStateMachine
    from skillforge.state.release import Release

log = logging.getLogger(__name__)
BACKUPS_DIR = "backups"
"""Under runs/: where `force` saves unpublished edits before a folder is overwritten."""


def unsaved(machine: ReleaseStateMachine, skill: str, folder: Path, *, refuse: bool) -> list[str]:
    """Files of `folder` that no commit holds (HEAD or the skill's current release): what
    writing the folder would lose. UnpublishedChanges if `refuse`; NestedSkill always."""
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
    if lost and refuse:
        raise UnpublishedChanges(rel, lost)
    return lost


def save_unpublished(machine: ReleaseStateMachine, skill: str, folder: Path, force: bool) -> None:
    """Under the repo lock, right before `folder` is overwritten: refuse, or back it up."""
    if not unsaved(machine, skill, folder, refuse=not force):
        return
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    backup = machine.ws.runs_dir / BACKUPS_DIR / f"{stamp}-{skill}-{uuid.uuid4().hex[:6]}"
    write_tree(backup, read_tree(folder, check=False), check=False)
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
