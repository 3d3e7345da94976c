"""LangGraph Studio: the real `langgraph dev` server (in-memory runtime) on a free loopback port,
driven through its HTTP API as Studio drives it. It serves the graphs of
skillforge.testing.studio_graphs (a langgraph.json written for the test): they get no context from
the caller and build it from $SKILLFORGE_WORKSPACE, with the scripted evolve world's models. The
server runs in a temp folder (its .langgraph_api/ goes there, not into the repository) and is
stopped by its process group."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO, cli_env
from evolve_fakes import SKILL, World, eta_patch, new_workspace, seed_failures

from skillforge.config import Workspace
from skillforge.library.registry import SkillRegistry

LANGGRAPH_EXE = Path(sys.executable).parent / "langgraph"
pytestmark = pytest.mark.skipif(not LANGGRAPH_EXE.exists(), reason="needs the [studio] extra (make test installs it)")
STARTUP_S = 90.0
"""How long the server may take to answer /ok before the test fails (not a speed assertion)."""
STUDIO_GRAPHS = "skillforge.testing.studio_graphs"
"""The graphs the server runs: skillforge.graphs' builds whose settings-built context has scripted models."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Api:
    """The server's REST API over urllib (JSON in, JSON out)."""

    def __init__(self, base: str) -> None:
        self.base = base

    def call(self, method: str, path: str, body: object | None = None, timeout: float = 120) -> object:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as e:
            raise AssertionError(f"{method} {path} -> {e.code}: {e.read().decode(errors='replace')[:2000]}") from None


