"""QA 24 findings 15, 6 and 7 through the real `langgraph dev` server (tests/test_studio.py's
fixture): a named error's text reaches the Studio user (langgraph-api shows only some exception
classes' text, "An internal error occurred" for the rest), an approve given there is stamped with
its time, and an answer the run no longer takes is an error with its reason."""

from __future__ import annotations

from test_studio import LANGGRAPH_EXE, studio  # noqa: F401 - the fixture

import pytest
from evolve_fakes import SKILL

pytestmark = pytest.mark.skipif(not LANGGRAPH_EXE.exists(), reason="needs the [studio] extra (make test installs it)")


def test_named_errors_keep_their_text_and_answers_are_stamped_and_checked(studio):  # noqa: F811
    api, ws_root, _ = studio
    by_graph = {a["graph_id"]: a["assistant_id"] for a in api.call("POST", "/assistants/search", {"limit": 20})}
    side = {"text": (ws_root / "skills" / SKILL / "SKILL.md").read_text(encoding="utf-8"), "label": "live"}
    for eval_set, skill, error, text in (("nope", SKILL, "DatasetError", "no evaluation set 'nope'; have: "),
                                         ("repair", "taxi-hailin", "UnknownSkill",
                                          "unknown skill 'taxi-hailin'. Did you mean: taxi-hailing?")):
        out = api.call("POST", "/runs/wait", {"assistant_id": by_graph["evaluate"], "input": {
            "run_id": f"st-{error}", "skill": skill, "eval_set": eval_set, "baseline": side, "candidate": side}})
        assert isinstance(out, dict) and out.get("__error__", {}).get("error") == error, out
        assert text in out["__error__"]["message"], out

    runs = {}
    for rid in ("st-r1", "st-r2"):  # two runs on the same base (Studio's runs escape one open run per skill)
        runs[rid] = f"/threads/{api.call('POST', '/threads', {})['thread_id']}/runs/wait"
        paused = api.call("POST", runs[rid], {"assistant_id": by_graph["evolve"], "input": {"run_id": rid, "skill": SKILL}})
        assert paused.get("selected") and "release_id" not in paused, paused
    run = runs["st-r1"]
    tid = run.split("/")[2]
    done = api.call("POST", run, {"assistant_id": by_graph["evolve"],
                                  "command": {"resume": {"action": "approve", "reviewer": "studio"}}})
    assert done.get("status") == "PUBLISHED", done
    assert done["review"]["answered_at"].endswith("Z"), done["review"]  # stamped by the review node
    late = api.call("POST", run, {"assistant_id": by_graph["evolve"], "command": {"resume": {"action": "reject"}}})
    assert late.get("__error__", {}).get("error") == "AlreadyAnswered", late
    assert "run st-r1 already answered: approved by studio at " in late["__error__"]["message"], late
    assert api.call("GET", f"/threads/{tid}/state")["values"]["status"] == "PUBLISHED"

    # the other run's base moved: refused, and told how to go on in Studio's terms (finding 4)
    moved = api.call("POST", runs["st-r2"], {"assistant_id": by_graph["evolve"], "command": {"resume": {"action": "approve"}}})
    assert "release_id" not in moved and moved["message"].startswith("not published: "), moved
    assert 'resume {"action": "rebase"}' in moved["message"] and "skillforge review" not in moved["message"], moved

    # QA 37 F4: a rebase with nothing to rebase (the published release already holds the same change)
    # closes the run; its message no longer tells the user to reject it (that answer is then refused)
    closed = api.call("POST", runs["st-r2"], {"assistant_id": by_graph["evolve"],
                                              "command": {"resume": {"action": "rebase"}}})
    assert closed.get("status") == "NO_IMPROVEMENT", closed
    assert "already holds the change" in closed["message"] and "The run is closed" in closed["message"], closed
    assert "reject" not in closed["message"], closed
