"""propose's service: ask the proposer for 3-5 candidate patches and apply each safely.

The proposer sees the skill, the root cause, the failures and the visible sets (the
`ProposerBundle`: dev, repair, p0; it has no holdout field), what earlier rounds of the run tried
and why they failed, and the edits earlier runs of the skill were refused for (the rejected-edit
buffer, `rules/memory.py`; never holdout text). It is told to write general rules, never to copy
cases: GEPA's default reflection prompt asks for the opposite, and the leak scan rejects it anyway.
Case text (queries, expectations, failure reasons) is shown redacted, and a text with a
prompt-injection phrase as a flag (rules/casetext.for_proposer), hand-written sets included.

Formats (`PatchFormatName`, chosen per round by the `proposer.format` setting):
- `search_replace`: SEARCH/REPLACE blocks, or a full file (also for DERIVED / CAPTURED skills);
- `full`: the whole new file only;
- `ops`: a list of edit operations whose anchors are an enum of the current file's lines, put in
  the JSON schema of that very request (`ops_schemas`), so a grammar-constrained server can only
  name lines that exist (`rules/edits.py`). FIX candidates only.

A patch that does not apply (no match, several matches, no blocks, an unknown anchor) or is over
the round's textual learning rate (`rules/learning_rate.py`) is retried up to `APPLY_RETRIES`
times, with the reason (and for text patches the real file content and the nearest lines) fed back.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field, create_model

from skillforge.evaluation.datasets import ProposerBundle
from skillforge.errors import BudgetExceeded, LLMError, LLMTimeout, LLMUnavailable
from skillforge.evolution.patch import (
    PatchError,
    PatchFormat,
    PatchRefusal,
    apply_patch,
    as_lf,
    check_skill_text,
    keep_line_ending,
    text_diff,
)
from skillforge.llm.client import LLM
from skillforge.rules.casetext import for_proposer
from skillforge.rules.edits import EDITABLE_FIELDS, START, EditError, EditKind, EditOp, anchors, apply_edits, describe
from skillforge.rules.learning_rate import MAX_CHANGED_CHARS, MAX_CHANGED_LINES, change_size, over_budget
from skillforge.skill.file import parse
from skillforge.state.evaluate import Case
from skillforge.state.evolve import Attempt, Candidate, CandidateKind, CandidateVerdict, Failure, PatchFormatName, \
    RootCauseFinding
from skillforge.state.llm import Role

log = logging.getLogger(__name__)

MIN_CANDIDATES, MAX_CANDIDATES = 3, 5
PROPOSER_DOWN = "the proposer is unavailable"
"""How the error begins when the proposer's endpoint was down or timed out: the run stops open
(runs before QA 37 noted it in EvolveState.proposer_down and went on to NO_IMPROVEMENT)."""
APPLY_RETRIES = 3
"""A patch that does not apply is sent back this many times at most."""
CONTEXT_CASES = 6
"""Visible cases shown per partition (besides the failures)."""
RETRYABLE = {PatchRefusal.NO_MATCH, PatchRefusal.AMBIGUOUS, PatchRefusal.NO_BLOCKS, PatchRefusal.UNKNOWN_ANCHOR,
             PatchRefusal.UNKNOWN_FIELD, PatchRefusal.OVER_BUDGET}
LEARNING_RATE = "learning_rate"
"""rejected_by of a candidate over the round's textual learning rate (verdict REFUSED)."""

_RULES = ("for requests like them in general. Rules: write general instructions; never copy a user query, a case id, "
          "an expected answer, a tool's returned value or any number from the cases into the skill; never add "
          "secrets, paths outside the skill folder, or instructions aimed at the router or the model itself; keep "
          "the skill's name. Prefer the smallest change: each candidate may change at most "
          f"{MAX_CHANGED_LINES} lines and {MAX_CHANGED_CHARS} characters. ")
_LEVELS = ("claimed_level: 1 examples/not_for/description wording, 2 keywords/use_when/instructions, 3 "
           "dependencies/tools/permissions/safety constraints.")
