"""collect's services: read a skill's effective failures from the evaluation traces, and harvest
the new ones into the repair set as `<skill>_auto_NN` cases (the set file and its
`meta.auto_case_ids` manifest are rewritten together, atomically)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from pydantic import ValidationError

from skillforge.config import Workspace
from skillforge.evaluation.datasets import AUTO_MARK, DatasetError, load_sets, read_set, set_files
from skillforge.journal import read_jsonl
from skillforge.rules.failures import classify, dedupe, near_duplicate
from skillforge.state.evaluate import VISIBLE_TO_PROPOSER, Case, CaseResult, EvalSet, Partition
from skillforge.state.evolve import Failure

MAX_TRACE_FILES = 20
"""Only the most recent evaluation runs are read."""
MAX_FAILURES = 12



def trace_files(ws: Workspace, limit: int) -> list[Path]:
    """runs/traces/*.jsonl, newest first, at most `limit`: a folder named so is no trace (QA 39 G5)."""
    return sorted((p for p in ws.traces_dir.glob("*.jsonl") if p.is_file()), key=lambda p: p.stat().st_mtime,
                  reverse=True)[:limit]

def _hidden_ids(sets: Mapping[str, EvalSet]) -> tuple[set[str], dict[str, str]]:
    """Ids of holdout / final_audit cases (never collected), and every known query -> case id."""
    hidden: set[str] = set()
    queries: dict[str, str] = {}
    for s in sets.values():
        for c in s.cases:
            queries[" ".join(c.query.casefold().split())] = c.id
            if s.meta.partition not in VISIBLE_TO_PROPOSER:
                hidden.add(c.id)
    return hidden, queries


def effective_failures(ws: Workspace, skill: str, release_id: str | None,
                       sets: Mapping[str, EvalSet]) -> list[Failure]:
    """The live release's effective failures in the latest traces, newest first, near-duplicates
    removed. Cases of holdout and final_audit (of `sets`, the workspace's) are never collected: the
    proposer must not see them."""
    hidden, _ = _hidden_ids(sets)
    files = trace_files(ws, MAX_TRACE_FILES)
    found: list[Failure] = []
    seen_ids: set[str] = set()
    for path in files:
        for rec in read_jsonl(path):
            try:
                r = CaseResult.model_validate({k: v for k, v in rec.items() if k in CaseResult.model_fields})
            except ValidationError:
                continue
            if r.case.skill != skill or r.case.id in hidden or r.case.id in seen_ids:
                continue
            for side, run in (("baseline", r.baseline), ("candidate", r.candidate)):
                if release_id is not None and run.release_id != release_id:
                    continue
                check = r.checks.get(side)
                if check is None:
                    continue
                kind = classify(invalid=r.invalid, error=r.error, execution_error=run.error,
                                expect_pass=check.expect_pass, provenance_ok=check.provenance_ok,
                                p0=r.case.p0, reason=check.reason)
                if kind is None:
                    continue
                found.append(Failure(case=r.case, kind=kind, reason=check.reason, run_id=str(rec.get("run_id", "")),
                                     skill_loaded=skill in run.skills_loaded))
                seen_ids.add(r.case.id)
                break
    keep = dedupe([f.case.query for f in found])
    return [found[i] for i in keep][:MAX_FAILURES]


def traced_case_ids(ws: Workspace, skill: str, release_id: str | None) -> set[str]:
    """Ids of `skill`'s cases that a recent evaluation ran on `release_id` (pass or fail)."""
    files = trace_files(ws, MAX_TRACE_FILES)
    seen: set[str] = set()
    for path in files:
        for rec in read_jsonl(path):
            case = rec.get("case")
            if not isinstance(case, dict) or case.get("skill") != skill:
                continue
            sides = [rec.get(k) for k in ("baseline", "candidate")]
            if any(isinstance(r, dict) and r.get("release_id") == release_id for r in sides):
                seen.add(str(case.get("id")))
    return seen


def session_failures(ws: Workspace, skill: str, release_id: str | None, sets: Mapping[str, EvalSet],
                     exclude: set[str] = frozenset()) -> list[Failure]:  # type: ignore[assignment]
    """Reviewed failures from agent sessions: cases a person accepted (evaluation_sets/staged/) that
    sit in a set the proposer may read, happened on the live release, and that no evaluation has run
    on that release since (then the traces decide). Holdout and final_audit cases never are."""
    from skillforge.sessions.staging import read_staged, staged_path
    from skillforge.state.evolve import FailureKind

    if not staged_path(ws, skill).exists():
        return []
    visible = {c.id: c for s in sets.values() if s.meta.partition in VISIBLE_TO_PROPOSER for c in s.cases
               if c.skill == skill}
    accepted = [c for c in read_staged(ws, skill).cases
                if c.status == "accepted" and c.id in visible and c.id not in exclude
                and (c.provenance.release_id is None or c.provenance.release_id == release_id)]
    if not accepted:
        return []
    traced = traced_case_ids(ws, skill, release_id)
    found = [Failure(case=visible[c.id], kind=FailureKind.SESSION, reason=c.why,
                     run_id=f"session-{c.provenance.source.value}", skill_loaded=True)
             for c in accepted if c.id not in traced]
    keep = dedupe([f.case.query for f in found])
    return [found[i] for i in keep][:MAX_FAILURES]


def _repair_file(ws: Workspace, skill: str) -> tuple[Path, EvalSet] | None:
    repairs = [(p, read_set(p)) for p in set_files(ws)]
    repairs = [(p, s) for p, s in repairs if s.meta.partition is Partition.REPAIR]
    for p, s in repairs:
        if skill in s.meta.skills:
            return p, s
    return repairs[0] if repairs else None


def write_set_atomic(path: Path, eval_set: EvalSet) -> None:
    """Rewrite a set file (cases and manifest together) through a temp file and os.replace."""
    from skillforge.safewrite import write_text_atomic  # keeps the file's mode, a new one the umask

    data = json.dumps(eval_set.model_dump(mode="json", exclude_defaults=False), ensure_ascii=False, indent=1) + "\n"
    write_text_atomic(path, data)


def harvest(ws: Workspace, skill: str, failures: list[Failure],
            sets: dict[str, EvalSet]) -> tuple[list[str], dict[str, EvalSet]]:
    """Write the failures whose query is in no set yet (of `sets`, the workspace's) into the repair
    set as `<skill>_auto_NN`. Returns the new ids and the workspace's sets after (`sets` when nothing
    was written). A failure already in a set (say, a dev case) is left where it is. Under the review
    lock (sessions/staging.review_lock): a `cases review --accept` into the same file is never lost."""
    from skillforge.sessions.staging import review_lock

    with review_lock(ws):
        return _harvest(ws, skill, failures, sets)


def _harvest(ws: Workspace, skill: str, failures: list[Failure],
             sets: dict[str, EvalSet]) -> tuple[list[str], dict[str, EvalSet]]:
    _, known = _hidden_ids(sets)
    fresh = [f for f in failures if " ".join(f.case.query.casefold().split()) not in known]
    if not fresh:
        return [], sets
    target = _repair_file(ws, skill)
    if target is None:
        path = ws.evaluation_sets_dir / "repair.json"
        current = EvalSet.model_validate({"meta": {"name": "repair", "partition": "repair", "skills": [skill]},
                                          "cases": []})
    else:
        path, current = target
    existing = [c for c in current.cases if c.skill == skill]
    if any(near_duplicate(f.case.query, c.query) for f in fresh for c in existing):
        fresh = [f for f in fresh if not any(near_duplicate(f.case.query, c.query) for c in existing)]
    used = {c.id for c in current.cases}
    n, new_cases, ids = 1, [], []
    for f in fresh:
        while f"{skill}{AUTO_MARK}{n:02d}" in used:
            n += 1
        cid = f"{skill}{AUTO_MARK}{n:02d}"
        used.add(cid)
        ids.append(cid)
        new_cases.append(Case(id=cid, skill=skill, query=f.case.query, fixtures=f.case.fixtures, expect=f.case.expect,
                              p0=f.case.p0, tags=[*f.case.tags, "auto", f.kind.value]))
    if not ids:
        return [], sets
    meta = current.meta.model_copy(update={"skills": sorted({*current.meta.skills, skill}),
                                           "auto_case_ids": [*current.meta.auto_case_ids, *ids]})
    updated = EvalSet(meta=meta, cases=[*current.cases, *new_cases])
    write_set_atomic(path, updated)
    try:
        after = load_sets(ws)
    except DatasetError:
        write_set_atomic(path, current)  # never leave the workspace with sets that do not load
        raise
    return ids, after


def skills_to_evolve(ws: Workspace) -> list[str]:
    """Published skills with reviewed failures of their live release: effective failures in the
    traces, or accepted session cases (the nightly loop evolves these and nothing else)."""
    from skillforge.library.registry import SkillRegistry

    reg = SkillRegistry.load(ws)
    sets = load_sets(ws)
    names = []
    for name in reg.names():
        release_id = reg.get(name).release.release_id
        if effective_failures(ws, name, release_id, sets) or session_failures(ws, name, release_id, sets):
            names.append(name)
    return names
