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
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from skillforge.errors import ReleaseStateError
from skillforge.library.store import Store
from skillforge.library.unsaved import save_unpublished
from skillforge.skill.tree import check_tree, read_tree
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
    files = repo.tree_at(current.commit_hash, current.skill_path)
    if asked is not None:
        target = revert_target(store, skill, asked)  # the same refusals as the revert itself
        if target.skill_path != current.skill_path or (target.commit_hash != current.commit_hash and target.commit_hash
                                                       and repo.tree_at(target.commit_hash, target.skill_path) != files):
            return None  # an older release: a real revert
    folder = repo.workdir / current.skill_path
    if read_tree(folder, check=False) == files:
        return None
    check_tree(files, f"{current.skill_path}@{current.commit_hash[:10]}")
    with repo.lock():
        save_unpublished(machine, skill, folder, force, files)  # UnpublishedChanges, or backed up with force
        repo.replace_folder(folder, files)
        head = repo.head()
        if head is None or repo.tree_at(head, current.skill_path, missing_ok=True) != files:
            repo.commit_folders([folder], f"{skill}: restore the folder of live release {current.version} "
                                          f"(release {current.release_id}){by and f' ({by})'}")
    log.info("%s: %s holds live release %s again", skill, current.skill_path, current.version)
    return current


__all__ = ["not_restorable", "restorable", "restore_live_folder", "revert_target"]
