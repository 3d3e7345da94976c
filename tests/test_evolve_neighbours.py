"""The `evolve.neighbours` setting: how many reworded failures join each candidate's selection cases
(auto: fewer on the embedded model, where each costs a proposer call and a case per candidate)."""

from __future__ import annotations

import pytest

from skillforge.config import init_workspace
from skillforge.errors import ConfigError
from skillforge.evolution.validate import LOCAL_NEIGHBOURS, MAX_NEIGHBOURS, Paraphrases, neighbour_limit, neighbours
from skillforge.llm.client import LLM
from skillforge.llm.config import evolve_neighbours, resolve_all
from skillforge.state.evaluate import Case
from skillforge.state.evolve import Failure, FailureKind
from skillforge.state.llm import Role
from skillforge.testing.evolve_world import ENV
from skillforge.testing.fake_chat import ScriptedChatModel


def test_the_setting_from_env_and_toml(tmp_path):
    ws = init_workspace(tmp_path / "w")
    assert evolve_neighbours(ws, env={}) is None
    (ws.root / "skillforge.toml").write_text("[evolve]\nneighbours = 3\n", encoding="utf-8")
    assert evolve_neighbours(ws, env={}) == 3
    assert evolve_neighbours(ws, env={"SKILLFORGE_EVOLVE_NEIGHBOURS": "0"}) == 0
    assert evolve_neighbours(ws, env={"SKILLFORGE_EVOLVE_NEIGHBOURS": "auto"}) is None
    for bad in ("-1", "65", "two", "1.5"):
        with pytest.raises(ConfigError, match="SKILLFORGE_EVOLVE_NEIGHBOURS: must be a whole number from 0 to 64"):
            evolve_neighbours(ws, env={"SKILLFORGE_EVOLVE_NEIGHBOURS": bad})
    (ws.root / "skillforge.toml").write_text("[evolve]\nneighbours = true\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"\[evolve\] neighbours"):
        evolve_neighbours(ws, env={})


def test_auto_is_fewer_on_the_embedded_model_and_a_setting_wins():
    assert neighbour_limit(None, local=True) == LOCAL_NEIGHBOURS < MAX_NEIGHBOURS == neighbour_limit(None, local=False)
    assert neighbour_limit(0, local=False) == 0
    assert neighbour_limit(5, local=True) == 5


def test_neighbours_stop_at_the_limit_and_ask_no_more():
    failures = [Failure(case=Case(id=f"c{i}", skill="s", query=f"book a table for {i} people at noon"),
                        kind=FailureKind.TASK, reason="r", run_id="r1") for i in range(6)]
    asked: list[str] = []

    def answer(messages):  # noqa: ANN001, ANN202 - one distinct rewording per request
        asked.append(messages[-1].content)
        words = ["reserve seats for lunch", "get us a midday booking", "hold a noon table", "lunch reservation needed",
                 "secure a table around twelve", "we want to dine at noon"]
        return Paraphrases(queries=[words[len(asked) - 1]])

    llm = LLM(resolve_all(env=ENV), {Role.PROPOSER: ScriptedChatModel.responding(answer)})
    out = neighbours(llm, failures, [f.case.query for f in failures], limit=2)
    assert [c.id for c in out] == ["c0_nb1", "c1_nb1"] and len(asked) == 2
    assert neighbours(llm, failures, [], limit=0) == [] and len(asked) == 2
