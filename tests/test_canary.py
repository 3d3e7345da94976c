"""Canary rollouts end to end (issue 28): a real store, a real git repository, the real events log,
and the `skillforge` console script."""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
import time
from pathlib import Path

import pytest
from canary_world import (CANARY_LINE, SKILL, Session, canary_sessions, canary_workspace, feed, traffic)
from conftest import run_cli

from skillforge.config import Workspace
from skillforge.errors import CanaryOpen, NotPublished
from skillforge.journal import read_jsonl
from skillforge.library.canaries import Canaries
from skillforge.library.canary import TRANSITION_KIND
from skillforge.library.registry import SkillRegistry
from skillforge.library.releases import ReleaseStateMachine
from skillforge.library.store import Store
from skillforge.state.canary import CanaryState, CanaryPlan
from skillforge.state.release import ReleaseStatus


def served_all(ws: Workspace, ids: list[str]) -> set[str]:
    """The release ids `serve` gives these sessions."""
    reg = SkillRegistry.load(ws)
    try:
        return {reg.serve(SKILL, sid).release.release_id for sid in ids}
    finally:
        reg.store.close()


def tick(ws: Workspace) -> list[dict[str, object]]:
    return json.loads(run_cli(["canary", "tick", "--json", "-w", str(ws.root)]).stdout)


def test_publish_canary_holds_the_live_release_and_refuses_a_second_change(tmp_path: Path) -> None:
    ws, live, canary = canary_workspace(tmp_path / "ws")
    store = Store(ws.db_path)
    assert store.current(SKILL).release_id == live  # type: ignore[union-attr]
    assert store.release(canary).status is ReleaseStatus.PREPARING and store.release(canary).owner is None
    listed = run_cli(["releases", "list", SKILL, "-w", str(ws.root)]).stdout
    assert "CANARY" in listed
    for args in (["release", "publish", SKILL], ["release", "publish", SKILL, "--canary", "5%"],
                 ["release", "revert", SKILL, "1.2.0"], ["release", "retire", SKILL]):
        proc = run_cli([*args, "-w", str(ws.root)], ok=2)
        assert "canary" in proc.stderr and "promote|rollback" in " ".join(proc.stderr.split())
    m = ReleaseStateMachine.open(ws)
    with pytest.raises(CanaryOpen):
        m.begin_release(SKILL)
    assert m.watchdog_sweep(0) == []  # the canary's PREPARING row is nobody's orphan
    assert m.store.release(canary).status is ReleaseStatus.PREPARING
    # the database itself refuses any other path out
    with pytest.raises(sqlite3.IntegrityError):
        store.conn.execute("UPDATE skills SET current_release_id = NULL WHERE name = ?", (SKILL,))
    with pytest.raises(sqlite3.IntegrityError):
        store.conn.execute("UPDATE releases SET status = 'ABANDONED' WHERE release_id = ?", (canary,))
    with pytest.raises(sqlite3.IntegrityError):
        store.conn.execute("INSERT INTO canaries(release_id, skill_name, live_release_id, share, min_sessions, "
                           "max_age_hours, state, triggered_by) VALUES (?, ?, ?, 0.1, 1, 1, 'OPEN', 'x')",
                           (live, SKILL, live))


@pytest.mark.parametrize("share", ["0%", "60%", "abc"])
def test_a_bad_share_is_refused_before_anything_is_written(tmp_path: Path, share: str) -> None:
    ws, _, _ = canary_workspace(tmp_path / "ws")
    before = len(Store(ws.db_path).releases(SKILL))
    proc = run_cli(["release", "publish", SKILL, "--canary", share, "-w", str(ws.root)], ok=2)
    assert "--canary" in proc.stderr
    assert len(Store(ws.db_path).releases(SKILL)) == before


def test_a_canary_needs_a_live_release(workspace: Workspace) -> None:
    from conftest import EXAMPLE_SKILLS

    shutil.copytree(EXAMPLE_SKILLS / SKILL, workspace.skills_dir / SKILL)
    with pytest.raises(NotPublished):
        ReleaseStateMachine.open(workspace).publish(SKILL, canary=CanaryPlan(share=0.1, min_sessions=1,
                                                                              max_age_hours=1))


