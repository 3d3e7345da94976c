"""SkillForge's own git refs: every release commit stays reachable, whatever happens to branches.

A release's commit is made on whatever HEAD is (a topic branch, a detached HEAD). Branches get
deleted, reset and amended, and once the reflog expires `git gc` drops what no ref reaches: a live
release would then have no bytes. So each release that has a commit also gets
`refs/skillforge/releases/<release id>` (not a branch or a tag: `git branch` and `git tag` do not
list it; `git for-each-ref refs/skillforge` and `git log --all` do). Which releases keep one:

- written when the commit is recorded (publish, revert, import, split, evolve, a canary's release),
  before the store records it: a crash in between leaves a ref, never a recorded commit without one;
- every PUBLISHED release (the live one, older ones a revert may return to, a RETIRED skill's) and a
  PREPARING one with a commit (a canary's, served to its sessions) keep theirs;
- ABANDONED and DECLINED releases lose theirs at the next `reconcile` (nothing serves or restores them);
- a ref whose release the store does not know is kept, moved to `refs/skillforge/unknown/` once the
  store has published a higher version of its skill: until then it says the store is behind git (its
  -wal file deleted after a kill) and `begin_release` never reuses its version.

`reconcile` runs wherever the history is verified (every command that reads releases): it writes the
refs a crash or an older SkillForge left out, one for-each-ref and one query when nothing is missing.
"""

from __future__ import annotations

import logging
import re
import subprocess
from collections.abc import Mapping

from skillforge.errors import GitError, HistoryLost
from skillforge.library.gitrepo import SkillsRepo
from skillforge.library.store import Store
from skillforge.rules.versions import parse_semver
from skillforge.state.release import ReleaseStatus

log = logging.getLogger(__name__)
RELEASES = "refs/skillforge/releases/"
UNKNOWN = "refs/skillforge/unknown/"
KEEPS_REF = (ReleaseStatus.PUBLISHED.value, ReleaseStatus.PREPARING.value)
"""Statuses whose commit keeps a ref (a PREPARING one only once it has a commit)."""
HEAD_SCAN = 500
"""How many commits of HEAD's history `versions_in_git` reads for release commits the store lacks."""
_SUBJECT = re.compile(r"^([a-z0-9][a-z0-9-]*) (\S+) \(release ([0-9a-f-]{36})\)$")
"""A publish's commit message (releases.write_commit): skill, version, release id."""
_warned: set[str] = set()


def _git(repo: SkillsRepo, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=repo.workdir, input=stdin, capture_output=True, text=True)
    if done.returncode != 0:
        raise GitError(f"git {args[0]} failed: {done.stderr.strip() or f'exit {done.returncode}'}")
    return done.stdout


def _once(key: str, msg: str, *args: object) -> None:
    if key not in _warned:
        _warned.add(key)
        log.warning(msg, *args)


def pin(repo: SkillsRepo, commits: Mapping[str, str]) -> None:
    """Write `refs/skillforge/releases/<id>` -> commit for each release id, in one transaction
    (GitError if git refuses: the release does not go on unprotected). Warns when HEAD is detached:
    the ref keeps the commit, but no branch shows it."""
    if not commits:
        return
    _git(repo, "update-ref", "--stdin", stdin="".join(f"update {RELEASES}{rid} {sha}\n" for rid, sha in commits.items()))
    if repo.repo.head.is_detached:
        first = next(iter(commits.values()))
        _once(f"detached {first}", "HEAD is detached: release commit %s is kept by SkillForge's ref %s%s, but no "
              "branch shows it; `git switch -c NAME` (or `git branch NAME %s`) keeps it on a branch",
              first[:10], RELEASES, next(iter(commits))[:8] + "…", first[:10])


def refs(repo: SkillsRepo, prefix: str = RELEASES) -> dict[str, tuple[str, str]]:
    """Release id -> (commit, its subject) of every ref under `prefix`."""
    out = {}
    for line in _git(repo, "for-each-ref", "--format=%(refname)%00%(objectname)%00%(contents:subject)",
                     prefix).splitlines():
        name, sha, subject = (line.split("\0") + ["", ""])[:3]
        out[name[len(prefix):]] = (sha, subject)
    return out


def _rows(store: Store) -> dict[str, tuple[str, str, str, str | None]]:
    """Release id -> (skill, version, status, commit) of every release row."""
    return {r[0]: (r[1], r[2], r[3], r[4]) for r in store.conn.execute(
        "SELECT release_id, skill_name, version, status, commit_hash FROM releases")}


def _above(version: str, than: str) -> bool:
    a, b = parse_semver(version), parse_semver(than)
    return a is not None and b is not None and a > b


