"""The checkpoint serializer allows every type under skillforge/state/ (found by walking the package,
no module list), and a checkpoint written before a type moved into state/ (it names the old module)
loads back as the typed model it was."""

from __future__ import annotations

import enum
import inspect
import typing

import pytest
from evaluate_fakes import BETTER, context, fake_llm, make_set, skill_text
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from pydantic import BaseModel

from skillforge.graphs.evaluate import build_evaluate_graph
from skillforge.runners.checkpoint import LEGACY_TYPES, serializer, sqlite_saver, state_modules, state_types
from skillforge.state.cliopts import EvalVerdict, ExecutionMode, Role
from skillforge.state.evaluate import CaseTask, SkillSide
from skillforge.state.evaluate_graph import EvalState
from skillforge.state.evolve import EvolveState
from skillforge.state.result import (DimensionScores, EvalKind, EvalResult, Evidence, Measured, Outcome,
                                     RatchetVerdict)
from skillforge.state.route import RouteState

OLD_PATHS = {EvalKind: "skillforge.evaluation.compare", Measured: "skillforge.evaluation.compare",
             EvalResult: "skillforge.evaluation.compare", Outcome: "skillforge.rules.paired",
             Evidence: "skillforge.rules.paired", DimensionScores: "skillforge.rules.ratchet",
             RatchetVerdict: "skillforge.rules.ratchet", EvalVerdict: "skillforge.state.result",
             ExecutionMode: "skillforge.state.evaluate", Role: "skillforge.state.llm"}
"""Where the moved types lived when the last release wrote its checkpoints."""


def reached(tp: object, seen: set[type]) -> set[type]:
    """Every pydantic model and enum a state type holds, however deep."""
    for arg in typing.get_args(tp):
        reached(arg, seen)
    if inspect.isclass(tp) and issubclass(tp, (BaseModel, enum.Enum)) and tp not in seen:
        seen.add(tp)
        if issubclass(tp, BaseModel):
            for field in tp.model_fields.values():
                reached(field.annotation, seen)
    return seen


def test_every_type_a_graph_keeps_in_state_lives_in_state_and_is_allowed():
    allowed = set(state_types())
    held = reached(EvalState, set()) | reached(EvolveState, set()) | reached(RouteState, set()) \
        | reached(CaseTask, set())
    assert {t.__module__ for t in held} <= set(state_modules())
    assert {(t.__module__, t.__name__) for t in held} <= allowed
    assert {m for m, _ in allowed} <= set(state_modules())  # found by the walk, nothing from outside


def test_the_walk_finds_every_state_module():
    assert {"skillforge.state.evaluate", "skillforge.state.evolve", "skillforge.state.result",
            "skillforge.state.evaluate_graph", "skillforge.state.llm"} <= set(state_modules())
    assert ("skillforge.state.result", "EvalResult") in state_types()


def test_every_legacy_path_names_a_type_of_state_now():
    assert set(OLD_PATHS) <= set(LEGACY_TYPES.values())
    assert all((old, t.__name__) in LEGACY_TYPES for t, old in OLD_PATHS.items())
    assert all((t.__module__, t.__name__) in state_types() for t in LEGACY_TYPES.values())
    assert ("skillforge.evaluation", "EvalResult") in LEGACY_TYPES  # before evaluation/ was a package


def result() -> EvalResult:
    scores = DimensionScores(task=0.5, robustness=0.6, readability=0.7, efficiency=0.8)
    ev = Evidence(wins=6, losses=0, ties=2, p_value=0.016, p_adjusted=0.016, ci=(0.1, 0.4), mean=0.25,
                  outcome=Outcome.WIN, mde=0.3)
    return EvalResult(run_id="r", skill="s", eval_set="dev", verdict="PASS", kind=EvalKind.AA, improvement=Outcome.WIN,
                      evidence={"effect": ev}, measured=Measured(old=scores, new=scores, valid_cases=8,
                                                                 invalid_cases=0, invalid_rate=0.0, flip_rate=0.0))


def old_blob(monkeypatch: pytest.MonkeyPatch, value: object, paths: dict[type, str] = OLD_PATHS) -> tuple[str, bytes]:
    """`value` serialised as the last release did: each moved type named by its old module."""
    with monkeypatch.context() as m:
        for cls, old in paths.items():
            m.setattr(cls, "__module__", old)
        return serializer().dumps_typed(value)