def test_use_skill_serves_the_canary_by_bucket_and_records_what_it_served(tmp_path: Path) -> None:
    ws, live, canary = canary_workspace(tmp_path / "ws", share=0.3)
    reg = SkillRegistry.load(ws)
    got = {sid: reg.use(SKILL, "test", sid) for sid in (f"sess-{i}" for i in range(60))}
    in_canary = {sid for sid, s in got.items() if s.release.release_id == canary}
    assert 5 < len(in_canary) < 35
    for sid, s in got.items():
        assert (CANARY_LINE in s.body) == (sid in in_canary)
        assert s.arm == ("canary" if sid in in_canary else "live")
        assert reg.use(SKILL, "again", sid).release.release_id == s.release.release_id  # stable
    from skillforge.events import EventLog

    used = {e.session_id: e.release_id for e in EventLog(ws).read_public().events if e.kind.value == "skill_used"}
    assert used == {sid: s.release.release_id for sid, s in got.items()}
    # without a session id: always live, no event, and the log counts the load
    for _ in range(6):
        assert CANARY_LINE not in reg.use_skill(SKILL, "anonymous")
    lines = [x for x in read_jsonl(ws.router_log) if x.get("event") == "use_skill" and not x.get("session_id")]
    assert len(lines) == 6 and {x["release_id"] for x in lines} == {live}
    status = json.loads(run_cli(["canary", "status", SKILL, "--json", "-w", str(ws.root)]).stdout)
    assert status["comparison"]["no_session_loads"] == 6
    assert status["comparison"]["canary"]["sessions"] == len(in_canary)
    # the CLI: `skills use --session` prints what that session is served
    sid = min(in_canary)
    in_bucket = run_cli(["skills", "use", SKILL, "--session", sid, "-w", str(ws.root)])
    assert CANARY_LINE in in_bucket.stdout and f"(release {canary[:8]}, canary)" in in_bucket.stderr  # which one
    assert CANARY_LINE not in run_cli(["skills", "use", SKILL, "-w", str(ws.root)]).stdout
    shown = json.loads(run_cli(["skills", "use", SKILL, "--session", sid, "--json", "-w", str(ws.root)]).stdout)
    assert (shown["release_id"], shown["arm"]) == (canary, "canary") and CANARY_LINE in shown["body"]


def test_feedback_without_a_release_names_the_release_the_session_was_served(tmp_path: Path) -> None:
    from skillforge.errors import EventError
    from skillforge.events import EventLog, record_feedback, record_use

    ws, live, canary = canary_workspace(tmp_path / "ws", share=0.5)
    sids = [f"s{i}" for i in range(40)]
    inside = canary_sessions(ws, sids)
    for sid in sids[:10]:
        record_use(ws, sid, SKILL, None)
        e = record_feedback(ws, sid, SKILL, "bad", tokens=123)
        assert e.release_id == (canary if sid in inside else live) and e.tokens == 123
    # a session never served the skill: refused, not counted against the release it would be served now
    before = EventLog(ws).counts().last_seq
    with pytest.raises(EventError, match="never served"):
        record_feedback(ws, sids[-1], SKILL, "bad")
    assert EventLog(ws).counts().last_seq == before
    assert record_feedback(ws, sids[-1], SKILL, "bad", release_id=live[:8]).release_id == live  # named: recorded


def test_a_doubled_negative_rate_is_rolled_back_with_evidence(tmp_path: Path) -> None:
    """The bar: the canary's negative-feedback rate is twice the live one; `canary tick` rolls it
    back with evidence, and `use_skill` then serves the live release to every session."""
    ws, live, canary = canary_workspace(tmp_path / "ws", min_sessions=10_000)
    ids = [f"user-{i}" for i in range(3000)]  # about 300 canary sessions: power near 1 for a doubling
    inside = canary_sessions(ws, ids)
    feed(ws, traffic(random.Random(5), 3000, "user", inside, live_bad=0.2, canary_bad=0.4))
    (done,) = tick(ws)
    assert done["done"] == "rolled back", run_cli(["canary", "status", SKILL, "-w", str(ws.root)]).stdout
    reasons = done["verdict"]["reasons"]
    assert any(r.startswith("negative_feedback:") and "one-sided p" in r for r in reasons), reasons
    c = Canaries(Store(ws.db_path)).get(canary)
    assert c is not None and c.state is CanaryState.ROLLED_BACK and c.decision is not None
    neg = next(r for r in c.decision["comparison"]["rates"] if r["name"] == "negative_feedback")  # type: ignore[index,union-attr]
    assert neg["p_adjusted"] <= 0.05 and neg["canary_rate"] > 1.5 * neg["live_rate"]
    store = Store(ws.db_path)
    assert store.release(canary).status is ReleaseStatus.DECLINED and store.current(SKILL).release_id == live  # type: ignore[union-attr]
    assert served_all(ws, ids) == {live}
    lines = [x for x in read_jsonl(ws.evaluations_log) if x.get("kind") == TRANSITION_KIND]
    assert len(lines) == 1 and lines[0]["transition"] == "rollback" and lines[0]["release_id"] == canary
    assert CANARY_LINE not in (ws.skills_dir / SKILL / "SKILL.md").read_text()  # the folder holds live again
    assert tick(ws) == []  # idempotent: nothing left to do
    # the skill is free again: a new canary may start
    run_cli(["release", "publish", SKILL, "--canary", "10%", "--from", str(ws.skills_dir / SKILL), "-w", str(ws.root)],
            ok=2)  # (no change: the folder is the live release) -> NoChanges, a named refusal


