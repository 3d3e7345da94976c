"""The `canaries` table (schema 5): open a canary, move it through its states, and say which
release a session is served.

**Why a table, not a status.** A canary is a release that has been committed (its bytes are in git)
but is not `current`: the live release keeps serving everyone outside the canary's bucket. The
release row therefore stays PREPARING, the one status the state machine lets change, and the
`canaries` row says it is on trial: which live release it is compared with, its share, its limits,
where it stands. Its owner is cleared when the canary opens, so no process "holds" it and neither
the dead-owner recovery nor the watchdog touch it (store.preparing / preparing_of skip it). The
release leaves PREPARING only when its canary closes, by the same transitions any release takes:
PROMOTED publishes it and makes it current (PREPARING -> PUBLISHED), ROLLED_BACK declines it
(PREPARING -> DECLINED); triggers do both in the statement that closes the canary, and refuse any
other path (see migrations.py). Shown to people, such a release is CANARY.

Closing takes two steps so that a crash in between is finished, never guessed: the decision
(OPEN -> PROMOTING or ROLLING_BACK, with its reason and evidence), then the close. The partial
unique index `canaries_one_open` allows one canary per skill that is not closed.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping

from skillforge.errors import CanaryOpen, NoCanary, ReleaseStateError, StoreError
from skillforge.library.migrations import NOW
from skillforge.library.store import Store
from skillforge.rules.canary import in_canary, shown_share
from skillforge.state.canary import OPEN_STATES, Canary, CanaryState
from skillforge.state.release import Release

_COLUMNS = ("release_id, skill_name, live_release_id, share, min_sessions, max_age_hours, state, triggered_by, "
            "started_at, closed_at, reason, decision_json")
_OPEN = ", ".join(f"'{s.value}'" for s in OPEN_STATES)
CANARY_STATUS = "CANARY"
"""How a release in an open canary is shown (its row is PREPARING)."""


def _canary(row: sqlite3.Row) -> Canary:
    data = dict(row)
    raw = data.pop("decision_json")
    return Canary(decision=json.loads(raw) if raw else None, **data)


class Canaries:
    """The canaries of one store (its connection, its transactions)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    # ---- reads ---------------------------------------------------------------------------
    def open_of(self, skill: str) -> Canary | None:
        """The skill's canary that is not closed (OPEN, PROMOTING or ROLLING_BACK), else None."""
        row = self.store.conn.execute(f"SELECT {_COLUMNS} FROM canaries WHERE skill_name = ? AND state IN ({_OPEN})",
                                      (skill,)).fetchone()
        return _canary(row) if row else None

    def get(self, release_id: str) -> Canary | None:
        row = self.store.conn.execute(f"SELECT {_COLUMNS} FROM canaries WHERE release_id = ?",
                                      (release_id,)).fetchone()
        return _canary(row) if row else None

    def unfinished(self) -> list[Canary]:
        """Every canary that is not closed, oldest first."""
        rows = self.store.conn.execute(f"SELECT {_COLUMNS} FROM canaries WHERE state IN ({_OPEN}) "
                                       "ORDER BY started_at, rowid").fetchall()
        return [_canary(r) for r in rows]

    def history(self, skill: str) -> list[Canary]:
        rows = self.store.conn.execute(f"SELECT {_COLUMNS} FROM canaries WHERE skill_name = ? "
                                       "ORDER BY started_at, rowid", (skill,)).fetchall()
        return [_canary(r) for r in rows]

    def age_hours(self, canary: Canary) -> float:
        """Hours since the canary started, by SQLite's clock."""
        row = self.store.conn.execute("SELECT (julianday('now') - julianday(started_at)) * 24.0 FROM canaries "
                                      "WHERE release_id = ?", (canary.release_id,)).fetchone()
        return float(row[0])

    def refuse_open(self, skill: str, what: str) -> None:
        """CanaryOpen when the skill has a canary that is not closed."""
        open_ = self.open_of(skill)
        if open_ is not None:
            if open_.state is CanaryState.OPEN:
                remedy = f"promote or roll it back first (`skillforge canary promote|rollback {skill}`)"
            else:  # decided, not yet closed: only finishing it is left (promote is refused while rolling back)
                doing = "promoted" if open_.state is CanaryState.PROMOTING else "rolled back"
                remedy = (f"it is being {doing} and was interrupted or is still running: run `skillforge canary tick` "
                          f"to finish it" + (f" (or `skillforge canary rollback {skill}`)"
                                             if open_.state is CanaryState.ROLLING_BACK else ""))
            raise CanaryOpen(f"cannot {what} '{skill}': its canary (release {open_.release_id[:8]}, "
                             f"{shown_share(open_.share)} of sessions, {open_.state.value}) is open; {remedy}")

    # ---- serving -------------------------------------------------------------------------
    def served(self, skill: str, session_id: str | None) -> tuple[Release | None, Canary | None]:
        """(the release this session gets, the skill's open canary): the canary's release when the
        session's bucket is in it (state OPEN or PROMOTING), else the live release (None when the
        skill has none). Without a session id: always the live release."""
        live = self.store.current(skill)
        canary = self.open_of(skill)
        if canary is not None and canary.state is not CanaryState.ROLLING_BACK \
                and in_canary(skill, canary.release_id, canary.share, session_id):
            return self.store.release(canary.release_id), canary
        return live, canary

    # ---- writes --------------------------------------------------------------------------
    def open(self, release_id: str, share: float, min_sessions: int, max_age_hours: float,
             triggered_by: str) -> Canary:
        """Put the committed PREPARING release `release_id` on trial against the live release, in one
        transaction; its owner is cleared. CanaryOpen if the skill already has one open."""
        rel = self.store.release(release_id)
        try:
            with self.store.transaction() as c:
                live = c.execute("SELECT current_release_id FROM skills WHERE name = ?", (rel.skill_name,)).fetchone()
                c.execute("INSERT INTO canaries(release_id, skill_name, live_release_id, share, min_sessions, "
                          "max_age_hours, state, triggered_by) VALUES (?, ?, ?, ?, ?, ?, 'OPEN', ?)",
                          (release_id, rel.skill_name, live[0] if live else None, share, min_sessions,
                           max_age_hours, triggered_by))
                c.execute("UPDATE releases SET owner = NULL WHERE release_id = ?", (release_id,))
        except sqlite3.IntegrityError as e:
            if "canaries_one_open" in str(e) or "canaries.skill_name" in str(e):
                self.refuse_open(rel.skill_name, "start a canary of")
            raise StoreError(f"cannot open a canary of release {release_id}: {e}") from None
        opened = self.get(release_id)
        assert opened is not None
        return opened

    def decide(self, release_id: str, state: CanaryState, reason: str, decision: Mapping[str, object]) -> Canary:
        """OPEN -> PROMOTING or ROLLING_BACK with the reason and the evidence. Idempotent: a canary
        already in `state` keeps its first decision; one that went the other way is an error."""
        return self.claim(release_id, state, reason, decision)[0]

    def claim(self, release_id: str, state: CanaryState, reason: str,
              decision: Mapping[str, object]) -> tuple[Canary, bool]:
        """`decide`, and whether this call made the decision (False: another process had, the
        same way). NoCanary / ReleaseStateError as `decide`; a closed canary is ReleaseStateError."""
        won = False
        if state not in (CanaryState.PROMOTING, CanaryState.ROLLING_BACK):
            raise ValueError(f"decide cannot set {state}")
        with self.store.transaction() as c:
            row = c.execute("SELECT state FROM canaries WHERE release_id = ?", (release_id,)).fetchone()
            if row is None:
                raise NoCanary(f"release {release_id} is not a canary")
            if row[0] == CanaryState.OPEN:
                won = c.execute("UPDATE canaries SET state = ?, reason = ?, decision_json = ? WHERE release_id = ? "
                                "AND state = 'OPEN'", (state.value, reason, json.dumps(decision, ensure_ascii=False),
                                                       release_id)).rowcount == 1
            elif row[0] != state:
                raise ReleaseStateError(f"the canary of release {release_id} is {row[0]}; it cannot become {state.value}")
        got = self.get(release_id)
        assert got is not None
        return got, won

    def close(self, release_id: str) -> Canary:
        """PROMOTING -> PROMOTED (the release is published and current) or ROLLING_BACK ->
        ROLLED_BACK (the release is declined), in one transaction. Idempotent."""
        with self.store.transaction() as c:
            row = c.execute("SELECT state FROM canaries WHERE release_id = ?", (release_id,)).fetchone()
            if row is None:
                raise NoCanary(f"release {release_id} is not a canary")
            final = {CanaryState.PROMOTING: CanaryState.PROMOTED, CanaryState.ROLLING_BACK: CanaryState.ROLLED_BACK}
            state = CanaryState(row[0])
            if state in final:
                c.execute(f"UPDATE canaries SET state = ?, closed_at = {NOW} WHERE release_id = ? AND state = ?",
                          (final[state].value, release_id, state.value))
            elif state is CanaryState.OPEN:
                raise ReleaseStateError(f"the canary of release {release_id} is OPEN: decide first")
        got = self.get(release_id)
        assert got is not None
        return got


__all__ = ["CANARY_STATUS", "Canaries"]
