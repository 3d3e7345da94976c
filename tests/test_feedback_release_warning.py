"""`feedback add --release R` on a session that was not served R (never served the skill, or last
served another release) is accepted (R is the caller's explicit override) but never silently: a
warning on stderr, and under `warnings` in --json, names the session and the release it was last
served (QA msgs15 item 3). Real workspace, real SQLite and git, the CLI as a user runs it."""

from __future__ import annotations

import json

import pytest
from conftest import edited, live_release, run_cli

from skillforge.events import EventLog, record_use

SKILL = "taxi-hailing"


@pytest.fixture
def ws(machine):
    return machine.ws


def add(ws, session: str, release: str | None, *extra: str) -> tuple[dict[str, object], str]:
    args = ["feedback", "add", "--session", session, "--skill", SKILL, "--outcome", "bad", "--json", "-w", str(ws.root)]
    proc = run_cli([*args, *(["--release", release] if release else []), *extra])
    return json.loads(proc.stdout), " ".join(proc.stderr.split())


def test_a_release_the_session_was_never_served_is_recorded_with_a_warning(ws):
    first = live_release(ws, SKILL)
    got, said = add(ws, "never", first[:8])
    assert got["release_id"] == first and got["seq"] == 1 and EventLog(ws).counts().last_seq == 1  # still accepted
    warning = (f"session 'never' was never served '{SKILL}' (no skill_used event), not release {first[:8]}: "
               f"feedback #1 is recorded against {first[:8]} because --release names it")
    assert got["warnings"] == [warning] and f"warning {warning}" in said, said
    # the text output warns the same way
    proc = run_cli(["feedback", "add", "--session", "never2", "--skill", SKILL, "--outcome", "good", "--release",
                    first[:8], "-w", str(ws.root)])
    assert "warning session 'never2' was never served" in " ".join(proc.stderr.split())
    assert "recorded feedback #2" in proc.stdout


def test_a_release_other_than_the_one_last_served_names_the_one_served(machine, ws):
    old = live_release(ws, SKILL)
    record_use(ws, "s1", SKILL, None)  # served the live release
    new = machine.publish(SKILL, edited(machine, SKILL, "- a later line")).release_id
    got, said = add(ws, "s1", new[:8])
    assert got["release_id"] == new and got["seq"] == 2
    assert got["warnings"] == [f"session 's1' was last served release {old[:8]} of '{SKILL}', not release "
                               f"{new[:8]}: feedback #2 is recorded against {new[:8]} because --release names it"]
    assert f"last served release {old[:8]}" in said
    # the release it was served, named or found: no warning
    same, quiet = add(ws, "s1", old[:8])
    assert same["warnings"] == [] and "warning" not in quiet
    found, quiet = add(ws, "s1", None)
    assert found["release_id"] == old and found["warnings"] == [] and "warning" not in quiet
