"""The evolve graph's last nodes: review (a person answers through interrupt()), publish (through
the release state machine) and suggest (L3 / fix_only). They read the selected candidate that
decide (or capture, for a new skill) chose."""

from __future__ import annotations

from langgraph.runtime import Runtime
from langgraph.types import StateSnapshot

from skillforge.context import EvolveContext
from skillforge.errors import AlreadyAnswered, CanaryOpen, PublishRefused, RunNotPaused, SkillForgeError, UnpublishedChanges
from skillforge.evolution import archive, capture as capturing, review as reviewing
from skillforge.journal import utc_now
from skillforge.library.canaries import Canaries
from skillforge.library.store import Store
from skillforge.nodes.answers import REVIEW_EXAMPLE, ReviewAnswer, ask
from skillforge.rules.resume_hint import as_resume_values
from skillforge.rules.review import AnswerVerdict, answer_verdict
from skillforge.state.evolve import CandidateVerdict, EvolveDecision, EvolveMode, EvolveState, EvolveStatus, \
    ReviewAction, ReviewDecision


def review(state: EvolveState, runtime: Runtime[EvolveContext]) -> dict[str, object]:
    """Reads the selected candidate. Pauses with interrupt() (diff, target, base, selection and
    holdout scores, final_audit, the review file) until a person answers from any process. Writes
    review (approve: on to publish); on a reject, status REJECTED after archiving the failure; on a
    rebase, the candidate re-applied on the live release (a new base, back to check: it is checked
    and validated again; no new proposer round), or NO_IMPROVEMENT when it can no longer be
    re-applied. Side effects come only after the interrupt, and none of them raises: LangGraph
    keeps the answer with the task, so a node that failed would be given the same answer again."""
    ctx = EvolveContext.of(runtime)
    chosen = next(c for c in state.candidates if c.id == state.selected)
    path = archive.review_path(ctx.ws, state.run_id)
    decision = ask({"kind": "review", "run_id": state.run_id, "skill": state.skill, "candidate": chosen.id,
                    "candidate_kind": chosen.kind.value, "target": chosen.target, "level": chosen.level,
                    "base": {"release_id": state.base_release_id, "version": state.base_version},
                    "diff": chosen.applied_diff, "rationale": chosen.rationale,
                    "scores": {k: v.model_dump() for k, v in chosen.validation.items()}, "report": str(path)},
                   ReviewAnswer, REVIEW_EXAMPLE)
    decision = ReviewDecision.model_validate(decision.model_dump())
    if not decision.answered_at or before(decision.answered_at, state.started_at):  # none given (the API,
        decision = decision.model_copy(update={"answered_at": utc_now()})  # Studio), or one before the run began
    if decision.action is ReviewAction.REJECT:
        rejected = state.model_copy(update={"candidates": [
            c.model_copy(update={"verdict": CandidateVerdict.FAILED_VALIDATION, "rejected_by": "review",
                                 "notes": [*c.notes, f"rejected in review: {decision.comment}"]})
            if c.id == chosen.id else c for c in state.candidates]})
        report = archive.write_failures(ctx.ws, rejected)
        return {"review": decision, "status": EvolveStatus.REJECTED, "candidates": rejected.candidates,
                "failure_report": str(report), "message": f"rejected in review: {decision.comment}"}
    if decision.action is ReviewAction.REBASE:
        try:
            fresh, live = reviewing.rebase_candidate(ctx.ws, state)
        except SkillForgeError as e:  # checked before it was recorded; the live release moved again since
            why = getattr(e, "what", str(e))  # without advice for a waiting run: this one is closed now
            return {"review": decision, "status": EvolveStatus.NO_IMPROVEMENT, "message": _for(
                runtime, f"not rebased, nothing published: {why}. The run is closed (NO_IMPROVEMENT); if the change "
                         f"is still wanted, start a new run (skillforge evolve {state.skill})", state.run_id)}
        fresh = fresh.model_copy(update={"notes": [*fresh.notes, f"rebase asked by {decision.reviewer or 'someone'} "
                                                                 f"at {decision.answered_at}: {decision.comment}"]})
        return {"review": None, "decision": EvolveDecision.REBASE, "base_release_id": live.release_id, "base_version": live.version,
                "baseline": None, "sets": None,  # check reads the new base's, and the sets as they are now
                "history": [*state.history, *state.candidates], "candidates": [fresh], "selected": None,
                "max_rounds": state.round, "message": f"{chosen.id} re-applied on {live.version}: checking it again"}
    return {"review": decision}


def after_review(state: EvolveState) -> str:
    if state.review is None:  # rebased: check the new candidate
        return "check" if state.decision is EvolveDecision.REBASE else "end"
    return "publish" if state.review.action is ReviewAction.APPROVE else "end"