def _seed_run(base: Path, root: Path, seed: int) -> str | None:
    """None if the canary held through all 1000 sessions, else what the tick did and why (a
    failure then says which rule fired, for a flake that was seen once and never reproduced)."""
    shutil.copytree(base, root)
    ws = Workspace.open(root)
    ids = [f"seed{seed}-{i}" for i in range(1000)]
    inside = canary_sessions(ws, ids)
    sessions = traffic(random.Random(seed), 1000, f"seed{seed}", inside, live_bad=0.2, canary_bad=0.2)
    from skillforge.library.services import Services

    for start in range(0, 1000, 250):  # cron looks four times as the traffic arrives (in process: fast)
        feed(ws, sessions[start:start + 250])
        svc = Services(ws)
        try:
            for r in svc.canary.tick():
                if r.done != "held":
                    return f"seed {seed} after {start + 250} sessions: {r.done}: {r.verdict and r.verdict.reasons}"
        finally:
            svc.store.close()
    return None


def test_equal_rates_do_not_roll_back_in_at_least_19_of_20_seeds(tmp_path: Path) -> None:
    base, _, _ = canary_workspace(tmp_path / "base", min_sessions=10_000)
    rolled = [why for seed in range(20) if (why := _seed_run(base.root, tmp_path / f"s{seed}", seed))]
    assert len(rolled) <= 1, rolled


def test_enough_sessions_of_a_clearly_better_canary_promote(tmp_path: Path) -> None:
    # equal rates promote only once the data rule out a worsening beyond the threshold (about 500
    # canary sessions at 20 % bad: benchmarks/canary_rules.py); a clearly better canary much sooner
    # (which sessions the canary serves hangs on its random release id: 700 keep its share well above
    # the sessions the bound needs, where 400 left it short now and then)
    ws, _, canary = canary_workspace(tmp_path / "ws", share=0.2, min_sessions=30)
    ids = [f"p-{i}" for i in range(700)]
    feed(ws, traffic(random.Random(11), 700, "p", canary_sessions(ws, ids), canary_bad=0.05, tool_error=0.0,
                     correction=0.0))
    (done,) = tick(ws)
    assert done["done"] == "promoted", done
    store = Store(ws.db_path)
    assert store.current(SKILL).release_id == canary and store.release(canary).status is ReleaseStatus.PUBLISHED  # type: ignore[union-attr]
    assert served_all(ws, ids) == {canary}
    assert [x["transition"] for x in read_jsonl(ws.evaluations_log) if x.get("kind") == TRANSITION_KIND] == ["promote"]


def test_a_stale_canary_is_reaped(tmp_path: Path) -> None:
    ws, live, canary = canary_workspace(tmp_path / "ws", max_age_hours=0.0002)  # 0.72 s
    feed(ws, [Session("only-one", bad=False)])
    time.sleep(1.0)
    (done,) = tick(ws)
    assert done["done"] == "reaped" and "reaped:" in done["verdict"]["reasons"][0]
    c = Canaries(Store(ws.db_path)).get(canary)
    assert c is not None and c.state is CanaryState.ROLLED_BACK and (c.reason or "").startswith("reaped:")
    assert served_all(ws, [f"x{i}" for i in range(200)]) == {live}


def test_a_holdout_regression_in_a_rerun_rolls_back(tmp_path: Path) -> None:
    from skillforge.journal import append_jsonl

    ws, live, canary = canary_workspace(tmp_path / "ws")
    append_jsonl(ws.evaluations_log, {"run_id": "rerun-1", "release_id": canary, "baseline_release_id": live,
                                      "skill": SKILL, "eval_set": "holdout", "kind": "ab", "verdict": "PASS"})
    for cid, base_ok, cand_ok in (("h1", True, True), ("h2", True, False)):
        append_jsonl(ws.traces_dir / "rerun-1.jsonl", {"run_id": "rerun-1", "case": {"id": cid, "p0": False},
                                                       "checks": {"baseline": {"expect_pass": base_ok, "provenance_ok": True},
                                                                  "candidate": {"expect_pass": cand_ok,
                                                                                "provenance_ok": True}}})
    (done,) = tick(ws)
    assert done["done"] == "rolled back"
    assert done["verdict"]["reasons"] == ["holdout case h2 passes on live and fails on the canary (re-run rerun-1)"]


