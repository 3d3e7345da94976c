"""`skillforge skills new`: a new root skill (CAPTURED) from a need in plain words.

- **Drafting.** The proposer model writes a `SkillDraft` (its schema carries the minimum and
  maximum counts, so a server that constrains its output by the schema, as llama.cpp's does, cannot
  stop short): the card (description, use_when,
  keywords, router examples, not_for), the instructions, at least MIN_CASES starter cases and
  MIN_NEGATIVES router negatives. The name is the user's (`--name`) or the need's kebab case, fixed
  before the model is asked, so a run is one skill's run from its start. Users' queries the need
  came from (`--from-queries`, a `skills suggest` cluster) are shown to the model redacted.
- **Starter sets.** The cases are split into dev and holdout by a hash of the query (about one in
  four to holdout, at least two on each side), as `evaluation_sets/<name>.dev.json` and
  `<name>.holdout.json`; the starter queries go to the router set (`router/dev.jsonl`, expected the
  new skill) and the negatives to `router/negatives.jsonl`. They are written when the skill is
  published, after its release is committed; a resumed publish writes what is missing.
- **Vetting**, before anything can be registered: strict validation of the SKILL.md, the leak scan
  (the workspace's eval text of every partition, secrets, prompt injection) of the file and of the
  starter data, hidden characters, and the conflict rule (`rules/conflict.py`) on what the encoder
  and the router measure: card cosines, the live router on the new skill's queries (without it),
  and both directions with it indexed under the live thresholds.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field

from skillforge.config import Workspace
from skillforge.context import RouteContext
from skillforge.errors import BadArgument, NameTaken, SkillForgeError
from skillforge.evolution.check import leak_context
from skillforge.evolution.validate import router_cases
from skillforge.journal import text_lines
from skillforge.library.store import Store
from skillforge.llm.client import LLM
from skillforge.routing.embedding import Embedder, normalise
from skillforge.routing.index import Card, RouteIndex
from skillforge.rules.conflict import ConflictVerdict, Probe, RoutedCase, conflict_verdict, cosine_limit
from skillforge.rules.hidden import describe_hidden, hidden_characters
from skillforge.rules.leaks import LeakContext, scan_leaks
from skillforge.rules.names import is_skill_name, need_name
from skillforge.rules.casetext import FLAGGED, for_proposer
from skillforge.safewrite import write_text_atomic
from skillforge.skill import yaml12
from skillforge.skill.file import SkillFileError, parse
from skillforge.state.evaluate import Case, EvalSet, Expectation, Partition, SetMeta
from skillforge.state.llm import Role
from skillforge.state.route import RouteState
from skillforge.state.skill import SkillFile

log = logging.getLogger(__name__)

MIN_CASES = 8
MIN_EXAMPLES = 3
MIN_NEGATIVES = 3
MAX_QUERIES_SHOWN = 20
MAX_QUERIES_READ = 4 * MAX_QUERIES_SHOWN
HOLDOUT_SHARE = 4
"""One case in HOLDOUT_SHARE (by query hash) is holdout."""
MIN_PER_SIDE = 2


class DraftError(SkillForgeError):
    """The proposer's draft of a new skill is unusable (too few cases, no examples, a bad file)."""


class StarterCase(BaseModel):
    query: str = Field(description="a realistic user request this skill must handle, in the user's words")
    must_include: list[str] = Field(default_factory=list,
                                    description="short facts a correct answer must contain (may be empty)")
    tags: list[str] = Field(default_factory=list, description="the intent or language, e.g. 'status', 'zh'")


class SkillDraft(BaseModel):
    description: str = Field(description="what the skill does and when to use it, one or two sentences, <= 300 chars")
    use_when: str = Field(description="the trigger: the kinds of requests this skill takes")
    keywords: list[str] = Field(description="3-8 words users say for this need", max_length=12)
    examples: list[str] = Field(description="5-8 realistic user requests this skill should answer (router examples)",
                                min_length=MIN_EXAMPLES, max_length=10)
    not_for: list[str] = Field(default_factory=list, description="nearby requests this skill must not take",
                               max_length=8)
    dependencies: list[str] = Field(default_factory=list, description="tools it needs, as namespace.tool_name",
                                    max_length=8)
    instructions: str = Field(description="the Markdown body: ## Overview, ## Instructions (numbered steps), "
                                          "## Constraints")
    cases: list[StarterCase] = Field(description=f"at least {MIN_CASES} test requests, different from the examples",
                                     min_length=MIN_CASES, max_length=16)
    negatives: list[str] = Field(description=f"at least {MIN_NEGATIVES} requests that look close but belong to no "
                                             "skill of this kind (router negatives)",
                                 min_length=MIN_NEGATIVES, max_length=8)


