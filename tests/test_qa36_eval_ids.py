"""QA 36 F1/F2: the evaluate graph invoked through the Python API with a run id already used appended
the second run's cases to the first run's trace and recorded a second result under the same id; and a
run made through the API could not be re-judged (only the CLI wrote its <run>.meta.json). Now the
graph's first node claims the run id for its thread (runs/traces/<run>.claim; RunIdTaken for another
thread, nothing run or written), and its record node writes the meta file for every run."""

from __future__ import annotations

import json
import threading

import pytest
from conftest import run_cli
from eval_server import EvalServer, JudgeMode
from evaluate_fakes import BETTER, SKILL, fake_llm, make_set, skill_text

from skillforge.context import eval_context
from skillforge.errors import NotWritable, RunIdTaken
from skillforge.evaluation.stored import claim_evaluation, coverage, read_case_outputs, read_meta
from skillforge.graphs.evaluate import build_evaluate_graph
from skillforge.runners.checkpoint import sqlite_saver
from skillforge.state.evaluate import SkillSide
from skillforge.state.evaluate_graph import EvalState

N = 6


def state(run_id: str, marker: str = BETTER) -> EvalState:
    return EvalState(run_id=run_id, skill=SKILL, eval_set="t", baseline=SkillSide(text=skill_text(), label="live"),
                     candidate=SkillSide(text=skill_text(marker), label="candidate"))


def rows(ws, run_id: str) -> list[dict]:  # noqa: ANN001
    lines = [json.loads(x) for x in ws.evaluations_log.read_text(encoding="utf-8").splitlines()]
    return [x for x in lines if x["run_id"] == run_id]


@pytest.fixture
def api_ws(workspace, machine):  # noqa: ANN001 - conftest: a workspace with the example skills
    make_set(workspace.root / "evaluation_sets", N)
    return workspace


def test_a_second_api_run_under_a_used_id_is_refused_and_the_first_record_is_kept(api_ws):
    ws = api_ws
    ctx = eval_context(ws, fake_llm()[0])
    graph = build_evaluate_graph(checkpointer=False)
    first = EvalState.model_validate(graph.invoke(state("ci-job"), context=ctx))
    trace = ws.traces_dir / "ci-job.jsonl"
    kept = trace.read_bytes()
    assert len(kept.splitlines()) == N and len(rows(ws, "ci-job")) == 1
    llm, executor, judge = fake_llm()
    with pytest.raises(RunIdTaken, match="run id 'ci-job' was already used by an evaluation") as e:
        graph.invoke(state("ci-job", marker=""), context=eval_context(ws, llm))
    assert "This evaluation was not run" in str(e.value)
    assert not executor.received and not judge.received          # refused before any request
    assert trace.read_bytes() == kept and len(rows(ws, "ci-job")) == 1
    assert rows(ws, "ci-job")[0]["verdict"] == first.result.verdict
    fresh = EvalState.model_validate(graph.invoke(state("ci-job-2", marker=""), context=eval_context(ws, llm)))
    assert fresh.result is not None and len(rows(ws, "ci-job-2")) == 1   # another id runs


def test_another_checkpoint_thread_is_refused_and_the_claiming_thread_goes_on(api_ws, tmp_path):
    ws = api_ws
    graph = build_evaluate_graph(checkpointer=sqlite_saver(tmp_path / "ckpt.sqlite"))
    ctx = eval_context(ws, fake_llm()[0])
    graph.invoke(state("nightly"), {"configurable": {"thread_id": "t-1"}}, context=ctx)
    with pytest.raises(RunIdTaken, match="t-1"):              # the holder is named
        graph.invoke(state("nightly"), {"configurable": {"thread_id": "t-2"}}, context=ctx)
    assert len(rows(ws, "nightly")) == 1
    # the claiming thread run again (an evolve validation re-run after a crash runs in its parent's
    # thread): its record replaces its cases instead of appending a second copy
    graph.invoke(state("nightly"), {"configurable": {"thread_id": "t-1"}}, context=ctx)
    assert len((ws.traces_dir / "nightly.jsonl").read_bytes().splitlines()) == N


