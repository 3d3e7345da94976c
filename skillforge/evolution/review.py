"""review's services: what a person sees of a pending candidate, and its rebase.

- **The view** puts the candidate beside both releases that matter: the run's base (what it was
  made and validated on: its diff) and the release live now. When they differ the view says so
  and diffs the candidate against the live release too, which shows exactly what approving would
  undo. A new skill (DERIVED / CAPTURED) is shown by its name and its whole file.
- **A rebase** re-applies a FIX candidate on the live release by a three-way merge (`git
  merge-file`: base -> candidate, base -> live). Lines both changed are a conflict and refuse it;
  the candidate's own `metadata.version` is set to the base's first, since publishing sets the
  version anyway. The result is a new, unchecked candidate: the graph checks and validates it
  again against the new base before anyone may approve it.
"""

from __future__ import annotations

import difflib
import tempfile
from pathlib import Path

import git

from skillforge.config import Workspace
from skillforge.errors import GitError, RebaseConflict, SkillForgeError
from skillforge.evolution.archive import retired_refusal, serves_base, shown
from skillforge.skill.version import META_VERSION as _META_VERSION, with_version
from skillforge.evolution.patch import PatchError, check_skill_text
from skillforge.library.gitrepo import SkillsRepo
from skillforge.rules.review import BaseVerdict, base_verdict
from skillforge.skill.file import SKILL_FILENAME, parse
from skillforge.state.evolve import Candidate, CandidateKind, CandidateVerdict, EvolveState
from skillforge.state.release import Release
from skillforge.library.store import Store


def selected(state: EvolveState) -> Candidate:
    """The candidate the run chose (the one a review is about)."""
    found = next((c for c in state.candidates if c.id == state.selected), None)
    if found is None:
        raise SkillForgeError(f"run {state.run_id} has no selected candidate")
    return found


def release_text(repo: SkillsRepo, rel: Release) -> str:
    assert rel.commit_hash is not None
    return repo.read(rel.commit_hash, f"{rel.skill_path}/{SKILL_FILENAME}").decode("utf-8")


def unified(old: str, new: str, old_label: str, new_label: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), old_label, new_label))


def _brief(rel: Release | None) -> dict[str, str] | None:
    return {"release_id": rel.release_id, "version": rel.version} if rel is not None else None


def review_view(ws: Workspace, state: EvolveState, report: str = "") -> dict[str, object]:
    """Everything `review show` prints, as data: the candidate, its scores, the base and the live
    release, whether the base moved, whether the skill is RETIRED (no live release: the run can
    only be rejected, or the skill brought back), the diff against each, and a new skill's whole file."""
    cand = selected(state)
    store = Store(ws.db_path)
    live = store.current(state.skill)
    base = store.release(state.base_release_id) if state.base_release_id else None
    moved = cand.kind is CandidateKind.FIX and base_verdict(
        state.base_release_id, live.release_id if live else None,
        same_bytes=serves_base(base, live)) is not BaseVerdict.CURRENT
    live_diff = ""
    if moved and live is not None and cand.text is not None:
        live_diff = unified(release_text(SkillsRepo(ws.skills_dir), live), cand.text,
                            f"live/{SKILL_FILENAME} ({live.version})", f"candidate/{SKILL_FILENAME}")
    return {"run_id": state.run_id, "skill": state.skill, "candidate": cand.id, "kind": cand.kind.value,
            "target": cand.target, "level": cand.level, "rationale": cand.rationale,
            "scores": {k: v.model_dump() for k, v in cand.validation.items()}, "notes": list(cand.notes),
            "base": _brief(base), "live": _brief(live), "base_moved": moved,
            "retired": store.retirement(state.skill) is not None, "diff": cand.applied_diff,
            "live_diff": live_diff, "new_file": cand.text if cand.kind is not CandidateKind.FIX else None,
            "report": report}


