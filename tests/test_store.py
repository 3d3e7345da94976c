"""The SQLite store enforces the release invariants itself: raw SQL cannot break them."""

from __future__ import annotations

import sqlite3
import uuid

import pytest

from skillforge.errors import ReleaseConflict, ReleaseStateError, StoreError
from skillforge.state.release import LineageKind, ReleaseLevel, ReleaseStatus
from skillforge.library.store import SCHEMA_VERSION, Store


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "runs" / "skillforge.db")
    yield s
    s.close()


def published(store: Store, skill: str = "alpha", version: str = "1.0.0") -> str:
    rel = store.insert_release(skill, version, f"skills/{skill}", ReleaseLevel.MANUAL, "test", LineageKind.IMPORTED, [])
    store.set_commit(rel.release_id, "a" * 40, f"skills/{skill}")
    return store.publish(rel.release_id).release_id


def raw(store: Store) -> sqlite3.Connection:
    """A second, independent connection, as a person's sqlite3 shell would be."""
    conn = sqlite3.connect(store.path, isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def test_pragmas_and_schema_version(store):
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert store.schema_version() == SCHEMA_VERSION
    tables = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"skills", "releases", "lineage"} <= tables


def test_reopen_is_idempotent_and_newer_schema_is_refused(store):
    Store(store.path).close()
    conn = raw(store)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StoreError, match="newer"):
        Store(store.path)


def test_not_a_database_is_a_named_error(tmp_path):
    bad = tmp_path / "skillforge.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError):
        Store(bad)


def test_current_must_point_to_a_published_release(store):
    published(store)
    prep = store.insert_release("alpha", "1.0.1", "skills/alpha", ReleaseLevel.L1, "t", LineageKind.FIX, [])
    conn = raw(store)
    with pytest.raises(sqlite3.IntegrityError, match="PUBLISHED"):
        conn.execute("UPDATE skills SET current_release_id = ? WHERE name = 'alpha'", (prep.release_id,))
    with pytest.raises(sqlite3.IntegrityError, match="PUBLISHED"):
        conn.execute("UPDATE skills SET current_release_id = ? WHERE name = 'alpha'", (str(uuid.uuid4()),))
    beta = published(store, "beta")
    with pytest.raises(sqlite3.IntegrityError, match="PUBLISHED"):  # another skill's release
        conn.execute("UPDATE skills SET current_release_id = ? WHERE name = 'alpha'", (beta,))
    with pytest.raises(sqlite3.IntegrityError, match="PUBLISHED"):
        conn.execute("INSERT INTO skills(name, current_release_id) VALUES ('gamma', ?)", (beta,))


def test_a_published_release_is_final(store):
    rid = published(store)
    conn = raw(store)
    for sql in ("UPDATE releases SET status = 'ABANDONED' WHERE release_id = ?",
                "UPDATE releases SET status = 'PREPARING', published_at = NULL WHERE release_id = ?",
                "UPDATE releases SET commit_hash = '" + "b" * 40 + "' WHERE release_id = ?",
                "DELETE FROM releases WHERE release_id = ?"):
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute(sql, (rid,))
    assert store.current("alpha").release_id == rid


def test_at_most_one_preparing_per_skill(store):
    store.insert_release("alpha", "0.1.0", "skills/alpha", ReleaseLevel.L1, "t", LineageKind.CAPTURED, [])
    with pytest.raises(ReleaseConflict):
        store.insert_release("alpha", "0.1.1", "skills/alpha", ReleaseLevel.L1, "t", LineageKind.CAPTURED, [])
    conn = raw(store)
    with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"):
        conn.execute("INSERT INTO releases(release_id, skill_name, version, skill_path, status, level, triggered_by) "
                     "VALUES (?, 'alpha', '0.2.0', 'skills/alpha', 'PREPARING', 'L1', 'sql')", (str(uuid.uuid4()),))
    # another skill may prepare at the same time
    store.insert_release("beta", "0.1.0", "skills/beta", ReleaseLevel.L1, "t", LineageKind.CAPTURED, [])


def test_rows_start_preparing_and_enums_are_checked(store):
    published(store)
    conn = raw(store)
    cols = "release_id, skill_name, version, skill_path, status, level, triggered_by"
    for status, level, version in (("PUBLISHED", "L1", "1.0.0"), ("DONE", "L1", "1.0.0"),
                                   ("PREPARING", "L9", "1.0.0"), ("PREPARING", "L1", "latest")):
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute(f"INSERT INTO releases({cols}) VALUES (?, 'alpha', ?, 'skills/alpha', ?, ?, 'sql')",
                         (str(uuid.uuid4()), version, status, level))
    with pytest.raises(sqlite3.IntegrityError):  # foreign key: unknown skill
        conn.execute(f"INSERT INTO releases({cols}) VALUES (?, 'nope', '1.0.0', 'skills/nope', 'PREPARING', 'L1', 'x')",
                     (str(uuid.uuid4()),))
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("INSERT INTO lineage(child, parent, kind) VALUES (?, NULL, 'MERGED')",
                     (store.current("alpha").release_id,))


