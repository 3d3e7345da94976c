"""scripts/demo.py on the scripted world when the evaluation is DECLINED or INVALID: the demo shows
the verdict with its reasons and a plain explanation, goes on to the A/A run and the evolution round,
reaches its last step, streams the CLI's progress, prints pasteable commands, and a re-run shows the
finished steps again instead of failing. The CLI runs for real (subprocesses), against the scripted
world behind a real HTTP server on 127.0.0.1. The router steps (unchanged by the world) are left out:
`make demo-ci` runs them."""

from __future__ import annotations

import importlib.util
import re
import sys
import time
from pathlib import Path

import pytest

DEMO = Path(__file__).resolve().parents[1] / "scripts" / "demo.py"
ENV_KEYS = ("SKILLFORGE_WORKSPACE", "SKILLFORGE_LLM_BASE_URL", "SKILLFORGE_LLM_MODEL", "SKILLFORGE_JUDGE_MODEL",
            "SKILLFORGE_LLM_MAX_RETRIES", "COLUMNS")


@pytest.fixture(scope="module")
def demo():
    spec = importlib.util.spec_from_file_location("skillforge_demo", DEMO)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_steps(demo, ws: Path, world: str) -> None:
    """The demo's steps as main() runs them, less the router's two."""
    d = demo.Demo(ws, ci=True, world=world)
    try:
        d.workspace()
        d.endpoint()
        d.evaluation()
        d.sessions()
        d.evolution()
        d.where(time.monotonic())
    finally:
        d.close()


@pytest.mark.parametrize(("world", "verdict", "short"), [
    ("declined", "DECLINED", "in short: the candidate is declined: "),
    ("invalid", "INVALID", "in short: the run cannot tell: the model could not judge 6 of 6 cases"),
])
def test_a_declined_or_invalid_evaluation_is_shown_and_the_demo_goes_on(demo, tmp_path, monkeypatch, capfd, world,
                                                                       verdict, short):
    for key in ENV_KEYS:
        monkeypatch.setenv(key, "80" if key == "COLUMNS" else "unset")
    ws = tmp_path / "ws"
    monkeypatch.setenv("SKILLFORGE_WORKSPACE", str(ws))
    monkeypatch.setattr(demo, "console", demo.Console(highlight=False, width=80))
    run_steps(demo, ws, world)
    out = capfd.readouterr()
    text = out.out + out.err
    assert f"verdict {verdict}, improvement " in text
    assert short in text and "  why: " in text
    if world == "declined":
        assert "candidate forfeited 6 of 6 case(s)" in text and "no answer after 6 turns (looping)" in text
        assert "its agent gave no usable answer on 6 of 6 cases" in text
    else:
        assert "6 of 6 cases INVALID" in text and "judge: InvalidLLMOutput" in text
    # it went on: the A/A run, the evolution round, the last step
    assert re.search(r"^A/A: (no false alarm|FALSE ALARM|INVALID)", text, re.M) and "A/A verdict" not in text
    assert "status PENDING_REVIEW" in text and "8. where everything is" in text
    # the sessions round: shipped transcripts staged, accepted as the person would, then the nightly loop
    assert "staged" in text and re.search(r"accepted taxi-hailing_auto_s\w+ -> (repair|holdout|final_audit)", text)
    assert "evolved: taxi-hailing; 0 staged cases still wait for a person" in text
    # the CLI's stderr reached the screen: its run line and one progress line per case (not a terminal here)
    assert re.search(r"run taxi-hailing-\d{8}-\d{6}-\w+ \(if it stops", text)
    assert "case 6 of 6 done" in text and re.search(r"batch batch-\S+: taxi-hailing PENDING_REVIEW, 1 of 1 done, \d+ s elapsed", text)
    # pasteable at 80 columns: the real executable, the whole command on one line
    exe = re.escape(str(Path(sys.executable).parent / "skillforge"))
    assert re.search(rf"^  (\.venv/bin/skillforge|{exe}) review approve evolve-taxi-hailing-\S+ --comment \"...\" "
                     rf"-w {re.escape(str(ws))}$", text, re.M)
    # a re-run shows the finished evaluation again instead of running (or failing) it again
    run_steps(demo, ws, world)
    again = capfd.readouterr().out
    assert "(done before; shown again from runs/demo.json)" in again and short in again
    assert "evaluate taxi-hailing --candidate" not in again and "8. where everything is" in again


def test_each_checkout_has_its_own_demo_folder(demo):
    a, b = demo.demo_root(Path("/work/a")), demo.demo_root(Path("/work/b"))
    assert a != b and a.parent == b.parent and a.name.startswith("skillforge-demo-")
    assert demo.demo_root(Path("/work/a")) == a


def test_explain_says_what_a_verdict_means(demo):
    local_invalid = {"verdict": "INVALID", "reasons": ["2 of 6 cases INVALID (33% > 20%): the run cannot tell",
                                                       "most common cause (2 of 2 INVALID cases): execution: no answer"],
                     "measured": {"valid_cases": 4, "invalid_cases": 2}}
    assert demo.explain(local_invalid, local=True) == (
        "the run cannot tell: the small local model did not finish 2 of 6 cases; a configured endpoint "
        "(SKILLFORGE_LLM_BASE_URL) avoids this")
    aa = {"kind": "aa", "verdict": "PASS", "false_alarm": False}
    assert demo.explain(aa, local=True) == "no false alarm: the live release came out no different from itself"
    aa_floor = {"kind": "aa", "verdict": "DECLINED", "false_alarm": False, "reasons": ["objective pass rate 0/6 ..."]}
    assert demo.explain(aa_floor, local=True).endswith("; DECLINED is the live release's own result (see why)")
    assert demo.explain({**aa, "false_alarm": True}, local=True).startswith("false alarm")
    assert demo.explain({"verdict": "REVIEW", "improvement": "WIN"}, local=False).startswith("a person decides")


def test_an_aa_is_headed_as_evaluate_aa_heads_it(demo):
    """The A/A step's head is `evaluate --aa`'s own wording (state.result.aa_outcome), not a ratchet
    verdict with a Python bool ("A/A verdict DECLINED, false alarm False")."""
    from skillforge.state.result import aa_outcome

    quiet = {"kind": "aa", "verdict": "DECLINED", "false_alarm": False, "reasons": ["objective pass rate 0/6"],
             "evidence": {"effect": {"outcome": "INCONCLUSIVE"}}}
    lines = demo.verdict_lines(quiet, local=False)
    assert lines[0] == aa_outcome(False) and lines[0].startswith("A/A: no false alarm")
    assert "verdict DECLINED" not in "\n".join(lines) and "False" not in "\n".join(lines)
    noisy = {**quiet, "false_alarm": True, "evidence": {"effect": {"outcome": "WIN"},
                                                        "robustness": {"outcome": "INCONCLUSIVE"}}}
    assert demo.verdict_lines(noisy, local=False)[0] == aa_outcome(True, ["effect WIN"])
    assert demo.verdict_lines({"kind": "aa", "verdict": "INVALID", "false_alarm": None}, local=False)[0] == "A/A: INVALID"