def reconcile(store: Store, repo: SkillsRepo) -> dict[str, tuple[str, str]]:
    """Make the refs match the store: write the missing ones (their commits still exist), drop those of
    ABANDONED/DECLINED releases, move acknowledged unknown ones aside. Returns the refs of releases the
    store does not know and has published nothing above (release id -> (commit, subject))."""
    have = refs(repo)  # before the rows: a row is always written before its release's ref
    rows = _rows(store)
    want = {rid: sha for rid, (_, _, status, sha) in rows.items() if status in KEEPS_REF and sha and have.get(rid, ("",))[0] != sha}
    if want:
        gone = set(repo.missing_commits(want.values()))
        try:
            pin(repo, {rid: sha for rid, sha in want.items() if sha not in gone})
        except GitError as e:
            _once(f"pin {repo.workdir}", "cannot write SkillForge's release refs: %s", e)
    lines, unknown = [], {}
    published: dict[str, list[str]] = {}
    for skill, version, status, _ in rows.values():
        if status == ReleaseStatus.PUBLISHED.value:
            published.setdefault(skill, []).append(version)
    for rid, (sha, subject) in have.items():
        if rid in rows:
            if rows[rid][2] not in KEEPS_REF:
                lines.append(f"delete {RELEASES}{rid} {sha}\n")
            continue
        m = _SUBJECT.match(subject)
        if m and m.group(3) == rid and any(_above(v, m.group(2)) for v in published.get(m.group(1), [])):
            lines += [f"update {UNKNOWN}{rid} {sha}\n", f"delete {RELEASES}{rid} {sha}\n"]
        else:
            unknown[rid] = (sha, subject)
    if lines:
        try:
            _git(repo, "update-ref", "--stdin", stdin="".join(lines))
        except GitError as e:
            _once(f"prune {repo.workdir}", "cannot tidy SkillForge's release refs: %s", e)
    return unknown


def versions_in_git(store: Store, repo: SkillsRepo, skill: str) -> list[str]:
    """Versions of `skill` that release commits carry (on SkillForge's refs, or in the last HEAD_SCAN
    commits of HEAD) under release ids the store does not know: a new release never takes one."""
    known = set(_rows(store))
    subjects = [s for _, s in refs(repo).values()]
    try:
        subjects += _git(repo, "log", f"-n{HEAD_SCAN}", "--format=%s", "HEAD").splitlines()
    except GitError:
        pass  # no commits yet
    return sorted({m.group(2) for s in subjects if (m := _SUBJECT.match(s)) and m.group(1) == skill
                   and m.group(3) not in known})


def verify_history(store: Store, repo: SkillsRepo) -> None:
    """Reconcile the refs, then check the commits of the live releases. HistoryLost only when the
    repository holds none of the store's release commits (its .git was deleted and re-created): a skill
    whose own commit is gone is named in a warning and only its reads fail (registry: broken). Warns
    when the store is behind git (a release ref it does not know) and about older releases' lost commits."""
    unknown = reconcile(store, repo)
    for rid, (sha, subject) in unknown.items():
        _once(f"unknown {rid}", "the store %s is behind git: commit %s (%s) holds release %s, which the store does "
              "not know (was runs/skillforge.db-wal deleted after a crash? put it back beside skillforge.db before "
              "any other command if you still have it); its bytes stay in git under %s%s, and no new release "
              "takes its version", store.path, sha[:10], subject, rid[:8], RELEASES, rid)
    current = store.current_releases()
    if not current:
        return
    missing = set(repo.missing_commits(r.commit_hash for r in current if r.commit_hash))
    lost = [r for r in current if r.commit_hash in missing]
    older = [r for name in store.skill_names() for r in store.releases(name)
             if r.status is ReleaseStatus.PUBLISHED and r.commit_hash and r.commit_hash not in missing]
    live = {r.commit_hash for r in current}
    gone = repo.missing_commits(r.commit_hash for r in older if r.commit_hash and r.commit_hash not in live)
    if lost and len(lost) == len(current) and len(gone) == len({r.commit_hash for r in older} - live):
        first = lost[0]
        raise HistoryLost(
            f"git history lost: {len(lost)} of {len(current)} live release(s) point to commits missing from "
            f"{repo.repo.git_dir} (e.g. {first.skill_name} {first.version} at {(first.commit_hash or '')[:10]}); "
            f"restore that .git from a backup, or move {store.path} aside and run `skillforge skills import`")
    for r in lost:
        _once(f"lost {r.release_id}", "'%s' cannot be served: the commit %s of its live release %s is missing from %s "
              "(history rewritten and garbage-collected); fetch that commit back from another clone or a backup, "
              "or publish the folder again (`skillforge release publish %s`)", r.skill_name, (r.commit_hash or "")[:10],
              r.version, repo.repo.git_dir, r.skill_name)
    if gone:
        _once(f"gone {repo.workdir}", "%d older release commit(s) are missing from %s (e.g. %s): those releases "
              "cannot be restored", len(gone), repo.workdir, gone[0][:10])


__all__ = ["RELEASES", "UNKNOWN", "pin", "reconcile", "refs", "verify_history", "versions_in_git"]
