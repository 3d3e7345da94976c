"""Live smoke test of the embedded local model (`make test-local`, needs the [local] extra):
start the real llama.cpp server, make one structured call per role, stop it. Prints figures."""

from __future__ import annotations

import json
import os
import time
from typing import Literal

import pytest
from conftest import BENCH_SKILLS
from pydantic import BaseModel, Field

from skillforge.llm import local_server
from skillforge.config import init_workspace
from skillforge.llm.client import build_llm
from skillforge.state.llm import Role

pytestmark = pytest.mark.local


class Pick(BaseModel):
    """Route the user's query to one skill."""

    skill: Literal["weather-query", "air-quality", "NONE"] = Field(description="the skill to use, or NONE")
    reason: str = Field(description="one short sentence")


SYSTEM = ("You route user queries to skills. weather-query: weather, rain, temperature, forecast. "
          "air-quality: PM2.5, AQI, smog. Answer NONE if neither fits.")


def test_one_structured_call_per_role(tmp_path):
    ws = init_workspace(tmp_path / "ws")
    t0 = time.perf_counter()
    info = local_server.serve(ws, wait_s=600)
    started_s = time.perf_counter() - t0
    figures: dict[str, object] = {"server_start_s": round(started_s, 2), "model": info.model,
                                  "llama_cpp_build_s": os.environ.get("SKILLFORGE_LOCAL_BUILD_S")}
    try:
        llm = build_llm(ws, no_cache=True)
        assert all(cfg.source == "local server" for cfg in llm.configs.values())
        for role in Role:
            answer = llm.structured(role, Pick, [("system", SYSTEM), ("user", "明天上海会下雨吗")],
                                    choices={"skill": {"weather-query", "air-quality", "NONE"}})
            figures[f"{role.value}_latency_ms"] = round(answer.latency_ms)
            figures[f"{role.value}_answer"] = answer.value.skill
            assert answer.completion_tokens > 0 and answer.prompt_tokens > 0
        assert llm.ledger.calls == 4 and llm.ledger.cost_usd == 0.0
    finally:
        assert local_server.stop(ws)
    assert local_server.find_server(ws) is None
    print("\nlocal smoke figures:", json.dumps(figures, ensure_ascii=False))


def test_llm_choose_with_the_local_model(tmp_path):
    """The route graph's LLM layer against the real embedded model: an answer inside the top-3, or
    a fail-closed NONE with its reason."""
    import shutil

    from skillforge.skill import file as skillfile
    from skillforge.context import route_context
    from skillforge.graphs.route import route
    from skillforge.library.releases import ReleaseStateMachine
    from skillforge.rules.thresholds import RouteThresholds, Scorer

    ws = init_workspace(tmp_path / "ws")
    shutil.copytree(BENCH_SKILLS, ws.skills_dir, dirs_exist_ok=True)
    ReleaseStateMachine.open(ws).import_skills(skillfile.scan(ws.skills_dir, ws.root))
    local_server.serve(ws, wait_s=600)
    try:
        ctx = route_context(ws)
        assert ctx.llm is not None
        # never accept or reject in the embed layer: every query goes to llm_choose
        ctx.index.thresholds = RouteThresholds(embedder=ctx.index.embedder.name, scorer=Scorer.COSINE,
                                               rule_margin=99, rule_min_score=99, high=2.0, low=-2.0, margin=1.0)
        t0 = time.perf_counter()
        state = route("北京现在PM2.5多少", ctx)
        elapsed = time.perf_counter() - t0
        assert state.hit_layer is not None and state.hit_layer.value in ("llm", "none")
        assert state.chosen is None or state.chosen in state.top_k
        assert state.reason
        print(f"\nllm_choose: {state.chosen} via {state.hit_layer.value} in {elapsed:.1f} s; top_k {state.top_k}; "
              f"reason: {state.reason[:120]}")
    finally:
        local_server.stop(ws)


