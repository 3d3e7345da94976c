"""The files behind what the proposer remembers (the rules are `rules/memory.py`):

- `runs/rejected/<skill>.jsonl`: the rejected-edit buffer, one `RejectedEdit` per line, appended
  (`journal.append_jsonl`) when a run archives its failed candidates; read tolerant of torn lines.
- `runs/proposer_formats.jsonl`: one `FormatOutcome` per proposer round (model, format, candidates
  proposed and applied), what `proposer.format = "auto"` decides from.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from pathlib import Path

from pydantic import ValidationError

from skillforge.config import Workspace
from skillforge.evolution.check import eval_text
from skillforge.journal import append_jsonl, read_jsonl
from skillforge.rules.leaks import LeakContext, scan_leaks
from skillforge.rules.memory import recent, to_remember, tried_line
from skillforge.state.evaluate import EvalSet, Partition
from skillforge.state.evolve import Candidate, FormatOutcome, RejectedEdit

log = logging.getLogger(__name__)
HELD_OUT = (Partition.HOLDOUT, Partition.FINAL_AUDIT)


def rejected_path(ws: Workspace, skill: str) -> Path:
    return ws.runs_dir / "rejected" / f"{skill}.jsonl"


def formats_path(ws: Workspace) -> Path:
    return ws.runs_dir / "proposer_formats.jsonl"


def read_rejected(ws: Workspace, skill: str) -> list[RejectedEdit]:
    """The skill's buffer in file order; a torn or foreign line is skipped."""
    out: list[RejectedEdit] = []
    for rec in read_jsonl(rejected_path(ws, skill)):
        try:
            out.append(RejectedEdit.model_validate(rec))
        except ValidationError:
            log.warning("%s: skipped a line that is not a rejected edit", rejected_path(ws, skill))
    return out


def remember(ws: Workspace, skill: str, run_id: str, candidates: Iterable[Candidate]) -> list[RejectedEdit]:
    """Append the run's failed candidates the buffer does not hold yet (idempotent: a re-run node
    appends nothing twice); returns what was appended."""
    known = {(r.run_id, r.candidate_id) for r in read_rejected(ws, skill)}
    new = to_remember(run_id, candidates, known)
    for r in new:
        append_jsonl(rejected_path(ws, skill), r.model_dump(mode="json", exclude={"ts"}))
    return new


def remembered(ws: Workspace, skill: str, run_id: str) -> dict[str, RejectedEdit]:
    """Fingerprint -> the latest edit an earlier run of the skill was refused for (the check's input)."""
    return {r.fingerprint: r for r in recent(read_rejected(ws, skill), run_id, limit=None)}


def held_out_context(sets: Mapping[str, EvalSet]) -> LeakContext:
    """A leak context of the holdout and final_audit cases only: what the proposer must never see."""
    return LeakContext(cases=tuple(eval_text(c, s.meta.partition.value) for s in sets.values()
                                   if s.meta.partition in HELD_OUT for c in s.cases))


def shown_text(line: str, change: str) -> str:
    """What the leak scan reads of one remembered edit: the line as the proposer reads it and, below it,
    the edit's added rows one a line again, as the check scanned them (`change` joins them with " | ",
    which would part a word hyphenated over a line break: `Lindq- | +  vist`)."""
    rows = [row[1:] for row in change.split(" | ") if row.startswith("+")]
    return line + ("\n" + "\n".join(rows) if rows else "")


def tried_before(ws: Workspace, skill: str, run_id: str, sets: Mapping[str, EvalSet]) -> list[str]:
    """The lines shown to the proposer: the most recent remembered edits of earlier runs, each
    scanned (`shown_text`, with the check's own `scan_leaks` and its decoded views) against the
    holdout and final_audit cases and left out if anything of them is found (the buffer never holds
    such text by construction; this is the second lock)."""
    ctx = held_out_context(sets)
    lines = []
    for r in recent(read_rejected(ws, skill), run_id):
        line = tried_line(r)
        if scan_leaks(shown_text(line, r.change), ctx):
            log.warning("rejected edit %s %s not shown to the proposer: it matches held-out text", r.run_id,
                        r.candidate_id)
            continue
        lines.append(line)
    return lines


def read_formats(ws: Workspace) -> list[FormatOutcome]:
    out: list[FormatOutcome] = []
    for rec in read_jsonl(formats_path(ws)):
        try:
            out.append(FormatOutcome.model_validate(rec))
        except ValidationError:
            log.warning("%s: skipped a line that is not a format outcome", formats_path(ws))
    return out


def record_format(ws: Workspace, outcome: FormatOutcome) -> None:
    append_jsonl(formats_path(ws), outcome.model_dump(mode="json", exclude={"ts"}))