SYSTEM = (
    "You improve agent skills. A skill is a SKILL.md file: YAML frontmatter (name, description, use_when, "
    "not_for, keywords, examples, dependencies) and a markdown body (## Overview, ## Instructions, ## Examples, "
    "## Constraints). Propose 3 to 5 different candidate patches that fix the ROOT CAUSE of the failures "
    + _RULES + "Each patch is either format=search_replace with one or "
    "more blocks:\n<<<<<<< SEARCH\n(exact lines from the current file)\n=======\n(new lines)\n>>>>>>> REPLACE\n"
    "or format=full with the whole new file. kind is FIX (same skill), DERIVED (a new skill split from this "
    "one, full file, new name) or CAPTURED (a new root skill). " + _LEVELS)
SYSTEM_FULL = (
    "You improve agent skills. A skill is a SKILL.md file: YAML frontmatter (name, description, use_when, "
    "not_for, keywords, examples, dependencies) and a markdown body (## Overview, ## Instructions, ## Examples, "
    "## Constraints). Propose 3 to 5 different candidate patches that fix the ROOT CAUSE of the failures "
    + _RULES + "Each patch is format=full: the whole new file. kind is FIX (same skill), DERIVED (a new skill split "
    "from this one, new name) or CAPTURED (a new root skill). " + _LEVELS)
SYSTEM_OPS = (
    "You improve agent skills. A skill is a SKILL.md file: YAML frontmatter (name, description, use_when, "
    "not_for, keywords, examples, dependencies) and a markdown body (## Overview, ## Instructions, ## Examples, "
    "## Constraints). Propose 3 to 5 different candidates that fix the ROOT CAUSE of the failures " + _RULES
    + "Each candidate is a short list of operations on the current file. edits: op insert_after (add the text's "
    f"lines after the anchor line), replace (the anchor line becomes the text) or delete (remove the anchor line); "
    f"the anchor is one line of the current body exactly as the schema lists it, or {START!r} for the top of the "
    f"body. fields: set a frontmatter field ({', '.join(EDITABLE_FIELDS)}) to a new value; a list field takes one "
    "item per line. " + _LEVELS)


class PatchProposal(BaseModel):
    kind: Literal["FIX", "DERIVED", "CAPTURED"] = "FIX"
    target_name: str = Field("", description="the new skill's name for DERIVED / CAPTURED; empty for FIX")
    format: Literal["search_replace", "full"]
    patch: str
    rationale: str = Field(description="why this fixes the root cause, in general terms")
    claimed_level: int = Field(1, ge=1, le=3)


class ProposalSet(BaseModel):
    candidates: list[PatchProposal] = Field(description="3 to 5 different candidates")


class OneProposal(BaseModel):
    candidate: PatchProposal


class FullPatchProposal(PatchProposal):
    format: Literal["full"] = "full"  # type: ignore[assignment]


class FullProposalSet(BaseModel):
    candidates: list[FullPatchProposal] = Field(description="3 to 5 different candidates, each a whole file")


class OneFullProposal(BaseModel):
    candidate: FullPatchProposal


class LineEdit(BaseModel):
    """insert_after / replace / delete one line of the current body (the anchor)."""

    op: Literal["insert_after", "replace", "delete"]
    anchor: str = Field(description="a line of the current body, exactly as listed, or the start of the body")
    text: str = Field(description="the new line(s); empty for delete", json_schema_extra={"maxLength": 300})


class FieldEdit(BaseModel):
    """set_field: a frontmatter field's new value (a list field: one item per line)."""

    field: str = Field(description="the frontmatter field", json_schema_extra={"enum": list(EDITABLE_FIELDS)})
    value: str = Field(json_schema_extra={"maxLength": 300})


class OpsProposal(BaseModel):
    edits: list[LineEdit] = Field(description="operations on body lines, each anchored on a line of the current file",
                                  json_schema_extra={"maxItems": 4})
    fields: list[FieldEdit] = Field(description="frontmatter fields to set", json_schema_extra={"maxItems": 2})
    rationale: str = Field(description="why this fixes the root cause, in general terms",
                           json_schema_extra={"maxLength": 200})
    claimed_level: int = Field(ge=1, le=3)


