"""Skill health, retirement proposals (a pure rule) and retiring / bringing back a skill."""

from __future__ import annotations

import json
import shutil
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from skillforge.errors import BadArgument, NotPublished, SkillRetired
from skillforge.journal import append_jsonl
from skillforge.library.health import use_events, workspace_health
from skillforge.library.registry import SkillRegistry
from skillforge.library.releases import ReleaseStateMachine
from skillforge.rules.health import (valid_window, window_start,
    SkillHealth,
    UseEvent,
    UseKind,
    health_records,
    retirement_proposals,
)
from tests.conftest import EXAMPLE_SKILLS, run_cli

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def rec(name: str, *, hits: int = 0, uses: int = 0, since: float | None = None, age: float | None = 100.0,
        retired: bool = False) -> SkillHealth:
    return SkillHealth(name=name, route_hits=hits, use_skill=uses, last_used=None if since is None else "x",
                       days_since_last_use=since, age_days=age, retired=retired)


# ---- the pure rules ------------------------------------------------------------------------
def test_proposes_only_idle_old_non_p0_live_skills() -> None:
    records = [rec("idle"), rec("hit", hits=1), rec("used", uses=1), rec("p0"), rec("young", age=29.9),
               rec("unknown-age", age=None), rec("gone", retired=True), rec("old-use", since=45.0),
               rec("recent-use", since=3.0)]
    got = retirement_proposals(records, 30, {"p0"})
    assert [p.name for p in got] == ["idle", "old-use"]
    assert "never used" in got[0].reason and "45 days ago" in got[1].reason


def test_age_exactly_the_window_counts_and_empty_inputs() -> None:
    assert [p.name for p in retirement_proposals([rec("a", age=30.0)], 30, set())] == ["a"]
    assert retirement_proposals([], 30, set()) == []
    assert retirement_proposals([rec("a")], 30, {"a"}) == []


@pytest.mark.parametrize("window", [0, -1, float("nan"), float("inf")])
def test_bad_window_is_refused(window: float) -> None:
    assert not valid_window(window)
    with pytest.raises(ValueError):
        retirement_proposals([rec("a")], window, set())
    with pytest.raises(ValueError):
        health_records(["a"], [], now=NOW, window_days=window)


def test_a_window_past_the_calendar_starts_at_its_first_instant() -> None:
    assert window_start(NOW, 1) == NOW - timedelta(days=1)
    assert window_start(NOW, 3_000_000) == window_start(NOW, 1e10) == datetime.min.replace(tzinfo=NOW.tzinfo)


def test_health_records_count_inside_the_window_only() -> None:
    events = [UseEvent("a", NOW - timedelta(days=1), UseKind.ROUTE),
              UseEvent("a", NOW - timedelta(days=30), UseKind.USE_SKILL),  # on the edge: in
              UseEvent("a", NOW - timedelta(days=31), UseKind.ROUTE),  # out
              UseEvent("b", NOW - timedelta(days=40), UseKind.USE_SKILL),
              UseEvent("other", NOW, UseKind.ROUTE)]
    recs = {r.name: r for r in health_records(["a", "b", "c"], events, now=NOW, window_days=30,
                                              created={"a": NOW - timedelta(days=90), "b": NOW - timedelta(days=90),
                                                       "c": NOW - timedelta(days=90)}, failures={"a": 2})}
    assert set(recs) == {"a", "b", "c"}
    assert (recs["a"].route_hits, recs["a"].use_skill, recs["a"].days_since_last_use) == (1, 1, 1.0)
    assert (recs["b"].route_hits, recs["b"].use_skill, recs["b"].days_since_last_use) == (0, 0, 40.0)
    assert recs["c"].last_used is None and recs["a"].open_failures == 2 and recs["c"].open_failures == 0
    assert [p.name for p in retirement_proposals(recs.values(), 30, set())] == ["b", "c"]


