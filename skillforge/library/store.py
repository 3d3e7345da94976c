"""The SQLite store: which release of each skill is current, and the history behind it.

The database itself enforces the release invariants (triggers, CHECKs and a partial unique
index), so no code path, ours or a person's sqlite3 shell, can break them:
- a new release row starts PREPARING; only PREPARING rows change, and only once;
- `skills.current_release_id` always points to a PUBLISHED row of that skill;
- at most one PREPARING row per skill;
- release rows are never deleted (history is never rewritten);
- a canary's release stays PREPARING and not current until its canary closes (library/canaries.py).
The scripts are in migrations.py.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from skillforge.errors import (AmbiguousRelease, CanaryOpen, NotPublished, ReleaseConflict, ReleaseStateError, SkillRetired,
                               StoreError, UnknownRelease)
from skillforge.library.migrations import MIGRATIONS, NOW, SCHEMA_VERSION
from skillforge.library.sqlite_wal import enable_wal
from skillforge.rules.versions import is_semver
from skillforge.state.release import LineageKind, LineageLink, Release, ReleaseLevel, ReleaseStatus, Retirement

_COLUMNS = ("release_id, skill_name, version, skill_path, commit_hash, status, level, triggered_by, "
            "eval_summary_json, created_at, published_at, owner, writes_folder")
_RETIRE_COLUMNS = "skill_name, release_id, triggered_by, retired_at, restored_by"
_NOT_CANARY = "release_id NOT IN (SELECT release_id FROM canaries)"
"""A PREPARING release in `canaries` is in an open canary (a closed one closed its release)."""
SHORTEST_PREFIX = 4
"""A release id prefix shorter than this is never taken on its own; its matches are listed."""


def _statements(script: str) -> Iterator[str]:
    """Split a script into complete statements (trigger bodies included)."""
    buf = ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            yield buf.strip()
            buf = ""
    if buf.strip():
        raise StoreError(f"incomplete SQL statement in migration: {buf.strip()[:60]}")


_R_COLUMNS = ", ".join("r." + c.strip() for c in _COLUMNS.split(","))


def _row(row: sqlite3.Row) -> Release:
    data = {k: row[k] for k in row.keys() if k != "age"}
    raw = data.pop("eval_summary_json")
    return Release(eval_summary=json.loads(raw) if raw else None, **data)


class Store:
    """One connection to `runs/skillforge.db`. Each write is its own BEGIN IMMEDIATE transaction."""

    def __init__(self, path: Path, *, busy_timeout_ms: int = 15000) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.conn = sqlite3.connect(self.path, isolation_level=None, timeout=busy_timeout_ms / 1000)
            self.conn.row_factory = sqlite3.Row
            self.conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            enable_wal(self.conn, busy_timeout_ms / 1000)  # processes may open one new store together
            self.conn.execute("PRAGMA foreign_keys = ON")
            self.conn.execute("PRAGMA synchronous = NORMAL")
            self._migrate()
        except sqlite3.DatabaseError as e:
            raise StoreError(f"{self.path}: cannot open the store: {e}") from None

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT, ROLLBACK on any exception. A lock held past the busy
        timeout, a full disk or a read-only file becomes StoreError."""
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as e:
            raise StoreError(f"{self.path}: cannot start a write transaction: {e}") from None
        try:
            yield self.conn
        except BaseException as e:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            if isinstance(e, sqlite3.OperationalError):
                raise StoreError(f"{self.path}: {e}") from None
            raise
        try:
            self.conn.execute("COMMIT")
        except sqlite3.OperationalError as e:
            self.conn.execute("ROLLBACK")
            raise StoreError(f"{self.path}: commit failed: {e}") from None

    def schema_version(self) -> int:
        return int(self.conn.execute("PRAGMA user_version").fetchone()[0])

    def _migrate(self) -> None:
        with self.transaction() as c:
            version = self.schema_version()
            if version > SCHEMA_VERSION:
                raise StoreError(f"{self.path}: schema version {version} is newer than this SkillForge "
                                 f"({SCHEMA_VERSION}); upgrade SkillForge")
            for n in range(version, SCHEMA_VERSION):
                for stmt in _statements(MIGRATIONS[n]):
                    c.execute(stmt)
                c.execute(f"PRAGMA user_version = {n + 1}")

    # ---- reads ---------------------------------------------------------------------------
    def release(self, release_id: str) -> Release:
        row = self.conn.execute(f"SELECT {_COLUMNS} FROM releases WHERE release_id = ?", (release_id,)).fetchone()
        if row is None:
            raise UnknownRelease(f"no release {release_id}")
        return _row(row)

    def find_release(self, skill: str, id_or_prefix: str) -> Release:
        """A release of `skill` by full id, published version, unique id prefix (≥ 4 chars), or a
        version only one release carries (a declined canary's, say). A shorter or ambiguous prefix
        raises AmbiguousRelease listing what it matches."""
        exact = self.conn.execute(
            f"SELECT {_COLUMNS} FROM releases WHERE skill_name = ? AND "
            "(release_id = ? OR (version = ? AND status = 'PUBLISHED'))", (skill, id_or_prefix, id_or_prefix)).fetchall()
        if len(exact) == 1:
            return _row(exact[0])
        key = id_or_prefix.strip().lower()
        if is_semver(key):  # a whole version: that version, or it with build metadata (1.0.0+build); no prefix
            same = [_row(r) for r in self.conn.execute(
                f"SELECT {_COLUMNS} FROM releases WHERE skill_name = ? AND (version = ? OR substr(version, 1, ?) = ?)"
                " ORDER BY created_at, rowid", (skill, key, len(key) + 1, key + "+")).fetchall()]
            published = [r for r in same if r.status is ReleaseStatus.PUBLISHED]
            if len(published or same) == 1:
                return (published or same)[0]
            if not same:  # (an id has no dots: a version is never an id prefix)
                raise UnknownRelease(f"no release {id_or_prefix.strip()} of skill '{skill}'")
        rows = [] if not key else self.conn.execute(
            f"SELECT {_COLUMNS} FROM releases WHERE skill_name = ? AND (substr(release_id, 1, ?) = ? "
            "OR substr(version, 1, ?) = ?) ORDER BY created_at, rowid",
            (skill, len(key), key, len(key), key)).fetchall()
        matches = [_row(r) for r in rows]
        by_id = [r for r in matches if r.release_id.startswith(key)]
        if len(matches) == 1 and ((by_id and len(key) >= SHORTEST_PREFIX) or matches[0].version == id_or_prefix.strip()):
            return matches[0]  # one match; a version only an unpublished release carries names it too
        if not matches:
            raise UnknownRelease(f"no release '{id_or_prefix}' of skill '{skill}'")
        listed = ", ".join(f"{r.release_id[:8]} ({r.version}, {r.status.value})" for r in matches[:10])
        more = f" and {len(matches) - 10} more" if len(matches) > 10 else ""
        if len(matches) == 1:  # one match, by a prefix too short to be taken as an id
            raise AmbiguousRelease(f"release '{id_or_prefix}' of skill '{skill}' is too short a prefix (an id prefix "
                                   f"needs {SHORTEST_PREFIX}+ characters): it matches {listed}; give a version or "
                                   f"more of the id")
        short = f" (a prefix needs {SHORTEST_PREFIX}+ characters)" if len(key) < SHORTEST_PREFIX else ""
        raise AmbiguousRelease(f"release '{id_or_prefix}' of skill '{skill}' is ambiguous{short}: it matches "
                               f"{listed}{more}; give a version or more of the id")

    def current(self, skill: str) -> Release | None:
        row = self.conn.execute(
            f"SELECT {_R_COLUMNS} FROM skills s "
            "JOIN releases r ON r.release_id = s.current_release_id WHERE s.name = ?", (skill,)).fetchone()
        return _row(row) if row else None

    def skill_names(self) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT name FROM skills ORDER BY name")]

    def current_releases(self) -> list[Release]:
        """The current release of every published skill, by name."""
        rows = self.conn.execute(f"SELECT {_R_COLUMNS} FROM skills s JOIN releases r "
                                 "ON r.release_id = s.current_release_id ORDER BY s.name").fetchall()
        return [_row(r) for r in rows]

    def releases(self, skill: str) -> list[Release]:
        rows = self.conn.execute(f"SELECT {_COLUMNS} FROM releases WHERE skill_name = ? "
                                 "ORDER BY created_at, rowid", (skill,)).fetchall()
        return [_row(r) for r in rows]

    def triggered(self, trigger: str) -> list[Release]:
        """Every release, of any skill and status, whose triggered_by is exactly `trigger`."""
        rows = self.conn.execute(f"SELECT {_COLUMNS} FROM releases WHERE triggered_by = ? ORDER BY created_at, rowid",
                                 (trigger,)).fetchall()
        return [_row(r) for r in rows]

    def preparing(self) -> list[tuple[Release, float]]:
        """Every PREPARING release with its age in hours, by SQLite's own clock (but not the
        release of an open canary: `canary tick` reaps those)."""
        rows = self.conn.execute(
            f"SELECT {_COLUMNS}, (julianday('now') - julianday(created_at)) * 24.0 AS age "
            f"FROM releases WHERE status = 'PREPARING' AND {_NOT_CANARY} ORDER BY created_at").fetchall()
        return [(_row(r), float(r["age"])) for r in rows]

    def preparing_of(self, skill: str) -> list[Release]:
        """The PREPARING releases of one skill (at most one, by the partial unique index), but not
        the release of an open canary (it is PREPARING on purpose, and no process owns it)."""
        rows = self.conn.execute(f"SELECT {_COLUMNS} FROM releases WHERE skill_name = ? AND status = 'PREPARING' "
                                 f"AND {_NOT_CANARY}", (skill,)).fetchall()
        return [_row(r) for r in rows]

    def busy_skills(self) -> frozenset[str]:
        """The skills with a PREPARING release, an open canary's included (`runs prune` keeps their runs)."""
        return frozenset(r[0] for r in self.conn.execute("SELECT DISTINCT skill_name FROM releases "
                                                         "WHERE status = 'PREPARING'").fetchall())

    def owns_preparing(self, owner: str) -> bool:
        """Whether any PREPARING release carries this owner token."""
        return self.conn.execute("SELECT 1 FROM releases WHERE owner = ? AND status = 'PREPARING' LIMIT 1",
                                 (owner,)).fetchone() is not None

    def lineage(self, release_id: str) -> list[LineageLink]:
        rows = self.conn.execute("SELECT child, parent, kind FROM lineage WHERE child = ?", (release_id,))
        return [LineageLink(child=r[0], parent=r[1], kind=LineageKind(r[2])) for r in rows]

    def derived_from(self, release_id: str) -> list[Release]:
        """The PUBLISHED releases DERIVED from `release_id` (a split's children), oldest first."""
        rows = self.conn.execute(f"SELECT {_R_COLUMNS} FROM lineage l JOIN releases r ON r.release_id = l.child "
                                 "WHERE l.parent = ? AND l.kind = ? AND r.status = 'PUBLISHED' "
                                 "ORDER BY r.created_at, r.rowid", (release_id, LineageKind.DERIVED.value)).fetchall()
        return [_row(r) for r in rows]

    # ---- writes --------------------------------------------------------------------------
    def insert_release(self, skill: str, version: str | Callable[[list[str]], str], skill_path: str, level: ReleaseLevel,
                       triggered_by: str, kind: LineageKind, parents: list[str], owner: str | None = None) -> Release:
        """A new PREPARING release (and its lineage), owned by `owner` (the lock file of the
        process running it). ReleaseConflict if one is already PREPARING. A callable `version`
        is given the skill's PUBLISHED and DECLINED versions (a declined canary was served to
        sessions, so its version is not given to other bytes) inside the same transaction and
        returns the version (or raises): another process cannot publish one in between."""
        release_id = str(uuid.uuid4())
        try:
            with self.transaction() as c:
                if callable(version):
                    version = version([r[0] for r in c.execute(
                        "SELECT version FROM releases WHERE skill_name = ? AND status IN ('PUBLISHED', 'DECLINED')",
                        (skill,))])
                c.execute("INSERT OR IGNORE INTO skills(name) VALUES (?)", (skill,))
                c.execute("INSERT INTO releases(release_id, skill_name, version, skill_path, status, level, "
                          "triggered_by, owner) VALUES (?, ?, ?, ?, 'PREPARING', ?, ?, ?)",
                          (release_id, skill, version, skill_path, level.value, triggered_by, owner))
                for parent in parents or [None]:
                    c.execute("INSERT INTO lineage(child, parent, kind) VALUES (?, ?, ?)",
                              (release_id, parent, kind.value))
        except sqlite3.IntegrityError as e:
            if "releases.skill_name" in str(e) or "releases_one_preparing" in str(e):
                if self.conn.execute("SELECT 1 FROM canaries WHERE skill_name = ? AND state IN "
                                     "('OPEN', 'PROMOTING', 'ROLLING_BACK')", (skill,)).fetchone():
                    raise CanaryOpen(f"skill '{skill}' has an open canary: promote or roll it back first "
                                     f"(`skillforge canary promote|rollback {skill}`)") from None
                raise ReleaseConflict(f"skill '{skill}' already has a PREPARING release; "
                                      "finish it or run `skillforge watchdog`") from None
            raise StoreError(f"cannot begin a release of '{skill}': {e}") from None
        return self.release(release_id)

    def _guarded(self, sql: str, args: tuple[object, ...], release_id: str, what: str) -> None:
        with self.transaction() as c:
            if c.execute(sql, args).rowcount != 1:
                status = c.execute("SELECT status FROM releases WHERE release_id = ?", (release_id,)).fetchone()
                if status is None:
                    raise UnknownRelease(f"no release {release_id}")
                raise ReleaseStateError(f"cannot {what} release {release_id}: it is {status[0]}, not PREPARING")

    def set_commit(self, release_id: str, commit_hash: str, skill_path: str) -> None:
        self._guarded("UPDATE releases SET commit_hash = ?, skill_path = ? WHERE release_id = ? "
                      "AND status = 'PREPARING'", (commit_hash, skill_path, release_id), release_id,
                      "write the commit of")

    def set_writes_folder(self, release_id: str, digest: str) -> None:
        """Record, before the swap, that this release replaces its folder's files, and the
        `tree_digest` of the files it writes there."""
        self._guarded("UPDATE releases SET writes_folder = 1, swap_digest = ? WHERE release_id = ? "
                      "AND status = 'PREPARING'", (digest, release_id), release_id, "write the folder of")

    def swap_digest(self, release_id: str) -> str | None:
        """The `tree_digest` of what the release swapped into its folder (None: it wrote no
        folder, or it began before schema 3 recorded this)."""
        row = self.conn.execute("SELECT swap_digest FROM releases WHERE release_id = ?", (release_id,)).fetchone()
        if row is None:
            raise UnknownRelease(f"no release {release_id}")
        return row[0]

    def set_eval_summary(self, release_id: str, summary: dict[str, object]) -> None:
        self._guarded("UPDATE releases SET eval_summary_json = ? WHERE release_id = ? AND status = 'PREPARING'",
                      (json.dumps(summary, ensure_ascii=False), release_id), release_id,
                      "append an evaluation to")

    def publish(self, release_id: str) -> Release:
        """PREPARING -> PUBLISHED and make it current, in one BEGIN IMMEDIATE transaction.
        A release that is already PUBLISHED is returned unchanged (idempotent)."""
        with self.transaction() as c:
            _publish_row(c, release_id)
        return self.release(release_id)

    def retire(self, skill: str, triggered_by: str) -> Retirement:
        """The skill's live release -> RETIRED: the skill has no current release any more (out of the
        index and the router); its rows and lineage stay. In one BEGIN IMMEDIATE transaction.
        SkillRetired if it already is; NotPublished if it has no live release; ReleaseConflict while a
        release of it is PREPARING. The caller refuses unknown names first (UnknownSkill)."""
        with self.transaction() as c:
            _retire_row(c, skill, triggered_by)
        retired = self.retirement(skill)
        assert retired is not None
        return retired

    def publish_split(self, release_ids: list[str], parent: str, parent_release: str, triggered_by: str) -> Retirement:
        """Publish the children's PREPARING releases and retire `parent`, all in one BEGIN IMMEDIATE
        transaction: all or nothing. ReleaseStateError if the parent's live release is no longer
        `parent_release` (the split was measured on another one)."""
        with self.transaction() as c:
            row = c.execute("SELECT current_release_id FROM skills WHERE name = ?", (parent,)).fetchone()
            if row is None or row[0] != parent_release:
                raise ReleaseStateError(f"the live release of '{parent}' is no longer {parent_release[:8]}, the one the "
                                        "split was measured on; nothing was published")
            for release_id in release_ids:
                _publish_row(c, release_id)
            _retire_row(c, parent, triggered_by)
        retired = self.retirement(parent)
        assert retired is not None
        return retired

    def retirement(self, skill: str) -> Retirement | None:
        """The open retirement of `skill` (it is RETIRED), else None."""
        row = self.conn.execute(f"SELECT {_RETIRE_COLUMNS} FROM retirements WHERE skill_name = ? "
                                "AND restored_by IS NULL", (skill,)).fetchone()
        return Retirement(**dict(row)) if row else None

    def retirements(self, skill: str | None = None) -> list[Retirement]:
        """Every retirement (of `skill`, or of all skills), open or closed, oldest first."""
        where, args = ("WHERE skill_name = ?", (skill,)) if skill is not None else ("", ())
        rows = self.conn.execute(f"SELECT {_RETIRE_COLUMNS} FROM retirements {where} ORDER BY retired_at, rowid",
                                 args).fetchall()
        return [Retirement(**dict(r)) for r in rows]

    def retired_names(self) -> list[str]:
        """The skills that are RETIRED now, by name."""
        return [r[0] for r in self.conn.execute(
            "SELECT skill_name FROM retirements WHERE restored_by IS NULL ORDER BY skill_name")]

    def close_release(self, release_id: str, status: ReleaseStatus) -> bool:
        """PREPARING -> ABANDONED or DECLINED. False if the row had already left PREPARING."""
        if status not in (ReleaseStatus.ABANDONED, ReleaseStatus.DECLINED):
            raise ValueError(f"close_release cannot set {status}")
        with self.transaction() as c:
            return c.execute("UPDATE releases SET status = ? WHERE release_id = ? AND status = 'PREPARING'",
                             (status.value, release_id)).rowcount == 1