@pytest.mark.parametrize("old", ["skillforge.evaluation", "skillforge.evaluation.compare"])
def test_a_blob_naming_the_old_modules_loads_as_the_state_types(monkeypatch, old):
    paths = {**OLD_PATHS, **{t: old for t in (EvalKind, Measured, EvalResult)}}
    blob = old_blob(monkeypatch, {"result": result(), "kind": EvalKind.AA, "outcomes": [Outcome.LOSS]}, paths)
    assert old.encode() in blob[1] and b"skillforge.rules.paired" in blob[1]
    back = serializer().loads_typed(blob)
    assert back["kind"] is EvalKind.AA and back["outcomes"] == [Outcome.LOSS]
    assert isinstance(back["outcomes"][0], Outcome)
    r = back["result"]
    assert isinstance(r, EvalResult) and r == result()
    assert isinstance(r.measured, Measured) and isinstance(r.measured.new, DimensionScores)
    assert isinstance(r.evidence["effect"], Evidence) and r.evidence["effect"].outcome is Outcome.WIN


def test_the_enums_the_cli_names_load_typed_from_their_old_modules(monkeypatch):
    """EvalVerdict, ExecutionMode and Role moved to state/cliopts.py (the CLI's start-up imports no
    pydantic): a checkpoint naming them by state.result, state.evaluate and state.llm still loads them."""
    value = {"verdict": EvalVerdict.DECLINED, "mode": ExecutionMode.DISCLOSURE, "role": Role.JUDGE}
    blob = old_blob(monkeypatch, value)
    assert b"skillforge.state.result" in blob[1] and b"skillforge.state.llm" in blob[1]
    back = serializer().loads_typed(blob)
    assert back["verdict"] is EvalVerdict.DECLINED and back["mode"] is ExecutionMode.DISCLOSURE
    assert back["role"] is Role.JUDGE
    plain = JsonPlusSerializer(allowed_msgpack_modules=state_types()).loads_typed(blob)
    assert not isinstance(plain["verdict"], EvalVerdict)  # without the table: blocked, a plain value


def test_without_the_legacy_table_the_same_blob_comes_back_untyped(monkeypatch):
    """The check above can fail: LangGraph alone blocks the old paths (raw dicts and strings)."""
    blob = old_blob(monkeypatch, {"result": result(), "kind": EvalKind.AA})
    back = JsonPlusSerializer(allowed_msgpack_modules=state_types()).loads_typed(blob)
    assert isinstance(back["result"], dict) and not isinstance(back["kind"], EvalKind)


def test_a_blob_of_today_is_read_as_is():
    blob = serializer().dumps_typed({"result": result(), "kind": EvalKind.AB})
    back = serializer().loads_typed(blob)
    assert back["result"] == result() and back["kind"] is EvalKind.AB


def test_an_evaluation_checkpointed_by_the_last_release_resumes_typed(tmp_path, monkeypatch):
    """The evaluate graph writes its checkpoints with the moved types under their old modules (as the
    last release did); a new process's saver reads its state back as typed models."""
    db = tmp_path / "evaluate.sqlite"
    state = EvalState(run_id="old-run", skill="taxi-hailing", eval_set="t",
                      baseline=SkillSide(text=skill_text(), release_id="r-old"),
                      candidate=SkillSide(text=skill_text(BETTER), release_id="r-new"))
    cfg = {"configurable": {"thread_id": "old-run"}, "max_concurrency": 2}
    with monkeypatch.context() as m:
        for cls, old in OLD_PATHS.items():
            m.setattr(cls, "__module__", old)
        build_evaluate_graph(checkpointer=sqlite_saver(db)).invoke(
            state, cfg, context=context(fake_llm()[0], make_set(tmp_path, 5)), durability="sync")
    raw = db.read_bytes() + (tmp_path / "evaluate.sqlite-wal").read_bytes() \
        if (tmp_path / "evaluate.sqlite-wal").exists() else db.read_bytes()
    assert b"skillforge.evaluation.compare" in raw  # written under the old paths
    values = build_evaluate_graph(checkpointer=sqlite_saver(db)).get_state(cfg).values
    assert values["kind"] is EvalKind.AB
    assert isinstance(values["result"], EvalResult) and values["result"].verdict == "REVIEW"
    assert isinstance(values["result"].measured, Measured)
    assert all(isinstance(e, Evidence) for e in values["result"].evidence.values())
    assert values["result"].improvement is Outcome.WIN
