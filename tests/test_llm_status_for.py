"""`llm status [--for evolve|evaluate|route]` (issue 21: `llm status` exited 1 when only the router
was unconfigured, though evolve needs no router). The rule at its edges, then the command against a
real local OpenAI-compatible server: each role reported, exit 1 only for roles the command needs."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

from skillforge.rules.roles import LLMCommand, Need, role_blocks, role_need
from skillforge.state.llm import Role
from skillforge.testing.openai_server import FakeOpenAIServer, Reply


# ---- the rule ------------------------------------------------------------------------------------
@pytest.mark.parametrize("command,needed", [
    (LLMCommand.EVOLVE, {Role.EXECUTOR, Role.JUDGE, Role.PROPOSER}),
    (LLMCommand.EVALUATE, {Role.EXECUTOR, Role.JUDGE}),
    (LLMCommand.ROUTE, set()),
    (None, {Role.EXECUTOR, Role.JUDGE, Role.PROPOSER}),
])
def test_required_roles_per_command(command, needed):
    assert {r for r in Role if role_need(command, r) is Need.REQUIRED} == needed
    router = role_need(command, Role.ROUTER)
    assert router is (Need.UNUSED if command in (LLMCommand.EVOLVE, LLMCommand.EVALUATE) else Need.OPTIONAL)


def test_the_rule_agrees_with_what_the_commands_check_before_they_run():
    from skillforge.evaluation.compare import RUN_ROLES

    assert {r for r in Role if role_need(LLMCommand.EVALUATE, r) is Need.REQUIRED} == set(RUN_ROLES)


@pytest.mark.parametrize("need,configured,answers,blocks", [
    (Need.REQUIRED, True, True, False), (Need.REQUIRED, True, False, True), (Need.REQUIRED, False, False, True),
    (Need.REQUIRED, True, None, True),                 # not checked is never "fine" for a needed role
    (Need.OPTIONAL, False, False, False),              # unconfigured router: route ends at the embed layer
    (Need.OPTIONAL, True, False, True), (Need.OPTIONAL, True, True, False),
    (Need.UNUSED, False, None, False), (Need.UNUSED, True, False, False),
])
def test_role_blocks(need, configured, answers, blocks):
    assert role_blocks(need, configured, answers) is blocks


# ---- the command -----------------------------------------------------------------------------------
def _rows(proc) -> dict[str, dict[str, object]]:  # noqa: ANN001
    return {r["role"]: r for r in json.loads(proc.stdout)}


def test_status_fails_only_for_the_roles_the_command_needs(workspace):
    ws = str(workspace.root)
    with FakeOpenAIServer(default=Reply.text("OK")) as srv:
        every_but_router = {f"SKILLFORGE_{role}_{key}": value for role in ("EXECUTOR", "JUDGE", "PROPOSER")
                            for key, value in (("BASE_URL", srv.base_url), ("MODEL", "m"))}
        rows = _rows(run_cli(["llm", "status", "--json", "-w", ws], every_but_router, ok=0))  # the issue: this was 1
        assert rows["router"]["need"] == "optional" and rows["router"]["error"] == "not configured"
        assert not rows["router"]["blocks"] and all(rows[r]["ok"] for r in ("executor", "judge", "proposer"))

        down_router = {**every_but_router, "SKILLFORGE_ROUTER_BASE_URL": "http://127.0.0.1:9/v1",
                       "SKILLFORGE_ROUTER_MODEL": "r", "SKILLFORGE_ROUTER_MAX_RETRIES": "0"}
        hits = srv.hits
        rows = _rows(run_cli(["llm", "status", "--for", "evolve", "--json", "-w", ws], down_router, ok=0))
        assert rows["router"]["need"] == "unused" and rows["router"]["ok"] is None and not rows["router"]["blocks"]
        assert srv.hits == hits + 1  # one ping for the (endpoint, model) the three roles share; the router unchecked
        rows = _rows(run_cli(["llm", "status", "--for", "route", "--json", "-w", ws], down_router, ok=1))
        assert rows["router"]["blocks"] and "connect" in str(rows["router"]["error"])
        assert all(rows[r]["need"] == "unused" for r in ("executor", "judge", "proposer"))

        down_judge = {**every_but_router, "SKILLFORGE_JUDGE_BASE_URL": "http://127.0.0.1:9/v1",
                      "SKILLFORGE_JUDGE_MAX_RETRIES": "0"}
        table = run_cli(["llm", "status", "--for", "evaluate", "-w", ws], down_judge, ok=1).stdout
        assert "not checked: evaluate does not use it" in table and "no: cannot connect" in table
