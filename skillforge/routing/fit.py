"""`route calibrate` and `route fit`: thresholds and the scoring head from labelled queries.

Labelled queries are JSONL lines `{"query": ..., "expected": skill name or null}`.
Calibration runs the rule and embed layers on every query and hands what they saw to the pure
calibrators. Fitting trains the head on the skills' examples (and cards) plus the labelled
queries; its thresholds are calibrated on out-of-fold scores (k-fold over the labelled queries),
so they are not fitted on answers the head has memorised.

Both take the shipped out-of-scope bank (`routing.bank`, minus what the skills cover) as NONE
cases besides the workspace's own negatives; inside the NONE class the two weigh the same, and the
NONE class weighs as much as the in-scope one (`rules.thresholds.class_weights`). Both refuse
fewer than MIN_IN_SCOPE_CASES / MIN_NONE_CASES labelled queries (TooFewCases), and keep what they
replace for `route calibrate --undo`.
"""

from __future__ import annotations

import difflib
import logging
import math
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import numpy as np

from skillforge.config import Workspace
from skillforge import jsontext
from skillforge.errors import SkillForgeError
from skillforge.journal import text_lines
from skillforge.routing.bank import BankSelection
from skillforge.routing.head import NONE_LABEL, ScoringHead, fit_head, none_left
from skillforge.routing.index import (HEAD_FILE, PREVIOUS_HEAD_FILE, RouteIndex, card_fingerprint, routing_dir,
                                      save_thresholds)
from skillforge.rules.band import NONE_SLACK, band_for, none_ratio
from skillforge.rules.crossfit import assign_folds, cross_fitted, holding_target
from skillforge.rules.keywords import normalise, rule_decision
from skillforge.rules.thresholds import (DEFAULT_COSINE, DEFAULT_HEAD, EmbedCase, RouteThresholds, RuleCase,
                                         Scorer, calibrate_embed, calibrate_rule, case_shortfall, class_weights,
                                         operating_point, rejected_by_source)

FOLDS = 5

log = logging.getLogger(__name__)


class CasesError(SkillForgeError):
    """A labelled-cases file is missing or malformed."""


class TooFewCases(CasesError):
    """Too few labelled in-scope or NONE queries to calibrate on."""


class MinRejectUnreachable(SkillForgeError):
    """`--min-reject R` that no setting holds in every source of NONE queries (nothing is written)."""


@dataclass(frozen=True)
class LabelledQuery:
    query: str
    expected: str | None


def load_cases(path: Path, known: Sequence[str] | None = None,
               relabel: Mapping[str, Mapping[str, str]] | None = None,
               retired: Collection[str] = ()) -> list[LabelledQuery]:
    """Read a JSONL file of labelled queries; every bad line is named. `relabel`: label -> {normalised
    query: the label it has now} (the cases a split's children took, datasets.route_relabels),
    applied before the labels are checked against `known`. `retired`: the skills RETIRED now, so
    that a label naming one is refused as retired (with the way back), not as unknown."""
    return [case for _, case, _ in read_cases(path, known, relabel, retired)]


Extra = Callable[[int, dict[str, object], str | None], Hashable]
"""Reads a line's further field (line number, the parsed line, its label): `route eval`'s candidates."""