def test_promote_and_rollback_by_hand(tmp_path: Path) -> None:
    ws, _, canary = canary_workspace(tmp_path / "ws")
    run_cli(["canary", "rollback", SKILL, "--reason", "smoke", "-w", str(ws.root)])
    assert Canaries(Store(ws.db_path)).get(canary).reason == "rolled back by hand: smoke"  # type: ignore[union-attr]
    run_cli(["report", SKILL, "--html", str(tmp_path / "r.html"), "-w", str(ws.root)])
    assert "<b>canary rollback</b>" in (tmp_path / "r.html").read_text() and "rolled back by hand: smoke" in \
        (tmp_path / "r.html").read_text()
    proc = run_cli(["canary", "promote", SKILL, "-w", str(ws.root)], ok=2)
    assert "no open canary" in proc.stderr
    ws2, _, canary2 = canary_workspace(tmp_path / "ws2", files=False)  # a working-tree publish
    run_cli(["canary", "promote", SKILL, "-w", str(ws2.root)])
    assert Store(ws2.db_path).current(SKILL).release_id == canary2  # type: ignore[union-attr]
    status = run_cli(["canary", "status", SKILL, "-w", str(ws2.root)], ok=2)
    assert "no open canary" in status.stderr


def test_the_evolve_canary_setting(workspace: Workspace) -> None:
    """L1 results go to a canary first when the workspace says so (env first, then skillforge.toml)."""
    from skillforge.errors import ConfigError
    from skillforge.llm.config import evolve_canary

    assert evolve_canary(workspace, env={}) is None
    (workspace.root / "skillforge.toml").write_text('[evolve]\ncanary = "10%"\n')
    assert evolve_canary(workspace, env={}) == 0.1
    assert evolve_canary(workspace, env={"SKILLFORGE_EVOLVE_CANARY": "off"}) is None
    assert evolve_canary(workspace, env={"SKILLFORGE_EVOLVE_CANARY": "25"}) == 0.25
    for bad in ("70%", "lots"):
        with pytest.raises(ConfigError, match="share of sessions"):
            evolve_canary(workspace, env={"SKILLFORGE_EVOLVE_CANARY": bad})


def test_the_mcp_tools_serve_and_attribute_the_canary(machine: ReleaseStateMachine) -> None:
    """use_skill and record_feedback through the MCP surface: a session in the bucket gets the
    canary's body and release id, its feedback names that release; after a rollback every session
    gets the live release, without restarting the server."""
    from conftest import edited

    from skillforge.events import EventLog
    from skillforge.library.services import Services
    from skillforge.mcp.surface import AgentSurface

    name = "taxi-hailing"
    live = machine.store.current(name)
    rel = machine.publish(name, edited(machine, name, "Say the canary fare first."),
                          canary=CanaryPlan(share=0.25, min_sessions=50, max_age_hours=24))
    surface = AgentSurface(machine.ws, use_llm=False)
    try:
        got = {sid: surface.use_skill(name, "the user wants a car", sid) for sid in (f"mcp-{i}" for i in range(80))}
        inside = {sid for sid, b in got.items() if b.release_id == rel.release_id}
        assert 8 < len(inside) < 35
        assert all(("Say the canary fare first." in b.body) == (sid in inside) for sid, b in got.items())
        sid = min(inside)
        assert surface.feedback(sid, name, "bad", "too slow").release_id == rel.release_id
        outside = min(set(got) - inside)
        assert surface.feedback(outside, name, "good").release_id == live.release_id  # type: ignore[union-attr]
        used = [e for e in EventLog(machine.ws).read_public().events if e.kind.value == "skill_used"]
        assert {e.session_id: e.release_id for e in used} == {s: b.release_id for s, b in got.items()}
        svc = Services(machine.ws)
        svc.canary.rollback(name, "test", {})
        assert {surface.use_skill(name, "r", s).release_id for s in got} == {live.release_id}  # type: ignore[union-attr]
    finally:
        surface.close()


