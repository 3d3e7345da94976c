"""ReleaseStateMachine: begin_release -> write_commit -> append_evaluation -> commit_release.

Until `commit_release` commits its one SQLite transaction, the old release stays current: a crash
anywhere before leaves a PREPARING row. The next publish, revert or `begin_release` of that skill
(its process being gone), or `watchdog_sweep`, marks it ABANDONED and puts the published bytes back
into the working tree when the folder holds exactly what the dead release wrote (recovery.py).
A split's children are published with the same steps by split.publish_children.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import EllipsisType

from skillforge.skill import file as skillfile
from skillforge.config import Workspace
from skillforge.errors import (BadArgument, BaseMoved, CanaryOpen, GitError, NoChanges, NotPublished, ReleaseConflict,
                               ReleaseStateError, SkillFileError, PublishInterrupted, UnknownRelease)
from skillforge.library.canaries import Canaries
from skillforge.library.gitrepo import SkillsRepo, folder_digest
from skillforge.library.gitrefs import pin, versions_in_git
from skillforge.journal import append_jsonl
from skillforge.library.owners import ReleaseOwner
from skillforge.library.recovery import (LEFT_PREPARING, Interrupted, base_moved, checkpoint, put_back_commit,
                                         refuse_busy, restore_after_abandon, watchdog_sweep)
from skillforge.library.restorable import check_revert, clear_for_revert, restore_live_folder, revert_target
from skillforge.library.stamps import FolderStamps
from skillforge.library.unsaved import save_unpublished, unsaved
from skillforge.rules.versions import highest, is_semver, next_version, shown_version
from skillforge.skill.tree import (Files, Tree, as_tree, check_tree, read_tree, signature, tree_digest)
from skillforge.skill.version import stamped
from skillforge.state.canary import CanaryPlan
from skillforge.state.release import LineageKind, Release, ReleaseLevel, ReleaseStatus, Retirement
from skillforge.library.store import Store

log = logging.getLogger(__name__)
PACK_AFTER_IMPORT = 50
"""Importing this many skills at once leaves enough loose git objects to be worth a repack."""


@dataclass
class ImportResult:
    imported: list[Release] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """Skills already registered (import never replaces a published release)."""
    errors: list[SkillFileError] = field(default_factory=list)


class ReleaseStateMachine:
    """The only writer of releases. Each step checks the row is still PREPARING."""

    def __init__(self, workspace: Workspace, store: Store, repo: SkillsRepo) -> None:
        self.ws, self.store, self.repo = workspace, store, repo
        self.owner = ReleaseOwner(workspace.runs_dir)
        self.backups: list[Path] = []
        """Folders where `force` saved unpublished edits, in order (runs/backups/...)."""
        self.stamps = FolderStamps(repo)
        """metadata.version set in folders published as they are: `abandon` puts their text back."""

    @classmethod
    def open(cls, workspace: Workspace) -> ReleaseStateMachine:
        return cls(workspace, Store(workspace.db_path), SkillsRepo(workspace.skills_dir))

    def folder_of(self, skill: str) -> Path:
        """Where the skill lives in the working tree: its current release's folder, else skills/<name>."""
        current = self.store.current(skill)
        if current is not None:
            return self.repo.workdir / current.skill_path
        return self.ws.skills_dir / skill

    # ---- the four steps ---------------------------------------------------------------
    def begin_release(self, skill: str, *, version: str | None = None, proposed: str | None = None, level: ReleaseLevel = ReleaseLevel.MANUAL,
                      triggered_by: str = "manual", kind: LineageKind | None = None,
                      parents: list[str] | None = None, folder: Path | None = None) -> Release:
        """Insert a PREPARING row. ReleaseConflict if the skill already has one that a live
        process is working on; one left by a dead process is abandoned (and its folder, swap and
        git index put back) first. `version` must be above every published version; `proposed`
        (say, the candidate's metadata.version) is used when it is, else the highest published
        version gets a patch bump. CanaryOpen while the skill has an open canary. Without `kind`, a
        release with a parent is a FIX and the first release of a new skill (a person's folder, as
        `skills import` registers one) is IMPORTED."""
        Canaries(self.store).refuse_open(skill, "begin a release of")
        self._recover_orphans(skill)
        if version is not None and not is_semver(version):
            raise ReleaseStateError(f"version '{shown_version(version)}' is not semver (MAJOR.MINOR.PATCH)")

        in_git = versions_in_git(self.store, self.repo, skill)  # release commits the store lost: never reused

        def choose(taken: list[str]) -> str:
            """Run inside the insert's transaction: the taken versions cannot change meanwhile."""
            taken = [*taken, *in_git]
            chosen = next_version(taken, version if version is not None else proposed)
            if version is not None and chosen != version.strip():
                raise ReleaseStateError(f"version {version} of '{skill}' is not above {highest(taken)}, the highest "
                                       "version published or served to a canary")
            return chosen
        current = self.store.current(skill)
        if parents is None:
            parents = [current.release_id] if current is not None else []
        if kind is None:
            kind = LineageKind.FIX if parents else LineageKind.IMPORTED
        target = folder if folder is not None else self.folder_of(skill)
        with self.repo.lock():  # a swap killed half-way is finished before anything else
            for what in self.repo.recover(target):
                log.warning("%s: %s", skill, what)
        for attempt in (1, 2):
            try:
                return self.store.insert_release(skill, choose, self.repo.rel(target), level, triggered_by, kind,
                                                 parents, owner=self.owner.token)
            except CanaryOpen:
                raise
            except ReleaseConflict:
                self.refuse_busy(skill)  # a live process's release: named
                if attempt == 2:
                    raise
                self._recover_orphans(skill)  # its process died since the recovery above
        raise AssertionError("unreachable")

    def write_commit(self, release_id: str, files: Files | None = None, *, force: bool = False,
                     stamp: bool = False, listed: Tree | None = None) -> str:
        """Write `files` (if given; bytes or skilltree Entries with modes and links) as the skill
        folder, commit the folder, store the hash. The candidate must load as a skill named like
        the release and differ from the current release (NoChanges); nothing is written otherwise.
        Edits in the folder that no commit holds are refused (UnpublishedChanges) unless `force`,
        which first saves them under runs/backups/ (`self.backups`). `stamp` sets SKILL.md's metadata.version
        first (in the folder too). An edit made meanwhile (since `listed`) is FolderChanged, never committed."""
        rel = self._preparing(release_id)
        folder = self.repo.workdir / rel.skill_path
        tree = self._candidate(rel.skill_name, folder, files) if files is not None else None
        with self.repo.lock():
            before = self.repo.head()
            folder_stamped = False
            if tree is not None:
                self._refuse_no_change(rel.skill_name, rel.skill_path, tree)
                tree = stamped(tree, rel.version, str(folder / skillfile.SKILL_FILENAME)) if stamp else tree
                save_unpublished(self, rel.skill_name, folder, force, tree)
                self.repo.replace_folder(folder, tree, unchanged=folder_digest(folder), before_swap=functools.partial(
                    self.store.set_writes_folder, release_id, tree_digest(signature(tree))))  # once nothing refuses
            else:
                skillfile.load_folder(folder, self.ws.root)
                self._refuse_no_change(rel.skill_name, rel.skill_path, read_tree(folder))
                folder_stamped = stamp and self.stamps.stamp(release_id, folder, rel.version)
                tree = read_tree(folder) if listed is None else stamped(listed, rel.version) if stamp else listed
            try:
                sha = self.repo.commit_folders([folder], f"{rel.skill_name} {rel.version} (release {release_id})",
                                               expect=signature(tree))
            except GitError:
                if files is not None and before is not None:
                    put_back_commit(self.repo, folder, before, rel)
                elif folder_stamped:
                    self.stamps.undo(release_id, locked=True)
                raise
            pin(self.repo, {release_id: sha})  # before the store records it: gitrefs.py
        self.store.set_commit(release_id, sha, rel.skill_path)
        return sha

    def append_evaluation(self, release_id: str, summary: Mapping[str, object]) -> None:
        """One line in runs/evaluations.jsonl, and the summary on the release row."""
        rel = self._preparing(release_id)
        append_jsonl(self.ws.evaluations_log, {"release_id": release_id, "skill": rel.skill_name,
                                               "version": rel.version, **summary})
        self.store.set_eval_summary(release_id, dict(summary))

    def commit_release(self, release_id: str) -> Release:
        """Publish and make current in one transaction. A second call returns the same answer."""
        done = self.store.publish(release_id)
        self.stamps.forget(release_id)
        self.release_owner_if_idle()
        return done

    def abandon(self, release_id: str, status: ReleaseStatus = ReleaseStatus.ABANDONED) -> bool:
        """Close a PREPARING release; if it had replaced its folder's files and nobody touched
        them since, give the folder back the published bytes. Git's index is reset either way."""
        closed = self.store.close_release(release_id, status)
        try:
            if closed:
                restore_after_abandon(self.store, self.repo, self.store.release(release_id))
                self.stamps.undo(release_id)
        finally:
            self.release_owner_if_idle()
        return closed

    # ---- whole operations ----------------------------------------------------------------
    def publish(self, skill: str, files: Files | None = None, *, force: bool = False,
                evaluation: Mapping[str, object] | None = None, interrupted: Interrupted | None = None,
                canary: CanaryPlan | None = None, shown_base: str | None | EllipsisType = ..., listed: Tree | None = None,
                **begin: object) -> Release:
        """All four steps. On an exception the release is abandoned and the old one stays current.
        No change, or unpublished edits that `files` would overwrite (without `force`), are
        refused before any release row is written. `interrupted` is asked before each step up to
        the commit; True abandons the release (PublishInterrupted): all or nothing. With `canary`,
        the last step opens a canary instead (library/canaries.py): the release stays PREPARING and
        the live release current; NotPublished when there is no live release to compare it with. BaseMoved
        when the live release is no longer `shown_base` (the id, or None, the changes were listed against)."""
        Canaries(self.store).refuse_open(skill, "publish")
        if canary is not None and self.store.current(skill) is None:
            raise NotPublished(f"'{skill}' has no live release for a canary to be compared with: publish it first")
        self._recover_orphans(skill)  # a dead release's files in the folder are not unpublished edits
        self.refuse_busy(skill)
        folder = Path(begin["folder"]) if begin.get("folder") else self.folder_of(skill)  # type: ignore[arg-type]
        with self.repo.lock():  # another release's swap and commit are whole: its files are not edits
            if files is not None:
                tree = self._candidate(skill, folder, files)
                self._refuse_no_change(skill, self.repo.rel(folder), tree)
                unsaved(self, skill, folder, refuse=not force, writing=tree)
            elif folder.is_dir():
                self._refuse_no_change(skill, self.repo.rel(folder), read_tree(folder))
        rel = self.begin_release(skill, **begin)  # type: ignore[arg-type]
        try:
            if shown_base is not ... and (moved := base_moved(skill, self.store.current(skill), shown_base)):
                raise BaseMoved(moved)  # this release holds the skill's one slot: nothing goes live after this
            checkpoint(interrupted, rel)
            self.write_commit(rel.release_id, files, force=force, stamp=True, listed=listed)
            checkpoint(interrupted, rel)
            self.append_evaluation(rel.release_id, evaluation or {"kind": "manual", "note": "no evaluation run"})
            checkpoint(interrupted, rel)
            if canary is None:
                return self.commit_release(rel.release_id)
            Canaries(self.store).open(rel.release_id, canary.share, canary.min_sessions, canary.max_age_hours,
                                      str(begin.get("triggered_by", "manual")))
            self.release_owner_if_idle()
            return self.store.release(rel.release_id)
        except BaseException:
            if Canaries(self.store).get(rel.release_id) is None:  # an opened canary is closed by its rules only
                self.abandon(rel.release_id)
            raise

    def recover(self, skill: str, triggered_by: str | None = None) -> list[Release]:
        """Abandon what a dead process left PREPARING for `skill` (only what `triggered_by` began, if
        given), put its folder back, with the LEFT_PREPARING warning; what was abandoned."""
        return self._recover_orphans(skill, triggered_by)

    def retire(self, skill: str, triggered_by: str = "cli retire") -> Retirement:
        """Move the skill's live release to RETIRED (Store.retire): out of the index and the router,
        its releases and files kept; `revert(skill)` brings the same bytes back."""
        Canaries(self.store).refuse_open(skill, "retire")
        self._recover_orphans(skill)
        return self.store.retire(skill, triggered_by)

    def revert(self, skill: str, release_id: str | None = None, *, force: bool = False,
               interrupted: Interrupted | None = None, by: str = "") -> Release:
        """Make an older PUBLISHED release current again, as a new REVERT release (its folder gets
        the bytes, committed); unpublished edits are refused unless `force` saves them first. A
        RETIRED skill needs no `release_id`. Without one, or naming the live release, a folder that
        lost the live bytes gets them back and no release is made (restorable.restore_live_folder)."""
        Canaries(self.store).refuse_open(skill, "revert")
        self._recover_orphans(skill)
        self.refuse_busy(skill)
        if (live := restore_live_folder(self, skill, release_id, force=force, by=by)) is not None:
            return live
        if release_id is None:
            retired = self.store.retirement(skill)
            if retired is None:
                raise BadArgument(f"'{skill}' is not RETIRED and its folder holds its live release: name the release to restore (id, prefix or version)")
            release_id = retired.release_id
        target = revert_target(self.store, skill, release_id)  # never-published versions refused as such
        current = self.store.current(skill)
        if target.status is not ReleaseStatus.PUBLISHED or target.commit_hash is None:
            raise ReleaseStateError(f"release {target.release_id} is {target.status}; only PUBLISHED releases can be restored")
        files = self.repo.tree_at(target.commit_hash, target.skill_path)
        if current is not None and current.skill_path == target.skill_path and (
                current.commit_hash == target.commit_hash or files == self.tree_of(current)):
            raise ReleaseStateError(f"'{skill}' already serves the bytes of release {target.release_id} ({target.version})")
        check_tree(files, f"{target.skill_path}@{target.commit_hash[:10]}")
        folder = self.repo.workdir / target.skill_path
        with self.repo.lock():  # not in the middle of another release's swap
            check_revert(self, skill, folder, force, files)  # NotAFolder / UnpublishedChanges unless force
        rel = self.begin_release(skill, kind=LineageKind.REVERT, parents=[target.release_id],
                                 triggered_by=f"revert to {target.version}{by and f' ({by})'}", folder=folder)
        try:
            checkpoint(interrupted, rel)
            with self.repo.lock():
                clear_for_revert(self, skill, folder, force, files)  # a file/link at the path, edits: saved
                if read_tree(folder, check=False) != files:
                    self.store.set_writes_folder(rel.release_id, tree_digest(signature(files)))
                    self.repo.replace_folder(folder, files)
                    self.repo.commit_folders([folder], f"{skill}: revert to {target.version} (release {rel.release_id})")
                pin(self.repo, {rel.release_id: target.commit_hash})
            self.store.set_commit(rel.release_id, target.commit_hash, target.skill_path)
            checkpoint(interrupted, rel)
            self.append_evaluation(rel.release_id, {"kind": "revert", "restores": target.release_id})
            checkpoint(interrupted, rel)
            return self.commit_release(rel.release_id)
        except BaseException:
            self.abandon(rel.release_id)
            raise

    def import_skills(self, report: skillfile.ScanReport, triggered_by: str = "import",
                      interrupted: Interrupted | None = None) -> ImportResult:
        """Register every loaded, not yet registered skill as an IMPORTED release: one commit for
        all of them, then one publish transaction each. `interrupted` is asked before the commit
        (True: nothing is registered, PublishInterrupted)."""
        result = ImportResult(errors=list(report.errors))
        fresh = []
        for name, loaded in sorted(report.skills.items()):
            if self.store.current(name) is not None or self.store.retirement(name) is not None:
                result.skipped.append(name)  # a RETIRED skill comes back by `release revert`, not import
                continue
            meta_version = loaded.skill.version if loaded.skill.version and is_semver(loaded.skill.version) else None
            rel = self.begin_release(name, version=meta_version, level=ReleaseLevel.MANUAL, triggered_by=triggered_by,
                                     kind=LineageKind.IMPORTED, parents=[], folder=loaded.path)
            fresh.append((rel, loaded))
        if not fresh:
            return result
        try:
            if interrupted is not None and interrupted():
                raise PublishInterrupted(f"interrupted before registering {len(fresh)} skill(s); none was registered")
            with self.repo.lock():
                sha = self.repo.commit_folders([lo.path for _, lo in fresh], f"import {len(fresh)} skill(s)")
                pin(self.repo, {rel.release_id: sha for rel, _ in fresh})
            for rel, _ in fresh:
                self.store.set_commit(rel.release_id, sha, rel.skill_path)
                result.imported.append(self.commit_release(rel.release_id))
            if len(fresh) >= PACK_AFTER_IMPORT:
                with self.repo.lock():
                    self.repo.pack()
        except BaseException:
            for rel, lo in fresh:
                if self.store.close_release(rel.release_id, ReleaseStatus.ABANDONED):
                    with self.repo.lock():
                        self.repo.unstage(lo.path)
            self.release_owner_if_idle()
            raise
        return result

    # ---- watchdog -----------------------------------------------------------------------
    def watchdog_sweep(self, hours: float) -> list[Release]:
        """Mark stale PREPARING releases ABANDONED (recovery.watchdog_sweep)."""
        return watchdog_sweep(self, hours)

    # ---- helpers ------------------------------------------------------------------------
    def _preparing(self, release_id: str) -> Release:
        rel = self.store.release(release_id)
        if rel.status is not ReleaseStatus.PREPARING:
            raise ReleaseStateError(f"release {release_id} is {rel.status}, not PREPARING")
        return rel

    def _candidate(self, skill: str, folder: Path, files: Files) -> Tree:
        """`files` as a checked tree whose SKILL.md loads as `skill`, or a named error."""
        tree = as_tree(files)
        label = str(folder / skillfile.SKILL_FILENAME)
        if skillfile.SKILL_FILENAME not in tree:
            raise SkillFileError(label, "path", "the candidate has no SKILL.md")
        check_tree(tree, str(folder))
        skillfile.parse(skillfile.decode(tree[skillfile.SKILL_FILENAME].data, label), label, skill)
        return tree

    def tree_of(self, release: Release) -> Tree:
        """The release's files; {} when its commit is gone from git (a publish of the folder is the way out)."""
        assert release.commit_hash is not None
        try:
            return self.repo.tree_at(release.commit_hash, release.skill_path, missing_ok=True)
        except GitError:
            if self.repo.missing_commits([release.commit_hash]):
                return {}
            raise

    def _refuse_no_change(self, skill: str, folder_rel: str, tree: Tree) -> None:
        current = self.store.current(skill)
        if current is not None and current.commit_hash and current.skill_path == folder_rel \
                and (tree == (live := self.tree_of(current)) or stamped(tree, current.version) == live):
            raise NoChanges(f"nothing to publish: the files are exactly release {current.release_id[:8]} "
                            f"({current.version}) of '{skill}' (its metadata.version aside)")

    def release_owner_if_idle(self) -> None:
        """Drop this process's lock file once none of its releases is PREPARING any more."""
        token = self.owner.held
        if token is not None and not self.store.owns_preparing(token):
            self.owner.release()

    def refuse_busy(self, skill: str) -> None:
        """ReleaseConflict while a live process publishes `skill` (recovery.refuse_busy)."""
        refuse_busy(self, skill)

    def _recover_orphans(self, skill: str, triggered_by: str | None = None) -> list[Release]:
        """Abandon PREPARING releases of `skill` whose process is gone (putting back what they
        left in the folder and git's index), so that a dead publish never blocks the next one."""
        done = []
        for rel in self.store.preparing_of(skill):
            if not self.owner.alive(rel.owner) and triggered_by in (None, rel.triggered_by):
                log.warning(LEFT_PREPARING, skill, rel.release_id)
                # restored while the row is still PREPARING (no one else can publish the skill
                # meanwhile): a recovery killed half-way finds the row and is simply done again
                restore_after_abandon(self.store, self.repo, rel)
                self.store.close_release(rel.release_id, ReleaseStatus.ABANDONED)
                self.owner.forget(rel.owner)
                done.append(self.store.release(rel.release_id))
        return done


__all__ = ["LEFT_PREPARING", "ImportResult", "Interrupted", "ReleaseStateMachine", "UnknownRelease", "checkpoint"]