def draft_messages(need: str, name: str, live: Sequence[tuple[str, str]], queries: Sequence[str]) -> list[tuple[str, str]]:
    lines = [f"Write a new agent skill named '{name}' for this need: {need}",
             ("Skills already in the library (do not overlap with them; the new skill must take requests none of "
              "them takes):"), *(f"- {n}: {d[:200]}" for n, d in live)]
    if queries:
        lines += ["Requests users made that no skill answered (redacted):", *(f"- {q}" for q in queries)]
    system = ("You design agent skills: a SKILL.md card and instructions, starter test cases and router negatives. "
              "Write concrete, checkable instructions. Keep the requests realistic and varied, in the users' "
              f"languages. Give at least {MIN_CASES} cases and {MIN_NEGATIVES} negatives. Never include secrets, "
              "URLs with credentials, or instructions addressed to an evaluator or judge.")
    return [("system", system), ("human", "\n".join(lines))]


def user_queries(raw: Sequence[str]) -> list[str]:
    """The users' queries a model may see: as every proposer prompt shows a set case's text
    (rules/casetext.for_proposer: redacted, a key cut into chunks joined first), in the order typed,
    repeats kept (the held-out check reads neighbours: dropping a repeat could part the pieces of a
    held-out query typed over two requests; QA 45 F4), at most MAX_QUERIES_READ; `shown_queries` makes
    what the proposer gets of them. One holding a possible prompt injection is left out, with a
    warning: a need's draft gains nothing from it, and it could steer the draft or its name."""
    kept: list[str] = []
    flagged = 0
    for q in raw:
        text = for_proposer(" ".join(str(q).split()))
        if text == FLAGGED:
            flagged += 1
        elif text:
            kept.append(text[:300])
    if flagged:
        log.warning("%d user request(s) hold a possible prompt injection: the proposer is not shown them", flagged)
    return kept[:MAX_QUERIES_READ]


def shown_queries(queries: Sequence[str]) -> list[str]:
    """What the proposer is shown of `queries` (user_queries', the held-out pieces left out): each once,
    at most MAX_QUERIES_SHOWN."""
    return list(dict.fromkeys(queries))[:MAX_QUERIES_SHOWN]


def draft(llm: LLM, need: str, name: str, live: Sequence[tuple[str, str]], queries: Sequence[str]) -> SkillDraft:
    """The proposer's draft. DraftError when it falls short of the minimums; LLMError (invalid
    answer, timeout) and BudgetExceeded propagate."""
    d = llm.structured(Role.PROPOSER, SkillDraft, draft_messages(need, name, live, queries)).value
    cases = list({c.query.strip(): c for c in d.cases if c.query.strip()}.values())
    examples = [e for e in dict.fromkeys(x.strip() for x in d.examples) if e]
    negatives = [n for n in dict.fromkeys(x.strip() for x in d.negatives) if n]
    counts = (("cases", len(cases), MIN_CASES), ("examples", len(examples), MIN_EXAMPLES),
              ("negatives", len(negatives), MIN_NEGATIVES))
    short = [f"{what} ({n} < {least})" for what, n, least in counts if n < least]
    if short:
        raise DraftError(f"the proposer's draft of '{name}' has too few " + ", ".join(short))
    return d.model_copy(update={"cases": cases, "examples": examples, "negatives": negatives})


def skill_text(name: str, d: SkillDraft) -> str:
    """The SKILL.md of the draft (version 0.1.0; publishing sets the release's own)."""
    front: dict[str, object] = {"name": name, "description": " ".join(d.description.split()),
                                "metadata": {"version": "0.1.0"}, "use_when": " ".join(d.use_when.split())}
    for key in ("not_for", "keywords", "examples", "dependencies"):
        values = [v.strip() for v in getattr(d, key) if v.strip()]
        if values:
            front[key] = values
    body = d.instructions.strip()
    return f"---\n{yaml12.dump(front)}---\n{body}\n"


def _holdout(query: str) -> bool:
    return int(hashlib.sha256(query.encode("utf-8")).hexdigest()[:8], 16) % HOLDOUT_SHARE == 0