def test_feedback_add_takes_tokens_and_status_compares_them(tmp_path: Path) -> None:
    ws, _, _ = canary_workspace(tmp_path / "ws", share=0.5)
    root = str(ws.root)
    run_cli(["skills", "use", SKILL, "--session", "t-1", "-w", root])
    run_cli(["feedback", "add", "--session", "t-1", "--skill", SKILL, "--outcome", "good", "--tokens", "900",
             "-w", root])
    for bad in ("-1", str(2**63), "100000000000000000000000000000", "1.5"):  # a whole number 0..2**63-1
        run_cli(["feedback", "add", "--session", "t-1", "--skill", SKILL, "--outcome", "good", "--tokens", bad,
                 "-w", root], ok=2)
    feed(ws, [Session(f"t{i}", bad=False, tokens=1000 + i) for i in range(40)])
    status = json.loads(run_cli(["canary", "status", SKILL, "--json", "-w", root]).stdout)
    tokens = next(r for r in status["comparison"]["rates"] if r["name"] == "tokens")
    assert tokens["canary_n"] + tokens["live_n"] == 41 and tokens["threshold"] == 0.2


def test_tokens_are_bounded_and_shown_in_integer_arithmetic(tmp_path: Path) -> None:
    """QA qa12 MESSAGE-8: 1e29 tokens were accepted and shown as 99999999999999991433150857216."""
    from skillforge.errors import EventError
    from skillforge.events import TOKENS_MAX, record_feedback
    from skillforge.rules.canary import mean_tokens

    ws, _, _ = canary_workspace(tmp_path / "ws", share=0.5)
    feed(ws, [Session(f"t{i}", bad=False) for i in range(8)])
    for bad in (TOKENS_MAX + 1, 10**29, -1, 1.0, True):
        with pytest.raises(EventError, match="tokens must be a whole number from 0 to"):
            record_feedback(ws, "t0", SKILL, "good", tokens=bad)  # type: ignore[arg-type]
    for i in range(8):
        record_feedback(ws, f"t{i}", SKILL, "good", tokens=TOKENS_MAX - i)
    status = run_cli(["canary", "status", SKILL, "-w", str(ws.root)]).stdout
    [row] = [line for line in status.splitlines() if "tokens" in line and "(n=" in line]
    assert str(TOKENS_MAX - 3)[:12] in row and "e+" not in row  # exact digits, never a float's
    assert mean_tokens(2 * TOKENS_MAX, 2) == TOKENS_MAX and mean_tokens(3, 2) == 2 and mean_tokens(5, 3) == 2


def test_revert_to_a_version_only_declined_canaries_carry_says_so_and_lists_what_can_be_restored(tmp_path: Path) -> None:
    """Canaries rolled back: `release revert SKILL 1.2.2` of three declined 1.2.2 canaries said the
    version was "ambiguous ... give a version or more of the id" though a version was given and no
    match could ever be restored (versions are no longer shared, but the refusal stays)."""
    ws, imported, _ = canary_workspace(tmp_path / "ws")
    w = ["-w", str(ws.root)]
    run_cli(["canary", "rollback", SKILL, "--reason", "first", *w])
    m = ReleaseStateMachine.open(ws)
    folder = m.folder_of(SKILL)
    tree = {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    live = m.publish(SKILL, {**tree, "SKILL.md": tree["SKILL.md"] + b"\n- published line\n"}, triggered_by="test")
    declined = []
    for n in range(2):
        rel = m.publish(SKILL, {**tree, "SKILL.md": tree["SKILL.md"] + f"\n- canary {n}\n".encode()},
                        canary=CanaryPlan(share=0.1, min_sessions=100, max_age_hours=168.0), triggered_by="test")
        run_cli(["canary", "rollback", SKILL, "--reason", f"r{n}", *w])
        declined.append(rel)
    m.store.close()
    # a declined canary's version is never given again: 1.2.1 (the first canary), then 1.2.2 live
    assert [r.version for r in declined] == ["1.2.3", "1.2.4"] and live.version == "1.2.2"
    proc = run_cli(["release", "revert", SKILL, "1.2.3", *w], ok=2)
    said = " ".join(proc.stderr.split())
    assert "ambiguous" not in said and "version 1.2.3" in said and "DECLINED" in said and "never published" in said, said
    assert declined[0].release_id[:8] in said
    assert f"restorable: 1.2.0 (release {imported[:8]})" in said and live.release_id[:8] not in said  # live: no revert
    by_id = " ".join(run_cli(["release", "revert", SKILL, declined[0].release_id[:8], *w], ok=2).stderr.split())
    assert "DECLINED" in by_id and "1.2.0" in by_id
    assert by_id.count(declined[0].release_id[:8]) == 1, by_id  # QA pass 15: "release X ...: its release X is"
    assert Store(ws.db_path).current(SKILL).release_id == live.release_id  # type: ignore[union-attr]
    run_cli(["release", "revert", SKILL, "1.2.0", *w])  # what it listed can be restored
