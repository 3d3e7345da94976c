"""What the lineage page (library/lineage.py) says about who decided an evaluation: the dimensions
recorded as reported only (a noisy judge, or one below a calibration floor: a badge on each), the
primary endpoint and its recorded reason, and the score it headlines (the objective checks' paired
counts when they decided, the effect score then marked reported). Every string is HTML-escaped."""

from __future__ import annotations

import html

from skillforge.rules.endpoint import OBJECTIVE, undecided_in


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def num(x: object, fmt: str = ".3f") -> str:
    return format(x, fmt) if isinstance(x, int | float) and not isinstance(x, bool) else "-"


def reported_marks(line: object) -> dict[str, str]:
    """{dimension: why} of the dimensions an evaluation line (or an evolve set's summary) recorded as
    reported only, deciding nothing: those its primary-endpoint reason names (a noisy judge, or one
    below a calibration floor; rules/endpoint.undecided_in), else those its judge calibration put
    below a floor. The why is the calibration's note (say 'κ 0.02 < 0.40') when it has one."""
    if not isinstance(line, dict):
        return {}
    cal = line.get("judge_calibration") if isinstance(line.get("judge_calibration"), dict) else {}
    notes = cal.get("notes") if isinstance(cal.get("notes"), dict) else {}
    statuses = cal.get("statuses") if isinstance(cal.get("statuses"), dict) else {}
    dims = undecided_in(line.get("primary_reason")) or tuple(d for d, st in statuses.items() if st == "reported")
    return {str(d): str(notes.get(d, "")) for d in dims}


def badge(dim: str, marks: dict[str, str]) -> str:
    if dim not in marks:
        return ""
    note = f" ({_e(marks[dim])})" if marks[dim] else ""
    return f" <span class='badge reported' title='does not decide this run'>reported only{note}</span>"


def decided(line: dict[str, object], what: str = "") -> str:
    """Which primary endpoint decided, and why (the recorded reason), and the judge calibration line."""
    cal = line.get("judge_calibration")
    out = ""
    if line.get("primary") or line.get("primary_reason"):
        out += (f"<p class='primary'>{_e(what)}decided by <b>{_e(line.get('primary') or 'effect')}</b>"
                f"{': ' + _e(line.get('primary_reason')) if line.get('primary_reason') else ''}</p>")
    if isinstance(cal, dict) and cal.get("line"):
        out += f"<p class='calibration'>{_e(cal.get('line'))}</p>"
    return out


def primary(line: dict[str, object], ev: object) -> str:
    """'objective Δ +1.000 (W/L/T 14/0/0)' when the objective checks were the primary endpoint (the
    paired pass -> fail / fail -> pass counts), else ''."""
    if line.get("primary") != OBJECTIVE:
        return ""
    mean, counts = line.get("primary_mean"), (line.get("primary_wins"), line.get("primary_losses"), line.get("primary_ties"))
    if counts[0] is None and isinstance(ev, dict) and isinstance(ev.get(OBJECTIVE), dict):
        o = ev[OBJECTIVE]
        mean, counts = o.get("mean"), (o.get("wins"), o.get("losses"), o.get("ties"))
    return f"{OBJECTIVE} Δ {num(mean, '+.3f')} (W/L/T {'/'.join(_e(c) for c in counts)})"


def pair(line: dict[str, object], name: str, new: object, old: object, ev: object = None) -> str:
    """`name` and its scores: the effect score candidate vs baseline, or, when the objective checks
    decided, the objective headline first and the effect score marked reported."""
    head = primary(line, ev)
    effect = f"{num(new)} vs {num(old)}"
    return f"{_e(name)} {head}; effect {effect} (reported only)" if head else f"{_e(name)} {effect}"


__all__ = ["badge", "decided", "num", "pair", "primary", "reported_marks"]
