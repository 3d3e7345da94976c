"""QA 28 F2: runs/router.jsonl keeps route queries (and reasons) redacted, written so by the CLI's
`route`, the MCP server's `route` tool and use_skill; `skills suggest` still clusters the NONE
queries and still leaves the evaluation sets' queries out, from new (redacted) and old (raw) lines.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import run_cli
from helpers import PLAIN
from suggest_world import PLANTED, TUNE_PLANTED, planted_log_lines, route_line, write_log

from skillforge.config import Workspace, init_workspace
from skillforge.library.releases import ReleaseStateMachine
from skillforge.library.suggest import eval_queries, read_none, scan
from skillforge.nodes.route import LOG_QUERY_CHARS, logged_query
from skillforge.rules.redact import redact
from skillforge.state.suggest import SuggestStatus

NOW = datetime.now(UTC).replace(microsecond=0)
AWS_ID, AWS_SECRET = "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
GITHUB = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
PASSWORD, EMAIL = "hunter2hunter2", "bob.smith@example.com"
SECRETS = (AWS_ID, AWS_SECRET, GITHUB, PASSWORD, EMAIL)
QUERIES = {  # a query with a secret -> the mark its line must hold
    f"export AWS_SECRET_ACCESS_KEY={AWS_SECRET} and cancel my invoice tonight": "[REDACTED:aws-secret-key]",
    f"my access key {AWS_ID} stopped working, book a hotel in Paris": "[REDACTED:aws-access-key]",
    f"push with {GITHUB} then call me a taxi to the airport": "[REDACTED:github-token]",
    f"the db says DB_PASSWORD={PASSWORD} what is the weather in Beijing": "DB_PASSWORD=[REDACTED:credential-assignment]",
    f"mail {EMAIL} the exchange rate of euros to dollars": "[REDACTED:email]",
}
NORMAL = "book a hotel in Paris for two nights"


def lines(ws: Path) -> list[dict]:
    log = ws / "runs" / "router.jsonl"
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] if log.exists() else []


def no_secret(text: str) -> bool:
    return not any(s in text for s in SECRETS)


# ---- what a line keeps (nodes/route.logged_query) ----------------------------------------------
def test_each_secret_becomes_its_mark_and_a_plain_query_is_kept_as_is() -> None:
    for query, mark in QUERIES.items():
        out = logged_query(query)
        assert mark in out and no_secret(out), out
        assert redact(out)[0] == out  # read_none's redaction leaves a written line as it is
    assert logged_query(NORMAL) == NORMAL
    plain = "please help me with something unusual today " * 30
    assert logged_query(plain) == plain[:LOG_QUERY_CHARS]
    assert logged_query("北京明天天气怎么样？" * 100) == ("北京明天天气怎么样？" * 100)[:LOG_QUERY_CHARS]


def test_the_cut_never_keeps_a_part_of_a_secret_nor_halves_a_mark() -> None:
    for at in range(LOG_QUERY_CHARS - 30, LOG_QUERY_CHARS + 5):  # a token across the cut
        query = "x" * at + " " + GITHUB + " and the rest of the request " * 20
        out = logged_query(query)
        assert "ghp_" not in out and GITHUB[4:12] not in out, at
        if "[REDACTED:" in out:
            assert out.endswith("]") or out.count("[REDACTED:") == out.count("]"), out[-40:]
        assert len(out) <= LOG_QUERY_CHARS + len("[REDACTED:github-token]")


def test_a_secret_the_redaction_window_splits_is_not_kept_in_part() -> None:
    """A private key shrinks to its mark, so text from the end of the first window (1 000 characters)
    would be within the 500 kept: a token the window splits must still go."""
    pem = "-----BEGIN RSA PRIVATE KEY-----\n" + "MIIEpAIBAAKCAQEA" * 40 + "\n-----END RSA PRIVATE KEY-----"
    head = f"fix this key {pem} then "
    query = head + "w" * (990 - len(head)) + " " + GITHUB + " and more" + " tail" * 300
    assert query.index("ghp_") < 1000 < query.index("ghp_") + len(GITHUB)
    out = logged_query(query)
    assert "[REDACTED:private-key]" in out and "[REDACTED:github-token]" in out
    assert "ghp_" not in out and "MIIEpAIB" not in out and len(out) <= LOG_QUERY_CHARS
    unterminated = "fix " + pem.split("\n-----END")[0] * 50  # redacted to the window's end: the mark stays
    assert logged_query(unterminated) == "fix [REDACTED:private-key]"


def test_write_time_cost_of_a_typical_and_a_huge_query() -> None:
    """Per route line: a typical query well under a millisecond, 100 000 characters a window's worth."""
    typical, huge = next(iter(QUERIES)), ("please help me with something unusual today " * 3000)[:100_000]
    for query, budget_ms in ((typical, 5.0), (NORMAL, 5.0), (huge, 20.0)):
        logged_query(query)
        took = []
        for _ in range(20):
            t0 = time.perf_counter()
            logged_query(query)
            took.append((time.perf_counter() - t0) * 1000)
        assert sorted(took)[10] < budget_ms, (query[:30], sorted(took))


# ---- the writers: CLI route, MCP route, use_skill ------------------------------------------------
def test_cli_route_logs_the_query_redacted(examples_ws: Path) -> None:
    for query in [*QUERIES, NORMAL]:
        out = json.loads(run_cli(["route", "-w", str(examples_ws), "--no-llm", "--json", "--", query], PLAIN).stdout)
        assert out["query"] == query  # the caller gets its own query back
    logged = [r for r in lines(examples_ws) if r["event"] == "route"]
    assert len(logged) == len(QUERIES) + 1
    for r, (query, mark) in zip(logged, QUERIES.items(), strict=False):
        assert mark in r["query"] and r["query_chars"] == len(query), r["query"]
    assert logged[-1]["query"] == NORMAL
    raw = (examples_ws / "runs" / "router.jsonl").read_text(encoding="utf-8")
    assert no_secret(raw)


