"""The static HTML report of one evaluation: summary, side-by-side cases, filters (no server, no CDN)."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

from skillforge.state.calibration import DimensionStatus
from skillforge.state.evaluate import CaseResult, PairVerdict
from skillforge.state.result import SCORED_DIMENSIONS, EvalResult

_STYLE = """body{font:14px system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse;width:100%}
td,th{border:1px solid #ccc;padding:6px;vertical-align:top;text-align:left}pre{white-space:pre-wrap;margin:0}
.PASS,.WIN{color:#080}.REVIEW{color:#a60}.DECLINED,.INVALID,.LOSS{color:#b00}.loss{background:#fee}.flip{background:#ffd}
.invalid{background:#eee}.unexercised{background:#eef}.injection{background:#fdd}.summary td{border:none;padding:2px 12px 2px 0}
.reported{color:#777;font-style:italic}.badge{border:1px solid #aaa;border-radius:3px;padding:0 4px;font-size:12px}
.badge.gated{border-color:#080;color:#080}.badge.uncalibrated{border-color:#a60;color:#a60}"""
_SCRIPT = """function f(){const s=[...document.querySelectorAll('input[data-k]:checked')].map(e=>e.dataset.k);
document.querySelectorAll('tr.case').forEach(r=>{r.style.display=!s.length||s.some(k=>r.classList.contains(k))?'':'none'})}"""


def _e(text: object) -> str:
    return html.escape(str(text))


def _row(r: CaseResult) -> str:
    overall = r.verdicts.get("overall")
    classes = ["case"]
    if r.invalid:
        classes.append("invalid")
    elif overall is PairVerdict.BASELINE:
        classes.append("loss")
    if r.flipped:
        classes.append("flip")
    if r.no_evidence:
        classes.append("unexercised")
    if r.injection:
        classes.append("injection")
    verdicts = "<br>".join(f"{_e(k)}: {_e(v.value)}" for k, v in r.verdicts.items()) or _e(r.error or "")
    reasons = "<br>".join(_e(o.get("reason", "")) for o in r.orders)
    checks = "<br>".join(f"{_e(side)}: {'pass' if c.passed else 'fail'} {_e(c.reason)}" for side, c in r.checks.items())
    return (f'<tr class="{" ".join(classes)}"><td>{_e(r.case.id)}{" (P0)" if r.case.p0 else ""}<br>{_e(r.case.query)}</td>'
            f"<td><pre>{_e(r.baseline.answer or r.baseline.error or '')}</pre></td>"
            f"<td><pre>{_e(r.candidate.answer or r.candidate.error or '')}</pre></td>"
            f"<td>{verdicts}{'<br><b>flip</b>' if r.flipped else ''}"
            f"{'<br><b>skill loaded by neither side: no evidence</b>' if r.no_evidence else ''}{_addressed(r)}</td>"
            f"<td>{reasons}</td><td>{checks}</td></tr>")


def _addressed(r: CaseResult) -> str:
    """The verdict cell's note on a case whose answers addressed the judge (not judged)."""
    return "".join(f"<br><b>{_e(side)}'s answer addressed the judge (its loss, not judged):</b> "
                   f"{_e('; '.join(found))}" for side, found in r.injection.items())


def _injections(results: Sequence[CaseResult]) -> str:
    """The summary cell listing every case whose answers addressed the judge: case, side, what matched."""
    return "<br>".join(f"{_e(r.case.id)} {_e(side)}: {_e('; '.join(found))}"
                       for r in results for side, found in r.injection.items()) or "none"


def _noise(aa: Mapping[str, object] | None) -> str:
    """The noise floor cell: the latest A/A self-check of the skill (flip rate, false alarm)."""
    if aa is None:
        return "no A/A self-check yet (run <code>skillforge evaluate SKILL --aa</code>)"
    alarm = aa.get("false_alarm")
    flip = aa.get("flip_rate")
    flip_text = f"{flip:.1%}" if isinstance(flip, (int, float)) else "?"
    return (f"A/A run {_e(aa.get('run_id'))} on {_e(aa.get('eval_set'))}: judge flip rate {flip_text}, "
            f"false alarm: {'<b class=DECLINED>yes</b>' if alarm else 'none'}")


def _calibration(result: EvalResult, dim: str) -> tuple[str, str]:
    """(row attribute, badge) of a judged dimension's calibration status: class 'reported' greys out
    the row of a dimension below a calibration floor (reported only, it decides nothing)."""
    cal = result.judge_calibration
    if cal is None or dim not in cal.statuses:
        return "", ""
    status = cal.statuses[dim]
    label = {DimensionStatus.REPORTED: "reported only"}.get(status, status.value)
    note = f" {_e(cal.notes[dim])}" if dim in cal.notes else ""
    return (" class='reported'" if status is DimensionStatus.REPORTED else "",
            f" <span class='badge {_e(status.value)}' title='judge calibration'>{_e(label)}{note}</span>")


def _evidence(result: EvalResult) -> str:
    """One row per dimension: wins / losses / ties, p, CI, MDE and the outcome; a judged dimension
    carries its calibration badge (gated, reported only, uncalibrated)."""
    rows = "".join(
        f"<tr{row}><td>{_e(dim)}{badge}</td>"
        f"<td class='{_e(e.outcome.value)}'>{_e(e.outcome.value)}</td><td>{e.wins} / {e.losses} / "
        f"{e.ties}</td><td>{e.p_value:.3g} ({e.p_adjusted:.3g})</td><td>{e.mean:+.3f} [{e.ci[0]:+.3f}, {e.ci[1]:+.3f}]</td>"
        f"<td>{e.mde:.3f}</td></tr>" for dim, e in result.evidence.items() for row, badge in [_calibration(result, dim)])
    return ("<h2>Paired evidence</h2><table><tr><th>dimension</th><th>outcome</th><th>wins / losses / ties</th>"
            "<th>one-sided p (adjusted)</th><th>mean delta [90 % CI]</th><th>MDE</th></tr>" + rows + "</table>"
            if rows else "")


def render_report(result: EvalResult, results: Sequence[CaseResult], aa: Mapping[str, object] | None = None) -> str:
    """The whole page: summary (verdict, improvement, the A/A noise floor `aa` beside them), paired
    evidence, and the cases side by side with filters."""
    m = result.measured
    summary = [("verdict", f'<b class="{_e(result.verdict)}">{_e(result.verdict)}</b>'),
               (f"improvement ({_e(result.primary or 'effect')})",
                _e(result.improvement.value if result.improvement else "-")),
               ("primary endpoint", _e(result.primary_reason or "-")),
               ("judge calibration", _e(result.judge_calibration.line if result.judge_calibration else "-")),
               ("noise floor", _noise(aa)),
               ("skill / set", f"{_e(result.skill)} / {_e(result.eval_set)}"),
               ("releases", f"{_e(result.baseline_release or 'a folder (unpublished)')} → "
                            f"{_e(result.candidate_release or 'a folder (unpublished)')}"),
               ("reasons", "<br>".join(_e(x) for x in result.reasons) or "-"),
               ("mode", _e(result.mode or "-")),
               ("answers addressing the judge", _injections(results))]
    if result.not_evaluated:
        summary.append(("not evaluated (files outside SKILL.md)", "<br>".join(_e(x) for x in result.not_evaluated)))
    if result.unexercised is not None:
        u = result.unexercised
        summary.append(("skill not loaded", f"{u.executions.get('baseline', 0)} baseline / {u.executions.get('candidate', 0)}"
                                            f" candidate executions; {u.cases} case(s) by neither side (ties, no evidence)"))
    if m is not None:
        for dim in SCORED_DIMENSIONS:
            summary.append((dim, f"{getattr(m.old, dim):.3f} → {getattr(m.new, dim):.3f}"))
        summary += [("effect / total", f"{result.ratchet.get('old_effect', 0):.3f} → {result.ratchet.get('new_effect', 0):.3f}"
                                       f" / {result.ratchet.get('old_total', 0):.3f} → {result.ratchet.get('new_total', 0):.3f}"),
                    ("structure", f"{result.structure.get('baseline', 0):.3f} → {result.structure.get('candidate', 0):.3f}"),
                    ("flip rate / INVALID rate", f"{m.flip_rate:.1%} / {m.invalid_rate:.1%}"),
                    ("tokens", f"{m.tokens.get('baseline', 0)} → {m.tokens.get('candidate', 0)}"),
                    ("latency ms", f"{m.latency_ms.get('baseline', 0)} → {m.latency_ms.get('candidate', 0)}"),
                    ("mean length diff", f"{m.mean_length_diff:+.0f} chars")]
    head = "".join(f"<tr><td>{k}</td><td>{v}</td></tr>" for k, v in summary)
    filters = "".join(f'<label><input type="checkbox" data-k="{k}" onchange="f()"> {label}</label> '
                      for k, label in (("loss", "losses"), ("flip", "flips"), ("invalid", "INVALID"),
                                       ("unexercised", "no evidence"), ("injection", "addressed the judge")))
    rows = "".join(_row(r) for r in results)
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>SkillForge evaluation {_e(result.run_id)}</title>"
            f"<style>{_STYLE}</style><script>{_SCRIPT}</script></head><body>"
            f"<h1>Evaluation {_e(result.run_id)}</h1><table class='summary'>{head}</table>{_evidence(result)}"
            f"<h2>Cases</h2><p>Show only: {filters}</p><table><tr><th>case</th><th>baseline</th><th>candidate</th>"
            f"<th>verdicts</th><th>judge reasons (both orders)</th><th>objective checks</th></tr>{rows}</table>"
            "</body></html>")