def publish(state: EvolveState, runtime: Runtime[EvolveContext]) -> dict[str, object]:
    """Reads the selected candidate and the review. Releases it through the release state machine
    (idempotent per run), with lineage. Writes release_id and status PUBLISHED. When publishing is
    refused (the base is no longer live, a new skill's name is taken, the folder holds unpublished
    edits, the skill has an open canary), nothing is released: writes the reason and decision "review", and the run waits for a
    person (rebase, reject, or approve with --force)."""
    ctx = EvolveContext.of(runtime)
    chosen = next(c for c in state.candidates if c.id == state.selected)
    evaluation = {name: s.model_dump() for name, s in chosen.validation.items()}
    if state.review is not None:
        evaluation["review"] = state.review.model_dump()
    try:
        release_id, backups = archive.publish_candidate(ctx.ws, state, chosen, evaluation,
                                                        force=state.review is not None and state.review.force)
    except (PublishRefused, UnpublishedChanges, CanaryOpen) as e:  # a canary of the skill: a person decides
        archive.write_review(ctx.ws, state, chosen)
        return {"review": None, "decision": EvolveDecision.REVIEW,
                "message": _for(runtime, f"not published: {e}", state.run_id)}
    saved = f"; unpublished edits saved to {', '.join(map(str, backups))}" if backups else ""
    if state.registration:  # a new skill's starter sets: after its release, once (a resume writes what is missing)
        saved += capturing.registered(ctx.ws, state.registration)
    store = Store(ctx.ws.db_path)
    what = "published" if Canaries(store).get(release_id) is None else "started a canary of"
    version = store.release(release_id).version  # as `release publish` says it: name, version, then the id
    return {"release_id": release_id, "status": EvolveStatus.PUBLISHED,
            "message": f"{what} {chosen.target} {version} (release {release_id}){saved}"}


def _for(runtime: Runtime[EvolveContext], message: str, run_id: str) -> str:
    """`message` as the run's user can act on it: in a run served by a LangGraph server (Studio:
    its thread is in the server's checkpointer, which `skillforge review` cannot reach), with the
    resume values in place of the CLI's review commands."""
    return message if getattr(runtime, "server_info", None) is None else as_resume_values(message, run_id)


def after_publish(state: EvolveState) -> str:
    return "end" if state.status is EvolveStatus.PUBLISHED else "review"


def suggest(state: EvolveState, runtime: Runtime[EvolveContext]) -> dict[str, object]:
    """Reads the selected candidate. Writes runs/suggestions/<run>.md only; status SUGGESTED."""
    ctx = EvolveContext.of(runtime)
    chosen = next(c for c in state.candidates if c.id == state.selected)
    why = ("fix_only mode: a " + chosen.kind.value + " candidate is a suggestion"
           if state.mode is EvolveMode.FIX_ONLY and chosen.kind.value != "FIX" else f"level L{chosen.level}")
    path = archive.write_suggestion(ctx.ws, state, chosen, why)
    return {"suggestion_path": str(path), "status": EvolveStatus.SUGGESTED, "message": f"suggestion written to {path}"}



_PAST = {ReviewAction.APPROVE: "approved", ReviewAction.REJECT: "rejected", ReviewAction.REBASE: "rebased"}


def _answer(snapshot: StateSnapshot) -> ReviewDecision | None:
    given = snapshot.values.get("review")
    return None if given is None else ReviewDecision.model_validate(
        given if isinstance(given, dict) else given.model_dump())


def before(when: str, start: str | None) -> bool:
    """Whether the UTC time `when` is earlier than the run's start `start` (ISO-8601 times)."""
    from datetime import datetime

    try:
        return bool(start) and datetime.fromisoformat(when.replace("Z", "+00:00")) < \
            datetime.fromisoformat(str(start).replace("Z", "+00:00"))
    except ValueError:
        return False


def _who(run_id: object, given: ReviewDecision) -> str:
    said = f' ("{given.comment}")' if given.comment else ""
    return f"run {run_id} already answered: {_PAST[given.action]} by {given.reviewer or 'someone'}" + \
        (f" at {given.answered_at}" if given.answered_at else "") + said


def answer_refused(snapshot: StateSnapshot | None, asked: ReviewAction) -> None:
    """Before a review answer is given to a run (`snapshot`: its state; None, no checkpointer: not
    checked): RunNotPaused when it waits for no review and has no answer, AlreadyAnswered when it
    has another one (rules/review.answer_verdict). A run waiting at any pause, or that has this very
    answer already, is left to the graph (the budget pause refuses a review answer itself)."""
    if snapshot is None or not snapshot.values or any(t.interrupts for t in snapshot.tasks):
        return
    given = _answer(snapshot)
    verdict = answer_verdict(False, given.action if given else None, asked)
    run_id, status = snapshot.values.get("run_id"), snapshot.values.get("status")
    if verdict is AnswerVerdict.NOT_WAITING:
        raise RunNotPaused(f"run {run_id} is not waiting for a review (status {getattr(status, 'value', status)}): "
                           f"your {asked.value} was not taken")
    if verdict is AnswerVerdict.CONFLICT:
        assert given is not None
        raise AlreadyAnswered(f"{_who(run_id, given)}: your {asked.value} was not taken")


def nothing_waits(snapshot: StateSnapshot | None) -> None:
    """Before a resume value that is no review answer (`"approve"`, `42`, `{"action": 1}`) is given to
    a run: RunNotPaused when the run waits at no pause (it ended), instead of the value being dropped
    without a word. A run that waits is left to its pause, which refuses what it cannot read."""
    if snapshot is None or not snapshot.values or any(t.interrupts for t in snapshot.tasks):
        return
    run_id, status = snapshot.values.get("run_id"), snapshot.values.get("status")
    raise RunNotPaused(f"run {run_id} waits for no answer (status {getattr(status, 'value', status)}): "
                       "the resume value was not taken")


def answer_lost(snapshot: StateSnapshot | None, asked: ReviewAction) -> None:
    """After a review answer ran: AlreadyAnswered when the run took another answer (two answers at
    once from two processes: the other one won)."""
    given = None if snapshot is None or not snapshot.values else _answer(snapshot)
    if given is not None and given.action is not asked:
        raise AlreadyAnswered(f"{_who(snapshot.values.get('run_id'), given)} while yours ran: "  # type: ignore[union-attr]
                              f"your {asked.value} was not taken")