def test_mcp_route_and_use_skill_log_redacted(machine: ReleaseStateMachine) -> None:
    pytest.importorskip("mcp")
    from test_mcp import run_session

    async def body(session):
        routed = [await session.call_tool("route", {"query": q}) for q in [*QUERIES, NORMAL]]
        used = await session.call_tool("use_skill", {"name": "taxi-hailing", "session_id": "sess-1",
                                                     "reason": f"the user pasted {GITHUB} and wants a car"})
        return routed, used

    routed, used = run_session(machine.ws.root, body)
    assert not any(r.is_error for r in routed) and not used.is_error, used.content
    logged = lines(machine.ws.root)
    route = [r for r in logged if r["event"] == "route"]
    assert [r["source"] for r in route] == ["mcp"] * (len(QUERIES) + 1)
    for r, mark in zip(route, QUERIES.values(), strict=False):
        assert mark in r["query"], r["query"]
    assert route[-1]["query"] == NORMAL
    [use] = [r for r in logged if r["event"] == "use_skill"]
    assert use["reason"] == "the user pasted [REDACTED:github-token] and wants a car"
    assert use["session_id"] == "sess-1" and use["name"] == "taxi-hailing"
    assert no_secret(machine.ws.router_log.read_text(encoding="utf-8"))


# ---- the reader: skills suggest ------------------------------------------------------------------
def test_evaluation_queries_are_left_out_from_redacted_and_from_old_raw_lines(tmp_path: Path) -> None:
    ws = init_workspace(tmp_path / "ws")
    secret_case = f"reset the password of {EMAIL}, the old one was password={PASSWORD}"
    long_case = "please reset the password of my account " * 20  # over LOG_QUERY_CHARS
    cases = [{"id": f"c{i}", "skill": "account-help", "query": q} for i, q in enumerate([secret_case, long_case])]
    (ws.evaluation_sets_dir / "holdout.json").write_text(json.dumps({"cases": cases}), encoding="utf-8")
    write_log(ws.router_log, [
        route_line(logged_query(secret_case), NOW - timedelta(hours=1)),  # written now: redacted
        route_line(secret_case[:LOG_QUERY_CHARS], NOW - timedelta(hours=2)),  # an older line: raw
        route_line(logged_query(long_case), NOW - timedelta(hours=3)),
        route_line(long_case[:LOG_QUERY_CHARS], NOW - timedelta(hours=4)),
        route_line(logged_query(f"what is my credit limit, mail {EMAIL}"), NOW - timedelta(hours=5)),
    ])
    asked, counts = read_none(ws.router_log, 30, NOW, exclude=eval_queries(ws))
    assert counts.eval_queries == 4 and counts.in_window == 5
    assert [a.text for a in asked] == ["what is my credit limit, mail [REDACTED:email]"]


@pytest.fixture(scope="module")
def redacted_world(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    """The planted log of test_skill_suggest as the router writes it now (every query through
    logged_query), each topic's queries with a secret in some, and the password-reset topic both
    routed and in an evaluation set."""
    ws = init_workspace(tmp_path_factory.mktemp("redacted") / "ws")
    out = []
    for i, line in enumerate(planted_log_lines(NOW)):
        query = str(line["query"])
        if i % 4 == 0:
            query += [f" (I am {EMAIL})", f" DB_PASSWORD={PASSWORD}", f" token {GITHUB}"][i % 3]
        out.append({**line, "query": logged_query(query), "query_chars": len(query)})
    resets = [f"{q} my email is {EMAIL}" for q in TUNE_PLANTED["password-reset"]]
    out += [route_line(logged_query(q), NOW - timedelta(days=1)) for q in resets]
    write_log(ws.router_log, out)
    cases = [{"id": f"pw-{i}", "skill": "account-help", "query": q} for i, q in enumerate(resets)]
    (ws.evaluation_sets_dir / "holdout.json").write_text(json.dumps({"cases": cases}), encoding="utf-8")
    return ws


def test_suggest_clusters_the_redacted_none_queries(redacted_world: Workspace) -> None:
    found = scan(redacted_world)
    assert found.counts.eval_queries == len(TUNE_PLANTED["password-reset"])
    propose = [c for c in found.clusters if c.status is SuggestStatus.PROPOSE]
    assert len(propose) == len(PLANTED) == 3
    text = json.dumps([c.model_dump() for c in found.clusters], ensure_ascii=False)
    assert no_secret(text) and "[REDACTED:" in text


def test_a_pw_key_is_a_credential_name_too() -> None:
    """QA 30 N6: `pw=` and `PW:` values were logged raw while `pwd=`, `passwd:` and `secret=` were
    redacted. `pw` counts as a credential name only as a whole word (not `npw=`, not `pw-reset`)."""
    from skillforge.nodes.route import logged_query

    for query in ("login with pw=Xk9Qw2Lm8Rt4 please", "PW: Xk9Qw2Lm8Rt4", "DB_PW=Xk9Qw2Lm8Rt4", "the pw is Xk9Qw2Lm8Rt4"):
        assert "Xk9Qw2Lm8Rt4" not in logged_query(query), query
    for query in ("npw=3 items", "open the pw-reset link", "set pw=changeme"):
        assert logged_query(query) == query
