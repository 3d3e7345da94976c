"""`route calibrate` and `route fit`: thresholds and the scoring head from labelled queries.

Labelled queries are JSONL lines `{"query": ..., "expected": skill name or null}`.
Calibration runs the rule and embed layers on every query and hands what they saw to the pure
calibrators. Fitting trains the head on the skills' examples (and cards) plus the labelled
queries; its thresholds are calibrated on out-of-fold scores (k-fold over the labelled queries),
so they are not fitted on answers the head has memorised.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from skillforge.config import Workspace
from skillforge.errors import SkillForgeError
from skillforge.routing.head import NONE_LABEL, ScoringHead, fit_head
from skillforge.routing.index import HEAD_FILE, RouteIndex, routing_dir, save_thresholds
from skillforge.rules.thresholds import (DEFAULT_COSINE, DEFAULT_HEAD, EmbedCase, RouteThresholds, RuleCase,
                                         Scorer, calibrate_embed, calibrate_rule)

FOLDS = 5


class CasesError(SkillForgeError):
    """A labelled-cases file is missing or malformed."""


@dataclass(frozen=True)
class LabelledQuery:
    query: str
    expected: str | None


def load_cases(path: Path, known: Sequence[str] | None = None) -> list[LabelledQuery]:
    """Read a JSONL file of labelled queries; every bad line is named."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise CasesError(f"{path}: cannot read: {e}") from None
    cases = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise CasesError(f"{path}:{n}: not JSON ({e.msg})") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("query"), str) or "expected" not in obj:
            raise CasesError(f'{path}:{n}: expected {{"query": str, "expected": skill name or null}}')
        expected = obj["expected"]
        if expected is not None and not isinstance(expected, str):
            raise CasesError(f"{path}:{n}: expected must be a skill name or null")
        if known is not None and expected is not None and expected not in known:
            raise CasesError(f"{path}:{n}: unknown skill '{expected}'")
        cases.append(LabelledQuery(obj["query"], expected))
    if not cases:
        raise CasesError(f"{path}: no labelled queries")
    return cases


def _rule_cases(index: RouteIndex, cases: Sequence[LabelledQuery]) -> list[RuleCase]:
    out = []
    for c in cases:
        scores = list(index.rule(c.query).items())
        if scores:
            out.append(RuleCase(scores[0][1], scores[1][1] if len(scores) > 1 else 0.0, scores[0][0] == c.expected))
    return out


def _embed_case(scores: dict[str, float], expected: str | None) -> EmbedCase:
    ranked = list(scores.items())
    top1 = ranked[0] if ranked else ("", 0.0)
    top2 = ranked[1][1] if len(ranked) > 1 else 0.0
    return EmbedCase(top1[1], top2, top1[0] == expected, expected is not None)


def calibrate(ws: Workspace | None, index: RouteIndex, cases: Sequence[LabelledQuery],
              embed_cases: Sequence[EmbedCase] | None = None) -> RouteThresholds:
    """Fit the rule margin and the embed HIGH/LOW/MARGIN of the index's scorer; save if `ws`."""
    defaults = DEFAULT_COSINE if index.scorer is Scorer.COSINE else DEFAULT_HEAD
    margin, min_score, u_rule = calibrate_rule(_rule_cases(index, cases),
                                               (defaults["rule_margin"], defaults["rule_min_score"]))
    if embed_cases is None:
        vecs = index.embedder.embed([c.query[:2000] for c in cases])
        embed_cases = [_embed_case(index.embed_scores(v, top=2), c.expected) for v, c in zip(vecs, cases, strict=True)]
    high, low, emargin, u_embed = calibrate_embed(embed_cases, (defaults["high"], defaults["low"], defaults["margin"]))
    th = RouteThresholds(embedder=index.embedder.name, scorer=index.scorer, rule_margin=margin,
                         rule_min_score=min_score, high=high, low=low, margin=emargin, calibrated=True,
                         cases=len(cases), utility=u_rule + u_embed)
    if ws is not None:
        save_thresholds(ws, th)
    index.thresholds = th
    return th


def fit(ws: Workspace | None, index: RouteIndex, cases: Sequence[LabelledQuery], *, folds: int = FOLDS,
        seed: int = 0) -> tuple[ScoringHead, RouteThresholds]:
    """Train the head, calibrate its thresholds out of fold, save both if `ws`, and switch the
    index to the head scorer."""
    x_skills, y_skills = index.vectors, [index.names[i] for i in index.owners]
    q = index.embedder.embed([c.query[:2000] for c in cases]) if cases else np.zeros((0, index.embedder.dim))
    y_q = [c.expected or NONE_LABEL for c in cases]
    oof: list[EmbedCase] = []
    order = np.random.default_rng(seed).permutation(len(cases))
    k = min(folds, len(cases))
    for f in range(k if k >= 2 else 0):
        held = set(order[f::k].tolist())
        train_i = [i for i in range(len(cases)) if i not in held]
        head = fit_head(np.concatenate([x_skills, q[train_i]]), y_skills + [y_q[i] for i in train_i], index.embedder.name)
        for i in sorted(held):
            oof.append(_embed_case(head.skill_scores(q[i]), cases[i].expected))
    head = fit_head(np.concatenate([x_skills, q]) if len(q) else x_skills, y_skills + y_q, index.embedder.name)
    index.head = head
    if ws is not None:
        head.save(routing_dir(ws, index.embedder.name) / HEAD_FILE)
    th = calibrate(ws, index, cases, embed_cases=oof or None)
    return head, th