class OpsProposalSet(BaseModel):
    """3 candidates, each a list of edit operations on the current SKILL.md. The schema bounds what a
    grammar-constrained server can write (3 candidates, 4 line edits and 2 fields each, 300
    characters a text, 200 a rationale: within the textual learning rate) so a small model's reply
    ends; parsing does not enforce the bounds on a server that ignores them."""

    candidates: list[OpsProposal] = Field(description="3 different candidates",
                                          json_schema_extra={"minItems": 3, "maxItems": 3})


class OneOpsProposal(BaseModel):
    """One corrected candidate: edit operations on the current SKILL.md."""

    candidate: OpsProposal


@functools.lru_cache(maxsize=32)
def _ops_schemas(labels: tuple[str, ...]) -> tuple[type[OpsProposalSet], type[OneOpsProposal]]:
    anchor = (str, Field(description="a line of the current body, exactly as listed here, or "
                                     f"{START!r} for the top of the body", json_schema_extra={"enum": list(labels)}))
    edit = create_model("LineEdit", __base__=LineEdit, __doc__=LineEdit.__doc__, anchor=anchor)
    one = create_model("OpsProposal", __base__=OpsProposal, edits=(list[edit], OpsProposal.model_fields["edits"]))  # type: ignore[valid-type]
    many = create_model("OpsProposalSet", __base__=OpsProposalSet, __doc__=OpsProposalSet.__doc__,
                        candidates=(list[one], OpsProposalSet.model_fields["candidates"]))  # type: ignore[valid-type]
    single = create_model("OneOpsProposal", __base__=OneOpsProposal, __doc__=OneOpsProposal.__doc__,
                          candidate=(one, ...))
    return many, single


def ops_schemas(parent_text: str) -> tuple[type[OpsProposalSet], type[OneOpsProposal]]:
    """The schemas of an ops request on `parent_text`: the anchor field's enum is the file's anchors
    (`rules/edits.anchors`: at most MAX_ANCHORS labels). The enum is sent to the server, which may
    turn it into a grammar; parsing accepts any string, so a server that ignores it gets a named
    refusal (unknown_anchor) and a retry instead of an unusable answer. Built once per file."""
    return _ops_schemas(anchors(parent_text).labels)


def edit_ops(p: OpsProposal) -> list[EditOp]:
    """The proposal's operations for `rules/edits.apply_edits`: line edits, then fields."""
    return ([EditOp(EditKind(e.op), anchor=e.anchor, text=e.text) for e in p.edits]
            + [EditOp(EditKind.SET_FIELD, field=f.field, text=f.value) for f in p.fields])


Proposal = PatchProposal | OpsProposal


def _case_line(case: Case) -> str:
    return (f"- [{case.id}] {for_proposer(case.query)[:200]!r} "
            f"must_include={[for_proposer(x) for x in case.expect.must_include[:4]]}")


def system_for(fmt: PatchFormatName) -> str:
    return {PatchFormatName.OPS: SYSTEM_OPS, PatchFormatName.FULL: SYSTEM_FULL}.get(fmt, SYSTEM)


