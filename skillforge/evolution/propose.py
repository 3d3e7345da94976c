"""propose's service: ask the proposer for 3-5 candidate patches and apply each safely.

The proposer sees the skill, the root cause, the failures and the visible sets (the
`ProposerBundle`: dev, repair, p0; it has no holdout field), plus what earlier attempts tried and
why they failed. It is told to write general rules, never to copy cases: GEPA's default
reflection prompt asks for the opposite, and the leak scan rejects it anyway.

A SEARCH/REPLACE patch that matches nothing or more than one place is retried up to
`APPLY_RETRIES` times, with the real file content and the nearest lines fed back.
"""

from __future__ import annotations

import logging
from typing import Literal

from pydantic import BaseModel, Field

from skillforge.evaluation.datasets import ProposerBundle
from skillforge.errors import BudgetExceeded, LLMError
from skillforge.evolution.patch import PatchError, PatchFormat, PatchRefusal, apply_patch, check_skill_text
from skillforge.llm.client import LLM
from skillforge.skill.file import parse
from skillforge.state.evaluate import Case
from skillforge.state.evolve import Attempt, Candidate, CandidateKind, CandidateVerdict, Failure, PatchFormatName, \
    RootCauseFinding
from skillforge.state.llm import Role

log = logging.getLogger(__name__)

MIN_CANDIDATES, MAX_CANDIDATES = 3, 5
APPLY_RETRIES = 3
"""A patch that does not apply is sent back this many times at most."""
CONTEXT_CASES = 6
"""Visible cases shown per partition (besides the failures)."""
RETRYABLE = {PatchRefusal.NO_MATCH, PatchRefusal.AMBIGUOUS, PatchRefusal.NO_BLOCKS}

SYSTEM = (
    "You improve agent skills. A skill is a SKILL.md file: YAML frontmatter (name, description, use_when, "
    "not_for, keywords, examples, dependencies) and a markdown body (## Overview, ## Instructions, ## Examples, "
    "## Constraints). Propose 3 to 5 different candidate patches that fix the ROOT CAUSE of the failures "
    "for requests like them in general. Rules: write general instructions; never copy a user query, a case id, "
    "an expected answer, a tool's returned value or any number from the cases into the skill; never add "
    "secrets, paths outside the skill folder, or instructions aimed at the router or the model itself; keep "
    "the skill's name. Prefer the smallest change. Each patch is either format=search_replace with one or "
    "more blocks:\n<<<<<<< SEARCH\n(exact lines from the current file)\n=======\n(new lines)\n>>>>>>> REPLACE\n"
    "or format=full with the whole new file. kind is FIX (same skill), DERIVED (a new skill split from this "
    "one, full file, new name) or CAPTURED (a new root skill). claimed_level: 1 examples/not_for/description "
    "wording, 2 keywords/use_when/instructions, 3 dependencies/tools/permissions/safety constraints.")


class PatchProposal(BaseModel):
    kind: Literal["FIX", "DERIVED", "CAPTURED"] = "FIX"
    target_name: str = Field("", description="the new skill's name for DERIVED / CAPTURED; empty for FIX")
    format: Literal["search_replace", "full"]
    patch: str
    rationale: str = Field(description="why this fixes the root cause, in general terms")
    claimed_level: int = Field(1, ge=1, le=3)


class ProposalSet(BaseModel):
    candidates: list[PatchProposal] = Field(description="3 to 5 different candidates")


def _case_line(case: Case) -> str:
    return f"- [{case.id}] {case.query[:200]!r} must_include={case.expect.must_include[:4]}"


def propose_messages(skill_text: str, cause: RootCauseFinding, failures: list[Failure], bundle: ProposerBundle,
                     feedback: list[Attempt]) -> list[tuple[str, str]]:
    """The proposer prompt: stable system text first, then the variable parts."""
    fail_ids = {f.case.id for f in failures}
    ctx = [f"Root cause: {cause.category.value}: {cause.summary} (evidence: {', '.join(cause.evidence)})",
           "Failures:", *[f"- [{f.case.id}] kind={f.kind.value} skill_loaded={f.skill_loaded} "
                          f"query={f.case.query[:200]!r} why={f.reason[:200]!r}" for f in failures]]
    for name, part in (("Other repair cases", bundle.repair), ("P0 cases (must keep passing)", bundle.p0),
                       ("Dev cases", bundle.dev)):
        rows = [_case_line(c) for c in part if c.id not in fail_ids][:CONTEXT_CASES]
        if rows:
            ctx += [f"{name}:", *rows]
    if feedback:
        ctx += ["Earlier attempts that failed (do not repeat them):",
                *[f"- round {a.round} {a.candidate_id}: {a.rationale[:200]!r} -> rejected by {a.rejected_by}: "
                  f"{a.why[:300]}" for a in feedback]]
    return [("system", SYSTEM), ("user", "Current SKILL.md:\n" + skill_text + "\n\n" + "\n".join(ctx))]


