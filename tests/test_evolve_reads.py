"""Work an evolve round does once (issue 22, item 6): collect reads the base release's SKILL.md and
the evaluation sets once and the state keeps them; later nodes read them from the state. A review
rebase moves the base, so the rebased path reads both again, once. The evaluation subgraph parses
each side's SKILL.md once, not once per case. Counted on the scripted world (real git + SQLite)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from evolve_fakes import SKILL, World, eta_patch, new_workspace, seed_failures
from review_world import RUN, copy_of

import skillforge.evaluation.datasets as datasets
import skillforge.nodes.evaluate as evaluate_nodes
from skillforge.evaluation.executor import Executor, SkillUnderTest
from skillforge.library.registry import SkillRegistry
from skillforge.library.releases import ReleaseStateMachine
from skillforge.runners.evolve import Runner

HOTFIX = "- HOTFIX-LINE：报价后提醒用户核对上车点。"


@pytest.fixture
def reads(monkeypatch):
    """Counts set-file reads (by file name), registry loads, SKILL.md parses for the executor and
    case executions, from a clean parse memo."""
    seen: Counter[str] = Counter()
    read_json, load, from_text, run = datasets._read_json, SkillRegistry.load.__func__, \
        SkillUnderTest.from_text.__func__, Executor.run

    def counted_read(path: Path) -> object:
        seen[f"set {path.name}"] += 1
        return read_json(path)

    def counted_load(cls, *a, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202
        seen["registry"] += 1
        return load(cls, *a, **kw)

    def counted_parse(cls, text, release_id):  # noqa: ANN001, ANN202
        seen["parse"] += 1
        return from_text(cls, text, release_id)

    def counted_run(self, *a, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202
        seen["execution"] += 1
        return run(self, *a, **kw)
    monkeypatch.setattr(datasets, "_read_json", counted_read)
    monkeypatch.setattr(SkillRegistry, "load", classmethod(counted_load))
    monkeypatch.setattr(SkillUnderTest, "from_text", classmethod(counted_parse))
    monkeypatch.setattr(Executor, "run", counted_run)
    evaluate_nodes._parsed.cache_clear()
    return seen


def _set_reads(seen: Counter[str]) -> dict[str, int]:
    return {k: v for k, v in seen.items() if k.startswith("set ")}


def test_one_round_reads_the_sets_once_the_registry_where_it_must_and_parses_each_side_once(tmp_path, reads):
    ws = new_workspace(tmp_path / "ws")
    world = World(lambda r: [eta_patch(claimed=2)])
    seed_failures(ws, world.llm())
    evaluate_nodes._parsed.cache_clear()
    reads.clear()
    out = Runner(ws, llm_factory=world.llm).start(SKILL)
    assert out["status"] == "PENDING_REVIEW", out  # selection, holdout and final_audit all ran
    files = sorted(p.name for p in datasets.set_files(ws))
    assert _set_reads(reads) == {f"set {name}": 1 for name in files}  # was 9 reads of each file
    # start's skill check, collect (the baseline), validate and decide (the other published skills the
    # executor sees); analyze, propose, check, validate and decide each loaded it again before (8)
    assert reads["registry"] == 4, reads
    assert reads["parse"] == 2 and reads["execution"] > 20, reads  # the live release and the candidate
    state = Runner(ws, llm_factory=world.llm).state(out["run_id"])
    assert state.baseline is not None and state.baseline.release_id == state.base_release_id
    assert state.sets is not None and set(state.sets) == {s.meta.name for s in datasets.load_sets(ws).values()}


def test_a_rebase_reads_the_new_base_and_the_sets_again_once(template, tmp_path, reads):
    ws = copy_of(template, tmp_path / "ws")
    world = World(lambda r: [eta_patch(claimed=2)])
    runner = Runner(ws, llm_factory=world.llm)
    before = runner.state(RUN)
    assert before.baseline is not None and before.baseline.release_id == before.base_release_id
    fix = _hotfix(ws)
    reads.clear()
    rebased = runner.answer_review(RUN, "rebase", comment="keep the hotfix")
    assert rebased["status"] == "PENDING_REVIEW", rebased
    assert _set_reads(reads) == {f"set {p.name}": 1 for p in datasets.set_files(ws)}
    state = runner.state(RUN)
    assert state.base_release_id == fix.release_id != before.base_release_id
    assert state.baseline is not None and state.baseline.release_id == fix.release_id
    assert "HOTFIX-LINE" in state.baseline.text and "HOTFIX-LINE" not in before.baseline.text
    evaluations = [json.loads(line) for line in ws.evaluations_log.read_text(encoding="utf-8").splitlines()]
    again = [e for e in evaluations if str(e.get("run_id", "")).startswith(f"{RUN}-{state.selected}-")]
    assert {e["eval_set"] for e in again} == {"selection", "holdout", "final_audit"}
    assert {e["baseline_release_id"] for e in again} == {fix.release_id}  # measured against the new base


def _hotfix(ws):  # noqa: ANN001, ANN202 - a Workspace, a Release
    """A person edits the skill's Constraints by hand and publishes it."""
    path = ws.skills_dir / SKILL / "SKILL.md"
    path.write_text(path.read_text(encoding="utf-8").replace("## Constraints\n", f"## Constraints\n{HOTFIX}\n"),
                    encoding="utf-8")
    return ReleaseStateMachine.open(ws).publish(SKILL, triggered_by="hand hotfix")
