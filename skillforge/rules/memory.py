"""What the proposer remembers across runs of a skill (pure, no I/O): the rejected-edit buffer and
the choice of proposal format.

**The rejected-edit buffer.** A candidate refused by a check (apply with a result, the learning
rate, the leak scan, hidden characters, a name, the routing gate) or lost on validation (selection,
holdout, a person's review) is remembered with its fingerprint and why (`RejectedEdit`). Later runs
of the same skill show the most recent `MAX_SHOWN` of them to the proposer ("already tried, and why
it failed") and refuse a candidate whose fingerprint is one of them (`REJECTED_BEFORE`). A NOOP, a
DUPLICATE within its run, a candidate that was not selected and one without a result (its patch did
not apply) are not remembered. The buffer is built so that it never carries holdout or final_audit
text: a leak is remembered by its kinds only, without the edit (its added text *is* the leak); a
candidate lost on holdout or final_audit by that fact only, without numbers or reasons; every other
reason comes from the visible sets. The proposer-side service scans what it shows once more.
A reviewer's comment (`review reject --comment`, `rebase --comment`, in the candidate's notes) and
the edit's text are redacted when remembered (rules/redact: secrets, card numbers, emails, phone
numbers; a key cut into chunks too), and again as the proposer is shown them (`tried_line`, with
rules/casetext.for_proposer: an entry remembered before that was kept raw); a name is not
recognised, so it stays (QA 45 F5).

**The format.** `choose_format` turns the `proposer.format` setting into the format of a round.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from skillforge.rules.casetext import for_proposer
from skillforge.rules.fingerprint import fingerprint
from skillforge.rules.redact import clip, redact_split
from skillforge.state.evolve import Candidate, CandidateKind, CandidateVerdict, FormatOutcome, PatchFormatName, \
    ProposerFormat, RejectedEdit

MAX_SHOWN = 6
"""Remembered edits shown to the proposer per request, most recent first."""
MAX_REASON_CHARS = 240
MAX_CHANGE_CHARS = 300
REJECTED_BEFORE = "rejected_before"
"""rejected_by of a candidate equal to an edit remembered from an earlier run (verdict DUPLICATE)."""
REMEMBERED = frozenset({CandidateVerdict.REFUSED, CandidateVerdict.LEAK, CandidateVerdict.FAILED_VALIDATION,
                        CandidateVerdict.HOLDOUT_LOSS})
HELD_OUT = frozenset({"holdout", "final_audit"})
APPLY_FLOOR = 0.5
"""auto: a model of which fewer than this share of the last round's candidates applied is asked for ops."""
_ROUND = re.compile(r"^r(\d+)c")


def buffer_reason(c: Candidate) -> str:
    """Why the candidate failed, as the buffer keeps it (no held-out text; see the module docstring).
    A candidate that passed holdout and then failed (rejected in review, refused at publish) keeps
    its last notes but not the holdout's or final_audit's, whose counts and scores the proposer
    must never see; a reviewer's comment is kept redacted (`_redacted`)."""
    if c.verdict is CandidateVerdict.LEAK:
        kinds = sorted({x.split(":", 1)[0].strip() for x in c.leaks if x.strip()})
        return "leak_scan: it copied " + (", ".join(kinds) or "case text") + " (the edit is not kept)"
    if c.verdict is CandidateVerdict.HOLDOUT_LOSS or (c.rejected_by or "") in HELD_OUT:
        return f"{c.rejected_by or 'holdout'}: not confirmed on held-out cases"
    told = [n for n in c.notes if not n.lstrip().casefold().startswith(tuple(HELD_OUT))]  # held-out results stay out
    return f"{c.rejected_by or 'unknown'}: " + _redacted("; ".join(told[-2:]), MAX_REASON_CHARS)


def _redacted(text: str, limit: int) -> str:
    """`text` redacted (rules/redact: a key cut into chunks, then every shape `redact` knows), then cut
    to `limit` characters without leaving part of a secret (`clip`)."""
    return clip(redact_split(text)[0], limit)