def retry_messages(skill_text: str, proposal: PatchProposal, error: PatchError) -> list[tuple[str, str]]:
    return [("system", SYSTEM),
            ("user", "Your patch could not be applied: " + str(error) + "\n\nThe real, current SKILL.md is:\n"
             + skill_text + "\n\nYour patch was:\n" + proposal.patch
             + "\n\nReturn the same change as one corrected candidate whose SEARCH text is copied exactly "
               "from the real file and matches one place only.")]


class OneProposal(BaseModel):
    candidate: PatchProposal


def _apply(parent_text: str, parent_name: str, p: PatchProposal) -> tuple[str, str]:
    """(new text, applied diff). Raises PatchError."""
    parent = parse(parent_text, "SKILL.md", parent_name)
    if p.kind == "FIX":
        applied = apply_patch(parent_text, parent, p.patch, PatchFormat(p.format))
        return applied.text, applied.diff
    if p.format != "full":
        raise PatchError(PatchRefusal.NOT_A_SKILL, f"a {p.kind} candidate must be a full file")
    target = p.target_name.strip()
    if not target or target == parent_name:
        raise PatchError(PatchRefusal.NAME_CHANGED, f"a {p.kind} candidate needs a new skill name")
    text = p.patch if p.patch.endswith("\n") else p.patch + "\n"
    stand_in = parent.model_copy(update={"name": target})
    check_skill_text(text, stand_in)
    return text, ""


def build_candidates(llm: LLM, round_no: int, parent_text: str, parent_name: str, proposals: list[PatchProposal],
                     ) -> list[Candidate]:
    """Apply each proposal (retrying those that do not match); refused ones keep the reason."""
    out: list[Candidate] = []
    for i, p in enumerate(proposals[:MAX_CANDIDATES], 1):
        cand = Candidate(id=f"r{round_no}c{i}", kind=CandidateKind(p.kind), target=p.target_name.strip() or parent_name,
                         patch=p.patch, patch_format=PatchFormatName(p.format), rationale=p.rationale,
                         claimed_level=p.claimed_level)
        current = p
        for attempt in range(APPLY_RETRIES + 1):
            try:
                text, diff = _apply(parent_text, parent_name, current)
                cand = cand.model_copy(update={"text": text, "applied_diff": diff, "patch": current.patch,
                                               "patch_format": PatchFormatName(current.format)})
                break
            except PatchError as e:
                cand.notes.append(f"apply attempt {attempt + 1}: {e.reason}: {str(e).splitlines()[0]}")
                if e.reason not in RETRYABLE or attempt == APPLY_RETRIES:
                    cand = cand.model_copy(update={"verdict": CandidateVerdict.REFUSED, "rejected_by": "apply"})
                    break
                try:
                    current = llm.structured(Role.PROPOSER, OneProposal, retry_messages(parent_text, current, e)
                                             ).value.candidate
                except BudgetExceeded:
                    raise
                except LLMError as le:
                    cand.notes.append(f"retry failed: {type(le).__name__}")
                    cand = cand.model_copy(update={"verdict": CandidateVerdict.REFUSED, "rejected_by": "apply"})
                    break
        out.append(cand)
    return out


def propose(llm: LLM, round_no: int, parent_text: str, parent_name: str, cause: RootCauseFinding,
            failures: list[Failure], bundle: ProposerBundle, feedback: list[Attempt]) -> tuple[list[Candidate], str]:
    """3-5 applied (or refused) candidates, and a note. BudgetExceeded propagates; an unusable
    answer gives no candidates and says why."""
    try:
        answer = llm.structured(Role.PROPOSER, ProposalSet,
                                propose_messages(parent_text, cause, failures, bundle.for_skill(parent_name),
                                                 feedback)).value
    except BudgetExceeded:
        raise
    except LLMError as e:
        return [], f"the proposer's answer is unusable: {type(e).__name__}: {str(e)[:200]}"
    note = ""
    if len(answer.candidates) < MIN_CANDIDATES:
        note = f"the proposer gave {len(answer.candidates)} candidate(s), fewer than {MIN_CANDIDATES}"
    elif len(answer.candidates) > MAX_CANDIDATES:
        note = f"the proposer gave {len(answer.candidates)} candidates; the first {MAX_CANDIDATES} are kept"
    return build_candidates(llm, round_no, parent_text, parent_name, answer.candidates), note
