"""Which release `release revert SKILL RELEASE` restores, or why none can be: a version that only
DECLINED canaries (or ABANDONED publishes) carry was never published, so it is refused as such,
listing the versions that can be restored, not as an ambiguous id.

**The live release's folder.** `release revert NAME` (a skill that is not RETIRED), or naming the
live release (or one with its bytes), when the skill folder no longer holds the live release:
deleted (`skills list` says `missing`), edited by hand, or left at a declined canary's bytes. The
live release's files go back into the folder and no release is made, since what is served has not
changed (a REVERT release restoring the bytes already live would only add a version). Edits no
commit holds are refused as for any revert (UnpublishedChanges) unless `force` saves them under
runs/backups/ first. When git HEAD holds other bytes at that path (a declined canary's commit), the
restored folder is committed, so the next `git status` is clean.

**What a revert would lose.** Putting the live release back (`live`), a file deleted by hand
beside SKILL.md loses nothing (its bytes are the live release's), so, like a deleted folder, it
needs no --force: a warning says it is brought back. A revert to an older release still refuses
such a deletion as an unpublished change (QA 15 TRUST-4: the deletion may be an edit meant for
publishing, which the older files would undo). Any revert: a file or a symlink
where the folder belongs is refused (NotAFolder) unless `force`, which saves it under runs/backups/
(a symlink as a symlink: its target is never read, written or followed) before the folder is
written. Files no commit holds are refused (UnpublishedChanges) unless `force` saves them.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from skillforge.errors import NotAFolder, ReleaseStateError, UnpublishedChanges
from skillforge.library.store import Store
from skillforge.library.unsaved import BACKUPS_DIR, DELETED, save_unpublished, unsaved
from skillforge.safewrite import not_writable
from skillforge.skill.tree import Tree, check_tree, read_tree
from skillforge.state.release import Release, ReleaseStatus

if TYPE_CHECKING:
    from skillforge.library.releases import ReleaseStateMachine

log = logging.getLogger(__name__)

_WHY = {ReleaseStatus.DECLINED: "DECLINED (a canary rolled back: never published)",
        ReleaseStatus.ABANDONED: "ABANDONED (a publish that did not finish: never published)",
        ReleaseStatus.PREPARING: "PREPARING (not published yet)"}


def restorable(store: Store, skill: str) -> list[Release]:
    """The PUBLISHED releases of `skill` that `release revert` could make current, oldest first
    (not the live one: it already serves its bytes)."""
    current = store.current(skill)
    return [r for r in store.releases(skill) if r.status is ReleaseStatus.PUBLISHED and r.commit_hash
            and (current is None or r.release_id != current.release_id)]


def not_restorable(store: Store, skill: str, asked: str, named: list[Release]) -> ReleaseStateError:
    """The refusal for `asked`, which names only the unpublished releases `named`: their status,
    and the versions that can be restored instead."""
    ids = ", ".join(r.release_id[:8] for r in named[:10]) + (f" and {len(named) - 10} more" if len(named) > 10 else "")
    statuses = sorted({r.status for r in named})
    what = " / ".join(_WHY.get(s, s.value) for s in statuses)
    given = f"version {asked}" if all(r.version == asked for r in named) else f"release {asked}"
    options = restorable(store, skill)
    if options:
        way = "restorable: " + ", ".join(f"{r.version} (release {r.release_id[:8]})" for r in options[-10:])
    else:
        current = store.current(skill)
        way = (f"no other release of '{skill}' was ever published"
               + (f" ({current.version}, release {current.release_id[:8]}, is live)" if current else ""))
    its = ("it is" if given.startswith("release") else f"its release {ids} is") if len(named) == 1 else \
        f"its {len(named)} releases ({ids}) are"  # a release named by its id is not named again
    return ReleaseStateError(f"{given} of '{skill}' cannot be restored: {its} {what}, and only PUBLISHED releases "
                             f"can be restored; {way}")


def revert_target(store: Store, skill: str, asked: str) -> Release:
    """The PUBLISHED release `asked` (id, version or id prefix) names, as Store.find_release finds
    it; ReleaseStateError (`not_restorable`) when it names only releases that were never published,
    however many share that version."""
    exact = [r for r in store.releases(skill) if asked in (r.version, r.release_id)]
    if exact and not any(r.status is ReleaseStatus.PUBLISHED for r in exact):
        raise not_restorable(store, skill, asked, exact)
    target = store.find_release(skill, asked)  # UnknownRelease, AmbiguousRelease for a short or shared prefix
    if target.status is not ReleaseStatus.PUBLISHED or target.commit_hash is None:
        raise not_restorable(store, skill, asked, [target])
    return target


def restore_live_folder(machine: ReleaseStateMachine, skill: str, asked: str | None, *, force: bool,
                        by: str = "") -> Release | None:
    """When `asked` is None (and the skill is not RETIRED) or names the live release's bytes, and
    the folder differs from them: put the live files back (see the module docstring) and return
    the live release. None when this is not such a revert or the folder already holds them. The
    caller has refused an open canary and a busy skill."""
    store, repo = machine.store, machine.repo
    current = store.current(skill)
    if current is None or current.commit_hash is None:
        return None  # nothing live (a RETIRED skill has no current release either)
    if repo.missing_commits([current.commit_hash]):  # its history rewritten and collected (QA 33 F1): there are no
        return None  # live bytes to put back; a revert to an older release goes on as a real revert
    files = repo.tree_at(current.commit_hash, current.skill_path)
    if asked is not None:
        target = revert_target(store, skill, asked)  # the same refusals as the revert itself
        if target.skill_path != current.skill_path or (target.commit_hash != current.commit_hash and target.commit_hash
                                                       and repo.tree_at(target.commit_hash, target.skill_path) != files):
            return None  # an older release: a real revert
    folder = repo.workdir / current.skill_path
    if odd_path(folder) is None and read_tree(folder, check=False) == files:
        return None
    check_tree(files, f"{current.skill_path}@{current.commit_hash[:10]}")
    with repo.lock():
        check_revert(machine, skill, folder, force, files, live=True)  # NotAFolder / UnpublishedChanges unless force
        clear_for_revert(machine, skill, folder, force, files, live=True)
        repo.replace_folder(folder, files)
        head = repo.head()
        if head is None or repo.tree_at(head, current.skill_path, missing_ok=True) != files:
            repo.commit_folders([folder], f"{skill}: restore the folder of live release {current.version} "
                                          f"(release {current.release_id}){by and f' ({by})'}")
    log.info("%s: %s holds live release %s again", skill, current.skill_path, current.version)
    return current


def odd_path(folder: Path) -> str | None:
    """What sits at a skill folder's path when it is neither a folder nor missing, else None."""
    if folder.is_symlink():
        return f"a symlink (to {os.readlink(folder)})"
    if folder.exists() and not folder.is_dir():
        return "a file" if folder.is_file() else "neither a folder nor a file (a FIFO, socket or device)"
    return None


