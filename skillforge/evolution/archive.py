"""decide's and publish's services: the files a run leaves (failures, suggestions, audits) and
the release of a chosen candidate through the release state machine, with its lineage."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from skillforge.skill import file as skillfile
from skillforge.config import Workspace
from skillforge.errors import BaseMoved, NameTaken, RunIdTaken
from skillforge.evolution import memory
from skillforge.library.canaries import Canaries
from skillforge.library.orphans import EVOLVE_TRIGGER
from skillforge.library.releases import LEFT_PREPARING, ReleaseStateMachine
from skillforge.llm.config import evolve_canary
from skillforge.rules.canary import DEFAULT_MAX_AGE_HOURS, DEFAULT_MIN_SESSIONS
from skillforge.state.canary import CanaryPlan
from skillforge.rules.names import NameVerdict, name_refusal, new_skill_name
from skillforge.rules.redact import redact
from skillforge.rules.review import BaseVerdict, base_verdict
from skillforge.rules.versions import next_version
from skillforge.safewrite import write_text_atomic  # only a regular file is replaced; a new one gets the umask
from skillforge.skill.tree import Entry
from skillforge.skill.version import with_version
from skillforge.state.evolve import Candidate, CandidateKind, EvolveState
from skillforge.state.release import LineageKind, Release, ReleaseLevel, ReleaseStatus
from skillforge.library.store import Store

log = logging.getLogger(__name__)


def masked(c: Candidate) -> Candidate:
    """`c` with its rationale, notes and diff redacted (rules/redact.redact, every shape session
    redaction takes out), as its leak lines already are: a level note quoting an example line, or the
    diff, repeated a secret the leak line masked (QA 45 F7). For what shows a failed candidate."""
    shown = [redact(x)[0] for x in (c.rationale, *c.notes, c.applied_diff or "")]
    return c.model_copy(update={"rationale": shown[0], "notes": shown[1:-1], "applied_diff": shown[-1] or c.applied_diff})


def _candidate_md(c: Candidate, *, mask: bool = False) -> list[str]:
    """A candidate in markdown; `mask` (the failure report): `masked`."""
    if mask:
        c = masked(c)
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
    lines += [f"- proposer: {n}" for n in state.proposer_notes]
    return lines + [""]


def write_failures(ws: Workspace, state: EvolveState) -> Path:
    """runs/failures/<run>.md: the root cause and why each candidate of the run failed. The failed
    ones are also remembered in the skill's rejected-edit buffer (runs/rejected/<skill>.jsonl, once
    each), which later runs show to the proposer and refuse again (`rules/memory.py`)."""
    memory.remember(ws, state.skill, state.run_id, [*state.history, *state.candidates])
    lines = _header(state, "Failed candidates")
    for c in [*state.history, *state.candidates]:
        lines += _candidate_md(c, mask=True)
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


LINEAGE = {CandidateKind.FIX: LineageKind.FIX, CandidateKind.DERIVED: LineageKind.DERIVED,
           CandidateKind.CAPTURED: LineageKind.CAPTURED}


def shown(rel: Release | None) -> str:
    """A release as messages name it: version and id prefix."""
    return f"{rel.version} (release {rel.release_id[:8]})" if rel is not None else "no release"


def retired_refusal(state: EvolveState) -> str:
    """Why a FIX candidate of a RETIRED skill can be neither approved nor re-applied, and the two
    ways on: reject the run, or bring the skill back with `release revert` first."""
    return (f"'{state.skill}' is RETIRED: it has no live release, so this run's candidate can be neither approved "
            f"nor re-applied on one. Reject the run (skillforge review reject {state.run_id}), or bring the skill "
            f"back first (skillforge release revert {state.skill})")


def serves_base(base: Release | None, live: Release | None) -> bool:
    """Whether `live` serves `base`'s very files: the same commit and folder (a revert to the base)."""
    return (base is not None and live is not None and base.commit_hash is not None
            and (base.commit_hash, base.skill_path) == (live.commit_hash, live.skill_path))


