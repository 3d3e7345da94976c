"""What a release that did not finish leaves in its skill folder and in git's index, put right.

A release that replaces its folder records the `tree_digest` of the files it writes before it
swaps them in. Whenever such a release is abandoned (by its own process on an error, by the next
`begin_release` when its process died, by the watchdog), the folder gets the live release's bytes
back if it holds exactly what that release wrote: the recorded swap, what it staged, or what it
committed. Whether anything had reached git by then does not matter. Anything else in the folder
is a person's edit and is left alone; git's index is made to match HEAD for the folder either way.

A canary rolled back is the one case where a release that did not replace its folder (published
from the working tree) gets the live bytes back too: its bytes are committed, so a folder holding
exactly them loses nothing (they stay at the declined release's commit), and leaving them would let
the next plain `release publish` ship the declined canary to everyone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING
from pathlib import Path

from skillforge.errors import BadArgument, GitError, ReleaseConflict, PublishInterrupted, SkillFileError
from skillforge.library.gitrepo import SkillsRepo
from skillforge.library.stamps import stamp_tag
from skillforge.safewrite import temp_path
from skillforge.skill.file import SKILL_FILENAME
from skillforge.skill.version import with_version
from skillforge.rules.watchdog import is_stale, may_restore, valid_stale_hours
from skillforge.skill.tree import Tree, read_tree, signature, tree_digest
from skillforge.state.release import Release
from skillforge.library.store import Store

if TYPE_CHECKING:
    from skillforge.library.releases import ReleaseStateMachine

log = logging.getLogger(__name__)


Interrupted = Callable[[], bool]
"""Asked between release steps (say, "did Ctrl-C arrive?"): True rolls the release back."""

LEFT_PREPARING = "%s: release %s was left PREPARING by a process that is gone; abandoning it"
"""The warning (skill, release id) every command that abandons a dead process's release prints."""


def restore_after_abandon(store: Store, repo: SkillsRepo, rel: Release, *, declined: bool = False) -> None:
    """Finish or undo a swap cut short, put the live bytes back where `may_restore` allows, and
    make git's index hold HEAD's version of the folder again. Safe to repeat (a recovery killed
    half-way is simply done again), and run under the repository's write lock. `declined`: a
    rolled-back canary, whose committed bytes are put back even when they came from the working
    tree (the module docstring)."""
    folder = repo.workdir / rel.skill_path
    with repo.lock():
        for what in repo.recover(folder):
            log.warning("%s: %s", rel.skill_name, what)
        for tmp in _own_temps(store, repo, rel, folder):  # its metadata.version, written but never renamed
            tmp.unlink(missing_ok=True)
            log.warning("%s: removed %s, a SKILL.md write the dead process never finished", rel.skill_name, tmp.name)
        try:
            if rel.writes_folder or (declined and rel.commit_hash is not None):
                _restore_folder(store, repo, rel, folder, "declined" if declined else "abandoned")
        finally:
            try:
                if repo.unstage(folder):
                    log.warning("%s: reset git's index for %s (left staged by release %s)",
                                rel.skill_name, rel.skill_path, rel.release_id)
            except GitError as e:  # never hide why the release is being abandoned
                log.warning("%s: %s", rel.skill_name, e)


def written_by(store: Store, repo: SkillsRepo, rel: Release, folder: Path) -> list[str]:
    """The digests of every state of `folder` that `rel` itself may have left: the files it
    recorded before its swap, its commit, and what git's index holds when that differs from HEAD
    (a `git add` that was never committed)."""
    written = []
    recorded = store.swap_digest(rel.release_id)
    if recorded is not None:
        written.append(recorded)
    if rel.commit_hash is not None:
        written.append(tree_digest(signature(repo.tree_at(rel.commit_hash, rel.skill_path))))
    head = repo.head()
    committed = signature(repo.tree_at(head, rel.skill_path, missing_ok=True)) if head else {}
    staged = repo.staged_signature(folder)
    if staged != committed:
        written.append(tree_digest(staged))
    return written


def _own_temps(store: Store, repo: SkillsRepo, rel: Release, folder: Path) -> list[Path]:
    """The temp file `rel`'s own version stamp left (killed before its rename): named by `rel`'s id
    (stamps.stamp_tag), holding the folder's SKILL.md with `rel`'s metadata.version whole or cut
    short, and not a file the live release holds. A person's file is never touched."""
    tmp = temp_path(folder / SKILL_FILENAME, stamp_tag(rel.release_id))
    if not tmp.is_file() or tmp.is_symlink():
        return []
    try:
        live = _live_tree(store, repo, rel)
        stamp = with_version((folder / SKILL_FILENAME).read_text(encoding="utf-8"), rel.version)
        text = tmp.read_text(encoding="utf-8")
    except (GitError, OSError, UnicodeDecodeError, SkillFileError):
        return []  # nothing to tell a person's file from the stamp's by: leave it
    return [tmp] if tmp.name not in live and stamp.startswith(text) else []  # whole, or the part written


def _live_tree(store: Store, repo: SkillsRepo, rel: Release) -> Tree:
    """What the folder holds when `rel`'s skill serves its current release: that release's files,
    or no folder at all for a skill that has none yet."""
    current = store.current(rel.skill_name)
    if current is None or current.commit_hash is None:
        return {}
    return repo.tree_at(current.commit_hash, current.skill_path, missing_ok=True)