def test_publish_without_commit_and_after_abandon_are_refused(store):
    rel = store.insert_release("alpha", "0.1.0", "skills/alpha", ReleaseLevel.L1, "t", LineageKind.CAPTURED, [])
    with pytest.raises(ReleaseStateError, match="write_commit"):
        store.publish(rel.release_id)
    assert store.close_release(rel.release_id, ReleaseStatus.ABANDONED)
    assert not store.close_release(rel.release_id, ReleaseStatus.ABANDONED)
    with pytest.raises(ReleaseStateError):
        store.set_commit(rel.release_id, "c" * 40, "skills/alpha")
    with pytest.raises(ReleaseStateError):
        store.publish(rel.release_id)
    assert store.current("alpha") is None


def test_preparing_age_uses_sqlite_clock(store):
    rel = store.insert_release("alpha", "0.1.0", "skills/alpha", ReleaseLevel.L1, "t", LineageKind.CAPTURED, [])
    # Backdating needs a person's shell: the trigger only guards rows that left PREPARING.
    raw(store).execute("UPDATE releases SET created_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-30 hours') "
                       "WHERE release_id = ?", (rel.release_id,))
    [(row, age)] = store.preparing()
    assert row.release_id == rel.release_id and 29.9 < age < 30.1


def test_a_lock_held_too_long_is_a_store_error(tmp_path):
    path = tmp_path / "skillforge.db"
    holder = Store(path)
    waiter = Store(path, busy_timeout_ms=100)
    holder.conn.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreError, match="write transaction"):
            waiter.insert_release("alpha", "0.1.0", "skills/alpha", ReleaseLevel.L1, "t", LineageKind.CAPTURED, [])
    finally:
        holder.conn.execute("ROLLBACK")
    waiter.insert_release("alpha", "0.1.0", "skills/alpha", ReleaseLevel.L1, "t", LineageKind.CAPTURED, [])


def test_a_schema_2_store_opens_and_gains_the_swap_digest(tmp_path):
    """A workspace from before schema 3 (no swap_digest column) opens: its rows are kept, a row
    that wrote its folder has no digest (recovery then relies on its commit or git's index), and
    new rows record one."""
    from skillforge.library.store import MIGRATIONS, _statements

    path = tmp_path / "skillforge.db"
    conn = sqlite3.connect(path, isolation_level=None)
    for n in range(2):
        for stmt in _statements(MIGRATIONS[n]):
            conn.execute(stmt)
    conn.execute("PRAGMA user_version = 2")
    rid = str(uuid.uuid4())
    conn.execute("INSERT INTO skills(name) VALUES ('alpha')")
    conn.execute("INSERT INTO releases(release_id, skill_name, version, skill_path, status, level, triggered_by, "
                 "owner, writes_folder) VALUES (?, 'alpha', '1.0.1', 'skills/alpha', 'PREPARING', 'L1', 'old', "
                 "'deadbeef', 1)", (rid,))
    conn.close()
    store = Store(path)
    assert store.schema_version() == SCHEMA_VERSION == 5  # 4: retirements, 5: canaries
    old = store.release(rid)
    assert old.writes_folder and old.owner == "deadbeef" and store.swap_digest(rid) is None
    store.set_writes_folder(rid, "e" * 64)
    assert store.swap_digest(rid) == "e" * 64
    with pytest.raises(sqlite3.IntegrityError):  # a digest is sha256 hex or nothing
        raw(store).execute("UPDATE releases SET swap_digest = 'short' WHERE release_id = ?", (rid,))
    store.close()
    Store(path).close()  # and opening it again migrates nothing


def test_publishing_a_version_already_published_is_a_named_conflict(store):
    """A release that took a version before another release published it: the publish is refused
    with ReleaseConflict (it was `IntegrityError: UNIQUE constraint failed`, an internal error)
    and the release stays PREPARING for its owner to abandon."""
    first = published(store, version="1.0.1")
    late = store.insert_release("alpha", "1.0.1", "skills/alpha", ReleaseLevel.MANUAL, "t", LineageKind.FIX, [])
    store.set_commit(late.release_id, "b" * 40, "skills/alpha")
    with pytest.raises(ReleaseConflict, match="was published by another process meanwhile"):
        store.publish(late.release_id)
    assert store.current("alpha").release_id == first and store.release(late.release_id).status.value == "PREPARING"


def test_a_callable_version_sees_the_published_versions_in_the_insert_transaction(store):
    published(store, version="1.9.0")
    published(store, version="1.10.0")
    seen = []
    rel = store.insert_release("alpha", lambda taken: seen.append(sorted(taken)) or "1.10.1", "skills/alpha",
                               ReleaseLevel.MANUAL, "t", LineageKind.FIX, [])
    assert seen == [["1.10.0", "1.9.0"]] and rel.version == "1.10.1"
