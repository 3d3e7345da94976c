"""`skillforge mcp` over stdio, driven by the official `mcp` SDK's client as an agent host would:
a real `skillforge mcp -w WS` process, exactly four tools, 20 routes (hits and NONE), use_skill
(body + release id), a bad call that leaves the server serving, a publish picked up mid-session,
and nothing but the protocol on stdout.

use_skill and record_feedback record events through skillforge.events (branch i23/events): these
tests need it merged."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path

import anyio
import pytest
from conftest import KEPT_ENV, SKILLFORGE_EXE, cli_env, edited

from skillforge.library.releases import ReleaseStateMachine

mcp = pytest.importorskip("mcp")
from mcp import ClientSession, StdioServerParameters, stdio_client

TOOLS = {"skills_index", "route", "use_skill", "record_feedback"}
HITS = [  # (query, skill): each skill's own example, which its card vector holds
    ("帮我叫辆车去虹桥火车站", "taxi-hailing"), ("get me a ride from the office to Pudong airport at 6am", "taxi-hailing"),
    ("取消刚才叫的车", "taxi-hailing"),
]
NONE = ["讲个笑话吧", "what is the capital of Australia", "who won the 1998 world cup", "write me a haiku about autumn",
        "你叫什么名字", "how many legs does a spider have", "translate good morning into French",
        "what's 17 times 23", "recommend a good sci-fi novel", "帮我写一首关于月亮的诗"]


def examples(ws_skills: Path, n: int) -> list[tuple[str, str]]:
    """Up to `n` (example query, skill) pairs from the workspace's skills, one per skill first."""
    from skillforge.skill import file as skillfile

    report = skillfile.scan(ws_skills, ws_skills.parent)
    pairs = [(s.skill.examples[0], name) for name, s in sorted(report.skills.items()) if s.skill.examples]
    return [*HITS, *pairs][:n]


def params(ws: Path) -> StdioServerParameters:
    env = {k: v for k, v in cli_env().items()
           if k in ("PATH", "HOME", "PYTHONPATH", "OMP_NUM_THREADS", "LANG", *KEPT_ENV)}
    env.setdefault("OMP_NUM_THREADS", "1")
    return StdioServerParameters(command=str(SKILLFORGE_EXE), args=["mcp", "-w", str(ws)], env=env)


def run_session(ws: Path, body, errlog=None):
    """Start the server, initialise a client session, and run `body(session)`; its result."""
    async def main():
        kwargs = {"errlog": errlog} if errlog is not None else {}
        with anyio.fail_after(170):
            async with stdio_client(params(ws), **kwargs) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    return await body(session)
    return anyio.run(main)


def test_stdio_lists_four_tools_routes_twenty_queries_and_uses_a_skill(machine: ReleaseStateMachine) -> None:
    ws = machine.ws
    queries = [*examples(ws.skills_dir, 10), *[(q, None) for q in NONE]]
    assert len(queries) == 20

    async def body(session: ClientSession):
        tools = (await session.list_tools()).tools
        routes = [(q, want, await session.call_tool("route", {"query": q})) for q, want in queries]
        used = await session.call_tool("use_skill", {"name": "taxi-hailing", "reason": "the user wants a car",
                                                     "session_id": "sess-1"})
        index = await session.call_tool("skills_index", {})
        return tools, routes, used, index

    tools, routes, used, index = run_session(ws.root, body)
    assert {t.name for t in tools} == TOOLS and len(tools) == 4
    chosen = []
    for q, want, res in routes:
        assert not res.is_error, (q, res.content)
        answer = res.structured_content
        assert answer["layer"] in ("rule", "embed", "llm", "none") and answer["reason"], answer
        assert answer["server_ms"] > 0
        if want is not None:  # a skill's own example: the embed layer is certain of it
            assert answer["skill"] == want, (q, answer)
        chosen.append(answer["skill"])
    assert None in chosen and len({c for c in chosen if c}) >= 5  # both hits and NONE
    logged = [json.loads(line) for line in ws.router_log.read_text(encoding="utf-8").splitlines()]
    assert [r["source"] for r in logged if r["event"] == "route"] == ["mcp"] * 20  # logged like the CLI's

    assert not used.is_error, used.content
    live = machine.store.current("taxi-hailing")
    got = used.structured_content
    assert got["name"] == "taxi-hailing" and got["release_id"] == live.release_id and got["version"] == live.version
    assert "## Instructions" in got["body"] and not got["body"].startswith("---")  # the body, no frontmatter
    assert used.content[0].text.endswith(got["body"]) and live.release_id in used.content[0].text
    assert not index.is_error and "- taxi-hailing: " in index.content[0].text