def check_base(store: Store, state: EvolveState, cand: Candidate,
               next_step: Callable[[], str | None] | None = None) -> None:
    """BaseMoved unless the release a FIX candidate was made and validated on is still the live
    one (a new skill replaces nothing: its parent may have moved on). `next_step`, asked only when
    the base moved: what to do instead of the rebase the refusal advises (None: the rebase)."""
    if cand.kind is not CandidateKind.FIX:
        return
    live = store.current(state.skill)
    base = store.release(state.base_release_id) if state.base_release_id else None
    verdict = base_verdict(state.base_release_id, live.release_id if live is not None else None,
                           same_bytes=serves_base(base, live))
    if verdict is BaseVerdict.CURRENT:
        return
    if verdict is BaseVerdict.GONE and store.retirement(state.skill) is not None:
        raise BaseMoved(retired_refusal(state))
    what = {BaseVerdict.MOVED: f"the live release of '{state.skill}' is {shown(live)}, not this run's base "
                               f"{shown(base)}: approving would undo what {live.version if live else ''} changed",
            BaseVerdict.UNKNOWN: f"run {state.run_id} did not record the release it started from, so it cannot "
                                 f"be told whether {shown(live)} is its base",
            BaseVerdict.GONE: f"'{state.skill}' has no live release any more"}[verdict]
    if verdict is BaseVerdict.MOVED and next_step is not None and (instead := next_step()) is not None:
        raise BaseMoved(f"{what}; {instead}")
    if verdict is BaseVerdict.MOVED:
        raise BaseMoved(f"{what}. Re-validate the candidate on {shown(live)}: skillforge review rebase {state.run_id} "
                        f"(or close it: skillforge review reject {state.run_id})")
    raise BaseMoved(f"{what}. Close it (skillforge review reject {state.run_id}) and start a new run "
                    f"(skillforge evolve {state.skill})")


def check_name(ws: Workspace, store: Store, state: EvolveState, cand: Candidate, *, folders: bool = True) -> None:
    """NameTaken when a DERIVED or CAPTURED candidate's name is a skill with a live release or a
    retired one, or (with `folders`) a folder under skills/ that no release of this run wrote."""
    if cand.kind is CandidateKind.FIX:
        return
    why = name_refusal(name_verdict(ws, store, state, cand, folders=folders), cand.kind, cand.target)
    if why:
        raise NameTaken(why)


def name_verdict(ws: Workspace, store: Store, state: EvolveState, cand: Candidate, *,
                 folders: bool = True) -> NameVerdict:
    """The names rule on what the store and skills/ hold now. A folder that only this run's own
    (killed, abandoned) releases wrote is not taken: the run publishes into it again. A retired
    skill's name is taken: a release under it would bring the retired skill back with other bytes."""
    registered = {r.skill_name for r in store.current_releases()} | set(store.retired_names())
    own = [r for r in store.releases(cand.target) if r.triggered_by == f"{EVOLVE_TRIGGER}{state.run_id}"]
    present = {p.name for p in ws.skills_dir.iterdir()} if folders and ws.skills_dir.is_dir() else set()
    if own and len(own) == len(store.releases(cand.target)):
        present.discard(cand.target)
    return new_skill_name(cand.kind, cand.target, "" if state.need else state.skill, registered, present)