def read_cases(path: Path, known: Sequence[str] | None = None,
               relabel: Mapping[str, Mapping[str, str]] | None = None,
               retired: Collection[str] = (), extra: Extra | None = None) -> list[tuple[int, LabelledQuery, Hashable]]:
    """`load_cases` with each case's line number and what `extra` read from it (None without
    `extra`). A line that repeats an earlier one's query (normalised), label and extra value is one
    case (a warning counts them); the same query labelled two ways is kept twice (a warning). A
    key given twice on a line is refused: json would keep the last value silently."""
    try:
        lines = text_lines(Path(path).read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError) as e:
        raise CasesError(f"{path}: cannot read: {e}") from None
    cases = []
    repeats = 0
    seen: dict[tuple[str, Hashable], list[tuple[int, str, str | None]]] = {}  # (query, extra) -> (line, query, label)
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = jsontext.parse(line, unique_keys=True)
        except jsontext.DuplicateKey as e:
            raise CasesError(f"{path}:{n}: {e.reason}: give each key once (parsers disagree on which value wins)") from None
        except jsontext.BadJSON as e:
            raise CasesError(f"{path}:{n}: not JSON ({e.reason})") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("query"), str) or "expected" not in obj:
            raise CasesError(f'{path}:{n}: expected {{"query": str, "expected": skill name or null}}')
        if not obj["query"].strip():
            raise CasesError(f"{path}:{n}: the query is empty: a labelled query needs text to route")
        expected = obj["expected"]
        if expected is not None and not isinstance(expected, str):
            raise CasesError(f"{path}:{n}: expected must be a skill name or null")
        if relabel and expected in relabel:
            expected = relabel[expected].get(normalise(obj["query"]), expected)
        if known is not None and expected is not None and expected not in known:
            _unknown_label(path, n, obj["query"], expected, known, relabel, retired)
        value = extra(n, obj, expected) if extra is not None else None
        rows = seen.setdefault((normalise(obj["query"]), _key(value)), [])
        if any(e == expected for _, _, e in rows):
            repeats += 1  # the same query with the same label again: one case, not weight or n
        else:
            cases.append((n, LabelledQuery(obj["query"], expected), value))
        rows.append((n, obj["query"], expected))
    if not cases:
        raise CasesError(f"{path}: no labelled queries")
    if repeats:
        log.warning("%s: %d line%s repeat%s a query with the same label%s; each query counts once", path, repeats,
                    "" if repeats == 1 else "s", "s" if repeats == 1 else "", " and candidates" if any(v is not None for _, _, v in cases) else "")
    conflicts = [rows for rows in seen.values() if len({e for _, _, e in rows}) > 1]
    if conflicts:
        rows = conflicts[0]
        labels = ", ".join(f"line {n}: {e or 'NONE'}" for n, _, e in rows)
        log.warning("%s: %d quer%s labelled two ways (the first: %r, %s); every label is kept as a case, so no "
                    "calibration gets all of them right", path, len(conflicts),
                    "y is" if len(conflicts) == 1 else "ies are", rows[0][1], labels)
    return cases


def _key(value: Hashable) -> Hashable:
    """What makes two lines' extra values the same: a list of names in any order is one set."""
    return frozenset(value) if isinstance(value, tuple) else value


def _unknown_label(path: Path, n: int, query: str, expected: str, known: Sequence[str],
                   relabel: Mapping[str, Mapping[str, str]] | None, retired: Collection[str]) -> NoReturn:
    """The CasesError for a label that names no live skill, saying what it is and what to write."""
    if relabel and expected in relabel:  # a parent retired by a split, and no child took this query
        children = sorted(set(relabel[expected].values()))
        raise CasesError(f"{path}:{n}: '{expected}' is retired (split into {', '.join(children)}), and this "
                         "query is none of the cases a child took: label it with a child, or null for NONE")
    if expected in retired:
        raise CasesError(f"{path}:{n}: '{expected}' is retired, so no query routes to it: label this query "
                         f"with a live skill, or null for NONE (or bring the skill back with `skillforge "
                         f"release revert {expected}`)")
    if expected.strip().upper() == "NONE":
        raise CasesError(f"{path}:{n}: '{expected}' is not a skill: write \"expected\": null (JSON null, no quotes) "
                         "for a query no skill should take")
    close = difflib.get_close_matches(expected.strip(), list(known), n=1, cutoff=0.6)
    raise CasesError(f"{path}:{n}: unknown skill '{expected}'" + (f". Did you mean: {close[0]}?" if close else ""))


def check_enough(cases: Sequence[LabelledQuery], what: str = "route calibrate") -> None:
    """TooFewCases naming the shortfall, unless there are enough of each class."""
    n_in = sum(c.expected is not None for c in cases)
    short = case_shortfall(n_in, len(cases) - n_in)
    if short:
        raise TooFewCases(f"{what} needs {short}")


