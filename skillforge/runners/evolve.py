"""Driving evolve runs from the CLI (and batch): start, resume, answer a review, cancel.

Every run is a thread of the checkpointer `checkpointer_for(ws, "graphs.sqlite")` decides (the
SqliteSaver at `<workspace>/checkpoints/graphs.sqlite`, or the PostgresSaver when
SKILLFORGE_CHECKPOINT_URL is set), with durability `sync`; its thread id is its run id. A paused run
(a review, or a hard budget cap) and a killed one resume from any process.

Whatever drives a run holds its skill's lock (`evolution.locks`) for as long as it drives it, so two
processes never drive runs of one skill at once; a skill with an open run (running, paused at its
budget, waiting for review) gets no second run. A review has one answer: it is recorded in
`runs/reviews/<run>.answer.json` under that lock, before the run is resumed, and deleted once the
review node has taken it (LangGraph records a resume value only when the node completes, so the
file is what survives a kill in between).
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from langgraph.graph import END
from langgraph.types import Command

from skillforge.runners.approval import check_publishable
from skillforge.runners.interrupt import stopping
from skillforge.safewrite import write_text_atomic
from skillforge.runners.reader import GRAPHS_DB, RunReader, caps_in_force, interrupt_kind
from skillforge.runners.watcher import CaseCounter, CaseWatch
from skillforge.config import Workspace
from skillforge.context import EvolveContext
from skillforge.errors import (AlreadyAnswered, LLMTimeout, LLMUnavailable, RunNotPaused, RunOpen,
                               SkillForgeError, UnknownRun)
from skillforge.evolution.archive import abandon_own
from skillforge.evolution.locks import ANSWER_WAIT_S, driving
from skillforge.evolution.review import rebase_candidate
from skillforge.journal import utc_now
from skillforge.llm.client import LLM, build_llm
from skillforge.llm.config import evolve_settings
from skillforge.llm.ledger import RunBudget
from skillforge.rules.outage import stopped_open
from skillforge.rules.review import AnswerVerdict, answer_verdict
from skillforge.rules.runs import REVIEW, is_open, open_runs, run_status
from skillforge.state.evolve import MAX_ROUNDS, EvolveMode, EvolveState, EvolveStatus, \
    ReviewAction, ReviewDecision
from skillforge.state.llm import BudgetCaps, BudgetLedger

log = logging.getLogger(__name__)
__all__ = ["GRAPHS_DB", "RunNotPaused", "Runner", "UnknownRun", "new_run_id"]
_PAST = {ReviewAction.APPROVE: "approved", ReviewAction.REJECT: "rejected", ReviewAction.REBASE: "rebased"}


def new_run_id(skill: str, kind: str = "evolve") -> str:
    return f"{kind}-{skill}-{datetime.now(UTC):%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"


class Runner(RunReader):
    """One workspace's evolve graph with its checkpointer; `llm_factory` builds each run's models."""

    def __init__(self, ws: Workspace, llm_factory: Callable[[RunBudget], LLM] | None = None,
                 embedder: object | None = None) -> None:
        from skillforge.runners.checkpoint import checkpointer_for
        from skillforge.graphs.evolve import build_evolve_graph

        super().__init__(ws, checkpointer_for(ws, GRAPHS_DB))
        self.graph = build_evolve_graph(checkpointer=self.saver)
        self.llm_factory = llm_factory or (lambda ledger: build_llm(ws, ledger=ledger))
        self.embedder = embedder
        self.on_case: CaseWatch | None = None
        """Given each finished case of the evaluations a run's nodes run (the CLI's progress)."""

    def context(self, budget: RunBudget) -> EvolveContext:
        return EvolveContext(ws=self.ws, llm=self.llm_factory(budget), embedder=self.embedder)  # type: ignore[arg-type]

    def state(self, run_id: str) -> EvolveState:
        return self.read(run_id)[0]

    def _drive(self, run_id: str, payload: object, ledger: BudgetLedger,
               on_update: Callable[[str], None] | None = None) -> dict[str, object]:
        """Run the graph until it ends or pauses. `on_update` gets the name of each top-level node
        that finishes; `self.on_case`, when set, gets each case of the evaluations the nodes run
        (validation, holdout, final audit), streamed from those subgraphs."""
        ctx = self.context(RunBudget(self.ledger, run_id, ledger.caps))
        cases = CaseCounter(self.on_case) if self.on_case is not None else None
        self.stop_path(run_id).unlink(missing_ok=True)  # driven again: an earlier stop's cause is past
        try:
            with stopping(ctx.llm.stop, f"skillforge evolve --resume {run_id}"):  # Ctrl-C: threads send no more
                for ns, mode, data in self.graph.stream(payload, self.config(run_id), context=ctx,
                                                        stream_mode=["updates", "values"] if cases else ["updates"],
                                                        subgraphs=True, durability="sync"):
                    if ns and cases is not None:
                        cases.event(ns, mode, data)
                    elif not ns and mode == "updates" and on_update is not None:
                        for node in data:
                            on_update(node)
        except (LLMUnavailable, LLMTimeout) as e:  # an endpoint gave no answer: a stop, not a result
            log.warning("run %s stopped: %s", run_id, e)
            try:
                write_text_atomic(self.stop_path(run_id), stopped_open(run_id, e))  # `runs show` says it too
            except SkillForgeError as why:  # a full disk: the stop is still the news
                log.warning("run %s: its stop was not recorded for `runs show`: %s", run_id, why)
                return {**self.summary(run_id), "message": stopped_open(run_id, e)}
            return self.summary(run_id)
        return self.summary(run_id)

    def start(self, skill: str, *, mode: EvolveMode = EvolveMode.AUTONOMOUS, max_rounds: int = 2,
              caps: BudgetCaps | None = None, run_id: str | None = None,
              on_update: Callable[[str], None] | None = None) -> dict[str, object]:
        """A new run of `skill`. RunBusy while another process drives one of its runs; RunOpen while
        one of its runs is open (say which, and how to close it), except a run that stopped before its
        first round (a named error such as MissingCases, or a kill) with the same mode and rounds:
        `evolve SKILL` again continues that run (what its error said to do) when no id is given."""
        from skillforge.library.registry import SkillRegistry

        SkillRegistry.load(self.ws).get(skill)  # UnknownSkill with the closest names, before anything runs
        evolve_settings(self.ws)  # a bad setting is a ConfigError now, not after paid requests (QA 42 F1)
        if not 1 <= max_rounds <= MAX_ROUNDS:
            raise SkillForgeError(f"--max-rounds must be 1 to {MAX_ROUNDS} (reflection rounds are capped), got {max_rounds}")
        if run_id is None and (stalled := self._stalled(skill, mode, max_rounds)) is not None:
            # a run that another process started a moment ago looks stalled too: take the lock
            # before saying anything, and look again under it
            with driving(self.ws, skill, stalled):  # RunBusy: it is being driven right now
                if self._stalled(skill, mode, max_rounds) == stalled:
                    log.warning("continuing run %s of %s: it stopped before its first round", stalled, skill)
                    return self._resume_held(stalled, caps, on_update)
            return self.start(skill, mode=mode, max_rounds=max_rounds, caps=caps, on_update=on_update)
        run_id = run_id or new_run_id(skill)
        with driving(self.ws, skill, run_id):
            self._refuse_open(skill, run_id)
            ledger = BudgetLedger(caps=caps or BudgetCaps())
            self.ledger.set_caps(run_id, ledger.caps)
            state = EvolveState(run_id=run_id, skill=skill, mode=mode, max_rounds=max_rounds, budget=ledger,
                                started_at=utc_now())
            return self._drive(run_id, state, ledger, on_update)

    def capture(self, need: str, *, name: str | None = None, queries: Sequence[str] = (),
                caps: BudgetCaps | None = None, run_id: str | None = None,
                on_update: Callable[[str], None] | None = None) -> dict[str, object]:
        """A capture run (`skills new`): draft a new skill for `need`, check it, and wait for review.
        BadArgument or NameTaken before anything runs, as evolution.capture.capture_name says."""
        from skillforge.evolution.capture import capture_name, user_queries

        need, skill = capture_name(self.ws, need, name)
        evolve_settings(self.ws)  # proposer.format and evolve.* apply to a capture run too (QA 43 M6)
        run_id = run_id or new_run_id(skill, "new")
        with driving(self.ws, skill, run_id):
            self._refuse_open(skill, run_id)
            ledger = BudgetLedger(caps=caps or BudgetCaps())
            self.ledger.set_caps(run_id, ledger.caps)
            state = EvolveState(run_id=run_id, skill=skill, need=need, need_queries=user_queries(queries), max_rounds=1,
                                budget=ledger, started_at=utc_now())
            return self._drive(run_id, state, ledger, on_update)

    def open_run(self, skill: str) -> str | None:
        """The id of `skill`'s newest open run (running, killed, paused at its budget, waiting for
        review), or None."""
        found = open_runs([(str(r["run_id"]), str(r["skill"]), EvolveStatus(r["status"])) for r in self.rows()], skill)
        return found[-1] if found else None

    def _stalled(self, skill: str, mode: EvolveMode, max_rounds: int) -> str | None:
        """`skill`'s open run when it is RUNNING before its first round with this mode and these rounds."""
        found = self.open_run(skill)
        if found is None:
            return None
        state, pending = self.read(found)
        same = state.mode is mode and state.max_rounds == max_rounds and not state.need
        return found if same and pending is None and state.round == 0 and state.status is EvolveStatus.RUNNING else None

    def _refuse_open(self, skill: str, run_id: str) -> None:
        rows = [(str(r["run_id"]), str(r["skill"]), EvolveStatus(r["status"])) for r in self.rows()]
        found = open_runs(rows, skill, except_run=run_id)
        if not found:
            return
        status = next(s for rid, _, s in rows if rid == found[-1])
        how = (f"answer it (skillforge review approve|reject {found[-1]})" if status is EvolveStatus.PENDING_REVIEW
               else f"finish it (skillforge evolve --resume {found[-1]})")
        raise RunOpen(f"'{skill}' already has an open run {found[-1]} ({status.value}): {how}, or close it "
                      f"(skillforge runs cancel {found[-1]}); one run per skill at a time")

    def _refuse_retired(self, state: EvolveState) -> None:
        """SkillRetired before a resume spends anything on a skill retired while its run was paused or
        killed (an evolve run's; a capture run drafts a new skill): whatever it found could be
        neither published nor approved."""
        from skillforge.errors import SkillRetired
        from skillforge.library.store import Store

        store = Store(self.ws.db_path)
        if state.need or store.current(state.skill) is not None or store.retirement(state.skill) is None:
            return
        raise SkillRetired(f"'{state.skill}' was retired while run {state.run_id} was paused: resuming would spend "
                           f"requests on a skill with no live release, whose candidate could be neither published "
                           f"nor approved. Bring it back first (skillforge release revert {state.skill}), or close "
                           f"the run (skillforge runs cancel {state.run_id})")

    def resume(self, run_id: str, *, caps: BudgetCaps | None = None,
               on_update: Callable[[str], None] | None = None) -> dict[str, object]:
        """Continue a killed run, a run paused at its budget (with `caps`, or the caps in force), or
        a review answered by a process that died before the run took the answer. New `caps` are
        recorded in the request ledger before anything runs: they are the run's caps from then on
        (what `runs show` says, and what a later resume without caps keeps), also while a node that
        pauses again has not written them to the state."""
        state, _ = self.read(run_id)
        with driving(self.ws, state.skill, run_id):
            return self._resume_held(run_id, caps, on_update)

    def _resume_held(self, run_id: str, caps: BudgetCaps | None,
                     on_update: Callable[[str], None] | None) -> dict[str, object]:
        """resume()'s work, with the skill's lock already held."""
        state, pending = self.read(run_id)
        answer = self._answer_path(run_id)
        if interrupt_kind(pending) == REVIEW and answer.exists():
            return self._take(run_id, json.loads(answer.read_text(encoding="utf-8")), state.budget, on_update)
        if interrupt_kind(pending) == REVIEW:
            raise RunNotPaused(f"run {run_id} waits for a review: skillforge review approve|reject {run_id}")
        if pending is None and not is_open(state.status):
            return self.summary(run_id)  # finished: nothing to do
        evolve_settings(self.ws)
        self._refuse_retired(state)
        new_caps = caps or caps_in_force(state, pending, self.ledger.caps(run_id))
        self.ledger.set_caps(run_id, new_caps)
        budget = state.budget.model_copy(update={"caps": new_caps})
        if pending is not None:
            return self._drive(run_id, Command(resume=new_caps.model_dump()), budget, on_update)
        if new_caps != state.budget.caps:
            self.graph.update_state(self.config(run_id), {"budget": budget})
        return self._drive(run_id, None, budget, on_update)

    def _answer_path(self, run_id: str) -> Path:
        """Where a review answer is kept until the review node has taken it."""
        return self.ws.runs_dir / "reviews" / f"{run_id}.answer.json"

    def _take(self, run_id: str, answer: dict[str, object], ledger: BudgetLedger,
              on_update: Callable[[str], None] | None) -> dict[str, object]:
        """Resume the review with the recorded answer. Its file goes once the review node has taken
        it: when the drive ends, or when it fails after the run moved past that review (a review
        node that crashed keeps its answer, in the checkpoint and in the file: resume carries it out)."""
        path = self._answer_path(run_id)
        try:
            done = self._drive(run_id, Command(resume=answer), ledger, on_update)
        except BaseException:
            if interrupt_kind(self.read(run_id)[1]) != REVIEW:
                path.unlink(missing_ok=True)
            raise
        path.unlink(missing_ok=True)
        return done

    def answer_review(self, run_id: str, action: ReviewAction | str, comment: str = "", reviewer: str = "",
                      force: bool = False, on_update: Callable[[str], None] | None = None) -> dict[str, object]:
        """Give the pending review of `run_id` its answer, once: under the skill's lock, the first
        answer recorded wins. AlreadyAnswered (who, when) for an answer that contradicts the recorded
        one; the same answer again reports the run as it stands (or carries the answer out, when the
        process that gave it died first). An approve that publishing would refuse is refused first,
        leaving the run waiting (BaseMoved, NameTaken, UnpublishedChanges); an approve refused at
        publish sends the run back to review and raises PublishRefused with the reason."""
        from skillforge.errors import PublishRefused

        action = ReviewAction(action)
        state, pending = self.read(run_id)
        asked_about = (state.selected, state.base_release_id)
        with driving(self.ws, state.skill, run_id, wait_s=ANSWER_WAIT_S):
            state, pending = self.read(run_id)
            waiting = interrupt_kind(pending) == REVIEW
            path = self._answer_path(run_id)
            recorded = ReviewDecision.model_validate_json(path.read_text(encoding="utf-8")) if waiting and path.exists() \
                else None
            given = recorded if waiting else state.review
            verdict = answer_verdict(waiting, given.action if given else None, action)
            if verdict is AnswerVerdict.NOT_WAITING:
                raise RunNotPaused(f"run {run_id} is not waiting for a review (status {self.summary(run_id)['status']})")
            if verdict is AnswerVerdict.CONFLICT:
                assert given is not None
                raise AlreadyAnswered(_answered(run_id, given, state, recorded=recorded is not None))
            if verdict is AnswerVerdict.REPEAT and recorded is None:
                assert given is not None
                return {**self.summary(run_id), "already_answered": _answered(run_id, given, state)}
            if verdict is AnswerVerdict.REPEAT:  # its process died before the run took it: carry it out now
                decision = recorded
            else:
                if (state.selected, state.base_release_id) != asked_about:
                    raise AlreadyAnswered(f"run {run_id} was answered while you answered: it was rebased and now "
                                          f"waits with {state.selected}; look again (skillforge review show {run_id})")
                if action is ReviewAction.APPROVE:
                    check_publishable(self.ws, state, force, self.embedder)
                elif action is ReviewAction.REBASE:
                    rebase_candidate(self.ws, state)  # its refusal (nothing to rebase, a conflict) before anything is recorded
                decision = ReviewDecision(action=action, comment=comment, reviewer=reviewer, answered_at=utc_now(),
                                          force=force)
                write_text_atomic(path, decision.model_dump_json())
            assert decision is not None
            done = self._take(run_id, decision.model_dump(mode="json"), state.budget, on_update)
        if action is ReviewAction.APPROVE and done["status"] == EvolveStatus.PENDING_REVIEW.value:
            raise PublishRefused(f"{done['message']} (run {run_id} waits for review again)")
        return done

    def cancel(self, run_id: str, comment: str = "", by: str = "", *, failed: str = "") -> dict[str, object]:
        """Close an open run (killed, paused at its budget, waiting for review): status CANCELLED (with
        `failed`, the reason: FAILED, as a batch that gave up on it), nothing published; its skill
        may be evolved again. A release the run left PREPARING when
        its process died inside the publish is abandoned first, as the next publish would, so the
        folder and git get the live bytes back (abandon_own). RunBusy at once while another process
        drives a run of the skill: a cancel cannot stop that process, and waiting for it would wait
        for the whole run (it may publish meanwhile)."""
        state, _ = self.read(run_id)
        busy = (f"a cancel does not stop it: stop that process (Ctrl-C, or kill it; the run stays resumable), "
                f"then skillforge runs cancel {run_id} again, or let it end or pause first")
        with driving(self.ws, state.skill, run_id, busy=busy):
            state, _ = self.read(run_id)
            if not is_open(state.status):
                raise RunNotPaused(f"run {run_id} is finished ({self.summary(run_id)['status']}): nothing to cancel")
            abandon_own(self.ws, run_id)  # first: a cancel killed after it leaves a resumable run, nothing stale
            cfg = self.config(run_id)
            self.graph.update_state(cfg, {"status": EvolveStatus.FAILED, "message": failed} if failed else {
                "status": EvolveStatus.CANCELLED, "message": f"cancelled by {by or 'someone'} at {utc_now()}: {comment}"})
            self.graph.update_state(cfg, None, as_node=END)  # then drop its pending tasks and interrupt
            self._answer_path(run_id).unlink(missing_ok=True)
            self.stop_path(run_id).unlink(missing_ok=True)
            return self.summary(run_id)


def _answered(run_id: str, given: ReviewDecision, state: EvolveState, *, recorded: bool = False) -> str:
    """`run R already answered: approved by alice at 2026-...Z ("ok"); published as release X`. A
    `recorded` answer is one the run has not taken yet (its process stopped first)."""
    who = f"{_PAST[given.action]} by {given.reviewer or 'someone'}" + (f" at {given.answered_at}" if given.answered_at else "")
    said = f' ("{given.comment}")' if given.comment else ""
    status = run_status(state.status, None)
    then = (f"; not carried out yet (the process that answered stopped): skillforge evolve --resume {run_id} "
            "carries it out" if recorded else f"; published as release {state.release_id}" if state.release_id
            else f"; the run is {status.value}")
    return f"run {run_id} already answered: {who}{said}{then}"