def publish_candidate(ws: Workspace, state: EvolveState, cand: Candidate, evaluation: dict[str, object], *,
                      force: bool = False) -> tuple[str, list[Path]]:
    """Release the candidate through `ReleaseStateMachine.publish` (begin -> write_commit ->
    append_evaluation -> commit_release). Idempotent per run: a release this run already published
    is returned; one it left PREPARING (killed) is abandoned first, so a resumed run ends with
    exactly one release. Refused, with no release row, when the run's base is no longer live
    (BaseMoved), a new skill's name is taken (NameTaken), the candidate changes nothing
    (NoChanges) or the folder holds unpublished edits (UnpublishedChanges, unless `force`); the
    base and the name are checked again after each step up to the commit, while this release holds
    the skill's one PREPARING slot, so nothing can go live in between. An L1 fix goes to a canary
    first when the workspace says so (`[evolve] canary = "10%"`, llm/config.evolve_canary): the
    release is then CANARY, and `canary tick` promotes or rolls it back."""
    assert cand.text is not None
    m = ReleaseStateMachine.open(ws)
    trigger = f"{EVOLVE_TRIGGER}{state.run_id}"
    for rel in m.store.releases(cand.target):
        if rel.triggered_by == trigger and rel.status is ReleaseStatus.PUBLISHED:
            _same_candidate(m, rel, cand, state.run_id)
            return rel.release_id, []
        if rel.triggered_by == trigger and Canaries(m.store).get(rel.release_id) is not None:
            return rel.release_id, []  # this run's canary: the canary rules decide what becomes of it
        if rel.triggered_by == trigger and rel.status is ReleaseStatus.PREPARING:
            if not m.owner.alive(rel.owner):  # killed inside its publish: said as every other command says it
                log.warning(LEFT_PREPARING, cand.target, rel.release_id)
            m.abandon(rel.release_id)
    check_base(m.store, state, cand)
    check_name(ws, m.store, state, cand)
    proposed = skillfile.parse(cand.text, "SKILL.md", cand.target).version
    taken = [r.version for r in m.store.releases(cand.target) if r.status is ReleaseStatus.PUBLISHED]
    version = next_version(taken, proposed)
    begin: dict[str, object] = {"kind": LINEAGE[cand.kind]}
    if cand.kind is CandidateKind.FIX:
        current = m.store.current(cand.target)
        assert current is not None and current.commit_hash is not None
        files: dict[str, bytes | Entry] = dict(m.repo.tree_at(current.commit_hash, current.skill_path))  # modes, links
    else:
        parent = state.base_release_id or next((r.release_id for r in [m.store.current(state.skill)] if r), None)
        files = {}
        begin.update(parents=[] if cand.kind is CandidateKind.CAPTURED or parent is None else [parent],
                     folder=ws.skills_dir / cand.target)
    files[skillfile.SKILL_FILENAME] = with_version(cand.text, version).encode("utf-8")

    def moved() -> bool:
        """Asked by the machine after each step up to the commit: refuse if the base moved or the name was taken."""
        check_base(m.store, state, cand)
        check_name(ws, m.store, state, cand, folders=False)
        return False
    share = evolve_canary(ws) if cand.level == 1 and state.review is None and cand.kind is CandidateKind.FIX else None
    canary = None if share is None else CanaryPlan(share=share, min_sessions=DEFAULT_MIN_SESSIONS,
                                                   max_age_hours=DEFAULT_MAX_AGE_HOURS)
    rel = m.publish(cand.target, files, force=force, interrupted=moved, version=version, canary=canary,
                    level=ReleaseLevel.L1 if cand.level == 1 else ReleaseLevel.L2, triggered_by=trigger,
                    evaluation={"kind": "evolve", "run_id": state.run_id, "candidate": cand.id, **evaluation}, **begin)
    return rel.release_id, list(m.backups)


def _same_candidate(m: ReleaseStateMachine, rel: Release, cand: Candidate, run_id: str) -> None:
    """RunIdTaken unless `rel`, the release published under this run id, holds `cand`'s SKILL.md
    (its version line aside): a resumed run gets its own release back; another run that was given
    the same id must not be told its candidate was published."""
    assert cand.text is not None and rel.commit_hash is not None
    stored = m.repo.read(rel.commit_hash, f"{rel.skill_path}/{skillfile.SKILL_FILENAME}").decode("utf-8", "replace")
    if with_version(stored, "0.0.0") != with_version(cand.text, "0.0.0"):
        raise RunIdTaken(f"run id '{run_id}' already published {rel.skill_name} {rel.version} ({rel.release_id[:8]}) "
                         f"with another SKILL.md: this candidate was not published; a new run needs an id of its own")


def abandon_own(ws: Workspace, run_id: str) -> list[str]:
    """Abandon the releases run `run_id` left PREPARING whose process is gone (only its own, and
    never one a live process still works on), putting the live bytes back in their folders; the
    machine prints the LEFT_PREPARING warning for each. The versions abandoned."""
    m = ReleaseStateMachine.open(ws)
    try:
        trigger = f"{EVOLVE_TRIGGER}{run_id}"
        skills = sorted({rel.skill_name for rel, _ in m.store.preparing() if rel.triggered_by == trigger})
        return [rel.version for skill in skills for rel in m.recover(skill, trigger)]
    finally:
        m.store.close()