def _weights(cases: Sequence[LabelledQuery], bank_n: int) -> tuple[np.ndarray, np.ndarray]:
    """Class weights of the labelled cases and of the bank queries (after them): in-scope and NONE
    weigh the same; inside NONE, the workspace's negatives and the bank weigh the same."""
    n_none = sum(c.expected is None for c in cases)
    raw = [1.0 if c.expected is not None else (0.5 / n_none if bank_n else 1.0 / max(n_none, 1)) for c in cases]
    raw += [(0.5 if n_none else 1.0) / bank_n] * bank_n if bank_n else []
    in_scope = np.array([c.expected is not None for c in cases] + [False] * bank_n, dtype=bool)
    w = class_weights(in_scope, np.array(raw, dtype=float)) if len(raw) else np.zeros(0)
    return w[:len(cases)], w[len(cases):]


def _rule_cases(index: RouteIndex, cases: Sequence[LabelledQuery], weights: np.ndarray) -> list[RuleCase]:
    out = []
    for c, w in zip(cases, weights, strict=True):
        scores = list(index.rule(c.query).items())
        if scores:
            out.append(RuleCase(scores[0][1], scores[1][1] if len(scores) > 1 else 0.0, scores[0][0] == c.expected,
                                float(w), none=c.expected is None))
    return out


def embed_case(scores: dict[str, float], expected: str | None, weight: float = 1.0,
               rule_answer: bool | None = None, *, head: bool = False) -> EmbedCase:
    """The top two of `scores` in any order (the head's skill_scores come in label order, not best
    first: taking the first two as the top two once calibrated `route fit` on the first label's
    probability, about 0 for every NONE query). `head`: `scores` are a head's probabilities of every
    skill, so what they leave is NONE's share (the band's NONE guard, rules.band.none_ratio)."""
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:2]
    top1 = ranked[0] if ranked else ("", 0.0)
    top2 = ranked[1][1] if len(ranked) > 1 else 0.0
    return EmbedCase(top1[1], top2, top1[0] == expected, expected is not None, weight, rule_answer,
                     none_share=none_left(scores) if head else None)