def test_a_bad_call_is_a_tool_error_and_the_server_serves_on(machine: ReleaseStateMachine, tmp_path: Path) -> None:
    async def body(session: ClientSession):
        unknown = await session.call_tool("use_skill", {"name": "taxi-hail", "reason": "r", "session_id": "s"})
        missing = await session.call_tool("route", {})
        outcome = await session.call_tool("record_feedback", {"session_id": "s", "skill": "taxi-hailing",
                                                              "outcome": "great"})
        nobody = await session.call_tool("record_feedback", {"session_id": "s", "skill": "no-such-skill",
                                                             "outcome": "bad"})
        after = await session.call_tool("route", {"query": "帮我叫辆车去虹桥火车站"})
        return unknown, missing, outcome, nobody, after

    with open(tmp_path / "stderr.txt", "w") as errlog:
        unknown, missing, outcome, nobody, after = run_session(machine.ws.root, body, errlog)
    assert unknown.is_error and "unknown skill 'taxi-hail'" in unknown.content[0].text
    assert "taxi-hailing" in unknown.content[0].text  # the suggestion
    assert missing.is_error and missing.content[0].text == "route: bad arguments: query: field required"
    assert outcome.is_error and outcome.content[0].text == ("record_feedback: bad arguments: outcome: input should "
                                                            "be 'good', 'bad' or 'neutral'")  # one line, no echo
    assert nobody.is_error and "unknown skill 'no-such-skill'" in nobody.content[0].text
    assert not after.is_error and after.structured_content["skill"] == "taxi-hailing"
    assert "Traceback" not in (tmp_path / "stderr.txt").read_text(encoding="utf-8")


def test_an_argument_a_tool_does_not_take_is_refused_by_name(machine: ReleaseStateMachine, tmp_path: Path) -> None:
    """The SDK drops an argument a tool does not declare; SkillForge says so (QA msgs15 item 5):
    `release` given to record_feedback was ignored, and the feedback counted against another."""
    async def body(session: ClientSession):
        await session.call_tool("use_skill", {"name": "taxi-hailing", "reason": "r", "session_id": "s"})
        extra = await session.call_tool("record_feedback", {"session_id": "s", "skill": "taxi-hailing",
                                                            "outcome": "good", "release": "ffffffff"})
        two = await session.call_tool("route", {"query": "q", "top_k": 3, "verbose": True})
        none = await session.call_tool("skills_index", {"all": True})
        fine = await session.call_tool("record_feedback", {"session_id": "s", "skill": "taxi-hailing",
                                                           "outcome": "good"})
        return extra, two, none, fine

    with open(tmp_path / "stderr.txt", "w") as errlog:
        extra, two, none, fine = run_session(machine.ws.root, body, errlog)
    assert extra.is_error and extra.content[0].text == (
        "record_feedback: unknown argument 'release': it takes session_id, skill, outcome, comment, private, tokens")
    assert two.is_error and two.content[0].text == "route: unknown arguments 'top_k', 'verbose': it takes query"
    assert none.is_error and none.content[0].text == "skills_index: unknown argument 'all': it takes no arguments"
    assert not fine.is_error, fine.content
    from skillforge.events import EventLog
    assert EventLog(machine.ws).counts().last_seq == 2  # the use and the last feedback: the refused one wrote nothing
    assert "Traceback" not in (tmp_path / "stderr.txt").read_text(encoding="utf-8")


def test_a_release_published_while_serving_is_what_use_skill_returns(machine: ReleaseStateMachine) -> None:
    async def body(session: ClientSession):
        before = await session.call_tool("use_skill", {"name": "taxi-hailing", "reason": "r", "session_id": "s"})
        new = machine.publish("taxi-hailing", edited(machine, "taxi-hailing", "Always confirm the pickup point twice."))
        after = await session.call_tool("use_skill", {"name": "taxi-hailing", "reason": "r", "session_id": "s"})
        return before, new, after

    before, new, after = run_session(machine.ws.root, body)
    assert not before.is_error and not after.is_error, (before.content, after.content)
    assert before.structured_content["release_id"] != new.release_id
    assert after.structured_content["release_id"] == new.release_id
    assert "Always confirm the pickup point twice." in after.structured_content["body"]


