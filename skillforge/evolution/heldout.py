"""Held-out queries kept out of the prompts that take users' requests as a need (QA 32 T1).

`skills suggest` clusters the queries the router answered NONE and prints a `skills new` command
with a need built from them; `skills new --from-queries/--from-sessions` shows the proposer users'
requests. A holdout or final_audit query routed by hand, as typed or with a greeting, a `?` or a
suffix round it, must not reach a model that way, as `sessions harvest` already refuses to stage it.
A request is left out when it nearly copies a held-out query (rules/containment.copies_held_out: the
text rules, and the embedder's cosine where the vectors are at hand), and so is every piece of
one typed over two or three requests (`split_copies`). A set file that does not read
as a set is read for its queries whole, every one counted held out (fail closed)."""

from __future__ import annotations

import difflib
import functools
import json
import logging
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from skillforge.config import Workspace
from skillforge.errors import SkillForgeError
from skillforge.evaluation.datasets import read_set, set_files
from skillforge.journal import text_lines
from skillforge.rules.containment import WORD, copies_held_out, first_copies
from skillforge.rules.textnorm import fold
from skillforge.state.evaluate import VISIBLE_TO_PROPOSER

log = logging.getLogger(__name__)

Embed = Callable[[list[str]], object]


def queries_in(value: object) -> Iterator[str]:
    """Every string under a "query" key of a parsed JSON document."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "query" and isinstance(v, str):
                yield v
            else:
                yield from queries_in(v)
    elif isinstance(value, list):
        for v in value:
            yield from queries_in(v)


@dataclass(frozen=True)
class HeldOut:
    """A held-out query and the set file it is in (named in messages; never the text)."""

    query: str
    file: str


def held_out_queries(ws: Workspace) -> list[HeldOut]:
    """The queries of the workspace's holdout and final_audit sets (evaluation_sets/*.json). A file
    that does not read as a set gives every query it holds (it might be a held-out one)."""
    out: list[HeldOut] = []
    for path in set_files(ws):
        try:
            s = read_set(path)
        except (SkillForgeError, OSError, ValueError) as e:
            log.warning("%s: not a readable set (%s): its queries are all kept from users' needs", path.name, e)
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            found = [q for d in json_docs(text) for q in queries_in(d)] or [  # not JSON at all: its "query" strings
                json.loads(f'"{m.group(1)}"') for m in _QUERY.finditer(text) if _is_string(m.group(1))]
            out += [HeldOut(q, path.name) for q in found]
            continue
        if s.meta.partition not in VISIBLE_TO_PROPOSER:
            out += [HeldOut(c.query, path.name) for c in s.cases]
    return out


_QUERY = re.compile(r'"query"\s*:\s*"((?:[^"\\\n]|\\.)*)"')


def _is_string(body: str) -> bool:
    try:
        return isinstance(json.loads(f'"{body}"'), str)
    except json.JSONDecodeError:
        return False


def json_docs(text: str) -> list[object]:
    """A file's JSON: the whole text as one document, else each line that parses (JSONL; a line
    that does not parse is skipped)."""
    try:
        return [json.loads(text)]
    except json.JSONDecodeError:
        pass
    docs: list[object] = []
    for line in text_lines(text):
        try:
            docs.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return docs


def copied_from(texts: Sequence[str], held: Sequence[HeldOut], embed: Embed | None = None,
                vectors: np.ndarray | None = None) -> list[HeldOut | None]:
    """For each text, the held-out query it nearly copies (or None). `vectors`: the texts' unit
    vectors when the caller has them (`embed` then gives the held-out ones); `embed` alone embeds both;
    neither: the text rules only."""
    if not texts or not held:
        return [None] * len(texts)
    cos = None
    if embed is not None:
        try:
            h = np.asarray(embed([x.query for x in held]), dtype=np.float32)
            t = np.asarray(vectors if vectors is not None else embed(list(texts)), dtype=np.float32)
            cos = t @ h.T
        except Exception as e:  # noqa: BLE001 - the embedder is an extra: the text rules still run
            log.warning("held-out check without the embedder (%s): text rules only", e)
    found = first_copies(texts, [x.query for x in held], None if cos is None else cos.tolist())
    return [None if j is None else held[j] for j in found]


WINDOWS: tuple[tuple[int, ...], ...] = ((0, 1), (0, 2), (0, 1, 2), (0, 1, 3), (0, 2, 3), (0, 2, 4))
"""The pieces a held-out query may be typed over, as offsets from the first: two or three requests,
neighbouring or with one unrelated request between any two of them (QA 45 F4, QA 48 F1). Each window
is read in the order typed and backwards (the half with the number typed first: QA 48 F1)."""
PART_SHARE = 0.8
"""A piece of a window is part of a held-out query when this share of its words is in it, in order..."""
PART_RUNS = (0.5, 4)
"""... or when runs of two or more of its words in order make at least half of it and 4 words (a piece
with words of its own round it: "thanks! and 车多久能到？（8号）")."""


@functools.lru_cache(maxsize=4096)
def _piece_words(text: str) -> tuple[str, ...]:
    return tuple(WORD.findall(fold(text)))


@functools.lru_cache(maxsize=16384)
def part_of(piece: str, held: str) -> bool:
    """Whether `piece` (one request of a window) is a piece of the held-out query `held`: at least
    PART_SHARE of its words (a CJK character is a word) found in `held` in order (difflib's matching
    blocks), or PART_RUNS of them in runs of two or more, in the leak scan's normal form. A request
    of other words (a greeting, an unrelated request) is not, so it is not left out with the
    window's pieces."""
    pw, hw = _piece_words(piece), _piece_words(held)
    if not pw or not hw:
        return False
    have = Counter(hw)  # the matched words are at most the words both share: too few, no piece
    if sum(min(n, have[x]) for x, n in Counter(pw).items()) < min(PART_SHARE * len(pw),
                                                                  max(PART_RUNS[0] * len(pw), PART_RUNS[1])):
        return False
    blocks = difflib.SequenceMatcher(a=pw, b=hw, autojunk=False).get_matching_blocks()
    runs = sum(b.size for b in blocks if b.size >= 2)
    return sum(b.size for b in blocks) >= PART_SHARE * len(pw) or runs >= max(PART_RUNS[0] * len(pw), PART_RUNS[1])