def starter_cases(name: str, d: SkillDraft) -> tuple[list[Case], list[Case]]:
    """(dev, holdout): by query hash, moving the lowest-hash cases over until each side has
    MIN_PER_SIDE. Deterministic: the same draft always splits the same way."""
    ordered = sorted(d.cases, key=lambda c: hashlib.sha256(c.query.encode("utf-8")).hexdigest())
    hold = [c for c in ordered if _holdout(c.query)]
    dev = [c for c in ordered if not _holdout(c.query)]
    while len(hold) < MIN_PER_SIDE and len(dev) > MIN_PER_SIDE:
        hold.append(dev.pop(0))
    while len(dev) < MIN_PER_SIDE and len(hold) > MIN_PER_SIDE:
        dev.append(hold.pop(0))

    def case(c: StarterCase, part: str, i: int) -> Case:
        return Case(id=f"{name}-new-{part}-{i:02d}", skill=name, query=c.query.strip(),
                    expect=Expectation(must_include=[m for m in c.must_include if m.strip()]),
                    tags=["captured", *dict.fromkeys(t for t in c.tags if t.strip())])
    return [case(c, "dev", i) for i, c in enumerate(dev, 1)], [case(c, "holdout", i) for i, c in enumerate(hold, 1)]


def registration(name: str, d: SkillDraft) -> dict[str, str]:
    """What publishing writes beside the skill, relative to evaluation_sets/: the two starter sets
    (whole files) and the router lines (appended to router/dev.jsonl and router/negatives.jsonl)."""
    dev, hold = starter_cases(name, d)
    out: dict[str, str] = {}
    for part, cases in ((Partition.DEV, dev), (Partition.HOLDOUT, hold)):
        s = EvalSet(meta=SetMeta(name=f"{name}.{part.value}", partition=part, skills=[name]), cases=cases)
        out[f"{name}.{part.value}.json"] = json.dumps(s.model_dump(mode="json"), ensure_ascii=False, indent=2) + "\n"
    out["router/dev.jsonl"] = "".join(json.dumps({"query": c.query, "expected": name}, ensure_ascii=False) + "\n"
                                      for c in [*dev, *hold])
    out["router/negatives.jsonl"] = "".join(json.dumps({"query": q, "expected": None}, ensure_ascii=False) + "\n"
                                            for q in d.negatives)
    return out


def starter_queries(files: Mapping[str, str], name: str) -> list[str]:
    """The starter-case queries of a registration (its router lines that expect the new skill)."""
    rows = [json.loads(line) for line in text_lines(files.get("router/dev.jsonl", "")) if line.strip()]
    return [str(r["query"]) for r in rows if r.get("expected") == name]


def recheck(ws: Workspace, route: Router, embedder: Embedder, name: str, text: str, files: Mapping[str, str],
            published: Mapping[str, SkillFile]) -> ConflictVerdict:
    """The conflict rule again, on the library as it is now (an approve may come days after the
    draft, and a skill published since may serve the same need)."""
    return conflict(ws, route, embedder, parse(text, "SKILL.md", name), starter_queries(files, name), published)


def write_registration(ws: Workspace, files: Mapping[str, str]) -> list[Path]:
    """Write the starter sets (refusing to overwrite a different file of the same name) and append
    the router lines not already there. Each file is replaced whole (write, fsync, rename), so a
    crash leaves it as it was or as it should be; run again, it writes only what is missing."""
    written: list[Path] = []
    for rel, text in files.items():
        path = ws.evaluation_sets_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if rel.endswith(".jsonl"):
            old = path.read_text(encoding="utf-8") if path.exists() else ""
            have = set(text_lines(old))
            add = [line for line in text_lines(text) if line not in have]
            if not add:
                continue
            new = old + ("" if not old or old.endswith("\n") else "\n") + "".join(f"{line}\n" for line in add)
        else:
            if path.exists() and path.read_text(encoding="utf-8") == text:
                continue
            if path.exists():
                raise SkillForgeError(f"{path} exists and differs from the new skill's starter set; move it aside "
                                      "and publish again")
            new = text
        write_text_atomic(path, new)
        written.append(path)
    return written


# ---- vetting -------------------------------------------------------------------------------------

Router = Callable[[str, RouteContext], RouteState]


@dataclass(frozen=True)
class Vetting:
    """Everything the checks found about a drafted skill; `refusals` empty means it may go to review."""

    refusals: list[str]
    rejected_by: str | None
    conflict: ConflictVerdict | None = None
    leaks: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    """Every check that refused, in order (rejected_by is the first)."""


def capture_name(ws: Workspace, need: str, name: str | None = None) -> tuple[str, str]:
    """(the need, the new skill's name) for `skills new`, checked before any model is needed:
    BadArgument for an empty need or a name that is not a skill name; NameTaken when the name is
    a registered skill, live or retired, or a folder under skills/."""
    need = " ".join(need.split())
    if not need:
        raise BadArgument("the need is empty: say in a few words what the new skill should do")
    if name is not None and not name.strip():
        raise BadArgument("--name is empty: give the new skill's name, or leave --name out to derive one")
    skill = name or need_name(need)
    if not skill or not is_skill_name(skill):
        raise BadArgument(f"'{skill or need}' is not a skill name (a-z, 0-9 and single hyphens, at most 64): "
                          "give one with --name")
    store = Store(ws.db_path)
    try:
        registered, retired = {r.skill_name for r in store.current_releases()}, set(store.retired_names())
    finally:
        store.close()
    if skill in retired:
        raise NameTaken(f"'{skill}' is a retired skill (its releases stay in its history): bring it back with "
                        f"`skillforge release revert {skill}`, or give the new skill another name with --name")
    if skill in registered or (ws.skills_dir / skill).exists():
        raise NameTaken(f"'{skill}' is already {'a skill' if skill in registered else f'a folder: {ws.skills_dir / skill}'}"
                        "; give the new skill another name with --name")
    return need, skill