def converse(ws: Path, lines: list[str], replies: int) -> tuple[list[dict], str, str]:
    """Write `lines` to a real `skillforge mcp` process, read `replies` JSON lines back, close stdin;
    (the replies, what stdout held after them, stderr), once the server exited 0."""
    proc = subprocess.Popen([str(SKILLFORGE_EXE), "mcp", "-w", str(ws)], text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**cli_env(), "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")})
    killer = threading.Timer(170, proc.kill)  # a hung server fails the test instead of hanging it
    killer.start()
    try:
        proc.stdin.write("".join(line + "\n" for line in lines))
        proc.stdin.flush()
        got = [json.loads(proc.stdout.readline()) for _ in range(replies)]  # stdin open: EOF cancels calls
        proc.stdin.close()
        proc.wait(timeout=60)
        rest, stderr = proc.stdout.read(), proc.stderr.read()
    finally:
        killer.cancel()
    assert proc.returncode == 0, stderr
    return got, rest, stderr


def test_stdout_carries_only_the_protocol(machine: ReleaseStateMachine) -> None:
    """Every line the server writes on stdout is a JSON-RPC message (logs go to stderr)."""
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "route", "arguments": {"query": "打车"}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "use_skill", "arguments": {"name": "x"}}},
    ]
    lines, rest, stderr = converse(machine.ws.root, [json.dumps(r) for r in requests], 3)
    assert rest == ""
    replies = {m["id"]: m for m in lines}  # calls answer in any order
    assert sorted(replies) == [1, 2, 3] and all(m["jsonrpc"] == "2.0" for m in replies.values())
    assert replies[2]["result"]["isError"] is False and replies[3]["result"]["isError"] is True
    assert "Traceback" not in stderr


BAD_LINES = [  # (line, the id the answer carries, its code): each line a client might send by mistake
    ("this is not json", None, -32700),
    ('[{"jsonrpc": "2.0", "id": 20, "method": "ping"}]', None, -32600),  # a batch
    ('{"jsonrpc": "2.0", "id": 21, "method": "tools/call", "params": 5}', 21, -32600),
    ('{"jsonrpc": "2.0", "id": "s-22", "method": "ping", "params": {"x": "\\ud800"}}', "s-22", -32700),
    ('{"id": 23, "method": "ping"}', 23, -32600),  # no "jsonrpc"
    ("42", None, -32600),
    ('{"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"}', None, -32600),  # QA 32 M1: read as a
    ('{"jsonrpc": "2.0", "id": true, "method": "ping"}', None, -32600),            # notification, unanswered
    ('{"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"}', None, -32600),
    ('{"jsonrpc": "2.0", "id": 25}', 25, -32600),
    ('{"jsonrpc": "2.0", "id": 24, "method": "ping", "params": {"x": ' + "[" * 5000 + "]" * 5000 + "}}", 24,
     -32700),  # QA: nested this deep it killed the server (RecursionError, exit 70); QA 22 DOC-1: its id
]


def test_every_unreadable_line_gets_an_error_and_the_server_serves_on(machine: ReleaseStateMachine) -> None:
    """The SDK's stdio transport answered none of these lines, so a client waiting on id 21 hung. Now
    each gets a JSON-RPC error (with its id when the line has one), a blank line gets nothing, and the
    requests around them are answered as before."""
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    lines = [json.dumps(init), json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}), "",
             *(line for line, _, _ in BAD_LINES),
             json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                         "params": {"name": "route", "arguments": {"query": "打车"}}})]
    replies, rest, stderr = converse(machine.ws.root, lines, 2 + len(BAD_LINES))  # one unanswered hangs to 170 s
    assert rest == ""  # the blank line was not answered
    answered = {m["id"]: m for m in replies if m["id"] in (1, 2)}
    assert sorted(answered) == [1, 2] and answered[2]["result"]["isError"] is False
    errors = [(m["id"], m["error"]["code"]) for m in replies if "error" in m]
    assert sorted(errors, key=str) == sorted(((i, c) for _, i, c in BAD_LINES), key=str)
    assert all(m["jsonrpc"] == "2.0" and m["error"]["message"] for m in replies if "error" in m)
    assert "Traceback" not in stderr and stderr.count("answered an unreadable line") == len(BAD_LINES)


