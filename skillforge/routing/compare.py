"""Does a new calibration or fit beat the router it would replace? (`route calibrate`, `route fit`)

The router in use can be measured fairly on the labelled cases only when it never saw them: the
auto head and the auto or fixed thresholds (routing.defaults: the skills' examples and the bank,
no labelled query). A fitted head or calibrated cosine thresholds were fitted on labelled queries,
maybe these, so their score on them is no held-out figure: then nothing is compared. The new
router's figure is its held-out (cross-fitted, out-of-fold) one on the same cases, as calibration
reports it. Both count right decisions of the rule + embed layers, no LLM (in-scope: answered with
its skill; NONE: left unanswered); rules.crossfit.compare_routers decides.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from skillforge.errors import SkillForgeError
from skillforge.routing.fit import LabelledQuery, _scored
from skillforge.routing.index import RouteIndex
from skillforge.rules.crossfit import Rate, Replacement, compare_routers, decision_rate, held_out_decisions
from skillforge.rules.keywords import rule_decision
from skillforge.rules.thresholds import EmbedCase, RouteThresholds


class WorseThanCurrent(SkillForgeError):
    """The new calibration or fit is clearly worse than the router in use on the same labelled
    cases: nothing written (`--force` writes it anyway)."""


class FewSkillsNamed(SkillForgeError):
    """The router in use is an auto router (it covers every skill) and the labelled in-scope cases
    name fewer than MIN_SKILL_SHARE of the skills: the comparison on them says nothing about the
    others, so `route calibrate` keeps it, nothing written (`--force` replaces it anyway)."""


MIN_SKILL_SHARE = 0.5
"""QA30: 15 queries over 2 of 25 skills tied the auto head (14/15 each) and replaced it; over
every skill's cases answered right then fell from 0.92 to 0.60."""


def coverage_gap(current_name: str, named: int, skills: int) -> str | None:
    """Why a comparison on cases naming `named` of `skills` skills cannot justify replacing an auto
    router (which covers every skill), or None when it can."""
    if not current_name.startswith("the auto") or not skills or named >= MIN_SKILL_SHARE * skills:
        return None
    return (f"your cases name {named} of {skills} skills; the held-out figures say nothing about the other "
            f"{skills - named}, which {current_name} in use covers: add cases for them, or --force. Nothing written")


@dataclass(frozen=True)
class Current:
    """What the router in use is, and its right decisions on the labelled cases (None: not fairly measurable)."""

    name: str
    rate: Rate | None
    why_not: str = ""


def unfair_reason(index: RouteIndex) -> str | None:
    """Why the calibrated router in `index` (built without the auto head) cannot be measured fairly
    on labelled cases, or None when it is uncalibrated (the auto head or thresholds then route)."""
    if index.head is not None:
        return "the router in use is a fitted head, trained on labelled queries (maybe these)"
    if index.thresholds.calibrated:
        return "the router in use has cosine thresholds calibrated on labelled queries (maybe these)"
    return None


def describe(index: RouteIndex) -> str:
    th = index.thresholds
    if index.head is not None:
        return "the auto head" if th.origin == "auto" else "the fitted head"
    return "the auto cosine thresholds" if th.origin == "auto" else "the default cosine thresholds"


def current_rate(index: RouteIndex, cases: Sequence[LabelledQuery]) -> Rate:
    """Right decisions of `index` (rule + embed, no LLM) on the labelled cases."""
    th = index.thresholds
    vecs = index.embed_texts([c.query for c in cases])
    scored = []
    for c, v in zip(cases, vecs, strict=True):
        e = _scored(index, v, c.expected)
        ruled = rule_decision(index.rule(c.query), th.rule_margin, th.rule_min_score)
        scored.append(EmbedCase(e.top1, e.top2, e.top1_correct, e.in_scope,
                                rule_answer=None if ruled is None else ruled == c.expected))
    return decision_rate(scored, th.high, th.low, th.margin)


def judge(current: Current, th: RouteThresholds) -> tuple[str, Replacement | None]:
    """The line to print, and the comparison when both figures exist."""
    new = held_out_decisions(th.held_out)
    if current.rate is None:
        return f"not compared with the router in use: {current.why_not}", None
    if new is None or not current.rate.n:
        return ("not compared with the router in use: the new router's held-out figure could not be measured "
                "(too few cases to hold a fold out)"), None
    rep = compare_routers(current.rate, new)
    c, n = rep.current, rep.new
    return (f"compared on your {c.n} labelled queries (right decisions of the rule + embed layers, no LLM): "
            f"{current.name} in use (never saw them) {c.hits / c.n:.3f} ({c.hits}/{c.n}); the new {th.scorer.value} "
            f"router held out {n.hits / n.n:.3f} ({n.hits}/{n.n}); new minus in use at most {rep.upper:+.3f} "
            "(one-sided 95 %)"), rep