def split_copies(texts: Sequence[str], held: Sequence[HeldOut],
                 alone: Sequence[HeldOut | None] | None = None) -> list[HeldOut | None]:
    """`alone` (each text's own copy, copied_from's answer; None: none) with every piece of a held-out
    query typed over two or three requests (`WINDOWS`: neighbouring, or one unrelated request between)
    marked with it too (QA 35 T2, QA 45 F4), by the text rules: a window whose pieces joined nearly
    copy a held-out query (rules/containment.copies_held_out) has each of its pieces that is part of
    that query (`part_of`) left out, also the half that does not copy it alone (the one holding its
    identifier, `车多久能到？（8号）`). The joined windows are searched at once (`first_copies`); a
    window whose first copy is not the query of all its pieces is asked of every held-out query."""
    out: list[HeldOut | None] = list(alone) if alone is not None else [None] * len(texts)
    if not held or len(texts) < 2:
        return out
    queries = [x.query for x in held]
    ahead = [tuple(i + k for k in w) for i in range(len(texts)) for w in WINDOWS if i + w[-1] < len(texts)]
    windows = [*ahead, *(w[::-1] for w in ahead)]
    found = first_copies([" ".join(texts[k] for k in w) for w in windows], queries)
    for w, j in zip(windows, found):
        if j is None:
            continue
        joined = " ".join(texts[k] for k in w)
        whole = (x for x in [held[j], *(x for x in held if x is not held[j])]
                 if all(out[k] is not None or part_of(texts[k], x.query) for k in w))
        h = next((x for x in whole if x is held[j] or copies_held_out(joined, x.query)), None)
        for k in w if h is not None else ():
            out[k] = out[k] or h
    return out


def cached_embed(ws: Workspace, embedder: object) -> Embed:
    """`embedder`'s texts -> unit vectors through the workspace's vector cache (runs/vectors.db), so
    the held-out queries are embedded once, not at each run."""
    from skillforge.routing.embedding import VECTORS_FILE, VectorCache

    def embed(texts: list[str]) -> object:
        cache = VectorCache(ws.runs_dir / VECTORS_FILE)
        try:
            return cache.embed(embedder, texts)
        finally:
            cache.close()
    return embed
