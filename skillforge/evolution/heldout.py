"""Held-out queries kept out of the prompts that take users' requests as a need (QA 32 T1).

`skills suggest` clusters the queries the router answered NONE and prints a `skills new` command
with a need built from them; `skills new --from-queries/--from-sessions` shows the proposer users'
requests. A holdout or final_audit query routed by hand, as typed or with a greeting, a `?` or a
suffix round it, must not reach a model that way, as `sessions harvest` already refuses to stage it.
A request is left out when it nearly copies a held-out query (rules/containment.copies_held_out: the
text rules, and the embedder's cosine where the vectors are at hand). A set file that does not read
as a set is read for its queries whole, every one counted held out (fail closed)."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from skillforge.config import Workspace
from skillforge.errors import SkillForgeError
from skillforge.evaluation.datasets import read_set, set_files
from skillforge.journal import text_lines
from skillforge.rules.containment import copies_held_out, first_copies
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


def split_copies(texts: Sequence[str], held: Sequence[HeldOut],
                 alone: Sequence[HeldOut | None] | None = None) -> list[HeldOut | None]:
    """`alone` (each text's own copy, copied_from's answer; None: none) with, for two neighbours neither
    of which copies one alone, the held-out query they nearly copy joined (one typed over two
    messages, QA 35 T2), by the text rules."""
    out: list[HeldOut | None] = list(alone) if alone is not None else [None] * len(texts)
    for i in range(len(texts) - 1):
        if out[i] is not None or out[i + 1] is not None:
            continue  # a copy alone is left out by itself; its neighbour is not
        joined = f"{texts[i]} {texts[i + 1]}"
        if (found := next((x for x in held if copies_held_out(joined, x.query)), None)) is not None:
            out[i] = out[i + 1] = found
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