# ---- the log reading -------------------------------------------------------------------------
def test_use_events_skip_route_eval_and_none(machine: ReleaseStateMachine) -> None:
    log = machine.ws.router_log
    append_jsonl(log, {"event": "route", "source": "cli", "chosen": "taxi-hailing"})
    append_jsonl(log, {"event": "route", "source": "route eval", "chosen": "taxi-hailing"})
    append_jsonl(log, {"event": "route", "source": "mcp", "chosen": None})
    append_jsonl(log, {"event": "use_skill", "source": "mcp", "name": "news-digest"})
    log.open("a").write('{"torn\n')
    got = sorted((e.skill, e.kind.value) for e in use_events(machine.ws))
    assert got == [("news-digest", "use_skill"), ("taxi-hailing", "route")]
    recs = {r.name: r for r in workspace_health(machine.ws, machine.store, 30)}
    assert len(recs) == 10 and recs["taxi-hailing"].route_hits == 1 and recs["news-digest"].use_skill == 1


# ---- retiring, in the store --------------------------------------------------------------------
def test_retire_keeps_history_and_the_database_guards_it(machine: ReleaseStateMachine) -> None:
    before = machine.store.releases("news-digest")
    retired = machine.retire("news-digest")
    assert retired.release_id == before[-1].release_id and retired.restored_by is None
    assert machine.store.current("news-digest") is None and machine.store.releases("news-digest") == before
    assert machine.store.retired_names() == ["news-digest"]
    with pytest.raises(SkillRetired):
        machine.retire("news-digest")
    reg = SkillRegistry.load(machine.ws, machine.store, machine.repo)
    assert "news-digest" not in reg.build_index()
    with pytest.raises(SkillRetired):
        reg.use_skill("news-digest", "test")
    with pytest.raises(SkillRetired):
        reg.get("news-digest")
    # a person's sqlite3 shell cannot make a RETIRED skill current again, nor erase the retirement
    conn = sqlite3.connect(machine.ws.db_path)
    with pytest.raises(sqlite3.DatabaseError, match="RETIRED"):
        conn.execute("UPDATE skills SET current_release_id = ? WHERE name = 'news-digest'", (retired.release_id,))
    with pytest.raises(sqlite3.DatabaseError, match="never deleted"):
        conn.execute("DELETE FROM retirements")
    conn.close()
    # import does not bring it back; revert does, with the same bytes
    from skillforge.skill import file as skillfile
    result = machine.import_skills(skillfile.scan(machine.ws.skills_dir, machine.ws.root))
    assert "news-digest" in result.skipped and machine.store.current("news-digest") is None
    back = machine.revert("news-digest")
    assert back.commit_hash == before[-1].commit_hash
    assert machine.store.retirements("news-digest")[0].restored_by == back.release_id
    with pytest.raises(BadArgument):
        machine.revert("news-digest")  # not RETIRED any more: a release must be named
    with pytest.raises(NotPublished):
        machine.store.retire("no-such-skill", "test")


# ---- through the CLI -------------------------------------------------------------------------
def _ws(tmp_path: Path) -> str:
    root = tmp_path / "ws"
    run_cli(["init", str(root)])
    shutil.copytree(EXAMPLE_SKILLS, tmp_path / "src")
    run_cli(["skills", "import", "--from", str(tmp_path / "src"), "-w", str(root)])
    return str(root)


def _route(ws: str, query: str) -> str | None:
    return json.loads(run_cli(["route", query, "--no-llm", "--json", "-w", ws]).stdout)["chosen"]