def change_summary(c: Candidate) -> str:
    """The lines the edit added (`+`) and removed (`-`), cut short; empty for a leak."""
    if c.verdict is CandidateVerdict.LEAK:
        return ""
    rows = [ln for ln in c.applied_diff.splitlines()
            if ln[:1] in "+-" and not ln.startswith(("+++", "---")) and ln[1:].strip()]
    return _redacted(" | ".join(rows), MAX_CHANGE_CHARS)


def to_remember(run_id: str, candidates: Iterable[Candidate], known: set[tuple[str, str]]) -> list[RejectedEdit]:
    """The run's failed candidates the buffer does not hold yet (`known`: (run_id, candidate id))."""
    out: list[RejectedEdit] = []
    for c in candidates:
        if c.verdict not in REMEMBERED or c.text is None or c.kind is not CandidateKind.FIX \
                or (run_id, c.id) in known:
            continue
        m = _ROUND.match(c.id)
        out.append(RejectedEdit(run_id=run_id, candidate_id=c.id, round=int(m.group(1)) if m else 0,
                                fingerprint=c.fingerprint or fingerprint(c.text), patch_format=c.patch_format.value,
                                verdict=c.verdict.value, rejected_by=c.rejected_by or "unknown",
                                reason=buffer_reason(c), change=change_summary(c)))
    return out


def recent(records: Sequence[RejectedEdit], run_id: str, limit: int | None = MAX_SHOWN) -> list[RejectedEdit]:
    """Other runs' remembered edits, most recent first, one per fingerprint (the latest), at most
    `limit` (None: all). The run's own are left out: its feedback and fingerprints hold them."""
    out: list[RejectedEdit] = []
    seen: set[str] = set()
    for r in reversed(records):
        if r.run_id == run_id or r.fingerprint in seen:
            continue
        seen.add(r.fingerprint)
        out.append(r)
    return out if limit is None else out[:limit]


def tried_line(r: RejectedEdit) -> str:
    """One remembered edit as the proposer reads it: its change and reason as a proposer prompt shows
    any text (`for_proposer`: redacted, or FLAGGED for an injection phrase), whatever the buffer
    holds (a line remembered before QA 45 F5 is raw; one cut at MAX_CHANGE_CHARS then may end in
    part of a secret, so a change that long loses its last word)."""
    change = f" changed: {for_proposer(_uncut(r.change, MAX_CHANGE_CHARS))}" if r.change else ""
    by, sep, why = r.reason.partition(": ")
    reason = f"{by}: {for_proposer(_uncut(why, MAX_REASON_CHARS))}" if sep else for_proposer(r.reason)
    return f"- {r.patch_format or 'patch'} edit{change} -> {r.verdict}: {reason}"


def _uncut(text: str, limit: int) -> str:
    """`text` without its last word when it is `limit` long or more and not cut by `clip` (a raw line
    cut there may end in the first part of a secret, which no redaction recognises)."""
    return text.rsplit(" ", 1)[0] + "…" if len(text) >= limit and not text.endswith("…") else text


def choose_format(setting: ProposerFormat, embedded: bool, outcomes: Sequence[FormatOutcome], model: str,
                  run_id: str, round_no: int) -> PatchFormatName:
    """The round's format. ops, search_replace and full are used as set. auto: ops for the embedded
    model; ops for a model whose last recorded round (of another run, or an earlier round of this
    one) was in ops, or applied fewer than APPLY_FLOOR of its candidates (none proposed counts as
    none applied); else search_replace. A round re-run after a resume ignores its own record."""
    if setting is not ProposerFormat.AUTO:
        return PatchFormatName(setting.value)
    if embedded:
        return PatchFormatName.OPS
    last = next((o for o in reversed(outcomes) if o.model == model
                 and not (o.run_id == run_id and o.round >= round_no)), None)
    if last is not None and (last.format is PatchFormatName.OPS or last.applied < APPLY_FLOOR * max(1, last.proposed)):
        return PatchFormatName.OPS
    return PatchFormatName.SEARCH_REPLACE