@pytest.fixture
def studio(tmp_path: Path) -> Iterator[tuple[Api, Path, Path]]:
    """A workspace with planted failures, and `langgraph dev` serving the three graphs on it."""
    ws = new_workspace(tmp_path / "ws")
    seed_failures(ws, World(lambda r: [eta_patch(claimed=2)]).llm())
    cwd = tmp_path / "server"
    cwd.mkdir()
    config = tmp_path / "langgraph.json"
    config.write_text(json.dumps({"dependencies": [str(REPO)],
                                  "graphs": {g: f"{STUDIO_GRAPHS}:{g}" for g in ("route", "evaluate", "evolve")}}),
                      encoding="utf-8")
    port = _free_port()
    env = cli_env({"SKILLFORGE_WORKSPACE": str(ws.root),
                   "LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGGRAPH_NO_VERSION_CHECK": "true",
                   "LANGSMITH_TRACING": "false", "OMP_NUM_THREADS": "1",
                   "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))})
    log = (tmp_path / "server.log").open("w")
    proc = subprocess.Popen([str(LANGGRAPH_EXE), "dev", "--config", str(config), "--host", "127.0.0.1",
                             "--port", str(port), "--no-browser", "--no-reload"],
                            cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    api = Api(f"http://127.0.0.1:{port}")
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            assert proc.poll() is None, f"langgraph dev exited {proc.returncode}:\n{_tail(tmp_path)}"
            try:
                if api.call("GET", "/ok", timeout=2) is not None:
                    break
            except (OSError, AssertionError):
                pass
            assert time.monotonic() < deadline, f"langgraph dev did not answer /ok:\n{_tail(tmp_path)}"
            time.sleep(0.5)
        yield api, ws.root, cwd
    finally:
        _stop(proc)
        log.close()
    assert proc.poll() is not None
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pid, 0)  # the whole process group (server and its workers) is gone


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the server's process group; SIGKILL if it has not exited after 20 s."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # children that outlive the leader for a moment
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)


def _tail(tmp_path: Path) -> str:
    return (tmp_path / "server.log").read_text(errors="replace")[-4000:]


def test_langgraph_dev_serves_the_three_graphs_routes_and_evolves_through_review(studio, tmp_path):
    api, ws_root, cwd = studio
    assistants = api.call("POST", "/assistants/search", {"limit": 20})
    assert isinstance(assistants, list)
    by_graph = {a["graph_id"]: a["assistant_id"] for a in assistants}
    assert set(by_graph) == {"route", "evaluate", "evolve"}, assistants
    for graph_id, assistant_id in by_graph.items():  # what Studio draws
        drawn = api.call("GET", f"/assistants/{assistant_id}/graph")
        assert isinstance(drawn, dict) and {"__start__", "__end__"} <= {n["id"] for n in drawn["nodes"]}, graph_id

    # route: no context in the request; the graph builds it from the workspace's settings
    routed = api.call("POST", "/runs/wait", {"assistant_id": by_graph["route"], "input": {"query": "帮我叫辆车去虹桥火车站"}})
    assert isinstance(routed, dict) and routed.get("chosen") == SKILL, routed
    assert routed["hit_layer"] in ("rule", "embed"), routed
    logged = [json.loads(line) for line in (ws_root / "runs" / "router.jsonl").read_text(encoding="utf-8").splitlines()]
    assert logged[-1]["chosen"] == SKILL and logged[-1]["source"] == "route"

    # evolve with a run id that is a path: a named error shown to the client, and nothing written
    ws_files = _files(ws_root)
    hostile = api.call("POST", "/threads", {})
    assert isinstance(hostile, dict)
    refused = api.call("POST", f"/threads/{hostile['thread_id']}/runs/wait",
                       {"assistant_id": by_graph["evolve"], "input": {"run_id": "../../../escaped", "skill": SKILL}})
    assert isinstance(refused, dict) and refused.get("__error__", {}).get("error") == "InvalidId", refused
    assert "'../../../escaped' is not a valid evolve run id" in refused["__error__"]["message"], refused
    assert _files(ws_root) == ws_files and not list(tmp_path.rglob("escaped*"))

    # evolve: runs until the L2 review interrupt
    thread = api.call("POST", "/threads", {})
    assert isinstance(thread, dict)
    tid = thread["thread_id"]
    paused = api.call("POST", f"/threads/{tid}/runs/wait",
                      {"assistant_id": by_graph["evolve"], "input": {"run_id": "studio-evolve", "skill": SKILL}})
    assert isinstance(paused, dict) and paused.get("selected") and "release_id" not in paused, paused
    thread = api.call("GET", f"/threads/{tid}")
    assert isinstance(thread, dict) and thread["status"] == "interrupted", thread.get("status")
    state = api.call("GET", f"/threads/{tid}/state")
    assert isinstance(state, dict) and state["next"] == ["review"], state.get("next")
    interrupts = [i["value"] for task in state["tasks"] for i in task.get("interrupts", [])]
    assert len(interrupts) == 1 and interrupts[0]["kind"] == "review" and interrupts[0]["level"] == 2, interrupts
    before = SkillRegistry.load(_ws(ws_root)).get(SKILL).release.release_id

    # an answer the review does not accept is refused with a message, and is not stored: the review
    # still waits (it once became the node's answer for good, and every later approve failed)
    for bad in ({"action": "maybe"}, "approve"):
        refused = api.call("POST", f"/threads/{tid}/runs/wait",
                           {"assistant_id": by_graph["evolve"], "command": {"resume": bad}})
        assert isinstance(refused, dict) and refused.get("__error__", {}).get("error") == "InvalidResume", refused
        assert "review answer was refused" in refused["__error__"]["message"], refused
        state = api.call("GET", f"/threads/{tid}/state")
        assert isinstance(state, dict) and state["next"] == ["review"], state.get("next")
        waiting = [i for task in state["tasks"] for i in task.get("interrupts", [])]
        assert len(waiting) == 1 and waiting[0]["value"]["kind"] == "review", waiting
    assert SkillRegistry.load(_ws(ws_root)).get(SKILL).release.release_id == before

    # resume with Command(resume=...): approve
    done = api.call("POST", f"/threads/{tid}/runs/wait",
                    {"assistant_id": by_graph["evolve"],
                     "command": {"resume": {"action": "approve", "comment": "approved in the Studio test"}}})
    assert isinstance(done, dict) and done.get("status") == "PUBLISHED", done
    live = SkillRegistry.load(_ws(ws_root)).get(SKILL).release
    assert live.release_id == done["release_id"] != before
    assert (cwd / ".langgraph_api").is_dir()  # the server's own state went to its cwd, not the repository


def _files(root: Path) -> dict[str, object]:
    """Every file under `root`, with its mtime; the route graph's vector cache (runs/vectors.db) by
    its rows instead: the server closes the cache's connection when it drops the route context,
    whenever that is, and SQLite then folds its WAL into the file (-wal and -shm go) with no row
    changed."""
    import sqlite3

    files: dict[str, object] = {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*")
                                if p.is_file() and not p.name.startswith("vectors.db")}
    db = root / "runs" / "vectors.db"
    if db.exists():
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            files["runs/vectors.db rows"] = {t: conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}
        conn.close()
    return files


def _ws(root: Path) -> Workspace:
    return Workspace.open(root)
