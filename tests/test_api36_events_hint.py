"""QA 36 F4 (events API) and F6 (runs in a Postgres checkpointer, looked for without its URL).

- `record_use` / `record_feedback` / `record_tool_error` take the workspace's folder path as the
  CLI's `-w DIR` does (they crashed with AttributeError 'str' has no attribute 'db_path'); a value
  that is neither is EventError. Refused values are shown with repr and type ("got '12' (str)").
- Without SKILLFORGE_CHECKPOINT_URL, a workspace that has runs/workspace-id (made only for a shared
  checkpoint database's runs and batches) says so where no run is found: `review list`, and a run id
  that is not in checkpoints/graphs.sqlite.
"""

from __future__ import annotations

import pytest
from conftest import live_release, run_cli

from skillforge.config import WORKSPACE_ID_FILE
from skillforge.errors import EventError, UnknownRun, WorkspaceError
from skillforge.events import EventLog, record_feedback, record_tool_error, record_use
from skillforge.runners.reader import RunReader
from skillforge.state.events import EventKind

SKILL = "taxi-hailing"


@pytest.fixture
def ws(machine):
    return machine.ws


def test_the_events_api_takes_the_workspace_path(ws):
    used = record_use(str(ws.root), "s-path", SKILL, None)
    assert used.kind is EventKind.SKILL_USED and used.release_id == live_release(ws, SKILL)
    fb = record_feedback(ws.root, "s-path", SKILL, "good", tokens=12)  # a Path too
    err = record_tool_error(str(ws.root), "s-path", SKILL, None, "the taxi API timed out")
    assert fb.release_id == err.release_id == used.release_id
    assert [e.seq for e in EventLog(str(ws.root)).read_public().events] == [used.seq, fb.seq, err.seq]


def test_a_path_that_is_not_a_workspace_or_a_value_that_is_no_path_is_named(ws, tmp_path):
    with pytest.raises(WorkspaceError, match="is not a SkillForge workspace"):
        record_use(str(tmp_path), "s1", SKILL, None)
    for bad in (None, 42, ""):
        with pytest.raises(EventError, match=r"the workspace must be a Workspace .* or a workspace folder's path, got"):
            record_use(bad, "s1", SKILL, None)  # type: ignore[arg-type]
    with pytest.raises(EventError, match=r"got 42 \(int\)"):
        record_feedback(42, "s1", SKILL, "good")  # type: ignore[arg-type]


@pytest.mark.parametrize("kwargs,says", [
    ({"tokens": "12"}, "got '12' (str)"),
    ({"tokens": True}, "got True (bool)"),
    ({"tokens": 1.5}, "got 1.5 (float)"),
    ({"outcome": 5}, "unknown outcome 5 (int)"),
    ({"outcome": "great"}, "unknown outcome 'great': use one of"),  # a word: no "(str)" (QA 42 F7)
    ({"corrects": "3"}, "got '3' (str)"),
    ({"private": "yes"}, "private must be True or False, got 'yes' (str)"),
    ({"release_id": 5}, "the release id must be text (a release id or a prefix of one), got 5 (int)"),
])
def test_refused_event_values_show_repr_and_type(ws, kwargs, says):
    outcome = kwargs.pop("outcome", "good")
    kwargs.setdefault("release_id", live_release(ws, SKILL))
    with pytest.raises(EventError) as e:
        record_feedback(ws, "s1", SKILL, outcome, **kwargs)
    assert says in str(e.value), str(e.value)
    with pytest.raises(EventError, match=r"release id must be text .*got 5 \(int\)"):
        record_use(ws, "s1", SKILL, 5)  # type: ignore[arg-type]


# ---- F6: Postgres runs looked for in the SQLite file ------------------------------------------
def test_no_hint_for_a_workspace_that_never_used_a_shared_database(ws, monkeypatch):
    monkeypatch.delenv("SKILLFORGE_CHECKPOINT_URL", raising=False)
    assert RunReader(ws).elsewhere == ""
    with pytest.raises(UnknownRun) as e:
        RunReader(ws).read("evolve-nowhere")
    assert "Postgres" not in str(e.value)
    out = run_cli(["-w", str(ws.root), "review", "list"])
    assert out.stdout.strip() == "no run waits for a review"


def test_a_workspace_with_a_workspace_id_says_its_runs_may_be_in_postgres(ws, monkeypatch):
    monkeypatch.delenv("SKILLFORGE_CHECKPOINT_URL", raising=False)
    assert ws.workspace_id  # made as a shared database's runs or a batch's claims make it
    assert (ws.runs_dir / WORKSPACE_ID_FILE).is_file()
    with pytest.raises(UnknownRun) as e:
        RunReader(ws).read("evolve-in-postgres")
    said = str(e.value)
    assert said.startswith("no evolve run 'evolve-in-postgres' in ") and "graphs.sqlite" in said
    assert "made runs with a Postgres checkpointer" in said and "set SKILLFORGE_CHECKPOINT_URL" in said
    listed = run_cli(["-w", str(ws.root), "review", "list"])
    assert listed.returncode == 0 and "no run waits for a review in " in listed.stdout
    assert "set SKILLFORGE_CHECKPOINT_URL" in listed.stdout
    as_json = run_cli(["-w", str(ws.root), "review", "list", "--json"])
    assert as_json.stdout.strip() == "[]" and "set SKILLFORGE_CHECKPOINT_URL" in as_json.stderr
    approve = run_cli(["-w", str(ws.root), "review", "approve", "evolve-in-postgres"], ok=2)
    assert approve.returncode == 2 and "set SKILLFORGE_CHECKPOINT_URL" in approve.stderr
    runs = run_cli(["-w", str(ws.root), "runs", "list", "--json"])
    assert runs.stdout.strip() == "[]" and "set SKILLFORGE_CHECKPOINT_URL" in runs.stderr  # the note on stderr
