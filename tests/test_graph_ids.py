"""Ids that become paths are checked where they enter a graph (issue 21: a Studio input with run_id
`../../../../tmp/x` made the evolve graph write /tmp/x.md and three jsonl files). The rule at its
edges, then each graph given a hostile id through the Python API with a dict input (as Studio sends
it): the same named error, the first node never runs, and nothing is written anywhere."""

from __future__ import annotations

from pathlib import Path

import pytest
from evaluate_fakes import context, fake_llm, make_set, skill_text
from evolve_fakes import SKILL, World, examples_patch, new_workspace, seed_failures

from skillforge.context import EvolveContext
from skillforge.errors import InvalidId, UnknownSkill
from skillforge.rules.ids import EVOLVE_RUN_MAX, ID_MAX, IdKind, id_problem
from skillforge.state.evaluate import SkillSide
from skillforge.state.evaluate_graph import EvalState
from skillforge.state.evolve import EvolveState


# ---- the rule, at its edges ------------------------------------------------------------------
@pytest.mark.parametrize("kind,value", [
    (IdKind.RUN, "evolve-taxi-hailing-20261201-101010-abc123"), (IdKind.RUN, "r"), (IdKind.RUN, "R1.b_c-d"),
    (IdKind.RUN, "a" * ID_MAX), (IdKind.RUN, "a..b"), (IdKind.EVOLVE_RUN, "e" * EVOLVE_RUN_MAX),
    (IdKind.BATCH, "batch-all-20261201-101010-abc123"), (IdKind.SKILL, "taxi-hailing"), (IdKind.SKILL, "a" * 64),
    (IdKind.SET, "dev"), (IdKind.SET, "final_audit"), (IdKind.SET, "my set 2"), (IdKind.SET, "天气"),
    (IdKind.SET, "a" * ID_MAX),
])
def test_ids_that_name_one_plain_file_pass(kind, value):
    assert id_problem(kind, value) is None


@pytest.mark.parametrize("kind,value,says", [
    (IdKind.RUN, "../../../../tmp/x", "not a valid run id"), (IdKind.RUN, "..", "not a valid"),
    (IdKind.RUN, ".", "not a valid"), (IdKind.RUN, ".hidden", "not a valid"), (IdKind.RUN, "a/b", "not a valid"),
    (IdKind.RUN, "a\\b", "not a valid"), (IdKind.RUN, "/abs", "not a valid"), (IdKind.RUN, "", "must not be empty"),
    (IdKind.RUN, "a b", "not a valid"), (IdKind.RUN, "a\x00b", "not a valid"), (IdKind.RUN, "-flag", "not a valid"),
    (IdKind.RUN, "ü", "not a valid"), (IdKind.RUN, "a" * (ID_MAX + 1), f"at most {ID_MAX}"),
    (IdKind.RUN, 7, "must be text"), (IdKind.RUN, None, "must be text"),
    (IdKind.EVOLVE_RUN, "e" * (EVOLVE_RUN_MAX + 1), f"at most {EVOLVE_RUN_MAX}"),
    (IdKind.BATCH, "batch-../../x", "not a valid batch id"),
    (IdKind.SKILL, "../taxi-hailing", "not a valid skill name"), (IdKind.SKILL, "Taxi", "not a valid"),
    (IdKind.SKILL, "a--b", "not a valid"), (IdKind.SKILL, "a" * 65, "not a valid"), (IdKind.SKILL, "", "empty"),
    (IdKind.SET, "../dev", "not a valid set name"), (IdKind.SET, ".", "not a valid"), (IdKind.SET, "..", "not a valid"),
    (IdKind.SET, "a\\b", "not a valid"), (IdKind.SET, "a\nb", "not a valid"), (IdKind.SET, "a\x9bb", "not a valid"),
    (IdKind.SET, "a" * (ID_MAX + 1), f"at most {ID_MAX}"),
])
def test_ids_that_could_name_a_path_are_refused(kind, value, says):
    problem = id_problem(kind, value)
    assert problem is not None and says in problem