def merge3(base: str, ours: str, theirs: str) -> str | None:
    """`git merge-file -p ours base theirs`: the merged text, or None when lines conflict."""
    with tempfile.TemporaryDirectory(prefix="sf-rebase-") as tmp:
        paths = []
        for name, text in (("candidate", ours), ("base", base), ("live", theirs)):
            path = Path(tmp) / name
            path.write_text(text, encoding="utf-8")
            paths.append(str(path))
        status, out, err = git.Git().execute(["git", "merge-file", "-p", *paths], with_extended_output=True,
                                             with_exceptions=False, strip_newline_in_stdout=False)
    if status < 0 or (status > 0 and not out):
        raise GitError(f"git merge-file failed ({status}): {err.strip()[:300]}")
    return out if status == 0 else None


def _same_version(text: str, like: str) -> str:
    """`text` with the metadata.version of `like`, when both state one (else unchanged)."""
    head = like.partition("\n---")[0]
    found = _META_VERSION.search(head)
    if found is None or _META_VERSION.search(text.partition("\n---")[0]) is None:
        return text
    return with_version(text, found.group(3))


def refusal(cls: type[SkillForgeError], what: str, then: str) -> SkillForgeError:
    """`cls`(what + then), with `what` alone kept as its `.what`: the review node, which closes the
    run when a rebase answer cannot be carried out, says why without `then` (advice for a run that
    still waits, such as rejecting it)."""
    e = cls(what + then)
    e.what = what  # type: ignore[attr-defined]
    return e


def rebase_candidate(ws: Workspace, state: EvolveState) -> tuple[Candidate, Release]:
    """The selected FIX candidate re-applied on the skill's live release: a new PENDING candidate
    (no level, checks or scores yet) and that release. SkillForgeError when there is nothing to
    rebase (the base is live, or the candidate is a new skill), RebaseConflict when both changed
    the same lines or the merge is no longer a skill."""
    cand = selected(state)
    store = Store(ws.db_path)
    live = store.current(state.skill)
    if cand.kind is not CandidateKind.FIX:
        raise SkillForgeError(f"nothing to rebase: {cand.id} is a new skill ({cand.target}), it replaces no release")
    if live is None and store.retirement(state.skill) is not None:
        raise SkillForgeError(retired_refusal(state))
    if live is None:
        raise SkillForgeError(f"nothing to rebase onto: '{state.skill}' has no live release")
    if state.base_release_id == live.release_id:
        raise SkillForgeError(f"nothing to rebase: run {state.run_id} was made on {shown(live)}, which is still live")
    if not state.base_release_id or cand.text is None:
        raise SkillForgeError(f"run {state.run_id} did not record the release it started from, so its candidate "
                              f"cannot be re-applied: reject it and start a new run (skillforge evolve {state.skill})")
    repo = SkillsRepo(ws.skills_dir)
    base_text, live_text = release_text(repo, store.release(state.base_release_id)), release_text(repo, live)
    merged = merge3(base_text, _same_version(cand.text, base_text), live_text)
    if merged is None:
        raise refusal(RebaseConflict, f"{cand.id} and {shown(live)} change the same lines of {state.skill}/"
                      f"{SKILL_FILENAME}: it cannot be re-applied safely", f". Reject it (skillforge review reject "
                      f"{state.run_id}) and start a new run on {live.version} (skillforge evolve {state.skill})")
    if merged == live_text:
        raise refusal(SkillForgeError, f"nothing to rebase: {shown(live)} already holds the change of {cand.id}",
                      f"; reject the run (skillforge review reject {state.run_id})")
    try:
        check_skill_text(merged, parse(live_text, SKILL_FILENAME, state.skill))
    except PatchError as e:
        raise RebaseConflict(f"{cand.id} re-applied on {shown(live)} is not a valid skill: {e}") from None
    n = sum(1 for c in [*state.history, *state.candidates] if c.id.startswith(f"{cand.id}-rebase")) + 1
    fresh = Candidate(id=f"{cand.id}-rebase{n}", kind=cand.kind, target=cand.target, patch=cand.patch,
                      patch_format=cand.patch_format, rationale=cand.rationale, claimed_level=cand.claimed_level,
                      text=merged, applied_diff=unified(live_text, merged, "a/SKILL.md", "b/SKILL.md"),
                      verdict=CandidateVerdict.PENDING,
                      notes=[f"{cand.id} re-applied on {shown(live)} (it was made on "
                             f"{state.base_version or state.base_release_id[:8]})"])
    return fresh, live
