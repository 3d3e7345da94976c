"""Canary rules: who gets the canary, how its sessions compare with the live ones, and whether to
promote, hold or roll it back. Pure: data in, verdict out; the constants are code.

**Bucketing.** A session is in the canary when ``sha256(skill:release id:session id)`` read as a
fraction of 2^64 falls below the share: each canary draws its own sessions (the release id), the
session id spreads them (one shared id, say "system", would make the canary 0 % or 100 %); a missing
or blank session id is never in the canary.

**Comparison.** Each session counts once per signal: *negative feedback* (effective verdict bad, over
sessions with a verdict), *tool errors* (a session with at least one, over sessions served),
*corrections* (over sessions with a verdict), *tokens* when reported (mean, relative threshold).
A difference of rates gets an Agresti-Caffo estimate (one success and one failure added to each arm)
and the variance of a difference of independent means, ``p_c q_c / n_c + p_l q_l / n_l`` (each arm at
its own n). **Every bound is time-uniform**: `canary tick` looks as often as cron runs it, and a fixed
95 % bound tested at each look would pass a canary worse by the threshold far more often than
``ALPHA``. With ``z`` the distance from the tested value in standard errors and ``u = tau^2 / se^2``,
the one-sided normal mixture ``M = 2 (1 + u)^-1/2 exp(z^2 u / (2 (1 + u))) Phi(z (u / (1 + u))^1/2)``
ever reaches ``1 / ALPHA`` with probability at most ``ALPHA`` (Ville): ``1 / M`` is an anytime
p-value, ``estimate +- z_b(u) se`` with ``M(z_b, u) = 1 / ALPHA`` the one-sided bounds (``ci``).
Robbins 1970; Howard, Ramdas, McAuliffe & Sekhon, Ann. Statist. 2021 (one-sided mixture); Johari,
Koomen, Pekelis & Walsh, "Always valid inference", Oper. Res. 2022 (two arms, plug-in variance);
Waudby-Smith, Arnold, Wu, McAuliffe & Ramdas, "Time-uniform central limit theory and asymptotic
confidence sequences", 2021/2023. ``tau`` is fixed per threshold so that the bound is narrowest,
``Z_STAR`` = 2.77 standard errors (1.645 for one look), where its radius is ``TIGHTEST_AT`` = 2
thresholds (a canary better or worse by one more); at one threshold (an equal canary promoted) it is
2.88: about 3x the sessions of one look. Tokens: the same, relative to the live mean. Rollback: H0
``canary - live <= threshold``, the anytime p-value, Holm over the signals tested together (on anytime
p-values it bounds the family-wise rate over all looks), each arm at ``MIN_ARM_N`` observations; a
rate at 0/0 in both arms is left out. MDE: the smallest worsening this window detects with ``POWER``;
``needed``: canary observations until it is ``DETECT_FACTOR`` x threshold.

**Verdict** (``decide``): roll back at once on a P0 or holdout regression in a re-run, on any signal
whose test fires, or when the offline score says the release fails; reap (roll back, and say so) a
canary older than its maximum age that lacks its minimum sessions or its evidence; promote when both
arms hold the minimum sessions, nothing fired, and the time-uniform upper bound of canary - live lies
below the threshold on every signal with events (non-inferiority, intersection-union: no correction)
and on at least one *measured* rate (tool errors over sessions, 0 of N included; feedback and
corrections over verdicts; QA 26 N2); hold otherwise (with nothing measured, saying so; reaped at the
maximum age). Tokens are a cost: ruled out when reported, never the evidence alone.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from statistics import NormalDist, fmean, variance

from skillforge.rules.paired import ALPHA, POWER, holm_adjusted
from skillforge.state.cliopts import DEFAULT_MAX_AGE_HOURS, DEFAULT_MIN_SESSIONS  # noqa: F401  (for the CLI)
from skillforge.state.canary import (SHARE_MAX, SHARE_MIN, ArmCounts, CanaryAction, CanaryVerdict, Comparison, RateStat,
                                     Regression)

THRESHOLDS: Mapping[str, float] = {"negative_feedback": 0.05, "tool_error": 0.05, "correction": 0.05,
                                   "tokens": 0.20}
"""Tolerated worsening: absolute for the rates, relative (fraction of the live mean) for tokens."""
MIN_ARM_N = 10
"""Observations each arm needs before a signal can trigger a rollback."""
DETECT_FACTOR = 2.0
"""`needed` counts the canary observations until the MDE is at most this many thresholds."""
PLANNING_RATE = 0.5
"""The rate assumed for the MDE before any session was seen (the widest variance)."""
MAX_MIN_SESSIONS = 10 ** 9
"""The largest --min-sessions: more than any canary gathers, and far inside SQLite's 64-bit integers."""
FAIL_VERDICTS = ("DECLINED", "INVALID")
"""An offline evaluation summary with one of these verdicts does not hold."""
_Z = NormalDist()
_Z_POWER = _Z.inv_cdf(POWER)