def propose_messages(skill_text: str, cause: RootCauseFinding, failures: list[Failure], bundle: ProposerBundle,
                     feedback: list[Attempt], *, fmt: PatchFormatName = PatchFormatName.SEARCH_REPLACE,
                     tried: Sequence[str] = ()) -> list[tuple[str, str]]:
    """The proposer prompt: stable system text first, then the variable parts. `tried`: lines of the
    rejected-edit buffer (earlier runs' edits and why they failed; never holdout text)."""
    fail_ids = {f.case.id for f in failures}
    ctx = [f"Root cause: {cause.category.value}: {cause.summary} (evidence: {', '.join(cause.evidence)})",
           "Failures:", *[f"- [{f.case.id}] kind={f.kind.value} skill_loaded={f.skill_loaded} "
                          f"query={for_proposer(f.case.query)[:200]!r} why={for_proposer(f.reason)[:200]!r}"
                          for f in failures]]
    for name, part in (("Other repair cases", bundle.repair), ("P0 cases (must keep passing)", bundle.p0),
                       ("Dev cases", bundle.dev)):
        rows = [_case_line(c) for c in part if c.id not in fail_ids][:CONTEXT_CASES]
        if rows:
            ctx += [f"{name}:", *rows]
    if feedback:
        ctx += ["Earlier attempts that failed (do not repeat them):",
                *[f"- round {a.round} {a.candidate_id}: {a.rationale[:200]!r} -> rejected by {a.rejected_by}: "
                  f"{a.why[:300]}" for a in feedback]]
    if tried:
        ctx += ["Already tried in earlier runs, and why it failed (do not propose these again):", *tried]
    return [("system", system_for(fmt)), ("user", "Current SKILL.md:\n" + skill_text + "\n\n" + "\n".join(ctx))]


def retry_messages(skill_text: str, proposal: Proposal, error: PatchError) -> list[tuple[str, str]]:
    smaller = (f" Make it smaller: at most {MAX_CHANGED_LINES} changed lines and {MAX_CHANGED_CHARS} characters."
               if error.reason is PatchRefusal.OVER_BUDGET else "")
    if isinstance(proposal, OpsProposal):
        return [("system", SYSTEM_OPS),
                ("user", "Your operations could not be applied: " + str(error) + "\n\nThe real, current SKILL.md is:\n"
                 + skill_text + "\n\nYour operations were:\n" + describe(edit_ops(proposal))
                 + "\n\nReturn the same change as one corrected candidate whose anchors are lines of the real file, "
                   "exactly as the schema lists them." + smaller)]
    return [("system", SYSTEM_FULL if isinstance(proposal, FullPatchProposal) else SYSTEM),
            ("user", "Your patch could not be applied: " + str(error) + "\n\nThe real, current SKILL.md is:\n"
             + skill_text + "\n\nYour patch was:\n" + proposal.patch
             + "\n\nReturn the same change as one corrected candidate whose SEARCH text is copied exactly "
               "from the real file and matches one place only." + smaller)]


def _apply(parent_text: str, parent_name: str, p: Proposal) -> tuple[str, str]:
    """(new text, applied diff). Raises PatchError."""
    parent = parse(parent_text, "SKILL.md", parent_name)
    if isinstance(p, OpsProposal):
        try:
            text = keep_line_ending(parent_text, apply_edits(as_lf(parent_text), edit_ops(p)))
        except EditError as e:
            raise PatchError(PatchRefusal(e.reason.value), str(e)) from None
        check_skill_text(text, parent)
        return text, text_diff(parent_text, text)
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


def _fields(p: Proposal, parent_name: str) -> dict[str, object]:
    """The candidate's patch, format and (for a text patch) kind and target, from a proposal."""
    if isinstance(p, OpsProposal):
        return {"patch": describe(edit_ops(p)), "patch_format": PatchFormatName.OPS, "kind": CandidateKind.FIX,
                "target": parent_name}
    return {"patch": p.patch, "patch_format": PatchFormatName(p.format), "kind": CandidateKind(p.kind),
            "target": p.target_name.strip() or parent_name}


