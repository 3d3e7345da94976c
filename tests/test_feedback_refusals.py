"""Feedback and use refusals the QA passes found (qa12 MESSAGE-4/6/7/11, qa11 N10): a retired skill
named as retired, `feedback list --skill` of an unknown skill refused and its private count that
skill's only, an empty session id refused by `skills use` and MCP `use_skill` as by feedback, the
JSON time called `ts`, and feedback on a session never served the skill refused unless --release
names the release. Real workspace, real SQLite and git, the CLI as a user runs it."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

from skillforge.errors import EventError
from skillforge.events import EventLog, record_feedback, record_use
from skillforge.mcp.surface import AgentSurface

from conftest import live_release

SKILL = "taxi-hailing"


@pytest.fixture
def ws(machine):
    return machine.ws


def live(ws, skill=SKILL):
    return live_release(ws, skill)


def test_feedback_on_a_retired_skill_says_it_is_retired_and_how_to_bring_it_back(ws):
    root = str(ws.root)
    record_use(ws, "s1", SKILL, None)
    run_cli(["release", "retire", SKILL, "-w", root])
    proc = run_cli(["feedback", "add", "--session", "s1", "--skill", SKILL, "--outcome", "good", "-w", root], ok=2)
    assert "RETIRED" in proc.stderr and f"skillforge release revert {SKILL}" in proc.stderr
    assert "no published release" not in proc.stderr and "Traceback" not in proc.stderr
    assert EventLog(ws).counts().last_seq == 1


def test_feedback_list_refuses_an_unknown_skill_and_counts_only_its_private_events(ws):
    root = str(ws.root)
    for skill in (SKILL, SKILL, "hotel-booking"):
        record_use(ws, "p1", skill, None)
        record_feedback(ws, "p1", skill, "bad", "x", private=True)
    proc = run_cli(["feedback", "list", "--skill", "taxi-hailin", "-w", root], ok=2)
    assert "unknown skill 'taxi-hailin'" in proc.stderr and "Did you mean: taxi-hailing" in proc.stderr
    run_cli(["feedback", "list", "--skill", "../etc", "-w", root], ok=2)
    assert "2 private events not shown" in run_cli(["feedback", "list", "--skill", SKILL, "-w", root]).stdout
    assert "1 private events not shown" in run_cli(["feedback", "list", "--skill", "hotel-booking", "-w", root]).stdout
    assert "0 private events not shown" in run_cli(["feedback", "list", "--skill", "restaurant-booking", "-w", root]).stdout
    assert "3 private events not shown" in run_cli(["feedback", "list", "-w", root]).stdout
    listed = json.loads(run_cli(["feedback", "list", "--skill", "hotel-booking", "--json", "-w", root]).stdout)
    assert listed["private_count"] == 1 and [e["kind"] for e in listed["events"]] == ["skill_used"]
    assert json.loads(run_cli(["feedback", "list", "--json", "-w", root]).stdout)["private_count"] == 3


def test_the_json_time_is_ts_as_in_the_logs(ws):
    root = str(ws.root)
    record_use(ws, "s1", SKILL, None)
    added = json.loads(run_cli(["feedback", "add", "--session", "s1", "--skill", SKILL, "--outcome", "good",
                                "--json", "-w", root]).stdout)
    on_disk = json.loads(EventLog(ws).public_path.read_text().splitlines()[-1])
    assert "at" not in added and added["ts"] == on_disk["ts"] and added["ts"].endswith("Z")
    listed = json.loads(run_cli(["feedback", "list", "--json", "-w", root]).stdout)["events"]
    assert all("at" not in e and e["ts"] for e in listed) and listed[-1]["ts"] == on_disk["ts"]
    assert " ts " in run_cli(["feedback", "list", "-w", root]).stdout.splitlines()[1]


@pytest.mark.parametrize("session", ["", "   "])
def test_an_empty_session_id_is_refused_by_skills_use_and_mcp_use_skill(ws, session):
    root = str(ws.root)
    proc = run_cli(["skills", "use", SKILL, "--session", session, "-w", root], ok=2)
    assert "the session id must not be empty" in proc.stderr and proc.stdout == ""
    surface = AgentSurface(ws, use_llm=False)
    try:
        with pytest.raises(EventError, match="the session id must not be empty"):
            surface.use_skill(SKILL, "r", session)
    finally:
        surface.close()
    assert EventLog(ws).counts().last_seq == 0
    assert not ws.router_log.exists() or '"use_skill"' not in ws.router_log.read_text()  # nothing served
    run_cli(["skills", "use", SKILL, "-w", root])  # no --session at all: served, counted as a load without one


def test_feedback_on_a_session_never_served_the_skill_is_refused_unless_the_release_is_named(ws):
    root = str(ws.root)
    record_use(ws, "served", "hotel-booking", None)  # served another skill: still never served this one
    proc = run_cli(["feedback", "add", "--session", "served", "--skill", SKILL, "--outcome", "bad", "-w", root], ok=2)
    assert "never served 'taxi-hailing'" in proc.stderr and "--release" in proc.stderr
    assert EventLog(ws).counts().last_seq == 1
    named = json.loads(run_cli(["feedback", "add", "--session", "served", "--skill", SKILL, "--outcome", "bad",
                                "--release", live(ws)[:8], "--json", "-w", root]).stdout)
    assert named["release_id"] == live(ws) and named["seq"] == 2
    # served with `skills use --session`: the feedback names the release that use recorded
    run_cli(["skills", "use", SKILL, "--session", "u1", "-w", root])
    got = json.loads(run_cli(["feedback", "add", "--session", "u1", "--skill", SKILL, "--outcome", "good",
                              "--json", "-w", root]).stdout)
    assert got["release_id"] == live(ws) and got["kind"] == "feedback"