def test_the_evolve_runs_own_evaluation_ids_stay_valid():
    """validate and decide name their evaluations `<run>-<candidate>-final_audit`: valid for the longest run id."""
    assert id_problem(IdKind.RUN, "e" * EVOLVE_RUN_MAX + "-r2c5-final_audit") is None


# ---- each graph, through the Python API ----------------------------------------------------------
def _files(root: Path) -> dict[str, int]:
    """Every file and its mtime; SQLite's -wal/-shm side files left out: a reader opening the store
    makes them (a fresh-clone run under load once saw them appear, with skillforge.db unchanged)."""
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*")
            if p.is_file() and not p.name.endswith(("-wal", "-shm"))}


@pytest.fixture
def evolve_world(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    world = World(lambda r: [examples_patch()])  # an L1 fix: publishes without review
    seed_failures(ws, world.llm())
    return ws, world


@pytest.mark.parametrize("field,value", [("run_id", "../../../escaped"), ("run_id", "ABSOLUTE"),
                                         ("skill", "../../../escaped")])
def test_evolve_graph_refuses_a_path_as_run_id_or_skill_and_writes_nothing(evolve_world, tmp_path, field, value):
    from skillforge.graphs.evolve import graph  # what langgraph dev serves: no checkpointer of its own

    ws, world = evolve_world
    value = str(tmp_path / "escaped") if value == "ABSOLUTE" else value  # an absolute path, in this test's folder
    before = _files(tmp_path)
    data = {"run_id": "studio-run", "skill": SKILL, field: value}
    with pytest.raises(InvalidId, match="not a valid"):
        graph.invoke(data, context=EvolveContext(ws=ws, llm=world.llm()))
    assert _files(tmp_path) == before  # collect never ran: no repair case, no failures file, no trace
    assert not list(tmp_path.glob("escaped*"))
    with pytest.raises(InvalidId):  # the model itself, as the CLI and the Python API build it
        EvolveState.model_validate(data)


def test_evolve_graph_with_a_sound_run_id_still_runs(evolve_world):
    from skillforge.graphs.evolve import graph

    ws, world = evolve_world
    out = graph.invoke({"run_id": "studio.run_1", "skill": SKILL}, context=EvolveContext(ws=ws, llm=world.llm()))
    assert out.get("status") == "PUBLISHED", out.get("message")


@pytest.mark.parametrize("field,value", [("run_id", "../../escaped"), ("skill", "../escaped"),
                                         ("eval_set", "../escaped")])
def test_evaluate_graph_refuses_a_path_as_run_id_skill_or_set(tmp_path, field, value):
    from skillforge.graphs.evaluate import graph

    logs = tmp_path / "logs"
    ctx = context(fake_llm()[0], make_set(tmp_path, 5), logs)
    side = SkillSide(text=skill_text(), release_id="r-old").model_dump()
    data = {"run_id": "run-1", "skill": "taxi-hailing", "eval_set": "t", "baseline": side, "candidate": side,
            field: value}
    before = _files(tmp_path)
    with pytest.raises(InvalidId, match="not a valid"):
        graph.invoke(data, context=ctx)
    assert _files(tmp_path) == before and not list(tmp_path.rglob("escaped*"))
    with pytest.raises(InvalidId):
        EvalState.model_validate(data)


def test_route_graph_candidates_are_names_to_choose_from_never_paths(tmp_path):
    """The route graph's only ids are its candidates: a filter over the index, never a path. A
    hostile one is an unknown skill (named error) before any layer runs, and nothing is logged."""
    from skillforge.context import RouteContext
    from skillforge.graphs.route import graph
    from skillforge.routing.index import RouteIndex

    from helpers import FakeEmbedder, bench_skills

    log = tmp_path / "runs" / "router.jsonl"
    ctx = RouteContext(index=RouteIndex.build(bench_skills()[:3], FakeEmbedder()), router_log=log)
    with pytest.raises(UnknownSkill):
        graph.invoke({"query": "weather in Paris", "candidates": ["../../escaped"]}, context=ctx)
    assert not log.exists() and not list(tmp_path.rglob("escaped*"))


# ---- the CLI's own entries, and the workspace id ---------------------------------------------------
def test_runner_and_batch_files_refuse_a_path_before_anything_is_read_or_written(machine, tmp_path):
    from skillforge.runners.batchfile import read_batch, write_batch
    from skillforge.runners.evolve import Runner
    from skillforge.state.evolve import ReviewAction

    ws = machine.ws
    runner = Runner(ws)
    for call in (lambda: runner.summary("../../x"), lambda: runner.resume("../x"),
                 lambda: runner.answer_review("../../../answer", ReviewAction.APPROVE)):
        with pytest.raises(InvalidId, match="not a valid run id"):
            call()
    (tmp_path / "x.json").write_text('{"runs": {}}')
    with pytest.raises(InvalidId, match="not a valid batch id"):
        read_batch(ws, "batch-../../../x")
    with pytest.raises(InvalidId):
        write_batch(ws, "../escaped", {})
    assert not list(tmp_path.rglob("*answer*")) and not list(tmp_path.rglob("escaped*"))


def test_sqlite_threads_stay_bare_run_ids_and_make_no_workspace_id(machine):
    from skillforge.runners.evolve import Runner

    runner = Runner(machine.ws)
    assert runner.scope is None and runner.config("r1") == {"configurable": {"thread_id": "r1"}}
    assert not (machine.ws.runs_dir / "workspace-id").exists()  # existing workspaces are left as they were


@pytest.mark.parametrize("folder,want", [("My Work Space!", "my-work-space-abc"), ("ws", "ws-abc"),
                                         ("天气", "ws-abc"), ("--", "ws-abc"), ("a" * 40, "a" * 24 + "-abc"),
                                         ("x" * 23 + "-y", "x" * 23 + "-abc")])
def test_new_workspace_id(folder, want):
    from skillforge.rules.ids import new_workspace_id

    assert new_workspace_id(folder, "abc") == want and id_problem(IdKind.WORKSPACE, want) is None


def test_the_workspace_id_is_made_once_even_by_racing_processes(tmp_path):
    import threading

    from skillforge.config import Workspace, init_workspace

    root = init_workspace(tmp_path / "Shared WS").root
    seen: list[str] = []
    threads = [threading.Thread(target=lambda: seen.append(Workspace(root).workspace_id)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(seen)) == 1 and seen[0].startswith("shared-ws-") and len(seen) == 8
    assert (root / "runs" / "workspace-id").read_text().strip() == seen[0]
    assert [p.name for p in (root / "runs").iterdir()] == ["workspace-id"]  # no temp file left


def test_a_hand_edited_workspace_id_is_a_named_error(tmp_path):
    from skillforge.config import Workspace, init_workspace
    from skillforge.errors import WorkspaceError

    root = init_workspace(tmp_path / "ws").root
    (root / "runs" / "workspace-id").write_text("../other\n")
    with pytest.raises(WorkspaceError, match="does not hold a workspace id"):
        Workspace(root).workspace_id


@pytest.mark.parametrize("threads,scope,run,owner", [
    (["a-1/r1", "b-2/r1", "b-2/r2"], "a-1", "r1", "b-2"),   # the same id in two workspaces: the other one's
    (["a-1/r1"], "a-1", "r1", None),                       # mine only
    (["b-2/r9"], "a-1", "r1", None),                       # nobody's
    (["r1"], "a-1", "r1", ""),                             # a thread from before scoping: no workspace
    (["b-2/r10"], "a-1", "r1", None),                      # not a prefix match
    (["b-2/r1"], None, "r1", None),                        # the workspace's own SQLite file: never foreign
])
def test_run_owner(threads, scope, run, owner):
    from skillforge.rules.ids import run_owner

    assert run_owner(threads, scope, run) == owner


def test_scoped_run_ids():
    from skillforge.rules.ids import scoped_run_ids, thread_id

    threads = [thread_id("a-1", "r2"), thread_id("a-1", "r1"), thread_id("a-10", "r3"), "legacy", "b-2/r4"]
    assert scoped_run_ids(threads, "a-1") == ["r1", "r2"]
    assert scoped_run_ids(["r2", "r1"], None) == ["r1", "r2"] and thread_id(None, "r1") == "r1"
