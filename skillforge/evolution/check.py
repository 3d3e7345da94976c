"""check's service: run the pure rules on each applied candidate — computed level from the semantic
diff, leak scan of what the patch adds, hidden (control and format) characters the patch adds,
fingerprint against the baseline, every earlier candidate of the run and the edits earlier runs
were refused for (the rejected-edit buffer, `rules/memory.py`) — and record what each found."""

from __future__ import annotations

import json
from collections.abc import Mapping

from skillforge.config import Workspace
from skillforge.evolution.harvest import trace_files
from skillforge.journal import read_jsonl
from skillforge.rules.fingerprint import FingerprintVerdict, check_fingerprint, fingerprint
from skillforge.rules.hidden import added_hidden, hidden_characters, line_rules
from skillforge.rules.leaks import EvalText, LeakContext, added_text, scan_leaks
from skillforge.rules.levels import Level, graded_level, semantic_diff
from skillforge.rules.memory import REJECTED_BEFORE
from skillforge.rules.redact import redact
from skillforge.skill.file import parse
from skillforge.state.evaluate import Case, EvalSet
from skillforge.state.evolve import Candidate, CandidateKind, CandidateVerdict, RejectedEdit

MAX_NONCE_FILES = 20
HIDDEN_CHARACTERS = "hidden_characters"
"""rejected_by of a candidate whose new lines carry control or format characters (verdict REFUSED)."""
LEVEL_NOTE = "level"
"""Prefix of a note that says why the computed level is above the part's usual one."""


def leak_context(ws: Workspace, sets: Mapping[str, EvalSet]) -> LeakContext:
    """Every partition's cases (of `sets`, the workspace's; holdout and final_audit included: the
    scan must know what it protects) and the nonces recorded in the workspace's recent traces."""
    cases = [eval_text(c, s.meta.partition.value) for s in sets.values() for c in s.cases]
    nonces: set[str] = set()
    traces = trace_files(ws, MAX_NONCE_FILES)
    for path in traces:
        for rec in read_jsonl(path):
            for side in ("baseline", "candidate"):
                run = rec.get(side)
                if isinstance(run, dict) and isinstance(run.get("nonce"), str):
                    nonces.add(run["nonce"])
    return LeakContext(cases=tuple(cases), nonces=frozenset(n for n in nonces if n))


def eval_text(case: Case, partition: str) -> EvalText:
    """What one case gives the leak scan: id, partition, query, expected facts, fixture values."""
    return EvalText(case.id, partition, case.query, tuple(case.expect.must_include),
                    json.dumps(case.fixtures, ensure_ascii=False))


def check_candidate(cand: Candidate, parent_text: str, parent_name: str, ctx: LeakContext,
                    seen: list[str], remembered: Mapping[str, RejectedEdit] | None = None) -> Candidate:
    """The candidate with its level, diff parts, leaks, fingerprint and (if stopped) verdict.
    `remembered`: fingerprint -> an edit an earlier run of the skill refused or lost; a candidate
    equal to one is DUPLICATE, rejected_by `rejected_before`, with the old reason in its notes."""
    if cand.text is None or cand.verdict is not CandidateVerdict.PENDING:
        return cand
    update: dict[str, object] = {}
    parent = parse(parent_text, "SKILL.md", parent_name)
    new = parse(cand.text, "SKILL.md", cand.target)
    if cand.kind is CandidateKind.FIX:
        diff = semantic_diff(parent, new)
        computed = diff.computed_level
        update.update(changed_parts=list(diff.parts), metadata_only=diff.metadata_only)
        if diff.reasons:  # a directive under an L1 part: the review file and summary say which line
            update["notes"] = [*cand.notes, *(f"{LEVEL_NOTE}: {redact(r)[0]}" for r in diff.reasons)]  # QA 45 F7
    else:
        computed = Level.L2  # a new skill changes routing for every query: a person decides
        update.update(changed_parts=["skill.new"], metadata_only=False)
    claimed = Level(cand.claimed_level) if cand.claimed_level else None
    level = graded_level(claimed, computed)
    update.update(computed_level=int(computed) if computed else None, level=int(level) if level else None)
    fp = fingerprint(cand.text)
    update["fingerprint"] = fp
    added = added_text(parent_text, cand.text) if cand.kind is CandidateKind.FIX else cand.text
    # what the live skill already says is public (a new skill too), unless the candidate copies it again
    leaks = scan_leaks(added, ctx, parent=parent_text, candidate=cand.text)
    update["leaks"] = [str(f) for f in leaks]
    hidden = added_hidden(parent_text, cand.text) if cand.kind is CandidateKind.FIX else hidden_characters(cand.text)
    if hidden:
        update["notes"] = [*update.get("notes", cand.notes),  # type: ignore[list-item]
                           *(f"{HIDDEN_CHARACTERS}: {rule}" for _, rule in line_rules(hidden))]
    verdict = check_fingerprint(fp, fingerprint(parent_text), seen)
    if verdict is FingerprintVerdict.NOOP or computed is None:
        update.update(verdict=CandidateVerdict.NOOP, rejected_by="fingerprint")
    elif verdict is FingerprintVerdict.DUPLICATE:
        update.update(verdict=CandidateVerdict.DUPLICATE, rejected_by="fingerprint")
    elif remembered and fp in remembered:
        old = remembered[fp]
        update.update(verdict=CandidateVerdict.DUPLICATE, rejected_by=REJECTED_BEFORE,
                      notes=[*update.get("notes", cand.notes),  # type: ignore[list-item]
                             f"{REJECTED_BEFORE}: run {old.run_id} {old.candidate_id} was {old.verdict}: {old.reason}"])
    elif leaks:  # a disguised copy is a leak first; its hidden characters are in the notes too
        update.update(verdict=CandidateVerdict.LEAK, rejected_by="leak_scan")
    elif hidden:
        update.update(verdict=CandidateVerdict.REFUSED, rejected_by=HIDDEN_CHARACTERS)
    return cand.model_copy(update=update)
