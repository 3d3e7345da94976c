"""QA 34: a PASS must rest on something. A set whose cases hold no expectation cannot meet the
objective floor by construction (F1: REVIEW, never an automatic PASS); a run where no case loaded
the skill on either side cannot tell (F1b: INVALID); and a DECLINED or INVALID re-evaluation of an
open canary's release rolls it back, as docs/canary.md says (F3)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_canary import SKILL, canary_workspace, tick

from skillforge.evaluation.compare import MIN_VALID_CASES, checked, invalid_reason
from skillforge.journal import append_jsonl
from skillforge.rules.endpoint import RELIABLE
from skillforge.rules.paired import paired_evidence
from skillforge.rules.ratchet import RatchetInput, ratchet
from skillforge.state.evaluate import Case, Expectation
from skillforge.state.result import DimensionScores, Measured, RatchetVerdict

SAME = DimensionScores(task=0.5, robustness=0.5, readability=0.5, efficiency=0.5)


def _ratchet(passes: int, n: int) -> tuple[RatchetVerdict, tuple[str, ...]]:
    evidence = paired_evidence({d: [0.0] * 6 for d in ("task", "robustness", "readability", "efficiency", "effect",
                                                          "objective")})
    r = ratchet(RatchetInput(old=SAME, new=SAME, old_structure=0.8, new_structure=0.8, evidence=evidence,
                             objective_passes=(passes, n), old_objective_passes=passes, p0_flips=(), endpoint=RELIABLE))
    return r.verdict, r.reasons


def test_no_objective_check_is_review_not_pass() -> None:
    verdict, reasons = _ratchet(0, 0)
    assert verdict is RatchetVerdict.REVIEW and "no case has an objective check" in reasons[0]
    assert _ratchet(6, 6)[0] is RatchetVerdict.PASS
    assert _ratchet(0, 6)[0] is RatchetVerdict.DECLINED


@pytest.mark.parametrize("expect, is_checked", [(Expectation(), False), (Expectation(must_include=["fare"]), True),
                                                (Expectation(must_not_include=["sorry"]), True)])
def test_a_case_is_checked_only_with_an_expectation(expect: Expectation, is_checked: bool) -> None:
    case = Case(id="c1", skill=SKILL, query="a cab to the airport", expect=expect)
    assert checked(case) is is_checked


def _measured(valid: int, no_evidence: int) -> Measured:
    return Measured(old=SAME, new=SAME, valid_cases=valid, invalid_cases=0, invalid_rate=0.0, flip_rate=0.0,
                    no_evidence=no_evidence)


def test_a_run_where_no_case_loaded_the_skill_cannot_tell() -> None:
    why = invalid_reason(_measured(6, 6))
    assert why is not None and "only 0 of 6 valid case(s) loaded the skill on either side" in why
    assert invalid_reason(_measured(6, 6 - MIN_VALID_CASES)) is None
    assert invalid_reason(_measured(6, 0)) is None


@pytest.mark.parametrize("verdict, rolled", [("INVALID", True), ("DECLINED", True), ("PASS", False)])
def test_a_failed_re_evaluation_of_the_canary_rolls_it_back(tmp_path: Path, verdict: str, rolled: bool) -> None:
    ws, live, canary = canary_workspace(tmp_path / "ws")
    append_jsonl(ws.evaluations_log, {"run_id": "old-1", "release_id": canary, "baseline_release_id": live,
                                      "skill": SKILL, "eval_set": "dev", "kind": "ab", "verdict": "DECLINED",
                                      "ts": "2020-01-01T00:00:00+00:00"})  # before the canary: not this one's
    append_jsonl(ws.evaluations_log, {"run_id": "rerun-1", "release_id": canary, "baseline_release_id": live,
                                      "skill": SKILL, "eval_set": "dev", "kind": "ab", "verdict": verdict})
    (done,) = tick(ws)
    if rolled:
        assert done["done"] == "rolled back", done
        assert f"its latest offline evaluation is {verdict} (run rerun-1 on dev)" in done["verdict"]["reasons"][0]
    else:
        assert done.get("done") != "rolled back", done


def test_a_resume_after_a_stop_mid_run_is_offered_the_cap_that_finishes_the_cases_left() -> None:
    """F2: the `next:` cap was the least (2 turns a side), so a case whose agent takes 6 turns never
    finished and each resume paid 12 more requests for nothing."""
    from skillforge.evaluation.executor import MAX_TURNS
    from skillforge.rules.evolve_budget import WORST_EXECUTOR_TURNS, estimate_evaluation, evaluate_next
    from skillforge.state.llm import BudgetCaps

    assert WORST_EXECUTOR_TURNS == MAX_TURNS
    least, worst = estimate_evaluation(2), estimate_evaluation(2, worst=True)
    assert (least.calls, worst.calls) == (2 * (2 * 2 + 2), 2 * (2 * MAX_TURNS + 2))
    assert evaluate_next("r", BudgetCaps(max_calls=40), worst, 40, 0) == "skillforge evaluate --resume r --budget-calls 68"


def test_a_pass_decided_without_the_judge_says_so_in_its_reasons() -> None:
    """F4: an always-A judge flips on every case; the objective checks decide, and the PASS says so."""
    from test_judge_gate import ENV, PASSING, SKILL as TABLE

    from skillforge.evaluation.compare import conclude, judge_case
    from skillforge.evaluation.judge import Judgement
    from skillforge.llm.client import LLM
    from skillforge.llm.config import resolve_all
    from skillforge.rules.provenance import new_nonce
    from skillforge.state.evaluate import Execution
    from skillforge.state.llm import Role
    from skillforge.testing.fake_chat import ScriptedChatModel

    first = Judgement(overall="A", task="A", robustness="A", readability="A", reason="the first one")
    judge = LLM(resolve_all(env=ENV), {Role.JUDGE: ScriptedChatModel.responding(lambda messages: first)})
    case = Case(id="c", skill=TABLE, query="q", expect=Expectation(must_include=["booking confirmed"]))
    results = [judge_case(case.model_copy(update={"id": f"c{i}"}),
                          *(Execution(answer=PASSING, nonce=new_nonce(f"nonce-{i}{side}".encode()), skills_loaded=[TABLE])
                            for side in "ab"), judge) for i in range(6)]
    r = conclude({"run_id": "biased", "skill": TABLE, "eval_set": "t"}, None, None, results)
    assert r.verdict == "PASS" and r.primary == "objective"
    assert "the judge's verdicts did not decide: it flipped on 6 of 6 case(s)" in " ".join(r.reasons), r.reasons


def test_a_mistyped_skill_in_canary_status_is_an_unknown_skill_with_the_closest(tmp_path: Path) -> None:
    """F9: 'has no open canary' for a typo; elsewhere an unknown skill names the closest."""
    from conftest import flat, run_cli

    ws, _, _ = canary_workspace(tmp_path / "ws")
    said = flat(run_cli(["canary", "status", SKILL[:-2], "-w", str(ws.root)], ok=2).stderr)
    assert f"unknown skill '{SKILL[:-2]}'. Did you mean: {SKILL}?" in said


def test_canary_status_shows_an_age_comparable_with_its_maximum(tmp_path: Path) -> None:
    """F7: the header said '0.0 h old' beside a 0.0002 h maximum the verdict line said it had passed."""
    import time

    from conftest import run_cli

    ws, _, _ = canary_workspace(tmp_path / "ws", max_age_hours=0.0002)
    time.sleep(1.0)
    head = run_cli(["canary", "status", SKILL, "-w", str(ws.root)]).stdout.splitlines()[0]
    assert "0.0 h old" not in head and " h old) against live" in head, head


def test_too_few_checked_cases_for_the_floor_is_review_unless_none_passes() -> None:
    """QA 35: 2 of 2 checked cases passing was DECLINED 'below the floor', as if the candidate were bad."""
    verdict, reasons = _ratchet(2, 2)
    assert verdict is RatchetVerdict.REVIEW and "only 2 case(s) have an objective check (2 pass)" in reasons[0]
    assert _ratchet(0, 2)[0] is RatchetVerdict.DECLINED
    assert _ratchet(3, 3)[0] is RatchetVerdict.PASS


def test_a_failure_against_live_is_cleared_only_by_a_pass_against_live_on_that_set(tmp_path: Path) -> None:
    """QA 35 T1: a PASS of the canary against itself (or a REVIEW against none) cleared a DECLINED."""
    from skillforge.library.services import Services

    ws, live, canary = canary_workspace(tmp_path / "ws")

    def line(run: str, verdict: str, baseline: str | None, eval_set: str = "dev") -> None:
        append_jsonl(ws.evaluations_log, {"run_id": run, "release_id": canary, "baseline_release_id": baseline,
                                          "skill": SKILL, "eval_set": eval_set, "kind": "ab", "verdict": verdict})

    def fails() -> bool:
        driver = Services(ws).canary
        return driver.latest_evaluation(driver.open_canary(SKILL)) is not None

    line("r1", "DECLINED", live)
    line("r2", "PASS", canary)           # against itself
    line("r3", "REVIEW", None)           # against no skill
    line("r4", "REVIEW", live)           # no evidence of loss, but no PASS either
    line("r5", "PASS", live, "p0")       # another set
    assert fails()
    line("r6", "PASS", live)             # the same set, against live
    assert not fails()
    line("r7", "INVALID", live, "p0")
    assert fails()


def test_a_hand_promotion_while_the_rules_hold_says_so(tmp_path: Path) -> None:
    """F8: promoting by hand while the data do not yet rule out a worsening was silent."""
    from conftest import flat, run_cli

    ws, _, _ = canary_workspace(tmp_path / "ws")
    done = run_cli(["canary", "promote", SKILL, "-w", str(ws.root)])
    assert f"note: the rules would still hold the canary of {SKILL}" in flat(done.stderr)
    assert "promoted:" in done.stdout


def test_an_aa_run_with_a_coin_for_a_judge_says_its_verdicts_decide_nothing(examples_ws: Path) -> None:
    """F4: 'A/A: no false alarm' with a 100 % flip rate read as a healthy judge."""
    from conftest import run_cli
    from eval_server import EvalServer, JudgeMode
    from evaluate_fakes import make_set

    make_set(examples_ws / "evaluation_sets", 8)
    with EvalServer(JudgeMode.RANDOM) as srv:
        env = {"SKILLFORGE_LLM_BASE_URL": srv.base_url, "SKILLFORGE_LLM_MODEL": "m", "SKILLFORGE_JUDGE_MODEL": "j",
               "SKILLFORGE_LLM_MAX_RETRIES": "0"}
        proc = run_cli(["evaluate", "taxi-hailing", "--aa", "--set", "t", "-w", str(examples_ws)], env, ok=None)
    assert proc.stdout.startswith("A/A: "), proc.stdout
    assert "but the judge flipped on" in proc.stdout and "its verdicts decide nothing" in proc.stdout, proc.stdout
