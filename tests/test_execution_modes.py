"""Execution modes (behaviour / disclosure), unexercised skills, the executor's context caps, and the
embedded server's defaults (threads, prompt cache, timeouts, retries, concurrency)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import KEPT_ENV
from evaluate_fakes import BETTER, ENV, NO_SKILL, SKILL, context, fake_llm, make_set, skill_text

from skillforge.errors import ContextOverflow
from skillforge.evaluation.compare import judge_case, measure
from skillforge.evaluation.executor import (ELIDED, HISTORY_CHARS, LOADED, TOOL_RESULT_CHARS, Action, Executor, SkillUnderTest,
                                 step_options, step_schema, step_text)
from skillforge.graphs.evaluate import build_evaluate_graph
from skillforge.evaluation.judge import REASON_CHARS, Judgement
from skillforge.llm import local_server as ls
from skillforge.llm.client import LLM, build_llm
from skillforge.llm.config import (LOCAL_CONCURRENCY, REMOTE_CONCURRENCY, LocalEndpoint, default_concurrency,
                                   resolve, resolve_all)
from skillforge.evaluation.report import render_report
from skillforge.rules.threads import idle_threads
from skillforge.state.evaluate import Case, Execution, ExecutionMode, Expectation, PairVerdict, SkillSide
from skillforge.state.evaluate_graph import EvalState
from skillforge.state.llm import Role
from skillforge.testing.fake_chat import ScriptedChatModel, offered_tools

NONCE = "sfn-0123456789ab"
OTHER = "hotel-booking"
STUB = Path(__file__).resolve().with_name("stub_llama_server.py")


def _skills() -> dict[str, SkillUnderTest]:
    hotel = (Path(__file__).resolve().parents[1] / "skills" / OTHER / "SKILL.md").read_text(encoding="utf-8")
    return {SKILL: SkillUnderTest.from_text(skill_text(), "r1"), OTHER: SkillUnderTest.from_text(hotel, "r2")}


def _executor(*script: object, env: dict[str, str] | None = None,
              mode: ExecutionMode = ExecutionMode.BEHAVIOUR) -> tuple[Executor, ScriptedChatModel]:
    fake = ScriptedChatModel.of(*script)
    return Executor(LLM(resolve_all(env={**ENV, **(env or {})}), {Role.EXECUTOR: fake}), mode=mode), fake


def _case(fixture: object = None, query: str = "去机场多少钱") -> Case:
    return Case(id="c", skill=SKILL, query=query, fixtures={"ride.estimate_fare": fixture or {"fare": 128}})


def _run_graph(tmp_path: Path, mode: ExecutionMode, *, n: int = 4, baseline: str | None = "", marker: str = BETTER,
               query_marker: str = "", logs: bool = True):
    llm, executor, judge = fake_llm()
    path = make_set(tmp_path, n)
    if query_marker:
        data = json.loads(path.read_text())
        for c in data["cases"][: n // 2]:
            c["query"] += f" {query_marker}"
        path.write_text(json.dumps(data, ensure_ascii=False))
    ctx = context(llm, path, tmp_path if logs else None)
    ctx.others = {OTHER: _skills()[OTHER]}
    base = SkillSide(text=None) if baseline is None else SkillSide(text=skill_text(baseline), release_id="r-old")
    state = EvalState(run_id="run-m", skill=SKILL, eval_set="t", baseline=base, mode=mode,
                      candidate=SkillSide(text=skill_text(marker), release_id="r-new"))
    out = EvalState.model_validate(build_evaluate_graph().invoke(state, {"max_concurrency": 2}, context=ctx))
    return out, executor, judge


# ---- modes ---------------------------------------------------------------------------------------
def test_behaviour_mode_loads_the_body_up_front_without_a_use_skill_call():
    ex, fake = _executor(Action(kind="call_tool", name="ride.estimate_fare"), Action(kind="answer", text="约 128 元"))
    out = ex.run(_case(), _skills(), NONCE, "r1")
    assert out.answer == "约 128 元" and out.skills_loaded == [SKILL] and out.mode is ExecutionMode.BEHAVIOUR
    assert out.turns == 2 and fake.position == 2
    system = fake.received[0][0].content
    assert f"The skill {SKILL} {LOADED}:" in system and "## Instructions" in system and "ride.estimate_fare" in system
    assert f"- {OTHER}:" not in system  # behaviour mode: no index of the other skills
    assert fake.received[0][1].content == "去机场多少钱"  # the query in the next message


def test_the_system_prompt_is_the_same_for_cases_with_other_tools_and_the_enum_names_them():
    """The case's tools are only in the step enum (rendered after the system prompt by a server), so
    every case of a skill shares the system prompt as a cacheable prefix."""
    seen: list[tuple[str, list[str]]] = []

    def reply(messages, tools):  # noqa: ANN001, ANN202
        seen.append((messages[0].content, offered_tools(tools)))
        return Action(kind="answer", text="好的")

    llm = LLM(resolve_all(env=ENV), {Role.EXECUTOR: ScriptedChatModel.responding(reply)})
    ex = Executor(llm, mode=ExecutionMode.BEHAVIOUR)
    two = Case(id="c2", skill=SKILL, query="叫车去机场", fixtures={"maps.geocode": {}, "ride.request": {}})
    for case in (_case(), two):
        assert ex.run(case, _skills(), NONCE, "r1").answer == "好的"
    (first, tools_1), (second, tools_2) = seen
    assert first == second and "Tools you can call" not in first
    assert (tools_1, tools_2) == (["ride.estimate_fare"], ["maps.geocode", "ride.request"])


def test_disclosure_mode_shows_the_index_and_loads_the_body_through_use_skill():
    ex, fake = _executor(Action(kind="use_skill", name=SKILL, text="taxi"), Action(kind="call_tool", name="ride.estimate_fare"),
                         Action(kind="answer", text="约 128 元"), mode=ExecutionMode.DISCLOSURE)
    out = ex.run(_case(), _skills(), NONCE, "r1")
    system = fake.received[0][0].content
    assert f"- {SKILL}:" in system and f"- {OTHER}:" in system and "## Instructions" not in system and LOADED not in system
    assert fake.received[1][-1].content.startswith(f"use_skill {SKILL}:\n## Overview")
    assert out.skills_loaded == [SKILL] and out.mode is ExecutionMode.DISCLOSURE and out.answer


def test_disclosure_offers_no_second_use_skill_once_a_skill_is_loaded():
    for second in (SKILL, OTHER):
        ex, fake = _executor(Action(kind="use_skill", name=SKILL), Action(kind="use_skill", name=second),
                             mode=ExecutionMode.DISCLOSURE)
        out = ex.run(_case(), _skills(), NONCE, "r1")
        assert out.skills_loaded == [SKILL] and out.error.startswith("InvalidLLMOutput")  # not a step any more
        assert fake.position == 2


def test_disclosure_without_use_skill_leaves_the_skill_unloaded():
    ex, _ = _executor(Action(kind="answer", text="hi"), mode=ExecutionMode.DISCLOSURE)
    assert ex.run(_case(), _skills(), NONCE, None).skills_loaded == []


def test_step_options_offer_only_real_skills_and_tools_and_no_use_skill_in_behaviour_mode():
    tools = ["ride.estimate_fare", "ride.book"]
    assert step_options(ExecutionMode.BEHAVIOUR, _skills(), tools) == (
        "call_tool ride.estimate_fare", "call_tool ride.book", "answer")
    assert step_options(ExecutionMode.DISCLOSURE, _skills(), tools) == (
        f"use_skill {OTHER}", f"use_skill {SKILL}", "call_tool ride.estimate_fare", "call_tool ride.book", "answer")
    assert step_options(ExecutionMode.BEHAVIOUR, _skills(), []) == ("answer",)
    # once a skill is loaded no use_skill is offered: an execution picks one skill
    assert step_options(ExecutionMode.DISCLOSURE, _skills(), ["ride.book"], loaded=[OTHER]) == ("call_tool ride.book",
                                                                                                 "answer")


def test_history_shows_a_step_as_the_model_writes_it_under_the_grammar():
    step = step_schema(("call_tool maps.search_poi", "answer")).model_validate(
        {"step": "call_tool maps.search_poi", "text": "", "arguments": {"query": "鼎泰丰", "near": "南京西路"}})
    assert step_text(step) == ('{"step": "call_tool maps.search_poi", "text": "", '
                               '"arguments": {"query": "鼎泰丰", "near": "南京西路"}}')


def test_a_judge_reason_is_capped_in_the_schema_and_cut_not_failed_when_longer():
    prop = Judgement.model_json_schema()["properties"]["reason"]
    assert prop["maxLength"] == REASON_CHARS
    long = Judgement.model_validate({"overall": "A", "task": "A", "robustness": "tie", "readability": "B",
                                     "reason": "x" * (REASON_CHARS + 50)})
    assert long.reason == "x" * REASON_CHARS


def test_step_schema_is_an_enum_with_every_field_required_and_one_class_per_option_set():
    options = step_options(ExecutionMode.DISCLOSURE, _skills(), ["ride.estimate_fare"])
    schema = step_schema(options)
    assert schema.__name__ == "Action" and step_schema(tuple(options)) is schema
    js = schema.model_json_schema()
    assert js["properties"]["step"]["enum"] == list(options)
    assert js["required"] == ["step", "text", "arguments"]   # a grammar then never drops the answer text
    assert schema.model_validate({"step": "call_tool ride.estimate_fare", "arguments": {"to": "PVG"},
                                  "text": ""}).action() == Action(kind="call_tool", name="ride.estimate_fare",
                                                                  arguments={"to": "PVG"})
    # the flat shape the fakes speak, with the lenient name-inside-arguments reading
    assert schema.model_validate({"kind": "call_tool", "arguments": {"name": "ride.estimate_fare"}}).action().name \
        == "ride.estimate_fare"
    # an answer written inside `arguments` (one string there, text empty) is read from there
    assert schema.model_validate({"step": "answer", "text": "", "arguments": {"text": "约 128 元"}}).action().text \
        == "约 128 元"
    assert schema.model_validate({"step": "answer", "text": "", "arguments": {"a": "1", "b": "2"}}).action().text == ""
    for bad in ({"step": "call_tool ride.book"}, {"kind": "call_tool", "name": ""}, {"step": "use_skill nope"}):
        with pytest.raises(ValueError):
            schema.model_validate(bad)


def test_the_executor_reads_the_step_shape_and_a_step_outside_the_options_fails_closed():
    tool_call = {"name": "Action", "args": {"step": "call_tool ride.estimate_fare", "arguments": {}, "text": ""}}
    answer = {"name": "Action", "args": {"step": "answer", "arguments": {}, "text": "约 128 元"}}
    ex, fake = _executor(tool_call, answer)
    out = ex.run(_case(), _skills(), NONCE, "r1")
    assert out.answer == "约 128 元" and [t.name for t in out.tool_calls] == ["ride.estimate_fare"] and not out.error
    assert json.loads(fake.received[1][2].content)["step"] == "call_tool ride.estimate_fare"  # history: the step as sent
    # ... written the way a grammar-bound model writes it, so the server's KV cache covers it next turn
    assert fake.received[1][2].content == ('{"step": "call_tool ride.estimate_fare", "text": "", "arguments": {}}')
    # behaviour mode offers no use_skill: a reply that names it is not a valid step, and nothing is guessed
    ex, _ = _executor({"name": "Action", "args": {"step": f"use_skill {SKILL}", "arguments": {}, "text": ""}})
    out = ex.run(_case(), _skills(), NONCE, "r1")
    assert out.answer == "" and out.turns == 0 and out.error.startswith("InvalidLLMOutput")


def test_graph_records_the_mode_in_result_traces_and_report(tmp_path):
    out, executor, _ = _run_graph(tmp_path, ExecutionMode.BEHAVIOUR)
    res = out.result
    assert res.mode is ExecutionMode.BEHAVIOUR and res.unexercised.executions == {"baseline": 0, "candidate": 0}
    assert res.unexercised.cases == 0
    # no use_skill turn: call_tool, then answer
    assert all(r.baseline.turns == 2 and r.candidate.turns == 2 for r in out.results)
    assert all(LOADED in m[0].content and f"- {OTHER}:" not in m[0].content for m in executor.received)
    traces = [json.loads(x) for x in (tmp_path / "traces" / "run-m.jsonl").read_text().splitlines()]
    assert {t["mode"] for t in traces} == {"behaviour"} and {t["candidate"]["mode"] for t in traces} == {"behaviour"}
    [line] = [json.loads(x) for x in (tmp_path / "evaluations.jsonl").read_text().splitlines()]
    assert line["mode"] == "behaviour" and line["unexercised"]["cases"] == 0
    html = render_report(res, out.results)
    assert "<td>mode</td><td>behaviour</td>" in html and "skill not loaded" in html


def test_disclosure_run_where_neither_side_loads_the_skill_counts_ties_without_evidence(tmp_path):
    out, _, judge = _run_graph(tmp_path, ExecutionMode.DISCLOSURE, n=4, query_marker=NO_SKILL)
    res = out.result
    assert res.mode is ExecutionMode.DISCLOSURE
    assert res.unexercised.cases == 2 and res.unexercised.executions == {"baseline": 2, "candidate": 2}
    assert sorted(res.unexercised.case_ids) == ["t-00", "t-01"]
    for r in out.results:
        if NO_SKILL in r.case.query:
            assert r.no_evidence and not r.invalid and r.unexercised == ["baseline", "candidate"]
            assert set(r.verdicts.values()) == {PairVerdict.TIE} and r.orders == []  # the judge was not asked
        else:
            assert not r.no_evidence and r.verdicts["overall"] is PairVerdict.CANDIDATE
    assert judge.position == 4  # 2 cases with evidence x both orders
    html = render_report(res, out.results)
    assert 'class="case unexercised"' in html and 'data-k="unexercised"' in html


def test_behaviour_with_no_baseline_skill_counts_the_baseline_unexercised_but_keeps_the_evidence(tmp_path):
    out, _, _ = _run_graph(tmp_path, ExecutionMode.BEHAVIOUR, n=3, baseline=None)
    u = out.result.unexercised
    assert u.executions == {"baseline": 3, "candidate": 0} and u.cases == 0
    assert not any(r.no_evidence for r in out.results)


def test_no_evidence_case_is_an_objective_tie_and_never_a_p0_flip():
    case = _case().model_copy(update={"p0": True, "expect": Expectation(must_include=["128"])})
    old = Execution(answer="约 128 元", nonce=NONCE, tool_responses=['{"fare": 128}'])
    new = Execution(answer="不知道", nonce=NONCE)  # candidate fails the check, but neither side loaded the skill
    judge = ScriptedChatModel.of()  # any judge call would fail the case
    llm = LLM(resolve_all(env=ENV), {Role.JUDGE: judge})
    r = judge_case(case, old, new, llm)
    assert r.no_evidence and not r.invalid and judge.position == 0
    assert r.checks["baseline"].passed and not r.checks["candidate"].passed
    m = measure([r])
    assert m.p0_flips == [] and m.old.task == m.new.task
    # the same pair with the skill loaded is evidence: a P0 flip
    loaded = judge_case(case, old.model_copy(update={"skills_loaded": [SKILL]}),
                        new.model_copy(update={"skills_loaded": [SKILL]}),
                        LLM(resolve_all(env=ENV), {Role.JUDGE: ScriptedChatModel.of(*[Judgement(
                            overall="tie", task="tie", robustness="tie", readability="tie", reason="x")] * 2)}))
    assert not loaded.no_evidence and measure([loaded]).p0_flips == ["c"]


def test_cli_mode_flag(tmp_path):
    from conftest import EXAMPLE_SKILLS, run_cli

    from skillforge.testing.openai_server import FakeOpenAIServer, Reply

    root = tmp_path / "ws"
    run_cli(["init", str(root)], {}, ok=0)
    run_cli(["skills", "import", "--from", str(EXAMPLE_SKILLS), "-w", str(root)], {}, ok=0)
    make_set(root / "evaluation_sets", 5)  # fewer cases than the sign test needs are refused before the run
    with FakeOpenAIServer(default=Reply.echo_tool()) as srv:
        env = {"SKILLFORGE_LLM_BASE_URL": srv.base_url, "SKILLFORGE_LLM_MODEL": "m", "SKILLFORGE_JUDGE_MODEL": "j",
               "SKILLFORGE_LLM_MAX_RETRIES": "0"}
        args = ["evaluate", SKILL, "--candidate", str(root / "skills" / SKILL), "--set", "t", "--json", "-w", str(root)]
        # echo_tool: use_skill with an empty name every turn, never an answer: INVALID, skill never loaded
        result = json.loads(run_cli([*args, "--mode", "disclosure"], env, ok=5).stdout)
        assert result["mode"] == "disclosure" and result["unexercised"]["executions"] == {"baseline": 5, "candidate": 5}
        result = json.loads(run_cli(args, env, ok=5).stdout)
        assert result["mode"] == "behaviour" and result["unexercised"]["executions"] == {"baseline": 0, "candidate": 0}
        meta = json.loads((root / "runs" / "traces" / f"{result['run_id']}.meta.json").read_text())
        assert meta["mode"] == "behaviour"
        again = json.loads(run_cli(["evaluate", "--rejudge", result["run_id"], "--json", "-w", str(root)], env, ok=5).stdout)
        assert again["mode"] == "behaviour"
        bad = run_cli([*args, "--mode", "sideways"], env, ok=2)
        assert "sideways" in bad.stderr


# ---- context caps ---------------------------------------------------------------------------------
def test_a_huge_tool_result_is_cut_with_a_marker():
    huge = {"rides": [{"id": i, "fare": 100 + i, "note": "x" * 40} for i in range(2000)]}
    ex, fake = _executor(Action(kind="call_tool", name="ride.estimate_fare"), Action(kind="answer", text="100 元起"))
    out = ex.run(_case(huge), _skills(), NONCE, None)
    seen = fake.received[1][-1].content
    assert seen.startswith("tool result ride.estimate_fare: ")
    assert len(seen) < TOOL_RESULT_CHARS + 200 and f"of {len(out.tool_responses[0])} characters shown]" in seen
    assert out.truncated_tool_results == 1 and out.answer and out.error is None
    assert len(out.tool_responses[0]) > 100_000  # the provenance source stays whole


def test_older_results_are_left_out_when_the_history_grows():
    big = {"fare": 128, "detail": "y" * (TOOL_RESULT_CHARS - 100)}
    calls = [Action(kind="call_tool", name="ride.estimate_fare")] * 4
    ex, fake = _executor(*calls, Action(kind="answer", text="约 128 元"))
    out = ex.run(_case(big), _skills(), NONCE, None)
    assert out.answer and out.elided_turns >= 1
    last_prompt = fake.received[-1]
    assert ELIDED.split(":")[0] in last_prompt[3].content  # the oldest tool result
    assert last_prompt[-1].content.startswith("tool result")  # the newest is whole
    assert sum(len(m.content) for m in last_prompt[2:]) <= HISTORY_CHARS


def test_a_case_that_still_overflows_is_invalid_with_the_reason(tmp_path):
    # a 2 000-token window: the system prompt and a long query cannot fit beside a 1 024-token reply
    ex, fake = _executor(Action(kind="answer", text="x"), env={"SKILLFORGE_EXECUTOR_CONTEXT_TOKENS": "2000"})
    out = ex.run(_case(query="请帮我叫车" * 400), _skills(), NONCE, None)
    assert out.error.startswith("ContextOverflow:") and "context" in out.error and fake.position == 0
    # through the graph: that case is INVALID with the reason, the others run, the run does not crash
    llm, _, _ = fake_llm()
    path = make_set(tmp_path, 6)  # 1 of 6 INVALID (17 %) leaves the 5 valid cases the sign test needs
    data = json.loads(path.read_text())
    data["cases"][0]["query"] = "叫车" * 20000  # ~40k tokens against the default 16 384-token window
    path.write_text(json.dumps(data, ensure_ascii=False))
    state = EvalState(run_id="o", skill=SKILL, eval_set="t", baseline=SkillSide(text=skill_text()),
                      candidate=SkillSide(text=skill_text(BETTER)))
    res = EvalState.model_validate(build_evaluate_graph().invoke(state, context=context(llm, path)))
    [bad] = [r for r in res.results if r.invalid]
    assert bad.case.id == "t-00" and "ContextOverflow" in bad.error and bad.error.startswith("execution:")
    assert res.result.measured.invalid_cases == 1 and res.result.verdict != "INVALID"  # still decides


def test_the_llm_refuses_a_prompt_beyond_the_context_before_calling():
    fake = ScriptedChatModel.of(Judgement(overall="A", task="A", robustness="A", readability="A", reason="r"))
    llm = LLM(resolve_all(env={**ENV, "SKILLFORGE_JUDGE_CONTEXT_TOKENS": "1500"}), {Role.JUDGE: fake})
    with pytest.raises(ContextOverflow, match="context 1500"):
        llm.structured(Role.JUDGE, Judgement, [("user", "x" * 3000)])
    assert fake.position == 0 and llm.ledger.calls == 0
    assert llm.structured(Role.JUDGE, Judgement, [("user", "short")]).value.task == "A"


# ---- the embedded server --------------------------------------------------------------------------
def test_threads_are_the_idle_cores():
    assert idle_threads(2, 0.0) == 2 and idle_threads(2, 0.4) == 2  # idle box: every core
    assert idle_threads(2, 0.6) == 1 and idle_threads(2, 8.8) == 1  # busy: never oversubscribe, never 0
    assert idle_threads(8, 2.0) == 6 and idle_threads(1, 0.0) == 1
    assert ls.cores() == len(__import__("os").sched_getaffinity(0))


def test_server_command_uses_the_idle_cores_and_the_prompt_cache(monkeypatch):
    monkeypatch.setattr(ls, "others_busy_now", lambda: 0.0)
    cmd = ls.server_command(Path("/m/model.gguf"), 8123)
    arg = {flag: cmd[cmd.index(flag) + 1] for flag in ("--n_threads", "--n_threads_batch", "--cache", "--cache_type",
                                                         "--cache_size", "--logits_all", "--n_ctx")}
    assert arg["--n_threads"] == arg["--n_threads_batch"] == str(ls.cores())  # an idle machine: threads = cores
    monkeypatch.setattr(ls, "others_busy_now", lambda: 50.0)
    busy = ls.server_command(Path("/m/model.gguf"), 8123)
    assert busy[busy.index("--n_threads") + 1] == "1"
    assert (arg["--cache"], arg["--cache_type"], arg["--logits_all"]) == ("true", "ram", "false")
    assert int(arg["--cache_size"]) == ls.PROMPT_CACHE_BYTES and arg["--n_ctx"] == "8192"
    one = ls.server_command(Path("/m/model.gguf"), 8123, n_threads=1, prompt_cache=False, n_ctx=8192)
    assert one[one.index("--n_threads") + 1] == "1" and "--cache" not in one and one[one.index("--n_ctx") + 1] == "8192"


def test_local_endpoint_defaults_timeout_retries_context_and_concurrency():
    local = LocalEndpoint("http://127.0.0.1:8123/v1", "qwen", 8192)
    cfg = resolve(Role.EXECUTOR, env={}, local=local)
    assert (cfg.source, cfg.timeout, cfg.max_retries, cfg.context_tokens) == ("local server", 600.0, 0, 8192)
    assert cfg.timeout >= 600 and resolve(Role.JUDGE, env={}, local=local[:2]).context_tokens == 8192
    # what the user sets still wins
    assert resolve(Role.EXECUTOR, env={"SKILLFORGE_LLM_TIMEOUT": "900"}, local=local).timeout == 900.0
    remote = resolve(Role.EXECUTOR, env={"SKILLFORGE_LLM_MODEL": "m"}, local=local)
    assert (remote.timeout, remote.max_retries, remote.context_tokens) == (60.0, 2, 16384)
    assert default_concurrency(resolve_all(env={}, local=local)) == LOCAL_CONCURRENCY <= 2
    assert default_concurrency(resolve_all(env={"SKILLFORGE_LLM_MODEL": "m"}, local=local)) == REMOTE_CONCURRENCY
    # only the judge on the local server: still the serial server's pace
    assert default_concurrency(resolve_all(env={"SKILLFORGE_EXECUTOR_MODEL": "m", "SKILLFORGE_EXECUTOR_BASE_URL": "http://u"},
                                           local=local)) == LOCAL_CONCURRENCY


def test_a_served_workspace_resolves_the_local_defaults(workspace, monkeypatch):
    for key in [k for k in __import__("os").environ if k.startswith(("SKILLFORGE_", "OPENAI_")) and k not in KEPT_ENV]:
        monkeypatch.delenv(key)
    info = ls.serve(workspace, command=[sys.executable, str(STUB), "--port", "{port}"], n_ctx=6144, wait_s=15)
    try:
        assert info.n_ctx == 6144
        llm = build_llm(workspace, no_cache=True)
        for cfg in llm.configs.values():
            assert (cfg.source, cfg.timeout, cfg.max_retries, cfg.context_tokens) == ("local server", 600.0, 0, 6144)
        assert default_concurrency(llm.configs) == LOCAL_CONCURRENCY
    finally:
        ls.stop(workspace, timeout_s=2)


def test_llm_serve_rejects_zero_threads(workspace):
    exe = str(Path(sys.executable).parent / "skillforge")
    proc = subprocess.run([exe, "llm", "serve", "--threads", "0", "-w", str(workspace.root)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def _overlap(configs) -> int:
    """The most executor/judge calls in flight at once while 2 cases run in 2 threads."""
    import threading
    import time as _time

    from skillforge.evaluation.compare import run_case

    state = {"now": 0, "peak": 0}
    lock = threading.Lock()

    def reply(messages):  # noqa: ANN001, ANN202
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        _time.sleep(0.05)
        with lock:
            state["now"] -= 1
        if "Judge A against B" in str(messages[-1].content):
            return Judgement(overall="tie", task="tie", robustness="tie", readability="tie", reason="same")
        return Action(kind="answer", text="约 128 元")

    fake = ScriptedChatModel.responding(reply)
    llm = LLM(configs, {Role.EXECUTOR: fake, Role.JUDGE: fake})
    threads = [threading.Thread(target=run_case, args=(_case(), _skills(), _skills(), "r1", "r1", llm)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return state["peak"]


def test_cases_against_the_embedded_server_run_one_at_a_time_and_remote_ones_overlap():
    local = LocalEndpoint("http://127.0.0.1:8123/v1", "qwen", 8192)
    assert _overlap(resolve_all(env={}, local=local)) == 1   # the serial server: no interleaved prompt states
    assert _overlap(resolve_all(env=ENV)) == 2