def _restore_folder(store: Store, repo: SkillsRepo, rel: Release, folder: Path, why: str) -> None:
    """Put the live bytes in `folder` (and commit them if HEAD holds other bytes there) when the
    folder holds exactly something `rel` wrote."""
    try:
        live = _live_tree(store, repo, rel)
        written = written_by(store, repo, rel, folder)
        work = tree_digest(signature(read_tree(folder, check=False)))
    except (GitError, SkillFileError) as e:
        log.warning("%s: the folder of release %s is left as it is: %s", rel.skill_name, rel.release_id, e)
        return
    if not may_restore(work, written, tree_digest(signature(live))):
        if work != tree_digest(signature(live)) and written:  # edited since: kept, but never silently
            current = store.current(rel.skill_name)
            log.warning("%s: %s was edited after release %s (%s, now %s) began and is left as it is: it may still "
                        "hold that release's never-published changes beside the edits. `git -C %s diff %s -- %s` "
                        "shows how it differs from the live release%s", rel.skill_name, rel.skill_path,
                        rel.release_id[:8], rel.version, why.upper(), repo.workdir,
                        current.commit_hash[:10] if current is not None and current.commit_hash else "HEAD",
                        rel.skill_path,
                        f" ({current.version}); `skillforge release revert {rel.skill_name} {current.version} --force` "
                        "puts it back, saving the folder under runs/backups/" if current is not None else "")
        return
    repo.replace_folder(folder, live)
    current = store.current(rel.skill_name)
    what = f"restore {current.version}" if current is not None else "remove the folder"
    log.info("%s: %s after %s release %s (the folder held exactly its files)",
             rel.skill_name, what, why, rel.release_id)
    head = repo.head()
    if head is not None and repo.tree_at(head, rel.skill_path, missing_ok=True) != live:
        repo.commit_folders([folder], f"{rel.skill_name}: {what} after {why} release {rel.release_id}")


def put_back_commit(repo: SkillsRepo, folder: Path, before: str, rel: Release) -> None:
    """After a release's commit failed (the caller holds the repo lock): the folder gets the bytes
    of commit `before` again, and when the failed `git commit` was killed after it moved HEAD
    (Ctrl-C), those bytes are committed too, so HEAD matches the working tree again."""
    try:
        files = repo.tree_at(before, rel.skill_path, missing_ok=True)
    except GitError:
        files = None  # `before` unreadable: the folder stays as it is
    if files is not None:
        repo.replace_folder(folder, files)
    try:
        if repo.head() != before:
            repo.commit_folders([folder], f"{rel.skill_name}: put back after the failed commit of release "
                                          f"{rel.release_id}")
    except GitError as e:
        log.warning("%s: %s", rel.skill_name, e)


def checkpoint(interrupted: Interrupted | None, rel: Release) -> None:
    """PublishInterrupted (the caller abandons `rel`) if `interrupted` says so; asked between steps."""
    if interrupted is not None and interrupted():
        raise PublishInterrupted(f"interrupted: release {rel.release_id} of '{rel.skill_name}' was rolled back "
                                 "before it was committed")


def base_moved(skill: str, live: Release | None, shown: str | None) -> str | None:
    """Why a publish that listed its changes against release `shown` (None: no live release) may not
    go on now that `live` is live (another terminal published or reverted meanwhile), or None."""
    if (live.release_id if live is not None else None) == shown:
        return None
    now = f"{live.version} (release {live.release_id[:8]})" if live is not None else "no live release"
    return (f"the live release of '{skill}' changed while this publish ran ({f'release {shown[:8]}' if shown else 'none'} "
            f"-> {now}): the files listed above are not what it would change, so nothing was published; "
            "run the command again to see what differs from the live release now")




def watchdog_sweep(machine: ReleaseStateMachine, hours: float) -> list[Release]:
    """Mark PREPARING releases at least `hours` old (SQLite's clock) ABANDONED; a live
    process's release only once it is past `rules.watchdog.IN_FLIGHT_HOURS` too."""
    if not valid_stale_hours(hours):
        raise BadArgument(f"--hours must be a finite number ≥ 0, got {hours}")
    swept = []
    for rel, age in machine.store.preparing():
        if is_stale(age, hours, owner_alive=machine.owner.alive(rel.owner)) and machine.abandon(rel.release_id):
            swept.append(machine.store.release(rel.release_id))
    return swept


def refuse_busy(machine: ReleaseStateMachine, skill: str) -> None:
    """ReleaseConflict if a live process (this one included) holds a PREPARING release of
    `skill`: it is publishing right now, so its files in the folder are no one's edits and
    nothing needs `--force` or `watchdog`. A dead process's release is recovered instead."""
    for rel in machine.store.preparing_of(skill):
        if rel.owner is not None and rel.owner == machine.owner.held:
            raise ReleaseConflict(f"release {rel.release_id[:8]} ({rel.version}) of '{skill}' is still PREPARING "
                                  "in this process: commit or abandon it first")
        if machine.owner.alive(rel.owner):
            raise ReleaseConflict(
                f"another process is publishing '{skill}' right now (release {rel.release_id[:8]}, version "
                f"{rel.version}, begun {rel.created_at[:19]}): try again when it ends (if that process hangs, "
                "stop it; the next publish rolls its release back)")


__all__ = ["Interrupted", "LEFT_PREPARING", "base_moved", "checkpoint", "put_back_commit", "refuse_busy", "restore_after_abandon", "watchdog_sweep", "written_by"]