def check_revert(machine: ReleaseStateMachine, skill: str, folder: Path, force: bool, files: Tree, *,
                 live: bool = False) -> None:
    """Under the repo lock, before a revert begins a release or writes `folder` with `files`: refuse
    what it would lose (module docstring): NotAFolder for a file or a symlink at its path,
    UnpublishedChanges for files no commit holds; with `force` only what cannot be saved (a FIFO,
    a device). `live` (the live release's files): deletions are not refused. With `force`, a file or a symlink at the path is saved
    under runs/backups/ and removed here, so that the path reads as a missing folder from now on."""
    what = odd_path(folder)
    rel = f"{machine.repo.rel(folder.parent)}/{folder.name}"  # not resolved: a symlink's target may be anywhere
    if what is not None and (not force or not what.startswith("a ")):
        if what.startswith("a symlink"):
            raise NotAFolder(f"{rel} is {what}, not the skill's folder: remove the link ({folder}; its target is "
                             f"left as it is), then run the revert again (`skillforge release revert {skill}` puts "
                             "the live release back); or pass --force to replace the link with the release's folder "
                             "(the link is saved under runs/backups/, its target is never touched)")
        raise NotAFolder(f"{rel} is {what}, not the skill's folder: the revert would replace it; move it away, or pass "
                         "--force to save it under runs/backups/ and put the release's folder there"
                         if what == "a file" else f"{rel} is {what}, not the skill's folder: remove it, then run the "
                         "revert again")
    if what is not None:
        _save_aside(machine, skill, folder, rel, what)
    elif not force:
        edits = [p for p in unsaved(machine, skill, folder, refuse=False, writing=files)
                 if not (live and p.startswith(DELETED))]
        if edits:
            raise UnpublishedChanges(rel, edits)


def _save_aside(machine: ReleaseStateMachine, skill: str, folder: Path, rel: str, what: str) -> None:
    """Save the file or symlink at `folder` under runs/backups/ (a link as a link: its target is not
    followed) and remove it; a warning says where (shown even if the revert then fails)."""
    backup = machine.ws.runs_dir / BACKUPS_DIR / f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{skill}-{uuid.uuid4().hex[:6]}"
    try:
        backup.parent.mkdir(parents=True, exist_ok=True)
        if folder.is_symlink():
            os.symlink(os.readlink(folder), backup)
        else:
            shutil.copy2(folder, backup, follow_symlinks=False)
        os.unlink(folder)
    except OSError as e:
        raise not_writable(backup, e) from None
    log.warning("%s: %s was %s, not a folder: saved to %s%s", skill, rel, what, backup,
                " (the link only: its target is left as it is)" if what.startswith("a symlink") else "")


def clear_for_revert(machine: ReleaseStateMachine, skill: str, folder: Path, force: bool, files: Tree, *,
                     live: bool = False) -> None:
    """Under the repo lock, after check_revert, right before `folder` is written with `files`: edits
    are saved (`force`); `live`: files deleted by hand are brought back, which a warning names."""
    if odd_path(folder) is not None:  # put there since check_revert: refused as it would have been
        check_revert(machine, skill, folder, False, files)
    if not live:
        save_unpublished(machine, skill, folder, force, files)  # UnpublishedChanges, or backed up with force
        return
    lost = unsaved(machine, skill, folder, refuse=False, writing=files)
    if any(not p.startswith(DELETED) for p in lost):
        save_unpublished(machine, skill, folder, force, files)  # backed up (force: check_revert refused otherwise)
    elif lost:
        log.warning("%s: the revert brings back what was deleted from %s by hand: %s", skill,
                    machine.repo.rel(folder), ", ".join(p[len(DELETED):] for p in lost))


__all__ = ["check_revert", "clear_for_revert", "not_restorable", "odd_path", "restorable", "restore_live_folder",
           "revert_target"]
