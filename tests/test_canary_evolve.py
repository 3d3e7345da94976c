"""Evolution's L1 results go to a canary first when the workspace says so (issue 28 item 1): the
evolve graph end to end with scripted models, as tests/test_evolve_graph.py runs it."""

from __future__ import annotations

from evolve_fakes import QUOTE_ETA, SKILL, World, examples_patch, seed_failures, write_sets

from skillforge.journal import read_jsonl
from skillforge.library.canaries import Canaries
from skillforge.library.registry import SkillRegistry
from skillforge.library.store import Store
from skillforge.runners.evolve import Runner
from skillforge.state.canary import CanaryState
from skillforge.state.release import ReleaseLevel, ReleaseStatus


def test_an_l1_win_becomes_a_canary_not_the_live_release(machine, monkeypatch) -> None:
    ws = machine.ws
    write_sets(ws)
    (ws.root / "skillforge.toml").write_text('[evolve]\ncanary = "20%"\n', encoding="utf-8")
    monkeypatch.delenv("SKILLFORGE_EVOLVE_CANARY", raising=False)
    before = SkillRegistry.load(ws).get(SKILL).release
    world = World(lambda r: [examples_patch()])
    seed_failures(ws, world.llm())
    out = Runner(ws, llm_factory=world.llm).start(SKILL)
    assert out["status"] == "PUBLISHED" and "started a canary" in out["message"], out
    store = Store(ws.db_path)
    assert store.current(SKILL).release_id == before.release_id  # type: ignore[union-attr]  # live unchanged
    rel = store.release(out["release_id"])
    assert rel.status is ReleaseStatus.PREPARING and rel.level is ReleaseLevel.L1
    canary = Canaries(store).open_of(SKILL)
    assert canary is not None and canary.release_id == rel.release_id and canary.share == 0.2
    assert canary.state is CanaryState.OPEN and canary.live_release_id == before.release_id
    reg = SkillRegistry.load(ws)
    bodies = {sid: reg.serve(SKILL, sid) for sid in (f"s{i}" for i in range(200))}
    in_canary = [s for s in bodies.values() if s.release.release_id == rel.release_id]
    assert 20 < len(in_canary) < 60 and all(QUOTE_ETA in s.body for s in in_canary)
    assert QUOTE_ETA not in reg.serve(SKILL, None).body
    evals = [e for e in read_jsonl(ws.evaluations_log) if e.get("release_id") == rel.release_id]
    assert len(evals) == 1 and evals[0]["kind"] == "evolve"  # the offline evidence stays with the release


def test_evolving_a_skill_in_canary_waits_for_a_person(machine, monkeypatch) -> None:
    """A second run whose result would be published while the first run's canary is open is not
    published: it waits in review, saying why (CanaryOpen), and the canary is untouched."""
    ws = machine.ws
    write_sets(ws)
    monkeypatch.setenv("SKILLFORGE_EVOLVE_CANARY", "20%")
    world = World(lambda r: [examples_patch()])
    seed_failures(ws, world.llm())
    first = Runner(ws, llm_factory=world.llm).start(SKILL)
    assert "started a canary" in first["message"], first
    second = Runner(ws, llm_factory=world.llm).start(SKILL)
    assert second["status"] != "PUBLISHED" and "canary" in second["message"], second
    canary = Canaries(Store(ws.db_path)).open_of(SKILL)
    assert canary is not None and canary.release_id == first["release_id"] and canary.state is CanaryState.OPEN