def calibrate(ws: Workspace | None, index: RouteIndex, cases: Sequence[LabelledQuery],
              embed_cases: Sequence[EmbedCase] | None = None, *, bank: BankSelection | None = None,
              min_reject: float | None = None, check: bool = True, cross_fit: bool = True,
              seed: int = 0) -> RouteThresholds:
    """Fit the rule margin and the embed HIGH/LOW/MARGIN of the index's scorer, classes weighed
    equally (or holding `min_reject`), on the cases plus the bank's queries as NONE; save if `ws`.
    `embed_cases`: precomputed (out-of-fold) scores of the cases then the bank queries.

    `cross_fit` (rules.crossfit): the rates are also measured on held-out folds (a bank kind and
    language, or one of the workspace's negatives, per fold) and reported with their intervals;
    with `min_reject`, the embed thresholds hold the floor that makes the held-out rejection reach
    it (`fitted_min_reject`), not only the in-sample one."""
    if check:
        check_enough(cases)
    defaults = DEFAULT_COSINE if index.scorer is Scorer.COSINE else DEFAULT_HEAD
    bank_n = len(bank.kept) if bank is not None else 0
    w_cases, w_bank = _weights(cases, bank_n)
    n_none = sum(c.expected is None for c in cases)
    # with a floor, the keyword layer may answer only the workspace's NONE queries the floor spares
    # (the bank's never reach it: queries a skill's keywords cover are dropped from the bank)
    spare = None if min_reject is None else math.floor((1.0 - min_reject) * n_none + 1e-9)
    margin, min_score, u_rule = calibrate_rule(_rule_cases(index, cases, w_cases),
                                               (defaults["rule_margin"], defaults["rule_min_score"]),
                                               max_none_answered=spare)
    if embed_cases is None:
        vecs = index.embed_texts([c.query for c in cases])
        embed_cases = [_scored(index, v, c.expected) for v, c in zip(vecs, cases, strict=True)]
        if bank is not None:
            embed_cases += [_scored(index, v, None) for v in bank.vectors]
    # the rule layer answers first: what it decides at the new margin never reaches the embed layer
    ruled = [rule_decision(index.rule(c.query), margin, min_score) for c in cases]
    groups = fold_groups(cases, bank)
    embed_cases = [EmbedCase(e.top1, e.top2, e.top1_correct, e.in_scope, float(w),
                             None if i >= len(cases) or ruled[i] is None else ruled[i] == cases[i].expected,
                             "bank" if i >= len(cases) else "", groups[i], e.none_share)
                   for i, (e, w) in enumerate(zip(embed_cases, [*w_cases, *w_bank], strict=True))]
    embed_defaults = (defaults["high"], defaults["low"], defaults["margin"])
    floor, held = min_reject, None
    if cross_fit and min_reject is not None:  # the floor that holds on queries the thresholds never saw
        floor, held = holding_target(embed_cases, embed_defaults, min_reject, seed=seed)
    elif cross_fit:
        held = cross_fitted(embed_cases, embed_defaults, seed=seed)
    high, low, emargin, u_embed = calibrate_embed(embed_cases, embed_defaults, min_reject=floor)
    point = operating_point(embed_cases, high, low, emargin)
    if min_reject is not None:
        short = {src: r for src, r in rejected_by_source(embed_cases, high, low, emargin).items()
                 if r < min_reject - 1e-9}
        if short:
            by_rule = sum(1 for c in embed_cases if not c.in_scope and c.rule_answer is not None)
            raise MinRejectUnreachable(
                f"--min-reject {min_reject:g} cannot be held: the best setting leaves "
                + ", ".join(f"{r:.3f} of the {src} NONE queries unanswered" for src, r in short.items())
                + (f"; the keyword layer answers {by_rule} NONE queries before the embed layer sees them"
                   if by_rule else "") + ". Nothing written; lower --min-reject, or check those queries")
    llm_high, llm_low = band_for(embed_cases, high, low)
    guard = None if point.rejected is None else none_ratio(embed_cases, llm_high, llm_low, emargin,
                                                           point.rejected - NONE_SLACK)
    th = RouteThresholds(embedder=index.embedder.name, scorer=index.scorer, rule_margin=margin,
                         llm_high=llm_high, llm_low=llm_low, llm_none_ratio=guard,
                         rule_min_score=min_score, high=high, low=low, margin=emargin, calibrated=True,
                         cases=len(cases), utility=round(u_rule + u_embed, 4), none_cases=n_none + bank_n,
                         bank_cases=bank_n, bank_dropped=len(bank.dropped) if bank is not None else 0,
                         min_reject=min_reject, fitted_min_reject=floor,
                         held_out=held.summary() if held is not None else None,
                         answered_right=None if point.answered_right is None else round(point.answered_right, 4),
                         rejected=None if point.rejected is None else round(point.rejected, 4))
    if ws is not None:
        save_thresholds(ws, th)
    index.thresholds = th
    return th


def _scored(index: RouteIndex, vec: np.ndarray, expected: str | None) -> EmbedCase:
    """One query's EmbedCase as the index scores it now (with the head: every skill, so NONE's share)."""
    if index.head is not None:
        return embed_case(index.head.skill_scores(vec), expected, head=True)
    return embed_case(index.embed_scores(vec, top=2), expected)


def fold_groups(cases: Sequence[LabelledQuery], bank: BankSelection | None) -> list[str]:
    """The cross-fitting group of each labelled case ("": its own) and then each bank query (its kind
    and language: a fold holds whole kinds, so its scores are of a kind it was not fitted on)."""
    return [""] * len(cases) + ([f"{q.kind.value}/{q.lang}" for q in bank.kept] if bank is not None else [])


def _rows(index: RouteIndex, cases: Sequence[LabelledQuery], bank: BankSelection | None
          ) -> tuple[np.ndarray, list[str | None]]:
    """Vectors and expected skill (None: NONE) of the labelled queries, then of the bank's."""
    bank_vecs = bank.vectors if bank is not None else np.zeros((0, index.embedder.dim), dtype=np.float32)
    q = np.concatenate([index.embed_texts([c.query for c in cases]), bank_vecs]).astype(np.float32)
    return q, [c.expected for c in cases] + [None] * len(bank_vecs)