def test_a_run_recorded_before_claims_keeps_its_id(tmp_path):
    traces = tmp_path / "traces"
    traces.mkdir()
    (traces / "old-run.jsonl").write_text("{}\n", encoding="utf-8")
    with pytest.raises(RunIdTaken, match="a run recorded before claims"):
        claim_evaluation(traces, "old-run", "any-thread")
    assert not (traces / "old-run.claim").exists()
    claim_evaluation(traces, "new-run", None)                 # no checkpointer: a claim nobody else holds
    with pytest.raises(RunIdTaken, match="unresumable-"):
        claim_evaluation(traces, "new-run", None)


def test_two_threads_claiming_at_once_one_wins(tmp_path):
    traces, won, lost = tmp_path / "traces", [], []
    barrier = threading.Barrier(8)

    def claim(i: int) -> None:
        barrier.wait()
        try:
            claim_evaluation(traces, "race", f"thread-{i}")
            won.append(i)
        except RunIdTaken:
            lost.append(i)

    workers = [threading.Thread(target=claim, args=(i,)) for i in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert len(won) == 1 and len(lost) == 7
    assert (traces / "race.claim").read_text(encoding="utf-8") == f"thread-{won[0]}"


def test_a_claim_that_cannot_be_written_is_a_named_error(tmp_path):
    """(A full disk under the traces folder, and the run's resume after it: test_journal_full.)"""
    (tmp_path / "runs").write_text("a file where the runs folder belongs", encoding="utf-8")
    with pytest.raises(NotWritable, match="cannot write the run's claim"):
        claim_evaluation(tmp_path / "runs" / "traces", "ro-run", "t")


def test_an_api_run_has_a_meta_file_and_the_cli_rejudges_it(api_ws):
    ws = api_ws
    graph = build_evaluate_graph(checkpointer=False)
    graph.invoke(state("api-run"), context=eval_context(ws, fake_llm()[0]))
    meta = read_meta(ws, "api-run")
    assert meta["skill"] == SKILL and meta["eval_set"] == "t" and meta["kind"] == "ab"
    assert meta["candidate"]["text"] == skill_text(BETTER) and meta["baseline"]["label"] == "live"
    assert coverage(meta, read_case_outputs(ws, "api-run")) == (N, N, [])
    with EvalServer(JudgeMode.CONTENT) as srv:
        env = {"SKILLFORGE_LLM_BASE_URL": srv.base_url, "SKILLFORGE_LLM_MODEL": "m", "SKILLFORGE_JUDGE_MODEL": "j",
               "SKILLFORGE_LLM_MAX_RETRIES": "0"}
        again = json.loads(run_cli(["evaluate", "--rejudge", "api-run", "--json", "--no-cache", "-w", str(ws.root)],
                                   env, ok=3).stdout)   # exit 3: REVIEW
        assert srv.calls["Judgement"] == 2 * N and not srv.calls.get("Action")   # the judge only
    assert again["run_id"].startswith("api-run-rejudge-") and len(rows(ws, again["run_id"])) == 1


def test_a_finished_thread_given_other_sides_is_a_new_run_and_refused(api_ws, tmp_path):
    """QA 38 F1: the claiming thread, invoked again with a new candidate, returned the first candidate's
    verdict, added a second row under the id and rewrote the meta with the new sides."""
    ws = api_ws
    graph = build_evaluate_graph(checkpointer=sqlite_saver(tmp_path / "ckpt.sqlite"))
    cfg = {"configurable": {"thread_id": "thread-x"}}
    graph.invoke(state("tr-1"), cfg, context=eval_context(ws, fake_llm()[0]))
    meta = (ws.traces_dir / "tr-1.meta.json").read_bytes()
    with pytest.raises(RunIdTaken, match="this thread's finished run, which evaluated another candidate"):
        graph.invoke(state("tr-1", marker=""), cfg, context=eval_context(ws, fake_llm()[0]))
    assert len(rows(ws, "tr-1")) == 1 and (ws.traces_dir / "tr-1.meta.json").read_bytes() == meta
    graph.invoke(state("tr-1"), cfg, context=eval_context(ws, fake_llm()[0]))  # the same sides again: recorded once
    assert len(rows(ws, "tr-1")) == 1 and len((ws.traces_dir / "tr-1.jsonl").read_bytes().splitlines()) == N


def fail_writing(ws, run_id: str, ext: str):  # noqa: ANN001, ANN201
    """Run `run_id` without a checkpointer where its `ext` file cannot be written (a dangling symlink
    into a missing folder): NotWritable, and no verdict row. Returns the graph."""
    ws.traces_dir.mkdir(parents=True, exist_ok=True)
    (ws.traces_dir / f"{run_id}{ext}").symlink_to(f"/nonexistent-skillforge-dir/{run_id}{ext}")
    graph = build_evaluate_graph(checkpointer=False)
    with pytest.raises(NotWritable):
        graph.invoke(state(run_id), context=eval_context(ws, fake_llm()[0]))
    assert not ws.evaluations_log.exists() or not rows(ws, run_id)
    return graph


def test_a_trace_that_cannot_be_written_records_no_verdict_and_frees_the_id(api_ws):
    """QA 38 F2: the verdict's row was appended before the trace was written, so a full disk left a
    verdict with no evidence behind it, and the id was burned."""
    ws = api_ws
    fail_writing(ws, "full-1", ".jsonl")
    assert not (ws.traces_dir / "full-1.claim").exists() and not (ws.traces_dir / "full-1.meta.json").exists()


def test_a_run_whose_meta_file_is_gone_says_so(api_ws):
    """QA 38 F8: `--rejudge` of a run with its case outputs but no meta file said "no stored run"."""
    from skillforge.evaluation.stored import StoredRunError

    ws = api_ws
    build_evaluate_graph(checkpointer=False).invoke(state("no-meta"), context=eval_context(ws, fake_llm()[0]))
    (ws.traces_dir / "no-meta.meta.json").unlink()
    with pytest.raises(StoredRunError, match="stored run 'no-meta' has its case outputs but no no-meta.meta.json"):
        read_meta(ws, "no-meta")


def test_a_meta_file_that_cannot_be_written_records_no_verdict_either(api_ws, tmp_path):
    """QA 39 G1: the trace fitted, the meta did not: the row was appended anyway and the id burned."""
    ws = api_ws
    graph = fail_writing(ws, "m-1", ".meta.json")
    assert not list(ws.traces_dir.glob("m-1*"))                      # nothing left: the id is free
    graph.invoke(state("m-1"), context=eval_context(ws, fake_llm()[0]))
    assert len(rows(ws, "m-1")) == 1 and read_meta(ws, "m-1")["recorded"] is True
    # a checkpointed thread whose meta failed: its resume records the verdict once
    saver_graph = build_evaluate_graph(checkpointer=sqlite_saver(tmp_path / "ck.sqlite"))
    cfg = {"configurable": {"thread_id": "t-m"}}
    (ws.traces_dir / "m-2.meta.json").symlink_to("/nonexistent-skillforge-dir/m-2.meta.json")
    with pytest.raises(NotWritable):
        saver_graph.invoke(state("m-2"), cfg, context=eval_context(ws, fake_llm()[0]))
    (ws.traces_dir / "m-2.meta.json").unlink()                       # the disk has room again
    saver_graph.invoke(None, cfg, context=eval_context(ws, fake_llm()[0]))
    assert len(rows(ws, "m-2")) == 1 and read_meta(ws, "m-2")["recorded"] is True
