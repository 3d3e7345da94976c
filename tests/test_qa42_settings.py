"""QA 42 F1/F9: a bad evolve setting (proposer.format, evolve.neighbours, evolve.canary) was caught
only when the node that reads it ran, after paid requests, and left the run open; and `evolve
--resume` of a finished run asked for a model it does not need."""

from __future__ import annotations

import pytest

from conftest import flat
from evolve_fakes import SKILL, World, eta_patch, new_workspace, seed_failures
from skillforge.errors import ConfigError
from skillforge.runners.evolve import Runner

BAD = [("SKILLFORGE_PROPOSER_FORMAT", "bogus", "must be one of"),
       ("SKILLFORGE_EVOLVE_NEIGHBOURS", "65", "from 0 to 64"),
       ("SKILLFORGE_EVOLVE_CANARY", "nope", "must be a share of sessions")]


@pytest.mark.parametrize(("name", "value", "said"), BAD, ids=["format", "neighbours", "canary"])
def test_a_bad_evolve_setting_refuses_before_any_request_and_leaves_no_run(tmp_path, monkeypatch, name, value, said):
    ws = new_workspace(tmp_path / "ws")
    log = tmp_path / "calls.log"
    world = World(lambda r: [eta_patch(claimed=2)], call_log=log)
    seed_failures(ws, world.llm())
    seeded = log.read_text().count("\n")
    monkeypatch.setenv(name, value)
    runner = Runner(ws, llm_factory=world.llm)
    with pytest.raises(ConfigError, match=said):
        runner.start(SKILL)
    assert log.read_text().count("\n") == seeded and runner.open_run(SKILL) is None
    with pytest.raises(ConfigError, match=said):  # the graph itself (Studio, the API): before collect reads anything
        from skillforge.state.evolve import EvolveState
        runner.graph.invoke(EvolveState(run_id="api-1", skill=SKILL), runner.config("api-1"),
                            context=runner.context(None))
    assert log.read_text().count("\n") == seeded
    with pytest.raises(ConfigError, match=said):  # `skills new` (a capture run) too (QA 43 M6)
        runner.capture("a skill that books bike rentals by the hour", name="bike-rental")
    assert log.read_text().count("\n") == seeded and runner.open_run("bike-rental") is None
    monkeypatch.delenv(name)
    assert runner.start(SKILL)["status"] == "PENDING_REVIEW"  # nothing was left open in the way


def test_resume_of_a_finished_run_shows_it_without_models(tmp_path, cli):
    ws = new_workspace(tmp_path / "ws")
    world = World(lambda r: [eta_patch(claimed=2)])
    seed_failures(ws, world.llm())
    runner = Runner(ws, llm_factory=world.llm)
    run_id = runner.start(SKILL)["run_id"]
    runner.answer_review(run_id, "reject", comment="no")
    shown = cli.run(["evolve", "--resume", run_id, "-w", str(ws.root)], ok=3)  # REJECTED's code; no model set
    assert "REJECTED" in flat(shown.stdout) and "no model" not in shown.stderr, shown.stderr
    assert "no model" in cli.run(["evolve", SKILL, "-w", str(ws.root)], ok=2).stderr  # an open run still needs one


@pytest.mark.parametrize(("toml", "said"), [
    ('[evolve]\ncanery = "10%"\n', "[evolve]: unknown key 'canery' (did you mean 'canary'?); the keys are neighbours, canary"),
    ("[evolve]\nneighbors = 0\n", "unknown key 'neighbors' (did you mean 'neighbours'?)"),
    ('[proposer]\nfromat = "ops"\n', "[proposer]: unknown key 'fromat' (did you mean 'format'?); the keys are format"),
    ('[evolve]\nrounds = 1\n', "[evolve]: unknown key 'rounds'; the keys are neighbours, canary"),
    ("evolve = 3\n", "[evolve] must be a table"),
    ('[evolvee]\ncanary = "10%"\n', "unknown table or key 'evolvee' (did you mean [evolve]?)"),  # QA 48 F2
    ('[Evolve]\ncanary = "10%"\n', "unknown table or key 'Evolve' (did you mean [evolve]?)"),
    ('[canary]\nshare = "10%"\n', "unknown table or key 'canary' (did you mean [evolve] canary?)"),
    ('canary = "10%"\n', "unknown table or key 'canary' (did you mean [evolve] canary?)"),
    ('[propose]\nformat = "ops"\n', "unknown table or key 'propose' (did you mean [proposer]?)"),
], ids=["canary-typo", "neighbours-typo", "format-typo", "unknown", "not-a-table", "table-typo", "table-case",
        "canary-table", "canary-top", "proposer-typo"])
def test_an_unknown_key_in_the_evolve_tables_refuses_before_any_request(tmp_path, toml, said):
    """A typo in [evolve] or [proposer] was silently ignored: `canery = "10%"` published an L1 fix
    live at once, with no canary; now it is a configuration error before anything is sent."""
    ws = new_workspace(tmp_path / "ws")
    log = tmp_path / "calls.log"
    world = World(lambda r: [eta_patch(claimed=2)], call_log=log)
    seed_failures(ws, world.llm())
    seeded = log.read_text().count("\n")
    (ws.root / "skillforge.toml").write_text(toml, encoding="utf-8")
    runner = Runner(ws, llm_factory=world.llm)
    with pytest.raises(ConfigError) as refused:
        runner.start(SKILL)
    assert said in str(refused.value)
    assert log.read_text().count("\n") == seeded and runner.open_run(SKILL) is None
    (ws.root / "skillforge.toml").write_text('[evolve]\ncanary = "off"\nneighbours = 2\n[proposer]\nformat = "auto"\n'
                                             '[sessions]\nshares = "repair=60,holdout=30,final_audit=10"\n[routing]\nx = 1\n',
                                             encoding="utf-8")
    assert runner.start(SKILL)["status"] == "PENDING_REVIEW"
