"""The work behind the MCP tools, in process (skillforge/mcp/surface.py): the events it records and
with which arguments (the skillforge.events contract), the reload when the live releases change and
only then, and the named errors a tool call turns into isError results."""

from __future__ import annotations

import json
import sys
import types

import pytest
from conftest import edited

from skillforge.errors import EventError, NotPublished, UnknownSkill
from skillforge.library.releases import ReleaseStateMachine
from skillforge.mcp.surface import AgentSurface


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple, dict]]:
    """skillforge.events replaced by a recorder of its calls: what the surface passes to the
    contract's record_use / record_feedback (the real module's own tests are in i23/events)."""
    seen: list[tuple[str, tuple, dict]] = []
    fake = types.ModuleType("skillforge.events")
    fake.record_use = lambda *a, **k: seen.append(("use", a, k))  # type: ignore[attr-defined]
    fake.record_feedback = lambda *a, **k: seen.append(("feedback", a, k))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "skillforge.events", fake)
    return seen


@pytest.fixture
def surface(machine: ReleaseStateMachine):
    s = AgentSurface(machine.ws, use_llm=False)
    yield s
    s.close()


def test_use_skill_records_the_use_with_the_live_release(surface: AgentSurface, machine: ReleaseStateMachine,
                                                         calls: list) -> None:
    got = surface.use_skill("taxi-hailing", "the user wants a car", "sess-9")
    live = machine.store.current("taxi-hailing")
    assert (got.release_id, got.version) == (live.release_id, live.version)
    assert calls == [("use", (machine.ws, "sess-9", "taxi-hailing", live.release_id, "the user wants a car"), {})]
    line = json.loads(machine.ws.router_log.read_text(encoding="utf-8").splitlines()[-1])
    assert line["event"] == "use_skill" and line["release_id"] == live.release_id and line["session_id"] == "sess-9"


def test_feedback_records_the_release_use_skill_served_and_refuses_a_session_never_served(
        surface: AgentSurface, machine: ReleaseStateMachine) -> None:
    from skillforge.events import EventLog

    log = EventLog(machine.ws)
    with pytest.raises(EventError, match="never served 'taxi-hailing'"):  # it would count against a release
        surface.feedback("sess-9", "taxi-hailing", "bad", "asked for the pickup twice", private=True)
    assert log.counts().last_seq == 0
    surface.use_skill("taxi-hailing", "the user wants a car", "sess-9")
    got = surface.feedback("sess-9", "taxi-hailing", "bad", "asked for the pickup twice", private=True, tokens=50)
    live = machine.store.current("taxi-hailing")
    assert got.recorded and got.release_id == live.release_id
    [line] = [json.loads(x) for x in log.private_path.read_text(encoding="utf-8").splitlines()]
    assert (line["kind"], line["outcome"], line["comment"], line["release_id"], line["tokens"]) == (
        "feedback", "bad", "asked for the pickup twice", live.release_id, 50)


def test_unknown_and_unpublished_skills_are_named_errors_and_record_nothing(surface: AgentSurface,
                                                                           machine: ReleaseStateMachine,
                                                                           calls: list) -> None:
    with pytest.raises(UnknownSkill, match="taxi-hailing"):
        surface.use_skill("taxi-hail", "r", "s")
    with pytest.raises(UnknownSkill):
        surface.feedback("s", "nope", "good")
    machine.begin_release("brand-new-skill", triggered_by="capture")  # a skill row, nothing published
    with pytest.raises(NotPublished):
        surface.use_skill("brand-new-skill", "r", "s")
    assert calls == []


def test_reloads_only_when_the_live_releases_change(surface: AgentSurface, machine: ReleaseStateMachine,
                                                    calls: list) -> None:
    first = surface.route("帮我叫辆车去虹桥火车站")
    assert first.skill == "taxi-hailing" and first.server_ms > 0
    surface.index()
    surface.use_skill("taxi-hailing", "r", "s")
    assert surface.reloads == 0  # nothing published: the loaded registry and router serve
    new = machine.publish("taxi-hailing", edited(machine, "taxi-hailing", "Say the fare before booking."))
    assert surface.use_skill("taxi-hailing", "r", "s").release_id == new.release_id
    assert "Say the fare before booking." in surface.use_skill("taxi-hailing", "r", "s").body
    assert surface.reloads == 1
    logged = [json.loads(x) for x in machine.ws.router_log.read_text(encoding="utf-8").splitlines()]
    assert [r["source"] for r in logged if r["event"] == "route"] == ["mcp"]


def test_the_index_is_the_registrys(surface: AgentSurface) -> None:
    assert surface.index() == surface.registry.build_index()
    assert surface.index().count("\n- ") == 9  # ten skills


def test_route_without_llm_says_so_for_an_uncertain_query(surface: AgentSurface) -> None:
    answer = surface.route("what is the capital of Australia")
    assert answer.skill is None
    assert answer.layer in ("embed", "none") and answer.reason
    assert answer.layer == "embed" or "--no-llm" in answer.reason


def test_a_recalibration_by_another_process_rebuilds_the_router_only(surface: AgentSurface) -> None:
    from skillforge.routing.index import load_thresholds, save_thresholds, undo_thresholds
    from skillforge.rules.thresholds import Scorer

    query = "what is the capital of Australia"
    assert surface.route(query).skill is None
    scorer = Scorer.COSINE  # what `route calibrate` writes; calibrated, it wins over the auto head
    th = load_thresholds(surface.ws, surface.embedder.name, scorer)
    save_thresholds(surface.ws, th.model_copy(update={"high": 0.0, "low": 0.0, "margin": 0.0, "calibrated": True}))
    answered = surface.route(query)  # the next call sees the new thresholds: everything is answered
    assert answered.skill is not None and answered.layer == "embed"
    assert surface.reloads == 1
    registry = surface.registry
    surface.route(query)
    assert surface.reloads == 1 and surface.registry is registry  # nothing changed since: no rebuild
    undo_thresholds(surface.ws, surface.embedder.name, scorer)
    assert surface.route(query).skill is None and surface.reloads == 2


def test_a_skill_retired_while_serving_is_gone_from_index_route_and_use_skill(surface: AgentSurface,
                                                                                 machine: ReleaseStateMachine,
                                                                                 calls: list) -> None:
    """`release retire` by another process: the serving surface notices (a release change), drops the
    skill from skills_index and the router, and use_skill is the named SkillRetired; revert brings it
    back to all three."""
    from skillforge.errors import SkillRetired

    query = "where is my parcel"
    assert surface.route(query).skill == "package-tracking"
    machine.retire("package-tracking", "test")
    assert "package-tracking" not in surface.index()
    assert surface.route(query).skill != "package-tracking"
    with pytest.raises(SkillRetired, match="release revert package-tracking"):
        surface.use_skill("package-tracking", "r", "s")
    assert calls == []  # nothing recorded for a refused use
    machine.revert("package-tracking")
    assert "package-tracking" in surface.index() and surface.route(query).skill == "package-tracking"
    assert surface.use_skill("package-tracking", "r", "s").release_id == machine.store.current("package-tracking").release_id