def _publish_row(c: sqlite3.Connection, release_id: str) -> None:
    """Store.publish's step, inside the caller's transaction."""
    row = c.execute("SELECT status, commit_hash, skill_name, version FROM releases WHERE release_id = ?",
                    (release_id,)).fetchone()
    if row is None:
        raise UnknownRelease(f"no release {release_id}")
    if row["status"] == ReleaseStatus.PREPARING and row["commit_hash"] is None:
        raise ReleaseStateError(f"release {release_id} has no commit yet; call write_commit first")
    if row["status"] == ReleaseStatus.PREPARING and c.execute(
            "SELECT 1 FROM releases WHERE skill_name = ? AND version = ? AND status = 'PUBLISHED'",
            (row["skill_name"], row["version"])).fetchone():  # the unique index's IntegrityError, named
        raise ReleaseConflict(f"version {row['version']} of '{row['skill_name']}' was published by another process "
                              f"meanwhile; release {release_id} was not published: publish again")
    if row["status"] == ReleaseStatus.PREPARING:
        c.execute(f"UPDATE releases SET status = 'PUBLISHED', published_at = {NOW} "
                  "WHERE release_id = ? AND status = 'PREPARING'", (release_id,))
        c.execute("UPDATE retirements SET restored_by = ? WHERE skill_name = ? AND restored_by IS NULL",
                  (release_id, row["skill_name"]))  # publishing a RETIRED skill brings it back
        c.execute("UPDATE skills SET current_release_id = ? WHERE name = ?", (release_id, row["skill_name"]))
    elif row["status"] != ReleaseStatus.PUBLISHED:
        raise ReleaseStateError(f"release {release_id} is {row['status']}; it can no longer be published")


def _retire_row(c: sqlite3.Connection, skill: str, triggered_by: str) -> None:
    """Store.retire's step, inside the caller's transaction."""
    if c.execute("SELECT 1 FROM retirements WHERE skill_name = ? AND restored_by IS NULL",
                 (skill,)).fetchone():
        raise SkillRetired(f"skill '{skill}' is already RETIRED; `skillforge release revert {skill}` "
                           "brings it back")
    row = c.execute("SELECT current_release_id FROM skills WHERE name = ?", (skill,)).fetchone()
    if row is None or row[0] is None:
        raise NotPublished(f"skill '{skill}' has no published release to retire")
    if c.execute("SELECT 1 FROM releases WHERE skill_name = ? AND status = 'PREPARING'", (skill,)).fetchone():
        raise ReleaseConflict(f"skill '{skill}' has a PREPARING release; finish it or run "
                              "`skillforge watchdog` before retiring it")
    c.execute("INSERT INTO retirements(skill_name, release_id, triggered_by) VALUES (?, ?, ?)",
              (skill, row[0], triggered_by))
    c.execute("UPDATE skills SET current_release_id = NULL WHERE name = ?", (skill,))