def build_candidates(llm: LLM, round_no: int, parent_text: str, parent_name: str, proposals: Sequence[Proposal],
                     ) -> list[Candidate]:
    """Apply each proposal (retrying those that do not match, or are over the learning rate);
    refused ones keep the reason (an over-budget one its text too, for the rejected-edit buffer)."""
    out: list[Candidate] = []
    for i, p in enumerate(proposals[:MAX_CANDIDATES], 1):
        cand = Candidate(id=f"r{round_no}c{i}", rationale=p.rationale, claimed_level=p.claimed_level,
                         **_fields(p, parent_name))  # type: ignore[arg-type]
        current = p
        for attempt in range(APPLY_RETRIES + 1):
            try:
                text, diff = _apply(parent_text, parent_name, current)
                cand = cand.model_copy(update={"text": text, "applied_diff": diff, **_fields(current, parent_name)})
                why = over_budget(change_size(parent_text, text)) if cand.kind is CandidateKind.FIX else None
                if why:
                    raise PatchError(PatchRefusal.OVER_BUDGET, f"the change is over the round's budget: {why}")
                break
            except PatchError as e:
                cand.notes.append(f"apply attempt {attempt + 1}: {e.reason}: {str(e).splitlines()[0]}")
                refused = {"verdict": CandidateVerdict.REFUSED,
                           "rejected_by": LEARNING_RATE if e.reason is PatchRefusal.OVER_BUDGET else "apply"}
                if e.reason is not PatchRefusal.OVER_BUDGET:
                    refused.update(text=None, applied_diff="")
                if e.reason not in RETRYABLE or attempt == APPLY_RETRIES:
                    cand = cand.model_copy(update=refused)
                    break
                try:
                    current = _retry(llm, parent_text, current, e)
                except (BudgetExceeded, LLMUnavailable, LLMTimeout):
                    raise  # no answer at all: the run stops open (runners/evolve.py), resumable
                except LLMError as le:
                    cand.notes.append(f"retry failed: {type(le).__name__}")
                    cand = cand.model_copy(update=refused)
                    break
        out.append(cand)
    return out


def _retry(llm: LLM, parent_text: str, p: Proposal, error: PatchError) -> Proposal:
    """The proposer's one corrected candidate, in the format of `p`."""
    msgs = retry_messages(parent_text, p, error)
    if isinstance(p, OpsProposal):
        return llm.structured(Role.PROPOSER, ops_schemas(parent_text)[1], msgs).value.candidate
    if isinstance(p, FullPatchProposal):
        return llm.structured(Role.PROPOSER, OneFullProposal, msgs).value.candidate
    return llm.structured(Role.PROPOSER, OneProposal, msgs).value.candidate


def request_schema(fmt: PatchFormatName, parent_text: str) -> type[BaseModel]:
    """The schema a round's request carries: ops (anchors of `parent_text`), full, or search_replace."""
    if fmt is PatchFormatName.OPS:
        return ops_schemas(parent_text)[0]
    return FullProposalSet if fmt is PatchFormatName.FULL else ProposalSet


def propose(llm: LLM, round_no: int, parent_text: str, parent_name: str, cause: RootCauseFinding,
            failures: list[Failure], bundle: ProposerBundle, feedback: list[Attempt], *,
            fmt: PatchFormatName = PatchFormatName.SEARCH_REPLACE, tried: Sequence[str] = (),
            ) -> tuple[list[Candidate], str]:
    """3-5 applied (or refused) candidates in format `fmt`, and a note. BudgetExceeded propagates,
    and so do LLMUnavailable and LLMTimeout (no answer at all: the run stops open and resumes once the
    endpoint answers); an unusable answer gives no candidates and says why."""
    try:
        answer = llm.structured(Role.PROPOSER, request_schema(fmt, parent_text),
                                propose_messages(parent_text, cause, failures, bundle.for_skill(parent_name),
                                                 feedback, fmt=fmt, tried=tried)).value
    except BudgetExceeded:
        raise
    except (LLMUnavailable, LLMTimeout) as e:  # no answer at all: the endpoint is down, not the answer bad;
        raise type(e)(f"{PROPOSER_DOWN}: {e}") from None  # the run stops open, not "nothing proposed"
    except LLMError as e:
        return [], f"the proposer's answer is unusable: {type(e).__name__}: {str(e)[:200]}"
    proposals: list[Proposal] = list(answer.candidates)  # type: ignore[attr-defined]
    note = ""
    if len(proposals) < MIN_CANDIDATES:
        note = f"the proposer gave {len(proposals)} candidate(s), fewer than {MIN_CANDIDATES}"
    elif len(proposals) > MAX_CANDIDATES:
        note = f"the proposer gave {len(proposals)} candidates; the first {MAX_CANDIDATES} are kept"
    return build_candidates(llm, round_no, parent_text, parent_name, proposals), note
