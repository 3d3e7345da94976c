"""QA 24 finding 14: the skill history page (`skillforge report SKILL --html`) marks the dimensions a
run recorded as reported only (a judge below a calibration floor, or a noisy judge), says which
primary endpoint decided and why, and headlines the objective checks (not the judge-based effect
score) when they decided. Real files: a workspace with real releases and a runs/evaluations.jsonl
whose lines carry a REPORTED judge calibration and the primary endpoint the rule gives."""

from __future__ import annotations

import html
import json
import re

import pytest
from conftest import edited, run_cli
from evolve_fakes import SKILL, new_workspace

from skillforge.journal import append_jsonl
from skillforge.library.releases import ReleaseStateMachine
from skillforge.rules.endpoint import JUDGE_DEPENDENT, primary_endpoint, undecided_in

HOSTILE = "κ <script>alert(1)</script> < 0.40"
NOTES = {"task": HOSTILE, "robustness": "κ -0.06 < 0.40", "readability": "κ 0.00 < 0.40"}
CALIBRATION = {"fingerprint": "836614d3f1100fac", "calibrated_at": "2026-12-07T08:21:48+00:00",
               "statuses": dict.fromkeys(NOTES, "reported"), "notes": NOTES,
               "line": f"judge: calibrated 2026-12-07 (fingerprint 836614d3f1100fac): task reported {HOSTILE}"}


def _ev(wins: int, mean: float, outcome: str = "WIN", n: int = 14) -> dict[str, object]:
    return {"wins": wins, "losses": 0, "ties": n - wins, "p_value": 6.1e-05, "p_adjusted": 0.0003,
            "ci": [mean, mean], "mean": mean, "outcome": outcome, "mde": 0.33}


def _ab_line(run_id: str, release_id: str | None, base: str, **over: object) -> dict[str, object]:
    endpoint = primary_endpoint(0, 14, ungated=NOTES)
    evidence = {"task": _ev(14, 1.0), "robustness": _ev(14, 1.0), "readability": _ev(0, 0.0, "INCONCLUSIVE"),
                "efficiency": _ev(0, 0.0, "INCONCLUSIVE"), "effect": _ev(14, 0.5), "objective": _ev(6, 0.429)}
    line = {"run_id": run_id, "release_id": release_id, "baseline_release_id": base, "skill": SKILL,
            "eval_set": "selection", "kind": "ab", "verdict": "REVIEW", "improvement": "WIN", "false_alarm": None,
            "primary": endpoint.primary, "primary_reason": endpoint.reason, "effect_score": 0.75,
            "baseline_effect_score": 0.25, "flip_rate": 0.0, "evidence": evidence, "judge_calibration": CALIBRATION}
    return line | over


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    root = tmp_path_factory.mktemp("qa24hist")
    ws = new_workspace(root / "ws")
    m = ReleaseStateMachine.open(ws)
    live = m.store.current(SKILL)
    manual = m.publish(SKILL, edited(m, SKILL, "confirm the pickup point"), triggered_by="cli publish")
    evolved = m.publish(SKILL, edited(m, SKILL, "say the fare first"), triggered_by="evolve:r1")
    append_jsonl(ws.evaluations_log, _ab_line("ab-manual", manual.release_id, live.release_id))
    append_jsonl(ws.evaluations_log, _ab_line("r1-r1c1-selection", None, manual.release_id))
    s = _ab_line("r1-r1c1-selection", None, manual.release_id)
    summary = {"name": "selection", "cases": 14, "verdict": "REVIEW", "improvement": "WIN", "score": 0.75,
               "baseline_score": 0.25, "primary": s["primary"], "primary_reason": s["primary_reason"],
               "primary_wins": 6, "primary_losses": 0, "primary_ties": 8, "primary_mean": 0.429,
               "run_id": "r1-r1c1-selection"}
    append_jsonl(ws.evaluations_log, {"kind": "evolve", "run_id": "r1", "release_id": evolved.release_id,
                                      "skill": SKILL, "candidate": "r1c1", "selection": summary,
                                      "review": {"action": "approve", "comment": "ok"}})
    out = root / "page.html"
    run_cli(["report", SKILL, "--html", str(out), "--workspace", str(ws.root)])
    return out.read_text(encoding="utf-8")


