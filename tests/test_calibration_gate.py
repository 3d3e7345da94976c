"""The gate acts on the judge's calibration (issue 25, part 3): a judged dimension that a calibration
against a person put below a floor (rules/calibration.py: KAPPA_FLOOR, AGREEMENT_FLOOR) is reported
and never decides: it cannot be the WIN (the effect score, their mean, stops deciding too, and the
primary endpoint is the objective checks) and its LOSS does not decline. With no calibration record
for the judge's fingerprint the gate behaves as before and says `judge: uncalibrated`.

The rule at its edges (rules/endpoint.py), the lookup (calibration/records.statuses_for), then
evaluations through the real decision path (`judge_case` -> `conclude`) with scripted judges, the
evaluate graph with a workspace's context, evolve's validation, and the runner with its rejudge
against a local OpenAI-compatible server; and what json, text and html say."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from eval_server import EvalServer, JudgeMode
from evaluate_fakes import BETTER, fake_llm, make_set, skill_text
from langchain_core.messages import BaseMessage

from skillforge.calibration.records import append_record, fingerprint_of, judge_identity, statuses_for
from skillforge.config import Workspace
from skillforge.context import eval_context
from skillforge.evaluation.compare import conclude, judge_case
from skillforge.evaluation.datasets import read_set
from skillforge.evaluation.judge import Judgement
from skillforge.evaluation.report import render_report
from skillforge.evolution.validate import evaluate_cases
from skillforge.graphs.evaluate import build_evaluate_graph
from skillforge.llm.client import LLM
from skillforge.llm.config import RoleConfig, resolve_all, workspace_configs
from skillforge.rules.calibration import AGREEMENT_FLOOR, KAPPA_FLOOR, dimension_status
from skillforge.rules.endpoint import JUDGE_DEPENDENT, OBJECTIVE, primary_endpoint
from skillforge.rules.paired import PRIMARY, paired_evidence
from skillforge.rules.provenance import new_nonce
from skillforge.rules.ratchet import RatchetInput, ratchet
from skillforge.runners.evaluate import run_evaluation
from skillforge.runners.rejudge import rejudge_run
from skillforge.state.calibration import HUMAN_DIMENSIONS, CalibrationRecord, DimensionCalibration, DimensionStatus
from skillforge.state.evaluate import Case, CaseResult, Execution, Expectation, SkillSide
from skillforge.state.evaluate_graph import EvalState
from skillforge.state.llm import Role
from skillforge.state.result import (PAIRED_DIMENSIONS, DimensionScores, EvalResult, EvalVerdict, JudgeCalibration,
                                     Outcome, RatchetVerdict)
from skillforge.testing.fake_chat import ScriptedChatModel

ENV = {"SKILLFORGE_LLM_MODEL": "fake-exec", "SKILLFORGE_JUDGE_MODEL": "fake-judge"}
SKILL = "table-booking"
N_CASES = 12
PASSING = "Your table is booked: booking confirmed for two."
FAILING = "I could not find a table, please try another restaurant."
LOW = (0.02, 0.51)    # (kappa, agreement) of a judge at chance against the person
HIGH = (0.81, 0.90)
NOISY_REASON = ("primary: objective (judge flip rate 0.50 ≥ 0.30, 12 of 24 judged cases flipped); the judged dimensions "
                "(task, robustness, readability, effect) are reported and do not decide")


# ---- the pure rule at its edges ------------------------------------------------------------------

@pytest.mark.parametrize("flips,judged,reason", [
    (0, 0, "primary: effect (no case was judged in both orders)"),
    (3, 25, "primary: effect (judge flip rate 0.12 < 0.30, 3 of 25 judged cases flipped)"),
    (0, 24, "primary: effect (judge flip rate 0.00 < 0.30, 0 of 24 judged cases flipped)"),
    (12, 24, NOISY_REASON),
])
def test_with_nothing_below_a_floor_the_endpoint_is_what_it_was(flips, judged, reason):
    """The reasons as the flip-rate rule wrote them before calibration existed, byte for byte."""
    for e in (primary_endpoint(flips, judged), primary_endpoint(flips, judged, ungated={}),
              primary_endpoint(flips, judged, ungated=frozenset())):
        assert e.reason == reason and e.ungated == ()
        assert e.primary == (OBJECTIVE if flips * 10 >= 3 * judged > 0 else PRIMARY)
        assert e.undecided == (JUDGE_DEPENDENT if e.primary == OBJECTIVE else ())


def test_one_dimension_below_a_floor_takes_the_effect_score_with_it():
    e = primary_endpoint(0, 24, ungated={"task": "κ 0.02 < 0.40"})
    assert (e.primary, e.judge_decides, e.ungated, e.undecided) == (OBJECTIVE, True, ("task",), ("task", PRIMARY))
    assert e.reason == ("primary: objective (judge below calibration floor on task: κ 0.02 < 0.40; judge flip rate "
                        "0.00 < 0.30, 0 of 24 judged cases flipped); task, effect are reported and do not decide")


def test_every_dimension_below_a_floor_leaves_only_the_objective_checks_and_efficiency():
    e = primary_endpoint(2, 24, ungated=dict.fromkeys(("readability", "task", "robustness"), "κ 0.02 < 0.40"))
    assert e.primary == OBJECTIVE and e.undecided == JUDGE_DEPENDENT and e.ungated == HUMAN_DIMENSIONS
    assert "judge below calibration floor on task, robustness, readability: κ 0.02 < 0.40;" in e.reason
    mixed = primary_endpoint(0, 0, ungated={"readability": "agreement 0.55 < 0.60", "task": "κ 0.10 < 0.40"})
    assert mixed.primary == OBJECTIVE and mixed.undecided == ("task", "readability", PRIMARY)
    assert mixed.reason == ("primary: objective (judge below calibration floor on task (κ 0.10 < 0.40), readability "
                            "(agreement 0.55 < 0.60); no case was judged in both orders); task, readability, effect "
                            "are reported and do not decide")
    assert primary_endpoint(0, 24, ungated=["robustness"]).undecided == ("robustness", PRIMARY)  # names alone


def test_a_noisy_judge_below_a_floor_keeps_the_noisy_reason_and_adds_the_floor():
    e = primary_endpoint(12, 24, ungated={"robustness": "κ 0.10 < 0.40"})
    assert (e.primary, e.judge_decides, e.undecided) == (OBJECTIVE, False, JUDGE_DEPENDENT)
    assert e.reason == NOISY_REASON + "; judge below calibration floor on robustness: κ 0.10 < 0.40"


def test_only_a_calibrated_dimension_can_be_below_a_floor():
    for bad in (["efficiency"], {"effect": "x"}, ["objective", "task"]):
        with pytest.raises(ValueError, match="can be below a calibration floor"):
            primary_endpoint(0, 24, ungated=bad)


SCORES = DimensionScores(task=0.5, robustness=0.5, readability=0.5, efficiency=0.5)


def verdict_of(deltas: dict[str, list[float]], endpoint, passes: int = 24) -> object:
    ev = paired_evidence({**{d: [0.0] * 24 for d in PAIRED_DIMENSIONS}, **deltas}, primary=endpoint.primary)
    return ratchet(RatchetInput(old=SCORES, new=SCORES, old_structure=0.8, new_structure=0.8, evidence=ev,
                                objective_passes=(passes, 24), old_objective_passes=24, endpoint=endpoint))


def test_the_ratchet_vetoes_only_on_what_is_gated():
    task_loss = {"task": [-1.0] * 12 + [0.0] * 12, "effect": [-0.25] * 12 + [0.0] * 12}
    assert verdict_of(task_loss, primary_endpoint(0, 24)).verdict is RatchetVerdict.DECLINED  # as before
    below = verdict_of(task_loss, primary_endpoint(0, 24, ungated=["task"]))
    assert below.verdict is RatchetVerdict.PASS and below.improvement is Outcome.INCONCLUSIVE
    assert below.primary == OBJECTIVE
    robust_loss = {"robustness": [-1.0] * 12 + [0.0] * 12}      # robustness still gated: its LOSS declines
    declined = verdict_of(robust_loss, primary_endpoint(0, 24, ungated=["task"]))
    assert declined.verdict is RatchetVerdict.DECLINED and any("loss on robustness" in r for r in declined.reasons)
    objective_loss = verdict_of({"objective": [-1.0] * 8 + [0.0] * 16}, primary_endpoint(0, 24, ungated=HUMAN_DIMENSIONS),
                                passes=16)
    assert objective_loss.verdict is RatchetVerdict.DECLINED and objective_loss.improvement is Outcome.LOSS


# ---- the lookup ----------------------------------------------------------------------------------

def judge_config(env: dict[str, str] = ENV) -> RoleConfig:
    return resolve_all(env=env)[Role.JUDGE]


def record_for(cfg: RoleConfig, dims: dict[str, tuple[float, float]], *, created: str = "2026-12-06T10:00:00Z",
               fingerprint: str | None = None) -> CalibrationRecord:
    """A calibration record for the judge `cfg` with (kappa, agreement) per dimension, each status
    as rules.calibration decides it."""
    endpoint, model = judge_identity(cfg)
    fp, prompt_sha, rubric_sha = fingerprint_of(model, endpoint)
    return CalibrationRecord(
        fingerprint=fingerprint or fp, model=model, endpoint=endpoint, prompt_sha=prompt_sha, rubric_sha=rubric_sha,
        created_at=created, repeats=1, pairs=30,
        dimensions={d: DimensionCalibration(dimension=d, pairs=30, judgements=30, agreement=a, agreement_ci=(a - 0.1, a),
                                            kappa=k, kappa_ci=(k - 0.1, k), position_bias=0.5, flip_rate_orders=0.0,
                                            flip_rate_repeats=0.0, status=dimension_status(k, a))
                    for d, (k, a) in dims.items()})


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    """A bare workspace: only runs/ is read (runs/judge_calibration.jsonl)."""
    root = tmp_path / "ws"
    (root / "runs").mkdir(parents=True)
    return Workspace(root)


def test_no_workspace_or_no_record_is_uncalibrated_and_says_so(ws):
    cfg = judge_config()
    nothing = statuses_for(None, cfg)
    assert nothing.statuses == dict.fromkeys(HUMAN_DIMENSIONS, DimensionStatus.UNCALIBRATED)
    assert nothing.line.startswith("judge: uncalibrated (no workspace")
    none = statuses_for(ws, cfg)
    fp = fingerprint_of(cfg.identity[1], cfg.identity[0])[0]
    assert none.fingerprint == fp and set(none.statuses.values()) == {DimensionStatus.UNCALIBRATED}
    assert none.line == (f"judge: uncalibrated (no calibration record for fingerprint {fp}; "
                         "run `skillforge judge calibrate`)")


def test_the_latest_record_for_the_judge_s_fingerprint_decides(ws):
    cfg = judge_config()
    append_record(ws, record_for(cfg, {"task": LOW, "robustness": HIGH, "readability": (0.66, 0.58)}))
    cal = statuses_for(ws, cfg)
    assert cal.statuses == {"task": DimensionStatus.REPORTED, "robustness": DimensionStatus.GATED,
                            "readability": DimensionStatus.REPORTED}
    assert cal.notes == {"task": f"κ 0.02 < {KAPPA_FLOOR:.2f}, agreement 0.51 < {AGREEMENT_FLOOR:.2f}",
                         "robustness": "κ 0.81", "readability": "agreement 0.58 < 0.60"}
    assert cal.line == (f"judge: calibrated 2026-12-06 (fingerprint {cal.fingerprint}): task reported κ 0.02 < 0.40, "
                        "agreement 0.51 < 0.60, robustness gated κ 0.81, readability reported agreement 0.58 < 0.60")
    append_record(ws, record_for(cfg, {"task": HIGH, "robustness": HIGH}, created="2026-12-07T09:00:00Z"))
    newer = statuses_for(ws, cfg)   # recalibrated: the newest record applies; readability was not measured
    assert newer.statuses == {"task": DimensionStatus.GATED, "robustness": DimensionStatus.GATED,
                              "readability": DimensionStatus.UNCALIBRATED}
    assert "readability uncalibrated (not measured)" in newer.line and "2026-12-07" in newer.line


def test_a_record_for_another_judge_never_applies(ws):
    """A record made for another model (a stale calibration) leaves the judge uncalibrated, and the
    line says what changed; another endpoint too."""
    other = judge_config({**ENV, "SKILLFORGE_JUDGE_MODEL": "another-judge"})
    append_record(ws, record_for(other, dict.fromkeys(HUMAN_DIMENSIONS, LOW)))
    cal = statuses_for(ws, judge_config())
    assert set(cal.statuses.values()) == {DimensionStatus.UNCALIBRATED}
    assert cal.line.startswith(f"judge: uncalibrated (no calibration record for fingerprint {cal.fingerprint}; "
                               "the newest record (2026-12-06, fingerprint ")
    assert "is for another judge (model another-judge → " in cal.line
    moved = statuses_for(ws, judge_config({**ENV, "SKILLFORGE_JUDGE_MODEL": "another-judge",
                                           "SKILLFORGE_JUDGE_BASE_URL": "http://127.0.0.1:9/v1"}))
    assert set(moved.statuses.values()) == {DimensionStatus.UNCALIBRATED}
    assert "(endpoint changed (" in moved.line and "model" not in moved.line.split("another judge")[1]
    assert statuses_for(ws, other).statuses == dict.fromkeys(HUMAN_DIMENSIONS, DimensionStatus.REPORTED)


def test_a_record_whose_fingerprint_does_not_match_its_judge_is_not_taken_for_it(ws):
    """The record's fingerprint decides, not its model field: a record of the same model under an
    older prompt or rubric (another fingerprint) is stale."""
    cfg = judge_config()
    append_record(ws, record_for(cfg, dict.fromkeys(HUMAN_DIMENSIONS, LOW), fingerprint="0123456789abcdef"))
    assert set(statuses_for(ws, cfg).statuses.values()) == {DimensionStatus.UNCALIBRATED}


# ---- evaluations through the decision path -------------------------------------------------------

def execution(passes: bool, *, longer: bool = False) -> Execution:
    return Execution(answer=(PASSING if passes else FAILING) + (" Enjoy your meal!" if longer else ""),
                     skills_loaded=[SKILL], prompt_tokens=100, completion_tokens=20, nonce=new_nonce(b"run-nonce"))


def scripted_judge(prefers: dict[str, str], *, per_case: list[bool] | None = None) -> LLM:
    """A judge consistent across orders (flip rate 0): on each case (on those `per_case` marks, when
    given; a tie elsewhere) it gives each dimension of `prefers` to that side ("candidate" or
    "baseline"), whichever order it sees them in; every other dimension is a tie. `overall` follows task."""
    calls = iter(range(10 ** 6))

    def answer(messages: list[BaseMessage]) -> Judgement:
        case, order = divmod(next(calls), 2)
        labels = {}
        for dim in ("task", "robustness", "readability"):
            side = prefers.get(dim)
            if side is None or (per_case is not None and not per_case[case]):
                labels[dim] = "tie"
            else:  # order 0 shows the baseline as A, order 1 the candidate as A
                labels[dim] = ("B" if order == 0 else "A") if side == "candidate" else ("A" if order == 0 else "B")
        return Judgement(overall=labels["task"], **labels, reason="scripted")

    return LLM(resolve_all(env=ENV), {Role.JUDGE: ScriptedChatModel.responding(answer)})


def evaluate(llm: LLM, calibration: JudgeCalibration | None, *, old_ok: list[bool] | None = None,
             n: int = N_CASES, run_id: str = "run") -> EvalResult:
    """`n` cases, both sides passing every check unless `old_ok` says the baseline fails some."""
    results: list[CaseResult] = []
    for i in range(n):
        case = Case(id=f"c{i:02d}", skill=SKILL, query=f"book a table for two, request {i}",
                    expect=Expectation(must_include=["booking confirmed"], must_not_include=["could not"]))
        results.append(judge_case(case, execution(old_ok[i] if old_ok else True), execution(True, longer=True), llm))
    return conclude({"run_id": run_id, "skill": SKILL, "eval_set": "t"}, None, None, results, calibration)


def calibrated(ws: Workspace, dims: dict[str, tuple[float, float]]) -> JudgeCalibration:
    append_record(ws, record_for(judge_config(), dims))
    return statuses_for(ws, judge_config())


def test_a_judge_that_says_the_candidate_wins_task_on_every_case(ws):
    uncal = evaluate(scripted_judge({"task": "candidate"}), statuses_for(ws, judge_config()))
    assert uncal.improvement is Outcome.WIN and uncal.primary == PRIMARY            # as today
    assert uncal.judge_calibration.line.startswith("judge: uncalibrated (no calibration record for fingerprint ")
    assert uncal.primary_reason == f"primary: effect (judge flip rate 0.00 < 0.30, 0 of {N_CASES} judged cases flipped)"

    below = evaluate(scripted_judge({"task": "candidate"}), calibrated(ws, {"task": LOW, "robustness": HIGH,
                                                                            "readability": HIGH}))
    task = below.evidence["task"]    # measured and reported (no WIN past the objective primary's tie) ...
    assert (task.wins, task.losses, task.p_value) == (N_CASES, 0, round(2 ** -N_CASES, 6))
    assert below.improvement is Outcome.INCONCLUSIVE and below.primary == OBJECTIVE   # ... but not the WIN
    assert below.evidence[OBJECTIVE].wins == below.evidence[OBJECTIVE].losses == 0
    assert below.primary_reason.startswith("primary: objective (judge below calibration floor on task: κ 0.02 < 0.40, "
                                           "agreement 0.51 < 0.60; judge flip rate 0.00")
    assert below.judge_calibration.statuses["task"] is DimensionStatus.REPORTED
    assert below.verdict is EvalVerdict.PASS  # task and effect moved >= 0.10, but they ask no review now
    print(f"task won on {N_CASES} of {N_CASES} cases: uncalibrated {uncal.improvement.value} ({uncal.primary}), "
          f"task below floor {below.improvement.value} ({below.primary}), verdicts {uncal.verdict.value} / "
          f"{below.verdict.value}")


def test_with_a_gated_record_the_judge_decides_as_today(ws):
    uncal = evaluate(scripted_judge({"task": "candidate"}), None)
    gated = evaluate(scripted_judge({"task": "candidate"}), calibrated(ws, dict.fromkeys(HUMAN_DIMENSIONS, HIGH)))
    assert gated.improvement is Outcome.WIN and gated.primary == PRIMARY
    assert uncal.judge_calibration.statuses == dict.fromkeys(HUMAN_DIMENSIONS, DimensionStatus.UNCALIBRATED)
    assert gated.judge_calibration.statuses == dict.fromkeys(HUMAN_DIMENSIONS, DimensionStatus.GATED)
    same = ("verdict", "improvement", "primary", "primary_reason", "reasons", "evidence", "ratchet", "measured")
    assert {k: getattr(gated, k) for k in same} == {k: getattr(uncal, k) for k in same}


def test_a_task_loss_below_the_floor_does_not_decline(ws):
    loses = scripted_judge({"task": "baseline"})
    uncal = evaluate(loses, None)
    assert uncal.verdict is EvalVerdict.DECLINED and uncal.evidence["task"].outcome is Outcome.LOSS
    below = evaluate(scripted_judge({"task": "baseline"}), calibrated(ws, {"task": LOW}))
    assert below.evidence["task"].outcome is Outcome.LOSS and below.verdict is EvalVerdict.PASS
    assert not any("loss on task" in r or "loss on effect" in r for r in below.reasons)
    robust = evaluate(scripted_judge({"robustness": "baseline"}), calibrated(ws, {"task": LOW, "robustness": HIGH}))
    assert robust.verdict is EvalVerdict.DECLINED and any("loss on robustness" in r for r in robust.reasons)


def test_a_coin_judge_calibrated_below_the_floor_never_wins_on_judged_dimensions(ws):
    """The bar. A judge consistent across orders (so the flip rate cannot catch it) that gives each
    case to a side by a weighted coin (the candidate 80 %): uncalibrated it is a WIN on most seeds;
    calibrated at chance against the person, never. And the per-order coin of test_judge_gate (a
    noisy judge) below the floor: never a WIN either, and the reason says both."""
    cal = calibrated(ws, dict.fromkeys(HUMAN_DIMENSIONS, LOW))
    wins_uncal, wins_below = 0, 0
    for seed in range(10):
        rng = random.Random(seed)
        favoured = [rng.random() < 0.8 for _ in range(N_CASES)]
        judge = dict.fromkeys(("task", "robustness", "readability"), "candidate")
        wins_uncal += evaluate(scripted_judge(judge, per_case=favoured), None).improvement is Outcome.WIN
        below = evaluate(scripted_judge(judge, per_case=favoured), cal)
        wins_below += below.improvement is Outcome.WIN
        assert below.primary == OBJECTIVE and below.measured.flips == 0
    print(f"order-consistent coin (80 % candidate), 10 seeds: WIN uncalibrated {wins_uncal}, below the floor {wins_below}")
    assert wins_uncal >= 8 and wins_below == 0
    rng = random.Random(3)

    def coin(messages: list[BaseMessage]) -> Judgement:
        return Judgement(**{d: rng.choice("AB") for d in ("overall", "task", "robustness", "readability")}, reason="coin")

    noisy = evaluate(LLM(resolve_all(env=ENV), {Role.JUDGE: ScriptedChatModel.responding(coin)}), cal, n=24)
    assert noisy.improvement is not Outcome.WIN and noisy.primary == OBJECTIVE
    assert noisy.primary_reason.startswith("primary: objective (judge flip rate ")
    assert noisy.primary_reason.endswith("; judge below calibration floor on task, robustness, readability: "
                                         "κ 0.02 < 0.40, agreement 0.51 < 0.60")


def test_a_real_objective_fix_still_wins_with_every_judged_dimension_below_the_floor(ws):
    cal = calibrated(ws, dict.fromkeys(HUMAN_DIMENSIONS, LOW))
    old_ok = [i % 6 == 0 for i in range(N_CASES)]     # the live release fails 10 of 12 cases, the candidate none
    r = evaluate(scripted_judge({"task": "candidate"}), cal, old_ok=old_ok)
    assert r.primary == OBJECTIVE and r.improvement is Outcome.WIN
    assert (r.evidence[OBJECTIVE].wins, r.evidence[OBJECTIVE].losses) == (10, 0)


def test_an_invalid_run_carries_the_calibration_too(ws):
    r = evaluate(scripted_judge({"task": "candidate"}), calibrated(ws, {"task": LOW}), n=3)
    assert r.verdict is EvalVerdict.INVALID and r.judge_calibration.statuses["task"] is DimensionStatus.REPORTED


def test_without_a_lookup_the_result_says_uncalibrated():
    r = evaluate(scripted_judge({"task": "candidate"}), None)
    assert r.improvement is Outcome.WIN
    assert r.judge_calibration.line == "judge: uncalibrated (no calibration record was looked up for this run)"


def test_an_old_stored_result_without_calibration_still_loads():
    r = evaluate(scripted_judge({"task": "candidate"}), None)
    old = json.loads(r.model_dump_json())
    del old["judge_calibration"]
    loaded = EvalResult.model_validate(old)
    assert loaded.judge_calibration is None and loaded.improvement is Outcome.WIN
    assert "judge calibration</td><td>-</td>" in render_report(loaded, [])


# ---- what a person and a program read ------------------------------------------------------------

def test_the_calibration_is_in_the_json_the_text_and_the_html(ws, capsys):
    from skillforge.cli.evaluate import _print
    uncal = evaluate(scripted_judge({"task": "candidate"}), statuses_for(ws, judge_config()))
    below = evaluate(scripted_judge({"task": "candidate"}), calibrated(ws, {"task": LOW, "robustness": HIGH}))
    dumped = [json.loads(r.model_dump_json()) for r in (uncal, below)]
    assert dumped[0]["judge_calibration"]["statuses"] == dict.fromkeys(HUMAN_DIMENSIONS, "uncalibrated")
    assert dumped[0]["judge_calibration"]["line"].startswith("judge: uncalibrated (")
    assert dumped[1]["judge_calibration"]["statuses"] == {"task": "reported", "robustness": "gated",
                                                          "readability": "uncalibrated"}
    assert dumped[1]["judge_calibration"]["notes"]["task"] == "κ 0.02 < 0.40, agreement 0.51 < 0.60"
    _print(uncal, None)
    _print(below, None)
    out = capsys.readouterr().out
    assert "  judge: uncalibrated (no calibration record for fingerprint " in out
    assert ("  judge: calibrated 2026-12-06 (fingerprint " in out
            and "task reported κ 0.02 < 0.40, agreement 0.51 < 0.60, robustness gated κ 0.81" in out)
    page = render_report(uncal, [])
    assert "judge calibration</td><td>judge: uncalibrated (" in page and "badge uncalibrated" in page
    page = render_report(below, [])
    assert "judge: calibrated 2026-12-06" in page and "improvement (objective)" in page
    task_row = page.split("<tr class='reported'><td>task")[1].split("</tr>")[0]
    assert "reported only κ 0.02 &lt; 0.40" in task_row
    assert "<td>robustness <span class='badge gated'" in page and "<td>efficiency</td>" in page


# ---- where the statuses come from: the graph's context, evolve's validation, the runner ----------

def test_the_evaluate_graph_takes_the_calibration_from_the_workspace_context(workspace, machine):
    make_set(workspace.evaluation_sets_dir, 6)
    graph = build_evaluate_graph()

    def run(run_id: str) -> EvalResult:
        state = EvalState(run_id=run_id, skill="taxi-hailing", eval_set="t",
                          baseline=SkillSide(text=skill_text(), release_id="r-old"),
                          candidate=SkillSide(text=skill_text(BETTER), release_id="r-new"))
        out = EvalState.model_validate(graph.invoke(state, {"max_concurrency": 2},
                                                    context=eval_context(workspace, fake_llm()[0])))
        return out.result

    before = run("run-1")
    assert before.improvement is Outcome.WIN and before.primary == PRIMARY
    assert set(before.judge_calibration.statuses.values()) == {DimensionStatus.UNCALIBRATED}
    judge = fake_llm()[0].configs[Role.JUDGE]
    append_record(workspace, record_for(judge, {"task": LOW, "robustness": HIGH, "readability": LOW}))
    after = run("run-2")
    assert after.improvement is Outcome.INCONCLUSIVE and after.primary == OBJECTIVE
    assert after.evidence["task"].wins == 6 and after.evidence["readability"].wins == 6
    logged = [json.loads(x) for x in workspace.evaluations_log.read_text(encoding="utf-8").splitlines()]
    assert [x["judge_calibration"]["statuses"]["task"] for x in logged] == ["uncalibrated", "reported"]
    assert logged[1]["primary"] == OBJECTIVE and "judge below calibration floor on task, readability" in \
        logged[1]["primary_reason"]


def test_evolve_validation_gates_on_the_workspace_calibration(workspace, machine):
    cases = read_set(make_set(workspace.root, 6)).cases
    graph = build_evaluate_graph()

    def score(run_id: str, ws: Workspace | None) -> object:
        return evaluate_cases(graph, fake_llm()[0], {}, run_id, "selection", "taxi-hailing", cases,
                              SkillSide(text=skill_text(), release_id="r-old"), SkillSide(text=skill_text(BETTER)),
                              ws=ws)

    first = score("v-1", workspace)
    assert (first.improvement, first.primary) == (Outcome.WIN, PRIMARY)
    append_record(workspace, record_for(fake_llm()[0].configs[Role.JUDGE], dict.fromkeys(HUMAN_DIMENSIONS, LOW)))
    below = score("v-2", workspace)
    assert below.improvement is Outcome.INCONCLUSIVE and below.primary == OBJECTIVE
    assert "judge below calibration floor" in below.primary_reason
    assert score("v-3", None).improvement is Outcome.WIN   # no workspace: nothing looked up, uncalibrated


def test_the_runner_and_its_rejudge_look_the_calibration_up(workspace, machine, tmp_path, monkeypatch):
    """`evaluate` and `evaluate --rejudge` in process against a local OpenAI-compatible server: the
    run is uncalibrated; a record for the server's judge then makes its rejudge objective, and the
    report shows the calibration."""
    make_set(workspace.evaluation_sets_dir, 6)
    cand = tmp_path / "cand" / "SKILL.md"
    cand.parent.mkdir()
    cand.write_text(skill_text(BETTER), encoding="utf-8")
    with EvalServer(JudgeMode.CONTENT) as srv:
        for key, value in {"SKILLFORGE_LLM_BASE_URL": srv.base_url, "SKILLFORGE_LLM_MODEL": "m",
                           "SKILLFORGE_JUDGE_MODEL": "j", "SKILLFORGE_LLM_MAX_RETRIES": "0"}.items():
            monkeypatch.setenv(key, value)
        first = run_evaluation(workspace, "taxi-hailing", candidate=str(cand), eval_set="t", no_cache=True).result
        assert first.improvement is Outcome.WIN and first.judge_calibration.line.startswith("judge: uncalibrated (")
        append_record(workspace, record_for(workspace_configs(workspace)[Role.JUDGE],
                                            dict.fromkeys(HUMAN_DIMENSIONS, LOW)))
        report = tmp_path / "report.html"
        again = rejudge_run(workspace, first.run_id, no_cache=True, report=report).result
    assert again.improvement is Outcome.INCONCLUSIVE and again.primary == OBJECTIVE
    assert again.judge_calibration.statuses == dict.fromkeys(HUMAN_DIMENSIONS, DimensionStatus.REPORTED)
    assert again.evidence["effect"].wins == 6 and first.evidence["effect"].wins == 6   # the same judgements
    page = report.read_text(encoding="utf-8")
    assert "judge: calibrated 2026-12-06" in page and page.count("reported only κ 0.02") == 3


def test_the_embedded_server_s_new_port_keeps_its_calibration(ws):
    """`skillforge llm serve` listens on a new port each start: the same local model keeps its
    fingerprint (and its record) across restarts; another endpoint of a configured model does not."""
    import dataclasses

    from skillforge.calibration.records import EMBEDDED_ENDPOINT
    from skillforge.llm.config import LOCAL_SOURCE
    base = judge_config()
    one = dataclasses.replace(base, base_url="http://127.0.0.1:37311/v1", source=LOCAL_SOURCE)
    two = dataclasses.replace(base, base_url="http://127.0.0.1:39993/v1", source=LOCAL_SOURCE)
    assert judge_identity(one) == judge_identity(two) == (EMBEDDED_ENDPOINT, base.model)
    append_record(ws, record_for(one, dict.fromkeys(HUMAN_DIMENSIONS, LOW)))
    assert statuses_for(ws, two).statuses == dict.fromkeys(HUMAN_DIMENSIONS, DimensionStatus.REPORTED)
    moved = dataclasses.replace(base, base_url="http://127.0.0.1:39993/v1")
    assert judge_identity(moved) != judge_identity(dataclasses.replace(base, base_url="http://127.0.0.1:37311/v1"))