def test_cli_health_retire_and_revert(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    query = "where is my parcel"
    assert _route(ws, query) == "package-tracking"
    run_cli(["skills", "use", "package-tracking", "-w", ws])
    health = json.loads(run_cli(["skills", "health", "--json", "--window-days", "7", "-w", ws]).stdout)
    by_name = {r["name"]: r for r in health["skills"]}
    assert len(by_name) == 10 and health["window_days"] == 7
    assert (by_name["package-tracking"]["route_hits"], by_name["package-tracking"]["use_skill"]) == (1, 1)
    assert by_name["taxi-hailing"]["route_hits"] == 0 and by_name["taxi-hailing"]["last_used"] is None
    assert health["retirement_proposals"] == []  # every skill is younger than the window
    run_cli(["skills", "health", "--window-days", "0", "-w", ws], ok=2)
    for huge in ("3000000", "1e10"):  # QA 23 F6: an OverflowError (exit 70); a window past the calendar is all of it
        everything = json.loads(run_cli(["skills", "health", "--json", "--window-days", huge, "-w", ws]).stdout)
        assert {r["name"]: r["route_hits"] for r in everything["skills"]} == \
            {r["name"]: r["route_hits"] for r in health["skills"]}

    skill_md = Path(ws) / "skills" / "package-tracking" / "SKILL.md"
    before = run_cli(["skills", "show", "package-tracking", "-w", ws]).stdout
    run_cli(["release", "retire", "package-tracking", "-w", ws])
    assert "already RETIRED" in run_cli(["release", "retire", "package-tracking", "-w", ws], ok=2).stderr
    assert "unknown skill" in run_cli(["release", "retire", "no-such-skill", "-w", ws], ok=2).stderr
    assert _route(ws, query) != "package-tracking"  # NONE or another skill, never the retired one
    assert "package-tracking" not in run_cli(["skills", "index", "-w", ws]).stdout
    listed = json.loads(run_cli(["skills", "list", "--json", "-w", ws]).stdout)
    assert listed["retired"] == ["package-tracking"] and "package-tracking" not in listed["unregistered"]
    assert "package-tracking" not in {r["name"] for r in listed["skills"]}
    health = json.loads(run_cli(["skills", "health", "--json", "-w", ws]).stdout)
    assert {r["name"]: r["retired"] for r in health["skills"]}["package-tracking"] is True
    assert skill_md.is_file()  # history and files kept

    run_cli(["release", "revert", "package-tracking", "-w", ws])
    assert run_cli(["skills", "show", "package-tracking", "-w", ws]).stdout == before
    assert _route(ws, query) == "package-tracking"
    history = run_cli(["releases", "list", "package-tracking", "-w", ws]).stdout
    assert "REVERT" in history and "brought back by" in history
    rows = json.loads(run_cli(["releases", "list", "package-tracking", "--json", "-w", ws]).stdout)
    retired_on = [r for r in rows if r["retirements"]]
    assert len(retired_on) == 1 and retired_on[0]["retirements"][0]["restored_by"] == rows[-1]["release_id"]


def test_a_schema_3_store_gains_retirements(tmp_path: Path) -> None:
    """A store from before retirement (schema 3) opens, migrates, and its skills can be retired."""
    from skillforge.library.store import MIGRATIONS, SCHEMA_VERSION, Store, _statements

    path = tmp_path / "skillforge.db"
    conn = sqlite3.connect(path, isolation_level=None)
    for n in range(3):
        for stmt in _statements(MIGRATIONS[n]):
            conn.execute(stmt)
    conn.execute("PRAGMA user_version = 3")
    conn.execute("INSERT INTO skills(name) VALUES ('alpha')")
    conn.execute("INSERT INTO releases(release_id, skill_name, version, skill_path, status, level, triggered_by) "
                 "VALUES (?, 'alpha', '1.0.0', 'skills/alpha', 'PREPARING', 'L1', 'old')", ("a" * 36,))
    conn.execute("UPDATE releases SET status = 'PUBLISHED', commit_hash = ?, published_at = 'x'", ("c" * 40,))
    conn.execute("UPDATE skills SET current_release_id = ?", ("a" * 36,))
    conn.close()
    store = Store(path)
    assert store.schema_version() == SCHEMA_VERSION == 5 and store.retired_names() == []
    assert store.retire("alpha", "test").release_id == "a" * 36 and store.current("alpha") is None
    store.close()
