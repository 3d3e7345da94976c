"""QA 36 F4/F5 over the HTTP API of a real `langgraph dev` (test_studio's fixture): a wrong input
type, a context key the context class does not have, and a review answer with `"force": "yes"` are
named errors whose text reaches the client; the refused answer is not stored and a real one is
taken. Also pins what docs/studio.md says of a refused answer (QA 36 F7): the thread's
`interrupts` is empty while `/state` still has the pending interrupt."""

from __future__ import annotations

from evolve_fakes import SKILL
from test_studio import studio  # noqa: F401 - the fixture

from skillforge.config import Workspace
from skillforge.library.registry import SkillRegistry


def _error(answer: object) -> dict[str, str]:
    assert isinstance(answer, dict) and "__error__" in answer, answer
    return answer["__error__"]


def test_named_errors_for_wrong_types_over_http(studio):  # noqa: F811
    api, ws_root, _ = studio
    by_graph = {a["graph_id"]: a["assistant_id"] for a in api.call("POST", "/assistants/search", {"limit": 20})}

    bad = _error(api.call("POST", "/runs/wait", {"assistant_id": by_graph["route"], "input": {"query": 42}}))
    assert bad["error"] == "InvalidInput", bad
    assert "query: should be a valid string, got 42 (int)" in bad["message"] and "pydantic.dev" not in bad["message"]
    ctx = _error(api.call("POST", "/runs/wait", {"assistant_id": by_graph["route"], "input": {"query": "taxi"},
                                                 "context": {"bogus": 1}}))
    assert ctx["error"] == "InvalidContext" and "has no field 'bogus': its fields are index, llm" in ctx["message"], ctx
    ev = _error(api.call("POST", "/runs/wait", {"assistant_id": by_graph["evaluate"],
                                                "input": {"run_id": 5, "skill": SKILL, "eval_set": "dev",
                                                          "baseline": "live", "candidate": {"text": None}}}))
    assert ev["error"] == "InvalidInput" and "run_id: should be a valid string, got 5 (int)" in ev["message"], ev

    tid = api.call("POST", "/threads", {})["thread_id"]
    paused = api.call("POST", f"/threads/{tid}/runs/wait",
                      {"assistant_id": by_graph["evolve"], "input": {"run_id": "studio-lax", "skill": SKILL}})
    assert isinstance(paused, dict) and paused.get("selected"), paused
    before = SkillRegistry.load(Workspace.open(ws_root)).get(SKILL).release.release_id
    refused = _error(api.call("POST", f"/threads/{tid}/runs/wait",
                              {"assistant_id": by_graph["evolve"],
                               "command": {"resume": {"action": "approve", "force": "yes"}}}))
    assert refused["error"] == "InvalidResume", refused
    assert "force: should be a valid boolean, got 'yes' (str)" in refused["message"], refused
    thread = api.call("GET", f"/threads/{tid}")
    state = api.call("GET", f"/threads/{tid}/state")
    assert state["next"] == ["review"], state.get("next")
    assert len([i for task in state["tasks"] for i in task.get("interrupts", [])]) == 1
    assert thread["status"] == "error" and not thread.get("interrupts"), thread  # langgraph-api's view (docs/studio.md)
    assert SkillRegistry.load(Workspace.open(ws_root)).get(SKILL).release.release_id == before
    done = api.call("POST", f"/threads/{tid}/runs/wait",
                    {"assistant_id": by_graph["evolve"], "command": {"resume": {"action": "approve", "force": False}}})
    assert isinstance(done, dict) and done.get("status") == "PUBLISHED", done
