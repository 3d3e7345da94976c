"""The store's schema: one SQL script per version, applied in order by `Store._migrate`.

The database enforces the release invariants itself (see store.py). Schema 5 adds canaries: a
canary is a committed release that stays PREPARING (never `current`) while a share of sessions is
served it; its `canaries` row says which live release it is compared with and where it stands.
Closing the row closes the release in the same statement (triggers): PROMOTED publishes it and
makes it current, ROLLED_BACK declines it. Nothing else may move the skill's live release, or the
release, while the canary is open.
"""

from __future__ import annotations

from skillforge.state.canary import CanaryState
from skillforge.state.release import LineageKind, ReleaseLevel, ReleaseStatus

NOW = "strftime('%Y-%m-%dT%H:%M:%fZ','now')"
_STATUSES = ",".join(f"'{s.value}'" for s in ReleaseStatus)
_LEVELS = ",".join(f"'{s.value}'" for s in ReleaseLevel)
_KINDS = ",".join(f"'{s.value}'" for s in LineageKind)
_CANARY_STATES = ",".join(f"'{s.value}'" for s in CanaryState)
_CANARY_OPEN = "'OPEN', 'PROMOTING', 'ROLLING_BACK'"

MIGRATIONS: list[str] = [
    f"""
    CREATE TABLE skills (
        name TEXT PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 64),
        created_at TEXT NOT NULL DEFAULT ({NOW}),
        current_release_id TEXT REFERENCES releases(release_id)
    );
    CREATE TABLE releases (
        release_id TEXT PRIMARY KEY CHECK (length(release_id) = 36),
        skill_name TEXT NOT NULL REFERENCES skills(name),
        version TEXT NOT NULL CHECK (version GLOB '[0-9]*.[0-9]*.[0-9]*'),
        skill_path TEXT NOT NULL,
        commit_hash TEXT CHECK (commit_hash IS NULL OR length(commit_hash) = 40),
        status TEXT NOT NULL CHECK (status IN ({_STATUSES})),
        level TEXT NOT NULL CHECK (level IN ({_LEVELS})),
        triggered_by TEXT NOT NULL,
        eval_summary_json TEXT CHECK (eval_summary_json IS NULL OR json_valid(eval_summary_json)),
        created_at TEXT NOT NULL DEFAULT ({NOW}),
        published_at TEXT,
        CHECK ((status = 'PUBLISHED') = (published_at IS NOT NULL)),
        CHECK (status <> 'PUBLISHED' OR commit_hash IS NOT NULL)
    );
    CREATE UNIQUE INDEX releases_one_preparing ON releases(skill_name) WHERE status = 'PREPARING';
    CREATE UNIQUE INDEX releases_published_version ON releases(skill_name, version) WHERE status = 'PUBLISHED';
    CREATE INDEX releases_by_skill ON releases(skill_name, created_at);
    CREATE TABLE lineage (
        child TEXT NOT NULL REFERENCES releases(release_id),
        parent TEXT REFERENCES releases(release_id),
        kind TEXT NOT NULL CHECK (kind IN ({_KINDS})),
        UNIQUE (child, parent)
    );
    CREATE TRIGGER releases_start_preparing BEFORE INSERT ON releases
    WHEN NEW.status <> 'PREPARING'
    BEGIN SELECT RAISE(ABORT, 'a new release must start PREPARING'); END;
    CREATE TRIGGER releases_final BEFORE UPDATE ON releases
    WHEN OLD.status <> 'PREPARING'
    BEGIN SELECT RAISE(ABORT, 'a release that left PREPARING is final'); END;
    CREATE TRIGGER releases_no_delete BEFORE DELETE ON releases
    BEGIN SELECT RAISE(ABORT, 'releases are never deleted'); END;
    CREATE TRIGGER skills_current_insert BEFORE INSERT ON skills
    WHEN NEW.current_release_id IS NOT NULL
    BEGIN SELECT RAISE(ABORT, 'current_release_id must point to a PUBLISHED release of the skill'); END;
    CREATE TRIGGER skills_current_published BEFORE UPDATE OF current_release_id ON skills
    WHEN NEW.current_release_id IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM releases r WHERE r.release_id = NEW.current_release_id
        AND r.status = 'PUBLISHED' AND r.skill_name = NEW.name)
    BEGIN SELECT RAISE(ABORT, 'current_release_id must point to a PUBLISHED release of the skill'); END;
    """,
    # 2: the owner of a PREPARING row (a lock file its process holds), so that the next
    # begin_release can tell a live release from one whose process died, and recover the latter.
    # writes_folder: the release replaced the folder's files (a candidate or a revert), so
    # abandoning it may put the published bytes back; a publish of the working tree never does.
    """
    ALTER TABLE releases ADD COLUMN owner TEXT;
    ALTER TABLE releases ADD COLUMN writes_folder INTEGER NOT NULL DEFAULT 0 CHECK (writes_folder IN (0, 1));
    """,
    # 3: swap_digest: skilltree.tree_digest of the files the release swaps into its folder,
    # recorded before the swap. A release killed after the swap but before `git add` left no
    # other trace of which bytes it wrote, and its folder could not be told from a person's edit.
    """
    ALTER TABLE releases ADD COLUMN swap_digest TEXT CHECK (swap_digest IS NULL OR length(swap_digest) = 64);
    """,
    # 4: retirement. A RETIRED skill has no current release (out of the index and the router);
    # its release rows stay as they were (a release that left PREPARING is final). One row per
    # retirement, closed by the release that brings the skill back (`restored_by`). While a
    # retirement is open nothing can become current: only a publish that closes it first.
    f"""
    CREATE TABLE retirements (
        skill_name TEXT NOT NULL REFERENCES skills(name),
        release_id TEXT NOT NULL REFERENCES releases(release_id),
        triggered_by TEXT NOT NULL,
        retired_at TEXT NOT NULL DEFAULT ({NOW}),
        restored_by TEXT REFERENCES releases(release_id)
    );
    CREATE UNIQUE INDEX retirements_open ON retirements(skill_name) WHERE restored_by IS NULL;
    CREATE TRIGGER retirements_no_delete BEFORE DELETE ON retirements
    BEGIN SELECT RAISE(ABORT, 'retirements are never deleted'); END;
    CREATE TRIGGER retirements_final BEFORE UPDATE ON retirements
    WHEN OLD.restored_by IS NOT NULL
    BEGIN SELECT RAISE(ABORT, 'a closed retirement is final'); END;
    CREATE TRIGGER skills_retired_has_no_current BEFORE UPDATE OF current_release_id ON skills
    WHEN NEW.current_release_id IS NOT NULL AND EXISTS (
        SELECT 1 FROM retirements t WHERE t.skill_name = NEW.name AND t.restored_by IS NULL)
    BEGIN SELECT RAISE(ABORT, 'a RETIRED skill has no current release; close its retirement first'); END;
    """,
    # 5: canaries. The canary's release stays PREPARING (the live release stays current) and its
    # owner is cleared (no process holds it: recovery and the watchdog leave it alone). A closed
    # canary is final; closing it closes its release in the same statement: PROMOTED publishes the
    # release and makes it current, ROLLED_BACK declines it. While a canary is open, its release
    # cannot leave PREPARING by any other path and the skill's live release cannot change.
    f"""
    CREATE TABLE canaries (
        release_id TEXT PRIMARY KEY REFERENCES releases(release_id),
        skill_name TEXT NOT NULL REFERENCES skills(name),
        live_release_id TEXT NOT NULL REFERENCES releases(release_id),
        share REAL NOT NULL CHECK (share > 0 AND share < 1),
        min_sessions INTEGER NOT NULL CHECK (min_sessions >= 1),
        max_age_hours REAL NOT NULL CHECK (max_age_hours > 0),
        state TEXT NOT NULL CHECK (state IN ({_CANARY_STATES})),
        triggered_by TEXT NOT NULL,
        started_at TEXT NOT NULL DEFAULT ({NOW}),
        closed_at TEXT,
        reason TEXT,
        decision_json TEXT CHECK (decision_json IS NULL OR json_valid(decision_json)),
        CHECK ((state IN ('PROMOTED', 'ROLLED_BACK')) = (closed_at IS NOT NULL)),
        CHECK (state = 'OPEN' OR reason IS NOT NULL)
    );
    CREATE UNIQUE INDEX canaries_one_open ON canaries(skill_name) WHERE state IN ({_CANARY_OPEN});
    CREATE TRIGGER canaries_start_open BEFORE INSERT ON canaries
    WHEN NEW.state <> 'OPEN' OR NEW.closed_at IS NOT NULL
      OR NOT EXISTS (SELECT 1 FROM releases r WHERE r.release_id = NEW.release_id
                     AND r.skill_name = NEW.skill_name AND r.status = 'PREPARING' AND r.commit_hash IS NOT NULL)
      OR NOT EXISTS (SELECT 1 FROM skills s WHERE s.name = NEW.skill_name AND s.current_release_id = NEW.live_release_id)
    BEGIN SELECT RAISE(ABORT, 'a canary starts OPEN on a committed PREPARING release, against the live release'); END;
    CREATE TRIGGER canaries_no_delete BEFORE DELETE ON canaries
    BEGIN SELECT RAISE(ABORT, 'canaries are never deleted'); END;
    CREATE TRIGGER canaries_final BEFORE UPDATE ON canaries
    WHEN OLD.state IN ('PROMOTED', 'ROLLED_BACK')
    BEGIN SELECT RAISE(ABORT, 'a closed canary is final'); END;
    CREATE TRIGGER canaries_fixed BEFORE UPDATE OF release_id, skill_name, live_release_id, share, started_at ON canaries
    WHEN NEW.release_id IS NOT OLD.release_id OR NEW.skill_name IS NOT OLD.skill_name
      OR NEW.live_release_id IS NOT OLD.live_release_id OR NEW.share IS NOT OLD.share OR NEW.started_at IS NOT OLD.started_at
    BEGIN SELECT RAISE(ABORT, 'a canary keeps its release, skill, live release, share and start'); END;
    CREATE TRIGGER canaries_transitions BEFORE UPDATE OF state ON canaries
    WHEN NOT ((OLD.state = 'OPEN' AND NEW.state IN ('OPEN', 'PROMOTING', 'ROLLING_BACK'))
           OR (OLD.state = 'PROMOTING' AND NEW.state IN ('PROMOTING', 'PROMOTED'))
           OR (OLD.state = 'ROLLING_BACK' AND NEW.state IN ('ROLLING_BACK', 'ROLLED_BACK')))
    BEGIN SELECT RAISE(ABORT, 'a canary goes OPEN -> PROMOTING -> PROMOTED or OPEN -> ROLLING_BACK -> ROLLED_BACK'); END;
    CREATE TRIGGER canaries_held_release BEFORE UPDATE OF status ON releases
    WHEN EXISTS (SELECT 1 FROM canaries c WHERE c.release_id = OLD.release_id AND c.state IN ({_CANARY_OPEN}))
    BEGIN SELECT RAISE(ABORT, 'a release in an open canary leaves PREPARING only when its canary closes'); END;
    CREATE TRIGGER canaries_hold_live BEFORE UPDATE OF current_release_id ON skills
    WHEN EXISTS (SELECT 1 FROM canaries c WHERE c.skill_name = NEW.name AND c.state IN ({_CANARY_OPEN}))
    BEGIN SELECT RAISE(ABORT, 'the live release of a skill in canary cannot change until the canary closes'); END;
    CREATE TRIGGER canaries_promoted AFTER UPDATE OF state ON canaries
    WHEN NEW.state = 'PROMOTED' AND OLD.state <> 'PROMOTED'
    BEGIN
        UPDATE releases SET status = 'PUBLISHED', published_at = {NOW}
        WHERE release_id = NEW.release_id AND status = 'PREPARING';
        UPDATE skills SET current_release_id = NEW.release_id WHERE name = NEW.skill_name;
    END;
    CREATE TRIGGER canaries_rolled_back AFTER UPDATE OF state ON canaries
    WHEN NEW.state = 'ROLLED_BACK' AND OLD.state <> 'ROLLED_BACK'
    BEGIN
        UPDATE releases SET status = 'DECLINED' WHERE release_id = NEW.release_id AND status = 'PREPARING';
    END;
    """,
]
SCHEMA_VERSION = len(MIGRATIONS)