def _text(raw: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", raw)).split())


def test_reported_dimensions_carry_a_badge_and_the_note(page):
    rows = re.findall(r"<tr class='ev[^']*'>.*?</tr>", page)
    assert len(rows) == 12  # six dimensions, the manual publish's run and the evolve run's selection
    for row in rows:
        dim = re.search(r"<td>([a-z_]+)", row).group(1)
        marked = "reported only" in row
        assert marked == (dim in JUDGE_DEPENDENT), row
        assert ("class='ev reported'" in row) == marked
    assert page.count("reported only (κ -0.06 &lt; 0.40)") == 2


def test_which_endpoint_decided_and_why(page):
    text = _text(page)
    reason = primary_endpoint(0, 14, ungated=NOTES).reason
    assert text.count(f"decided by objective : {reason}") == 2  # the manual publish's run and the set
    assert text.count(f"selection: decided by objective : {reason}") == 1  # the evolve run's set
    assert "0 of 14 judged cases flipped" in text and "improvement (primary)" in text and "WIN (objective)" in text


def test_the_objective_headline_replaces_the_effect_score(page):
    history = page.split("<table id='history'>", 1)[1].split("</table>", 1)[0]
    cells = re.findall(r"<td class='scores'>(.*?)</td>", history)
    text = [_text(c) for c in cells]
    assert "selection: objective Δ +0.429 (W/L/T 6/0/8); effect 0.750 vs 0.250 (reported only)" in text
    assert "selection objective Δ +0.429 (W/L/T 6/0/8); effect 0.750 vs 0.250 (reported only)" in text


def test_stored_strings_stay_escaped(page):
    assert "<script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_an_effect_decided_run_is_shown_as_before(tmp_path):
    ws = new_workspace(tmp_path / "ws")
    m = ReleaseStateMachine.open(ws)
    live = m.store.current(SKILL)
    rel = m.publish(SKILL, edited(m, SKILL, "x"), triggered_by="cli publish")
    reliable = primary_endpoint(0, 14)
    append_jsonl(ws.evaluations_log, _ab_line("ab-ok", rel.release_id, live.release_id, primary=reliable.primary,
                                              primary_reason=reliable.reason,
                                              judge_calibration={**CALIBRATION, "statuses": dict.fromkeys(NOTES, "gated"),
                                                                 "notes": {}, "line": "judge: calibrated"}))
    out = tmp_path / "p.html"
    run_cli(["report", SKILL, "--html", str(out), "--workspace", str(ws.root)])
    raw = out.read_text(encoding="utf-8")
    assert "reported only" not in raw and "selection: 0.750 vs 0.250" in _text(raw)
    assert "decided by effect : primary: effect (judge flip rate 0.00 &lt; 0.30" not in raw  # escaped once
    assert "decided by effect : primary: effect (judge flip rate 0.00 < 0.30, 0 of 14 judged cases flipped)" in _text(raw)


@pytest.mark.parametrize(("flips", "judged", "ungated"), [
    (0, 14, {}), (0, 0, {}), (9, 20, {}), (0, 14, {"task": "κ 0.02 < 0.40"}), (0, 14, NOTES),
    (9, 20, {"readability": "κ 0.1 < 0.40; agreement 0.5 < 0.60"}), (9, 20, NOTES)])
def test_undecided_in_reads_back_what_the_endpoint_says(flips, judged, ungated):
    e = primary_endpoint(flips, judged, ungated=ungated)
    assert undecided_in(e.reason) == e.undecided
    assert undecided_in(json.loads(json.dumps(e.reason))) == e.undecided
    assert undecided_in(None) == () and undecided_in(42) == ()