@pytest.mark.parametrize(("line", "msg_id", "code", "words"), [
    ("{", None, -32700, "not JSON"),
    ("[]", None, -32600, "batches"),
    ('{"jsonrpc": "2.0", "id": 3, "method": 7}', 3, -32600, '"method" must be a string'),
    ('{"jsonrpc": "1.0", "id": "a", "method": "ping"}', "a", -32600, '"jsonrpc" must be "2.0"'),
    ('{"jsonrpc": "2.0", "id": 4}', 4, -32600, 'no "method"'),  # QA 32 M1: the line's id, as the docs say
    ('{"jsonrpc": "2.0", "id": 4, "result": 1, "error": {}}', None, -32600, "not a JSON-RPC request"),
    ('{"jsonrpc": "2.0", "method": "notifications/x", "params": [1]}', None, -32600, '"params" must be an object'),
    ('["\\udfff"]', None, -32600, "batches"),
    # QA 22 DOC-1: nested too deep to parse, the top-level id is still read (and only that one)
    ('{"jsonrpc": "2.0", "id": 8, "x": ' + "[" * 3000 + "]" * 3000 + "}", 8, -32700, "too deep"),
    ('{"x": {"id": 5}, "y": ' + "[" * 3000 + "]" * 3000 + ', "id": "b"}', "b", -32700, "too deep"),
    ('{"x": {"id": 5}, "y": ' + "[" * 3000 + "]" * 3000 + "}", None, -32700, "too deep"),
    ('{"id": true, "y": ' + "[" * 3000 + "]" * 3000 + "}", None, -32700, "too deep"),
])
def test_error_reply_names_what_is_wrong(line: str, msg_id, code: int, words: str) -> None:
    import mcp_types
    from pydantic import ValidationError

    from skillforge.mcp.stdio import error_reply

    with pytest.raises(ValidationError) as caught:
        mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    reply = error_reply(caught.value)
    assert (reply.id, reply.error.code) == (msg_id, code) and words in reply.error.message


def test_a_blank_line_gets_no_error_reply() -> None:
    import mcp_types
    from pydantic import ValidationError

    from skillforge.mcp.stdio import error_reply

    for line in ("", "  \t", "\n"):
        with pytest.raises(ValidationError) as caught:
            mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        assert error_reply(caught.value) is None
    assert error_reply(RuntimeError("boom")).error.code == -32700


def test_a_token_count_or_a_flag_of_the_wrong_type_is_refused_not_coerced(machine: ReleaseStateMachine,
                                                                          tmp_path: Path) -> None:
    """QA 22 MESSAGE-4: pydantic's lax mode took `tokens: true` as 1, `"12"` as 12 and `private: "yes"`
    as true; the CLI refuses such values, and so does the server now (nothing recorded)."""
    async def body(session: ClientSession):
        await session.call_tool("use_skill", {"name": "taxi-hailing", "reason": "r", "session_id": "s"})
        base = {"session_id": "s", "skill": "taxi-hailing", "outcome": "bad"}
        bad = [await session.call_tool("record_feedback", {**base, **extra})
               for extra in ({"tokens": True}, {"tokens": "12"}, {"tokens": 1.5}, {"private": "yes"}, {"private": 1})]
        fine = await session.call_tool("record_feedback", {**base, "tokens": 12, "private": True})
        return bad, fine

    with open(tmp_path / "stderr.txt", "w") as errlog:
        bad, fine = run_session(machine.ws.root, body, errlog)
    for answer, field in zip(bad, ("tokens", "tokens", "tokens", "private", "private"), strict=True):
        assert answer.is_error and answer.content[0].text.startswith(f"record_feedback: bad arguments: {field}"), \
            answer.content[0].text
    assert not fine.is_error, fine.content
    from skillforge.events import EventLog
    assert EventLog(machine.ws).counts().last_seq == 2  # the use and the one good feedback