def registered(ws: Workspace, files: Mapping[str, str]) -> str:
    """`write_registration`, said as the publish message's tail; never raises a SkillForgeError (the
    release is already published: what could not be written is named, to be fixed by hand)."""
    try:
        written = write_registration(ws, files)
    except SkillForgeError as e:
        return f"; starter sets NOT written: {e}"
    return f"; starter sets written: {', '.join(p.name for p in written) or 'already there'}"


def _starter_text(d: SkillDraft) -> str:
    return "\n".join([*(c.query for c in d.cases), *(m for c in d.cases for m in c.must_include), *d.negatives])


def vet(ws: Workspace, route: Router, embedder: Embedder, name: str, text: str, d: SkillDraft,
        published: Mapping[str, SkillFile], sets: Mapping[str, EvalSet], nonces: LeakContext | None = None) -> Vetting:
    """Strict validation first (a file that does not parse is not measured); then the leak scan,
    hidden characters and the conflict rule, all of them, so that a refusal names every reason (a
    near-duplicate need whose draft also copies eval text is told both). `rejected_by` is the
    first that failed, in that order."""
    try:
        new = parse(text, "SKILL.md", name, strict=True)
    except SkillFileError as e:
        return Vetting([f"the drafted SKILL.md fails strict validation: {e}"], "structure")
    ctx = nonces or leak_context(ws, sets)
    leaks = [str(f) for f in scan_leaks(text, ctx)] + [str(f) for f in scan_leaks(_starter_text(d), LeakContext(cases=()))]
    reasons: list[str] = []
    failed: list[str] = []
    if leaks:
        kinds = sorted({f.split(":", 1)[0] for f in leaks})
        reasons.append(f"leak scan: {', '.join(kinds)} ({len(leaks)} finding(s))")
        failed.append("leak_scan")
    hidden = hidden_characters(text + "\n" + _starter_text(d))
    if hidden:
        reasons.append(f"hidden characters: {describe_hidden(hidden)}")
        failed.append("hidden_characters")
    verdict = conflict(ws, route, embedder, new, [c.query for c in d.cases], published)
    if verdict.refused:
        reasons += verdict.reasons
        failed.append("conflict")
    return Vetting(reasons, failed[0] if failed else None, conflict=verdict, leaks=leaks, failed=failed)


def conflict(ws: Workspace, route: Router, embedder: Embedder, new: SkillFile, starter: Sequence[str],
             published: Mapping[str, SkillFile]) -> ConflictVerdict:
    """Measure, then ask the rule: card cosines; the live router (LLM layer off, no scoring head:
    the head knows only the live skills) on the new skill's examples and starter queries; and the
    same index with the new skill added, under the live thresholds, on its starter queries and on
    the workspace's router cases."""
    live = [s for n, s in published.items() if n != new.name]
    if not live:
        return conflict_verdict(new.name, [], [], [], cosine_max=cosine_limit(embedder.name))
    base = RouteContext(index=RouteIndex.for_workspace(ws, live, embedder, use_head=False))
    cards = [Card.of(s).text for s in [new, *live]]  # the texts the index embeds: its cache has the live ones
    cache = base.index.cache
    vecs = normalise(np.asarray(cache.embed(embedder, cards) if cache is not None else embedder.embed(cards),
                                dtype=np.float32))
    cosines = [(s.name, float(vecs[0] @ v)) for s, v in zip(live, vecs[1:], strict=True)]
    with_new = RouteIndex.build([*live, new], embedder, cache=base.index.cache, ws=ws, use_head=False)
    with_new.thresholds = base.index.thresholds
    cand = RouteContext(index=with_new)
    probes = [Probe(q, route(q, base).chosen, route(q, cand).chosen if held else None, held_out=held)
              for q, held in [*((e, False) for e in new.examples), *((q, True) for q in starter)]]
    cases = [RoutedCase(q, exp, route(q, cand).chosen) for q, exp in router_cases(ws, [s.name for s in live])
             if exp is not None]
    return conflict_verdict(new.name, cosines, probes, cases, cosine_max=cosine_limit(embedder.name))