def test_one_case_evaluation_in_behaviour_mode(tmp_path):
    """One dev case through the evaluate graph on the embedded model (behaviour mode, the package's
    local defaults): the skill under test is exercised on both sides, no prompt overflows the
    context, and the run concludes. Prints wall time, calls, tokens and the case's outcome."""
    import shutil
    from pathlib import Path

    from skillforge.skill import file as skillfile
    from skillforge.context import eval_context
    from skillforge.graphs.evaluate import build_evaluate_graph
    from skillforge.library.releases import ReleaseStateMachine
    from skillforge.state.evaluate import ExecutionMode, SkillSide
    from skillforge.state.evaluate_graph import EvalState

    repo = Path(__file__).resolve().parents[1]
    ws = init_workspace(tmp_path / "ws")
    shutil.copytree(repo / "skills", ws.skills_dir, dirs_exist_ok=True)
    machine = ReleaseStateMachine.open(ws)
    machine.import_skills(skillfile.scan(ws.skills_dir, ws.root))
    data = json.loads((repo / "evaluation_sets" / "dev.json").read_text(encoding="utf-8"))
    data["cases"] = [c for c in data["cases"] if c["id"] == "dev-taxi-hailing-01"]
    (ws.evaluation_sets_dir / "dev.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    local_server.serve(ws, wait_s=600)
    try:
        llm = build_llm(ws, no_cache=True)
        cfg = llm.configs[Role.EXECUTOR]
        assert (cfg.source, cfg.timeout, cfg.max_retries) == ("local server", 600.0, 0)
        current = machine.store.current("taxi-hailing")
        text = machine.repo.read(current.commit_hash, f"{current.skill_path}/SKILL.md").decode("utf-8")
        state = EvalState(run_id="local-one", skill="taxi-hailing", eval_set="dev", mode=ExecutionMode.BEHAVIOUR,
                          baseline=SkillSide(text=text, release_id=current.release_id),
                          candidate=SkillSide(text=text + "\n- 回复末尾不要添加推销内容。\n"))
        t0 = time.perf_counter()
        out = EvalState.model_validate(build_evaluate_graph().invoke(state, {"max_concurrency": 2},
                                                                     context=eval_context(ws, llm)))
        wall = time.perf_counter() - t0
    finally:
        local_server.stop(ws)
    [r] = out.results
    assert out.result is not None and out.result.mode is ExecutionMode.BEHAVIOUR
    assert r.unexercised == [] and not r.no_evidence
    assert "ContextOverflow" not in (r.error or "")
    print(f"\none behaviour-mode case: {wall:.0f} s, {llm.ledger.calls} calls, {llm.ledger.tokens} tokens, "
          f"turns {r.baseline.turns}+{r.candidate.turns}, invalid {r.invalid} {r.error or ''}, flipped {r.flipped}, "
          f"verdict {out.result.verdict}")


def test_lazy_grammar_gives_the_stock_tokens(monkeypatch):
    """skillforge.llm.llama_serve's sampler against llama-cpp-python's own chain, in-process on the
    real model: an executor step, a step after a tool result and a judgement (forced tool calls,
    temperature 0, the server's repeat penalty) give the same arguments token for token. Prints
    both wall times."""
    from llama_cpp.llama import Llama

    from skillforge.evaluation.executor import step_schema
    from skillforge.evaluation.judge import Judgement
    from skillforge.llm import llama_serve
    from skillforge.llm.local_model import assemble

    step = step_schema(("call_tool search_restaurants", "call_tool book_table", "answer"))
    result = json.dumps({"results": [{"name": "Trattoria Roma", "price_per_person": 35, "slots": ["20:00"]}]})
    call = {"id": "c1", "type": "function", "function": {"name": "Action", "arguments": json.dumps(
        {"step": "call_tool search_restaurants", "text": "", "arguments": {"city": "Lyon"}})}}
    requests = [
        (step, [{"role": "system", "content": "You book restaurants with the tools: search, then book, then answer."},
                {"role": "user", "content": "Book a table for 4 at an Italian place in Lyon tomorrow at 8pm."}]),
        (step, [{"role": "system", "content": "You book restaurants with the tools: search, then book, then answer."},
                {"role": "user", "content": "Book a table for 4 at an Italian place in Lyon tomorrow at 8pm."},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c1", "content": result}]),
        (Judgement, [{"role": "system", "content": "You are a strict, impartial judge of two assistant answers."},
                     {"role": "user", "content": "Request: 明天上海会下雨吗\n[Answer A]\n明天上海有小雨，记得带伞。\n\n"
                                                 "[Answer B]\n我不知道。\n\nJudge A against B."}]),
    ]
    llm = Llama(model_path=str(assemble()), n_ctx=4096, n_threads=2, n_threads_batch=2, logits_all=False,
                verbose=False)

    def run() -> tuple[list[str], float]:
        out, t0 = [], time.perf_counter()
        for schema, messages in requests:
            llm.reset()
            tool = {"type": "function", "function": {"name": schema.__name__, "description": schema.__doc__ or "",
                                                     "parameters": schema.model_json_schema()}}
            reply = llm.create_chat_completion(messages=messages, tools=[tool], temperature=0.0, repeat_penalty=1.1,
                                               tool_choice={"type": "function", "function": {"name": schema.__name__}},
                                               max_tokens=300)
            out.append(reply["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"])
        return out, time.perf_counter() - t0

    stock, stock_s = run()
    for name in ("_init_sampler", "save_state", "load_state"):
        monkeypatch.setattr(Llama, name, getattr(Llama, name))  # restored after the test
    assert llama_serve.install()
    lazy, lazy_s = run()
    assert lazy == stock
    assert all(json.loads(arguments) for arguments in lazy)
    print(f"\nlazy grammar: {lazy_s:.1f} s against {stock_s:.1f} s stock for {len(requests)} requests; "
          f"same arguments: {lazy == stock}")
