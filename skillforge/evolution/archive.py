"""decide's and publish's services: the files a run leaves (failures, suggestions, audits) and
the release of a chosen candidate through the release state machine, with its lineage."""

from __future__ import annotations

import re
from pathlib import Path

from skillforge import skillfile
from skillforge.config import Workspace
from skillforge.releases import ReleaseStateMachine
from skillforge.skilltree import Entry
from skillforge.state.evolve import Candidate, CandidateKind, EvolveState
from skillforge.state.release import LineageKind, ReleaseLevel, ReleaseStatus

_META_VERSION = re.compile(r"(\bversion\s*:\s*)(['\"]?)([^,'\"}\n]*)\2")


def write_text_atomic(path: Path, text: str) -> Path:
    """Write through a temp file and os.replace: a reader never sees half a report. Only a regular
    file is replaced, and a new one respects the umask (see skillforge.safewrite)."""
    from skillforge import safewrite

    return safewrite.write_text_atomic(path, text)


def _candidate_md(c: Candidate) -> list[str]:
    lines = [f"### {c.id} ({c.kind.value}, claimed L{c.claimed_level or '?'}, computed L{c.computed_level or '?'})",
             f"- verdict: **{c.verdict.value}**" + (f" (rejected by {c.rejected_by})" if c.rejected_by else ""),
             f"- rationale: {c.rationale}"]
    if c.changed_parts:
        lines.append(f"- changes: {', '.join(c.changed_parts)}")
    lines += [f"- leak: {x}" for x in c.leaks]
    for name, s in c.validation.items():
        score = f", score {s.score:.3f} vs {s.baseline_score:.3f}" if s.score is not None and s.baseline_score is not None else ""
        lines.append(f"- {name}: {s.verdict}, improvement {s.improvement}{score}"
                     + (f", LOSS {s.losses}" if s.losses else "") + (f" — {'; '.join(s.reasons)[:300]}" if s.reasons else ""))
    lines += [f"- note: {n}" for n in c.notes]
    if c.applied_diff:
        lines += ["", "```diff", c.applied_diff.rstrip(), "```"]
    return lines + [""]


def _header(state: EvolveState, title: str) -> list[str]:
    rc = state.root_cause
    lines = [f"# {title}: {state.skill} (run {state.run_id})", "",
             f"- mode: {state.mode.value}, round {state.round} of {state.max_rounds}",
             f"- failures: {', '.join(f.case.id + ' (' + f.kind.value + ')' for f in state.failures) or 'none'}"]
    if rc is not None:
        lines.append(f"- root cause: **{rc.category.value}**: {rc.summary} (evidence: {', '.join(rc.evidence)})")
    return lines + [""]


def write_failures(ws: Workspace, state: EvolveState) -> Path:
    """runs/failures/<run>.md: the root cause and why each candidate of the run failed."""
    lines = _header(state, "Failed candidates")
    for c in [*state.history, *state.candidates]:
        lines += _candidate_md(c)
    return write_text_atomic(ws.runs_dir / "failures" / f"{state.run_id}.md", "\n".join(lines))


def write_suggestion(ws: Workspace, state: EvolveState, cand: Candidate, why: str) -> Path:
    """runs/suggestions/<run>.md: an L3 (or fix_only) candidate, for a person to apply by hand."""
    lines = _header(state, "Suggestion") + [f"Why a suggestion: {why}", ""] + _candidate_md(cand)
    if cand.text:
        lines += ["## Proposed SKILL.md", "", "```markdown", cand.text.rstrip(), "```", ""]
    return write_text_atomic(ws.runs_dir / "suggestions" / f"{state.run_id}.md", "\n".join(lines))


def review_path(ws: Workspace, run_id: str) -> Path:
    return ws.runs_dir / "reviews" / f"{run_id}.md"


def write_review(ws: Workspace, state: EvolveState, cand: Candidate) -> Path:
    """runs/reviews/<run>.md: what a person reviews: the diff, the selection, holdout and
    final_audit scores, and how to answer."""
    lines = _header(state, "Review") + _candidate_md(cand) + [
        f"Approve: `skillforge review approve {state.run_id} --comment \"...\"`",
        f"Reject:  `skillforge review reject {state.run_id} --comment \"...\"`", ""]
    return write_text_atomic(review_path(ws, state.run_id), "\n".join(lines))


def write_audit(ws: Workspace, state: EvolveState) -> Path:
    """runs/audits/<run>.md: audit_only's findings; nothing else is changed."""
    lines = _header(state, "Audit") + ["## Failures", ""]
    lines += [f"- {f.case.id} ({f.kind.value}, skill loaded: {f.skill_loaded}): {f.case.query!r} — {f.reason}"
              for f in state.failures]
    return write_text_atomic(ws.runs_dir / "audits" / f"{state.run_id}.md", "\n".join(lines) + "\n")


def with_version(text: str, version: str) -> str:
    """The SKILL.md with `metadata.version` set to the release's version."""
    head, sep, rest = text.partition("\n---")
    if _META_VERSION.search(head):
        return _META_VERSION.sub(lambda m: f'{m.group(1)}"{version}"', head, count=1) + sep + rest
    skill = skillfile.parse(text)
    return skillfile.render(skill.model_copy(update={"metadata": {**skill.metadata, "version": version}}))


LINEAGE = {CandidateKind.FIX: LineageKind.FIX, CandidateKind.DERIVED: LineageKind.DERIVED,
           CandidateKind.CAPTURED: LineageKind.CAPTURED}


def publish_candidate(ws: Workspace, state: EvolveState, cand: Candidate, evaluation: dict[str, object]) -> str:
    """Release the candidate: begin -> write_commit -> append_evaluation -> commit_release. Idempotent
    per run: a release this run already published is returned; one it left PREPARING (killed) is
    abandoned first, so a resumed run ends with exactly one release."""
    assert cand.text is not None
    m = ReleaseStateMachine.open(ws)
    trigger = f"evolve:{state.run_id}"
    for rel in m.store.releases(cand.target):
        if rel.triggered_by == trigger and rel.status is ReleaseStatus.PUBLISHED:
            return rel.release_id
        if rel.triggered_by == trigger and rel.status is ReleaseStatus.PREPARING:
            m.abandon(rel.release_id)
    proposed = skillfile.parse(cand.text, "SKILL.md", cand.target).version
    level = ReleaseLevel.L1 if cand.level == 1 else ReleaseLevel.L2
    if cand.kind is CandidateKind.FIX:
        current = m.store.current(cand.target)
        assert current is not None and current.commit_hash is not None
        files: dict[str, bytes | Entry] = dict(m.repo.tree_at(current.commit_hash, current.skill_path))  # modes, links
        rel = m.begin_release(cand.target, proposed=proposed, level=level, triggered_by=trigger, kind=LineageKind.FIX)
    else:
        parents = [] if cand.kind is CandidateKind.CAPTURED else [
            r.release_id for r in [m.store.current(state.skill)] if r is not None]
        files = {}
        rel = m.begin_release(cand.target, proposed=proposed, level=level, triggered_by=trigger,
                              kind=LINEAGE[cand.kind], parents=parents, folder=ws.skills_dir / cand.target)
    try:
        files[skillfile.SKILL_FILENAME] = with_version(cand.text, rel.version).encode("utf-8")
        m.write_commit(rel.release_id, files)
        m.append_evaluation(rel.release_id, {"kind": "evolve", "run_id": state.run_id, "candidate": cand.id,
                                             **evaluation})
        return m.commit_release(rel.release_id).release_id
    except BaseException:
        m.abandon(rel.release_id)
        raise