def head_folds(cases: Sequence[LabelledQuery], bank: BankSelection | None, folds: int, seed: int) -> np.ndarray:
    """Fold of each labelled then bank query for `out_of_fold`: the labelled ones dealt at random,
    the bank's by kind and language (rules.crossfit.assign_folds), so a held-out bank query is
    scored by a head that never saw a query of its kind as NONE. Measured on the CLINC150 val
    halves (benchmarks/routing_none.py --part clinc), against folds dealt at random: `route fit`
    with the bank 88.3 % answered right / 96.0 % oos rejected (was 88.2 / 93.0), with
    --min-reject 0.85 89.2 / 95.0 (was 90.0 / 93.0)."""
    expected = [c.expected for c in cases] + [None] * (len(bank.kept) if bank is not None else 0)
    return assign_folds([e is not None for e in expected], fold_groups(cases, bank), folds, seed)


def out_of_fold(index: RouteIndex, cases: Sequence[LabelledQuery], *, folds: int = FOLDS, seed: int = 0,
                bank: BankSelection | None = None) -> list[EmbedCase] | None:
    """Scores of every labelled and bank query by a head trained without it (k-fold), or None
    with fewer than two folds."""
    x_skills, y_skills = index.vectors, [index.names[i] for i in index.owners]
    q, expected = _rows(index, cases, bank)
    y_q = [e or NONE_LABEL for e in expected]
    n = len(expected)
    k = min(folds, n)
    if k < 2:
        return None
    oof: list[EmbedCase | None] = [None] * n
    fold = head_folds(cases, bank, k, seed)
    for f in range(k):
        held = set(np.flatnonzero(fold == f).tolist())
        train_i = [i for i in range(n) if i not in held]
        head = fit_head(np.concatenate([x_skills, q[train_i]]), y_skills + [y_q[i] for i in train_i], index.embedder.name)
        for i in sorted(held):
            oof[i] = embed_case(head.skill_scores(q[i]), expected[i], head=True)
    return [c for c in oof if c is not None]


def fit(ws: Workspace | None, index: RouteIndex, cases: Sequence[LabelledQuery], *, folds: int = FOLDS,
        seed: int = 0, bank: BankSelection | None = None, min_reject: float | None = None,
        check: bool = True, oof: Sequence[EmbedCase] | None = None) -> tuple[ScoringHead, RouteThresholds]:
    """Train the head (skills' cards and examples, the labelled queries, the bank as NONE),
    calibrate its thresholds out of fold (k-fold over the labelled and bank queries, or `oof` from
    `out_of_fold`), save both if `ws`, and switch the index to the head scorer."""
    if check:
        check_enough(cases, "route fit")
    if oof is None:
        oof = out_of_fold(index, cases, folds=folds, seed=seed, bank=bank)
    q, expected = _rows(index, cases, bank)
    x_skills, y_skills = index.vectors, [index.names[i] for i in index.owners]
    head = fit_head(np.concatenate([x_skills, q]) if len(q) else x_skills,
                    y_skills + [e or NONE_LABEL for e in expected], index.embedder.name)
    head.fitted_on = {name: card_fingerprint(card) for name, card in index.cards.items()}
    previous, index.head = index.head, head
    try:  # calibrated before anything is saved: an unreachable --min-reject writes nothing
        th = calibrate(None, index, cases, embed_cases=oof, bank=bank, min_reject=min_reject, check=False, seed=seed)
    except MinRejectUnreachable:
        index.head = previous
        raise
    if ws is not None:
        save_fit(ws, head, th)
    return head, th


def save_fit(ws: Workspace, head: ScoringHead, th: RouteThresholds) -> None:
    """Save a fitted head and its thresholds; the head they replace is kept as head.previous.npz."""
    from skillforge.routing.undo import record_fit

    path = routing_dir(ws, head.embedder) / HEAD_FILE
    before = path.exists()
    if before:
        path.replace(path.with_name(PREVIOUS_HEAD_FILE))
    head.save(path)
    save_thresholds(ws, th)
    record_fit(ws, head.embedder, before)  # for `route calibrate --undo` (routing.undo)
