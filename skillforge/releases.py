"""ReleaseStateMachine: begin_release -> write_commit -> append_evaluation -> commit_release.

Until `commit_release` commits its one SQLite transaction, the old release stays current: a crash
anywhere before leaves a PREPARING row, which `watchdog_sweep` later marks ABANDONED (putting the
published bytes back into the working tree when nobody edited them since).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from skillforge import skillfile
from skillforge.config import Workspace
from skillforge.errors import GitError, ReleaseStateError, SkillFileError, UnknownRelease
from skillforge.gitrepo import SkillsRepo, read_folder
from skillforge.journal import append_jsonl
from skillforge.rules.versions import is_semver, next_version
from skillforge.rules.watchdog import is_stale, may_restore_folder
from skillforge.state.release import LineageKind, Release, ReleaseLevel, ReleaseStatus
from skillforge.store import Store

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
        self.ws = workspace
        self.store = store
        self.repo = repo

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
                      triggered_by: str = "manual", kind: LineageKind = LineageKind.FIX,
                      parents: list[str] | None = None, folder: Path | None = None) -> Release:
        """Insert a PREPARING row. ReleaseConflict if the skill already has one.
        `version` must be above every published version; `proposed` (say, the candidate's
        metadata.version) is used when it is, else the highest published version gets a patch bump."""
        if version is not None and not is_semver(version):
            raise ReleaseStateError(f"version '{version}' is not semver (MAJOR.MINOR.PATCH)")
        taken = [r.version for r in self.store.releases(skill) if r.status is ReleaseStatus.PUBLISHED]
        chosen = next_version(taken, version if version is not None else proposed)
        if version is not None and chosen != version.strip():
            raise ReleaseStateError(f"version {version} of '{skill}' is not above the published {max(taken)}")
        current = self.store.current(skill)
        if parents is None:
            parents = [current.release_id] if current is not None else []
        target = folder if folder is not None else self.folder_of(skill)
        with self.repo.lock():  # a swap killed half-way is finished before anything else
            for what in self.repo.recover(target):
                log.warning("%s: %s", skill, what)
        return self.store.insert_release(skill, chosen, self.repo.rel(target), level, triggered_by, kind, parents)

    def write_commit(self, release_id: str, files: Mapping[str, bytes] | None = None) -> str:
        """Write `files` (if given) as the skill folder, commit the folder, store the hash.
        The candidate must load as a skill named like the release; nothing is written otherwise."""
        rel = self._preparing(release_id)
        folder = self.repo.workdir / rel.skill_path
        label = str(folder / skillfile.SKILL_FILENAME)
        if files is not None:
            if skillfile.SKILL_FILENAME not in files:
                raise SkillFileError(label, "path", "the candidate has no SKILL.md")
            skillfile.parse(skillfile.decode(files[skillfile.SKILL_FILENAME], label), label, rel.skill_name)
        with self.repo.lock():
            before = self.repo.head()
            if files is not None:
                self.repo.replace_folder(folder, files)
            else:
                skillfile.load_folder(folder, self.ws.root)
            try:
                sha = self.repo.commit_folders([folder], f"{rel.skill_name} {rel.version} (release {release_id})")
            except GitError:
                if files is not None and before is not None:
                    self._put_back(folder, before, rel.skill_path)
                raise
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
        return self.store.publish(release_id)

    def abandon(self, release_id: str, status: ReleaseStatus = ReleaseStatus.ABANDONED) -> bool:
        """Close a PREPARING release and give its folder back the published bytes, if untouched."""
        rel = self.store.release(release_id)
        closed = self.store.close_release(release_id, status)
        if closed:
            self._restore_after_abandon(rel)
        return closed

    # ---- whole operations ----------------------------------------------------------------
    def publish(self, skill: str, files: Mapping[str, bytes] | None = None, *,
                evaluation: Mapping[str, object] | None = None, **begin: object) -> Release:
        """All four steps. On an exception the release is abandoned and the old one stays current."""
        rel = self.begin_release(skill, **begin)  # type: ignore[arg-type]
        try:
            self.write_commit(rel.release_id, files)
            self.append_evaluation(rel.release_id, evaluation or {"kind": "manual", "note": "no evaluation run"})
            return self.commit_release(rel.release_id)
        except BaseException:
            self.abandon(rel.release_id)
            raise

    def revert(self, skill: str, release_id: str) -> Release:
        """Make an older PUBLISHED release current again, as a new REVERT release pointing at the
        old commit. The working-tree folder gets those bytes back too (committed), so the next
        edit starts from what is live."""
        target = self.store.find_release(skill, release_id)
        current = self.store.current(skill)
        if target.status is not ReleaseStatus.PUBLISHED or target.commit_hash is None:
            raise ReleaseStateError(f"release {target.release_id} is {target.status}; only PUBLISHED releases can be restored")
        if current is not None and current.commit_hash == target.commit_hash and current.skill_path == target.skill_path:
            raise ReleaseStateError(f"'{skill}' already serves the bytes of release {target.release_id} ({target.version})")
        rel = self.begin_release(skill, kind=LineageKind.REVERT, parents=[target.release_id],
                                 triggered_by=f"revert to {target.version}",
                                 folder=self.repo.workdir / target.skill_path)
        try:
            files = self.repo.folder_at(target.commit_hash, target.skill_path)
            folder = self.repo.workdir / target.skill_path
            with self.repo.lock():
                if read_folder(folder) != files:
                    self.repo.replace_folder(folder, files)
                    self.repo.commit_folders([folder], f"{skill}: revert to {target.version} (release {rel.release_id})")
            self.store.set_commit(rel.release_id, target.commit_hash, target.skill_path)
            self.append_evaluation(rel.release_id, {"kind": "revert", "restores": target.release_id})
            return self.commit_release(rel.release_id)
        except BaseException:
            self.abandon(rel.release_id)
            raise

    def import_skills(self, report: skillfile.ScanReport, triggered_by: str = "import") -> ImportResult:
        """Register every loaded, not yet registered skill as an IMPORTED release: one commit for
        all of them, then one publish transaction each."""
        result = ImportResult(errors=list(report.errors))
        fresh = []
        for name, loaded in sorted(report.skills.items()):
            if self.store.current(name) is not None:
                result.skipped.append(name)
                continue
            meta_version = loaded.skill.version if loaded.skill.version and is_semver(loaded.skill.version) else None
            rel = self.begin_release(name, version=meta_version, level=ReleaseLevel.MANUAL,
                                     triggered_by=triggered_by, kind=LineageKind.IMPORTED, parents=[],
                                     folder=loaded.path)
            fresh.append((rel, loaded))
        if not fresh:
            return result
        try:
            with self.repo.lock():
                sha = self.repo.commit_folders([lo.path for _, lo in fresh], f"import {len(fresh)} skill(s)")
            for rel, _ in fresh:
                self.store.set_commit(rel.release_id, sha, rel.skill_path)
                result.imported.append(self.commit_release(rel.release_id))
            if len(fresh) >= PACK_AFTER_IMPORT:
                with self.repo.lock():
                    self.repo.pack()
        except BaseException:
            for rel, _ in fresh:
                self.store.close_release(rel.release_id, ReleaseStatus.ABANDONED)
            raise
        return result

    # ---- watchdog -----------------------------------------------------------------------
    def watchdog_sweep(self, hours: float) -> list[Release]:
        """Mark PREPARING releases at least `hours` old (SQLite's clock) ABANDONED."""
        swept = []
        for rel, age in self.store.preparing():
            if is_stale(age, hours) and self.abandon(rel.release_id):
                swept.append(self.store.release(rel.release_id))
        return swept

    # ---- helpers ------------------------------------------------------------------------
    def _preparing(self, release_id: str) -> Release:
        rel = self.store.release(release_id)
        if rel.status is not ReleaseStatus.PREPARING:
            raise ReleaseStateError(f"release {release_id} is {rel.status}, not PREPARING")
        return rel

    def _put_back(self, folder: Path, commit: str, folder_rel: str) -> None:
        try:
            files = self.repo.folder_at(commit, folder_rel)
        except GitError:
            return
        self.repo.replace_folder(folder, files)

    def _restore_after_abandon(self, rel: Release) -> None:
        folder = self.repo.workdir / rel.skill_path
        with self.repo.lock():
            for what in self.repo.recover(folder):
                log.warning("%s: %s", rel.skill_name, what)
            current = self.store.current(rel.skill_name)
            if current is None or current.commit_hash is None or rel.commit_hash is None:
                return
            try:
                abandoned = self.repo.folder_at(rel.commit_hash, rel.skill_path)
                published = self.repo.folder_at(current.commit_hash, current.skill_path)
            except GitError:
                return
            if may_restore_folder(read_folder(folder), abandoned, published):
                self.repo.replace_folder(folder, published)
                self.repo.commit_folders([folder], f"{rel.skill_name}: restore {current.version} "
                                                   f"after abandoned release {rel.release_id}")


__all__ = ["ImportResult", "ReleaseStateMachine", "UnknownRelease"]