# ---- bucketing -------------------------------------------------------------------------------
def parse_share(text: str) -> float | None:
    """"10%" or "10" -> 0.10; None when it is not a number of percent in [SHARE_MIN, SHARE_MAX]
    (0.01 % to 50 %)."""
    raw = text.strip().removesuffix("%").strip() if isinstance(text, str) else ""
    try:
        pct = float(raw)
    except ValueError:
        return None
    if not math.isfinite(pct) or not SHARE_MIN * 100 <= pct <= SHARE_MAX * 100:
        return None
    share = round(pct / 100, 6)
    return share if SHARE_MIN <= share <= SHARE_MAX else None


def share_range() -> str:
    """The accepted shares, as refusals name them."""
    return f"from {shown_share(SHARE_MIN)} to {shown_share(SHARE_MAX)}"


def shown_share(share: float) -> str:
    """A share as given: "10%", "0.5%", "0.0125%" (never a rounded "0%")."""
    return f"{share * 100:.4f}".rstrip("0").rstrip(".") + "%"


def bucket(skill: str, release_id: str, session_id: str) -> float:
    """The session's place in [0, 1) for this canary: sha256 of skill:release:session."""
    digest = hashlib.sha256(f"{skill}:{release_id}:{session_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2 ** 64


def in_canary(skill: str, release_id: str, share: float, session_id: str | None) -> bool:
    """Whether the session is served the canary; never without a (non-blank) session id."""
    if not isinstance(session_id, str) or not session_id.strip():
        return False
    return bucket(skill, release_id, session_id) < share


# ---- statistics ------------------------------------------------------------------------------
def _sig(p: float) -> float:
    """A p-value to 3 significant digits (a tiny one stays tiny, never 0)."""
    return float(f"{p:.3g}")


def _log_mixture(z: float, u: float) -> float:
    """log M of the one-sided normal mixture at z standard errors and u = tau^2 / se^2."""
    a = u / (1 + u)
    return math.log(2) - 0.5 * math.log1p(u) + z * z * a / 2 + math.log(max(_Z.cdf(z * math.sqrt(a)), 1e-300))


def anytime_p(z: float, u: float) -> float:
    """1 / M, capped at 1: P(ever this far beyond the tested value) <= p, however often one looks."""
    return 1.0 if z <= 0 else math.exp(-min(_log_mixture(z, u), 745.0))


def boundary(u: float, alpha: float = ALPHA) -> float:
    """z_b with M(z_b, u) = 1 / alpha. log M is increasing and convex in z > 0: Newton from the
    symmetric mixture's bound (above the root) comes down to it, each step still conservative."""
    target, a, z = math.log(1 / alpha), u / (1 + u), math.sqrt(2 * (1 + u) / u * math.log(math.sqrt(1 + u) / alpha))
    for _ in range(50):
        if (gap := _log_mixture(z, u) - target) < 1e-9:
            break
        z -= gap / (z * a + math.sqrt(a) * _Z.pdf(w := z * math.sqrt(a)) / max(_Z.cdf(w), 1e-300))
    return z


def _tightest(lo: float = -2.3, hi: float = 6.9) -> tuple[float, float]:  # (u*, z_b(u*)): golden section
    for _ in range(60):
        a, b = hi - 0.618034 * (hi - lo), lo + 0.618034 * (hi - lo)
        lo, hi = (lo, b) if boundary(math.exp(a)) < boundary(math.exp(b)) else (a, hi)
    return math.exp(lo), boundary(math.exp(lo))


TIGHTEST_AT = 2.0  # the bounds are narrowest (Z_STAR standard errors) where their radius is this many thresholds
U_STAR, Z_STAR = _tightest()
TAU_PER_THRESHOLD = TIGHTEST_AT * math.sqrt(U_STAR) / Z_STAR
_Z_DETECT = Z_STAR
for _ in range(4):  # the bound (standard errors) at the information that detects DETECT_FACTOR x threshold
    _Z_DETECT = boundary((TAU_PER_THRESHOLD * (_Z_DETECT + _Z_POWER) / (DETECT_FACTOR - 1)) ** 2)


def _seq_z(se: float, tau: float) -> float:  # the bound in standard errors at this standard error
    return boundary((tau / se) ** 2) if se > 0 else Z_STAR


def rate_stat(name: str, canary_events: int, canary_n: int, live_events: int, live_n: int,
              threshold: float, share: float) -> RateStat:
    """One rate, canary against live (see the module docstring)."""
    cr, lr = canary_events / canary_n if canary_n else None, live_events / live_n if live_n else None
    pc, pl = (canary_events + 1) / (canary_n + 2), (live_events + 1) / (live_n + 2)
    se = math.sqrt(pc * (1 - pc) / (canary_n + 2) + pl * (1 - pl) / (live_n + 2))
    adjusted, tau = pc - pl, TAU_PER_THRESHOLD * threshold
    z = _seq_z(se, tau)
    ci = ((round(max(-1.0, adjusted - z * se), 6), round(min(1.0, adjusted + z * se), 6))  # a difference of rates
          if canary_n and live_n else None)
    tested = canary_n >= MIN_ARM_N and live_n >= MIN_ARM_N
    p = _sig(anytime_p((adjusted - threshold) / se, (tau / se) ** 2)) if tested else None
    pooled = (canary_events + live_events + 1) / (canary_n + live_n + 2) if canary_n + live_n else PLANNING_RATE
    spread = pooled * (1 - pooled)
    sd = math.sqrt(spread * (1 / (canary_n + 2) + 1 / (live_n + 2)))  # under H0: pooled
    mde = threshold + (_seq_z(sd, tau) + _Z_POWER) * sd
    ratio = live_n / canary_n if canary_n and live_n else (1 - share) / share
    z_needed = (_Z_DETECT + _Z_POWER) / ((DETECT_FACTOR - 1) * threshold)
    required = max(MIN_ARM_N, math.ceil(z_needed ** 2 * spread * (1 + 1 / ratio)))
    return RateStat(name=name, canary_events=canary_events, canary_n=canary_n, live_events=live_events,
                    live_n=live_n, canary_rate=None if cr is None else round(cr, 6),
                    live_rate=None if lr is None else round(lr, 6),
                    diff=None if cr is None or lr is None else round(cr - lr, 6), ci=ci, threshold=threshold,
                    p_value=p, mde=round(min(mde, 1.0), 4), needed=max(0, required - canary_n))


def token_stat(canary: Sequence[int], live: Sequence[int], threshold: float) -> RateStat:
    """Mean tokens per session: H0 canary mean <= (1 + threshold) * live mean (Welch, one-sided)."""
    nc, nl = len(canary), len(live)
    mc, ml = fmean(canary) if nc else None, fmean(live) if nl else None
    vc, vl = variance(canary) if nc > 1 else 0.0, variance(live) if nl > 1 else 0.0
    ci, p = None, None  # tokens: the bounds on the scale of the live mean (tau relative to it)
    if mc is not None and ml is not None:
        se, tau = math.sqrt(vc / nc + vl / nl), TAU_PER_THRESHOLD * threshold * max(ml, 1.0)
        z = _seq_z(se, tau)
        ci = (round(mc - ml - z * se, 3), round(mc - ml + z * se, 3))
        if nc >= MIN_ARM_N and nl >= MIN_ARM_N:
            se0 = math.sqrt(vc / nc + (1 + threshold) ** 2 * vl / nl)
            excess = mc - (1 + threshold) * ml
            p = _sig(anytime_p(excess / se0, (tau / se0) ** 2)) if se0 > 0 else (0.0 if excess > 0 else 1.0)
    return RateStat(name="tokens", canary_events=int(sum(canary)), canary_n=nc, live_events=int(sum(live)),
                    live_n=nl, canary_rate=None if mc is None else round(mc, 3),
                    live_rate=None if ml is None else round(ml, 3),
                    diff=None if mc is None or ml is None else round(mc - ml, 3), ci=ci, threshold=threshold,
                    p_value=p)


def has_events(r: RateStat) -> bool:
    """Whether a signal carries information: a rate with an event in either arm (one at 0/0 in
    both is left out of the Holm family and of the non-inferiority check), or tokens reported."""
    return r.name == "tokens" or r.canary_events + r.live_events > 0


def upper_bound(r: RateStat) -> float | None:
    """The one-sided 1 - ALPHA upper bound of the worsening, in the threshold's unit (tokens:
    relative to the live mean), or None while a signal is untested (an arm under MIN_ARM_N)."""
    if r.ci is None or r.canary_n < MIN_ARM_N or r.live_n < MIN_ARM_N:
        return None
    if r.name != "tokens":
        return r.ci[1]
    live_mean = r.live_rate or 0.0
    return r.ci[1] / live_mean if live_mean > 0 else (0.0 if r.ci[1] <= 0 else math.inf)


def not_ruled_out(comparison: Comparison) -> list[str]:
    """The signals with events whose data do not yet rule out a worsening beyond the threshold
    (non-inferiority: the one-sided upper bound of canary - live must lie below it), worded."""
    out = []
    for r in comparison.rates:
        if not has_events(r):
            continue
        bound = upper_bound(r)
        unit = " of the live mean" if r.name == "tokens" else ""
        if bound is None:
            out.append(f"{r.name} (fewer than {MIN_ARM_N} observations in an arm)")
        elif not bound < r.threshold:
            out.append(f"{r.name} (upper bound {_amount(bound, r.name, r.threshold)}{unit} >= threshold "
                       f"{_amount(r.threshold, r.name)})")
    return out


def measured(r: RateStat) -> bool:
    """Whether a rate was observed at all: tool errors over the sessions served (0 of N is a
    measurement), feedback and corrections over verdicts (none without a verdict). Tokens: never
    (a cost, not the evidence a promotion rests on)."""
    return r.name != "tokens" and r.canary_n + r.live_n > 0


def evidence(comparison: Comparison) -> list[str]:
    """The measured rates whose one-sided upper bound lies below their threshold: what a promotion
    rests on (at least one is needed), worded."""
    return [f"{r.name} <= {_amount(b, r.name, r.threshold)}" for r in comparison.rates
            if measured(r) and (b := upper_bound(r)) is not None and b < r.threshold]


def promotion_gap(comparison: Comparison) -> str | None:
    """Why the data do not yet allow a promotion (a phrase), or None when they do: a signal with
    events whose worsening is not ruled out, or no measured rate that rules one out."""
    if unproven := not_ruled_out(comparison):
        return "the data do not yet rule out a worsening beyond the threshold on " + ", ".join(unproven)
    if evidence(comparison):
        return None
    rates = {r.name: r for r in comparison.rates if r.name != "tokens"}
    if not any(measured(r) and upper_bound(r) is not None for r in rates.values()):
        fb, te = rates["negative_feedback"], rates["tool_error"]
        verdicts = ("no feedback verdict in either arm" if not measured(fb) else
                    f"feedback verdicts: {fb.canary_n} canary, {fb.live_n} live")
        return (f"no signal was measured ({verdicts}; tool errors over {te.canary_n} canary and {te.live_n} live "
                f"sessions; each needs {MIN_ARM_N} per arm), so nothing rules out a worsening")
    short = [f"{r.name}: upper bound {_amount(b, r.name, r.threshold)} >= threshold {_amount(r.threshold, r.name)}"
             for r in rates.values() if measured(r) and (b := upper_bound(r)) is not None]
    return "no measured signal rules out a worsening beyond the threshold yet (" + "; ".join(short) + ")"


def signed_pct(x: float) -> str:
    """A signed percentage with the digits it needs: -0.3 %, never "-0%" (0 is "0%")."""
    if not math.isfinite(x):
        return f"{x:+}"
    digits = 0
    while digits < 3 and round(x * 100, digits) == 0:
        digits += 1
    return "0%" if round(x * 100, digits) == 0 else f"{x * 100:+.{digits}f}%"


def _amount(x: float, name: str, vs: float | None = None) -> str:  # a bound next to `vs` never reads as equal to it
    return signed_pct(x) if name == "tokens" else f"{x:+.{4 if vs is not None and f'{x:+.3f}' == f'{vs:+.3f}' else 3}f}"


def compare(canary: ArmCounts, live: ArmCounts, share: float, no_session_loads: int = 0) -> Comparison:
    """Every signal of the two arms, with Holm-adjusted p-values over those that were tested."""
    t = THRESHOLDS
    rates = [rate_stat("negative_feedback", canary.bad, canary.with_verdict, live.bad, live.with_verdict,
                       t["negative_feedback"], share),
             rate_stat("tool_error", canary.tool_error_sessions, canary.sessions, live.tool_error_sessions,
                       live.sessions, t["tool_error"], share),
             rate_stat("correction", canary.corrected, canary.with_verdict, live.corrected, live.with_verdict,
                       t["correction"], share)]
    if canary.tokens or live.tokens:
        rates.append(token_stat(canary.tokens, live.tokens, t["tokens"]))
    adjusted = holm_adjusted({r.name: r.p_value for r in rates if r.p_value is not None and has_events(r)})
    rates = [r.model_copy(update={"p_adjusted": _sig(adjusted[r.name])}) if r.name in adjusted else r
             for r in rates]
    return Comparison(canary=canary, live=live, rates=rates, no_session_loads=no_session_loads)


# ---- re-runs and the offline score -----------------------------------------------------------
def regressions(cases: Sequence[Mapping[str, object]]) -> list[Regression]:
    """P0 or holdout cases that pass on live and fail on the canary. Each case: run_id, case_id,
    p0 (bool), eval_set, baseline_passed, candidate_passed."""
    out = []
    for c in cases:
        why = "p0" if c.get("p0") else "holdout" if c.get("eval_set") == "holdout" else None
        if why and c.get("baseline_passed") is True and c.get("candidate_passed") is False:
            out.append(Regression(case_id=str(c.get("case_id")), run_id=str(c.get("run_id")), why=why))
    return out


def offline_problem(summary: Mapping[str, object] | None) -> str | None:
    """Why the release's offline evaluation does not hold (its verdict fails), else None. A
    release without an evaluation (a person's publish) holds what a manual publish holds."""
    verdict = (summary or {}).get("verdict")
    if isinstance(verdict, str) and verdict.upper() in FAIL_VERDICTS:
        return f"its offline evaluation is {verdict.upper()}"
    return None


# ---- the verdict -----------------------------------------------------------------------------
def mean_tokens(total: int, n: int) -> int:
    """A tokens mean as shown: `total / n` rounded half up in integer arithmetic (a float would
    print 1e29 as 99999999999999991433150857216)."""
    return (2 * total + n) // (2 * n)


def _fired(r: RateStat) -> str:
    tokens = r.name == "tokens"
    unit = "" if not tokens else " tokens"
    worse = f"{r.threshold:.0%} of live" if tokens else f"{r.threshold:.3f}"
    ci = f", time-uniform {1 - 2 * ALPHA:.0%} CI [{r.ci[0]:+.3f}, {r.ci[1]:+.3f}]" if r.ci else ""
    c_rate = mean_tokens(r.canary_events, r.canary_n) if tokens and r.canary_n else r.canary_rate
    l_rate = mean_tokens(r.live_events, r.live_n) if tokens and r.live_n else r.live_rate
    diff = f"{c_rate - l_rate:+d}" if tokens and isinstance(c_rate, int) and isinstance(l_rate, int) else f"{r.diff:+.3f}"
    return (f"{r.name}: canary {c_rate}{unit} ({r.canary_events}/{r.canary_n}) vs live {l_rate}{unit} "
            f"({r.live_events}/{r.live_n}), diff {diff}{ci}: worse by more than {worse} "
            f"(one-sided p {shown_p(r.p_value)}, Holm {shown_p(r.p_adjusted)} <= {ALPHA})")


def shown_p(p: float | None) -> str:
    """A p-value as messages show it: "<0.0001" rather than a rounded 0."""
    return "-" if p is None else "<0.0001" if p < 1e-4 else f"{p:.3g}"


def decide(comparison: Comparison, found: Sequence[Regression], *, age_hours: float, min_sessions: int,
           max_age_hours: float, offline: str | None = None) -> CanaryVerdict:
    """Roll back, promote or hold (see the module docstring). Every reason is kept."""
    reasons = [f"{r.why} case {r.case_id} passes on live and fails on the canary (re-run {r.run_id})" for r in found]
    reasons += [_fired(r) for r in comparison.rates
                if r.p_adjusted is not None and r.p_value is not None and r.p_adjusted <= ALPHA]
    if offline:
        reasons.append(f"the offline score does not hold: {offline}")
    if reasons:
        return CanaryVerdict(action=CanaryAction.ROLLBACK, reasons=reasons)
    needed = max(0, min_sessions - comparison.canary.sessions, min_sessions - comparison.live.sessions)
    sessions = f"{comparison.canary.sessions} canary and {comparison.live.sessions} live sessions"
    gap = None if needed else promotion_gap(comparison)
    if (needed or gap) and age_hours >= max_age_hours:
        short = (f", short of the {min_sessions} each arm needs" if needed else
                 f", which do not rule out a worsening beyond the threshold on {', '.join(not_ruled_out(comparison))}"
                 if not_ruled_out(comparison) else f": {gap}")
        return CanaryVerdict(action=CanaryAction.ROLLBACK, reaped=True, sessions_needed=needed, reasons=[(
            f"reaped: {age_text(age_hours, max_age_hours)} old (maximum {max_age_hours:g} h) with {sessions}{short}")])
    if needed:
        return CanaryVerdict(action=CanaryAction.HOLD, sessions_needed=needed, reasons=[(
            f"{sessions}: {needed} more needed before promotion (minimum {min_sessions} per arm); no rollback "
            "rule fired")])
    if gap:
        return CanaryVerdict(action=CanaryAction.HOLD, reasons=[(
            f"{sessions}; no rollback rule fired, but {gap}: waiting for more sessions (reaped at "
            f"{max_age_hours:g} h)")])
    shown = [f"{r.name} <= {_amount(b, r.name, r.threshold)}" for r in comparison.rates
             if (has_events(r) or measured(r)) and (b := upper_bound(r)) is not None]
    unmeasured = [r.name for r in comparison.rates if r.name != "tokens" and not measured(r)]
    unmeasured_text = f"; not measured (no verdict): {', '.join(unmeasured)}" if unmeasured else ""
    return CanaryVerdict(action=CanaryAction.PROMOTE, reasons=[(
        f"{sessions} (minimum {min_sessions}); no rollback rule fired and the data rule out a worsening beyond "
        f"the threshold ({', '.join(shown)}){unmeasured_text}; the offline score holds")])


def age_text(age_hours: float, limit_hours: float) -> str:
    """An age shown with enough decimals to compare with `limit_hours`: "0.001 h" against a
    0.0003 h maximum, never a rounded "0.0 h" that reads as under it."""
    digits = 1
    while digits < 9 and round(age_hours, digits) < limit_hours <= age_hours:
        digits += 1
    return f"{age_hours:.{digits}f} h"


def valid_limits(min_sessions: object, max_age_hours: object) -> str | None:
    """Why these canary limits are refused, else None."""
    if isinstance(min_sessions, bool) or not isinstance(min_sessions, int) or not 1 <= min_sessions <= MAX_MIN_SESSIONS:
        return f"--min-sessions must be a whole number from 1 to {MAX_MIN_SESSIONS}, got {min_sessions!r}"
    if isinstance(max_age_hours, bool) or not isinstance(max_age_hours, int | float) \
            or not math.isfinite(max_age_hours) or max_age_hours <= 0:
        return f"--max-age-hours must be a finite number > 0, got {max_age_hours!r}"
    return None
