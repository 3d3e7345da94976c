"""Driving evolve runs from the CLI (and batch): start, resume, answer a review, summarise.

Every run is a thread of the checkpointer `checkpointer_for(ws, "graphs.sqlite")` decides (the
SqliteSaver at `<workspace>/checkpoints/graphs.sqlite`, or the PostgresSaver when
SKILLFORGE_CHECKPOINT_URL is set), with durability `sync`; its thread id is its run id. A paused run (a review, or a hard budget cap) and a
killed one resume from any process.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from langgraph.types import Command, StateSnapshot

from skillforge.config import Workspace
from skillforge.context import EvolveContext
from skillforge.errors import SkillForgeError
from skillforge.journal import utc_now
from skillforge.llm.client import LLM, build_llm
from skillforge.llm.ledger import RequestLedger, RunBudget
from skillforge.rules.ids import IdKind, scoped_run_ids, thread_id
from skillforge.state.evolve import MAX_ROUNDS, TERMINAL, EvolveMode, EvolveState, EvolveStatus, ReviewAction, ReviewDecision
from skillforge.state.ids import require_id
from skillforge.state.llm import BudgetCaps, BudgetLedger, Spend

log = logging.getLogger(__name__)
GRAPHS_DB = "graphs.sqlite"


class UnknownRun(SkillForgeError):
    """No run with that id in this workspace's checkpoints."""


class RunNotPaused(SkillForgeError):
    """The run is not waiting for what was asked (a review answer, or a budget)."""


def new_run_id(skill: str, kind: str = "evolve") -> str:
    return f"{kind}-{skill}-{datetime.now(UTC):%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"


class Runner:
    """One workspace's evolve graph with its checkpointer; `llm_factory` builds each run's models."""

    def __init__(self, ws: Workspace, llm_factory: Callable[[RunBudget], LLM] | None = None,
                 embedder: object | None = None) -> None:
        from skillforge.graphs.checkpoint import checkpoint_url, checkpointer_for, redact, thread_scope
        from skillforge.graphs.evolve import build_evolve_graph

        self.ws = ws
        self.path = ws.checkpoints_dir / GRAPHS_DB
        url = checkpoint_url()
        self.where = str(self.path) if url is None else redact(url)
        self.saver = checkpointer_for(ws, GRAPHS_DB)
        self.scope = thread_scope(ws, self.saver)  # the workspace id in a shared (Postgres) database
        self.graph = build_evolve_graph(checkpointer=self.saver)
        self.llm_factory = llm_factory or (lambda ledger: build_llm(ws, ledger=ledger))
        self.embedder = embedder
        self._ledger: RequestLedger | None = None

    @property
    def ledger(self) -> RequestLedger:
        """The workspace's request ledger: what every run has spent (opened on first use)."""
        if self._ledger is None:
            self._ledger = RequestLedger.of_workspace(self.ws.runs_dir)
        return self._ledger

    def context(self, budget: RunBudget) -> EvolveContext:
        return EvolveContext(ws=self.ws, llm=self.llm_factory(budget), embedder=self.embedder)  # type: ignore[arg-type]

    def config(self, run_id: str) -> dict[str, object]:
        return {"configurable": {"thread_id": thread_id(self.scope, run_id)}}

    def snapshot(self, run_id: str) -> StateSnapshot:
        from skillforge.graphs.checkpoint import refuse_foreign

        require_id(IdKind.RUN, run_id)  # InvalidId before a path or a thread is made of it
        snap = self.graph.get_state(self.config(run_id))
        if not snap.values:
            refuse_foreign(self.saver, self.ws, run_id)  # another workspace's run in a shared database
            raise UnknownRun(f"no evolve run '{run_id}' in {self.where}")
        return snap

    def state(self, run_id: str) -> EvolveState:
        return EvolveState.model_validate(self.snapshot(run_id).values)

    def _drive(self, run_id: str, payload: object, ledger: BudgetLedger,
               on_update: Callable[[str], None] | None = None) -> dict[str, object]:
        from skillforge.cli import interrupt

        ctx = self.context(RunBudget(self.ledger, run_id, ledger.caps))
        with interrupt.stopping(ctx.llm.stop):  # on Ctrl-C the run's worker threads send nothing more
            for update in self.graph.stream(payload, self.config(run_id), context=ctx, stream_mode="updates",
                                            durability="sync"):
                if on_update is not None:
                    for node in update:
                        on_update(node)
        return self.summary(run_id)

    def start(self, skill: str, *, mode: EvolveMode = EvolveMode.AUTONOMOUS, max_rounds: int = 2,
              caps: BudgetCaps | None = None, run_id: str | None = None,
              on_update: Callable[[str], None] | None = None) -> dict[str, object]:
        from skillforge.registry import SkillRegistry

        SkillRegistry.load(self.ws).get(skill)  # UnknownSkill with the closest names, before anything runs
        if not 1 <= max_rounds <= MAX_ROUNDS:
            raise SkillForgeError(f"--max-rounds must be 1 to {MAX_ROUNDS} (reflection rounds are capped), got {max_rounds}")
        run_id = run_id or new_run_id(skill)
        ledger = BudgetLedger(caps=caps or BudgetCaps())
        state = EvolveState(run_id=run_id, skill=skill, mode=mode, max_rounds=max_rounds, budget=ledger,
                            started_at=utc_now())
        return self._drive(run_id, state, ledger, on_update)

    def resume(self, run_id: str, *, caps: BudgetCaps | None = None,
               on_update: Callable[[str], None] | None = None) -> dict[str, object]:
        """Continue a killed run, or a run paused at its budget (with `caps`, or the old caps)."""
        snap = self.snapshot(run_id)
        state = EvolveState.model_validate(snap.values)
        pending = _interrupt(snap)
        answer = self._answer_path(run_id)
        if pending is not None and pending.get("kind") == "review" and answer.exists():
            # answered, then killed before the review node finished: give the same answer again
            return self._drive(run_id, Command(resume=json.loads(answer.read_text(encoding="utf-8"))), state.budget,
                               on_update)
        if pending is not None and pending.get("kind") == "review":
            raise RunNotPaused(f"run {run_id} waits for a review: skillforge review approve|reject {run_id}")
        if pending is not None:
            new_caps = caps or state.budget.caps
            return self._drive(run_id, Command(resume=new_caps.model_dump()), state.budget, on_update)
        if not snap.next:
            return self.summary(run_id)  # finished: nothing to do
        if caps is not None:
            self.graph.update_state(self.config(run_id), {"budget": state.budget.model_copy(update={"caps": caps})})
        return self._drive(run_id, None, state.budget, on_update)

    def _answer_path(self, run_id: str) -> Path:
        """Where a review answer is kept until the review node has taken it: LangGraph records a
        resume value only when the node completes, so a reviewer's answer must survive a kill."""
        return self.ws.runs_dir / "reviews" / f"{run_id}.answer.json"

    def answer_review(self, run_id: str, action: ReviewAction, comment: str = "", reviewer: str = "",
                      on_update: Callable[[str], None] | None = None) -> dict[str, object]:
        snap = self.snapshot(run_id)
        pending = _interrupt(snap)
        if pending is None or pending.get("kind") != "review":
            raise RunNotPaused(f"run {run_id} is not waiting for a review (status {self.summary(run_id)['status']})")
        decision = ReviewDecision(action=action, comment=comment, reviewer=reviewer)
        state = EvolveState.model_validate(snap.values)
        from skillforge.evolution.archive import write_text_atomic

        write_text_atomic(self._answer_path(run_id), decision.model_dump_json())
        return self._drive(run_id, Command(resume=decision.model_dump(mode="json")), state.budget, on_update)

    def summary(self, run_id: str) -> dict[str, object]:
        snap = self.snapshot(run_id)
        return summarise(EvolveState.model_validate(snap.values), snap, self.ledger.spend(run_id))

    def run_ids(self) -> list[str]:
        """Every evolve run id in the checkpointer, sorted."""
        from skillforge.graphs.checkpoint import thread_ids

        return scoped_run_ids(thread_ids(self.saver, self.path), self.scope)


def _interrupt(snap: StateSnapshot) -> dict[str, object] | None:
    for task in snap.tasks:
        for intr in task.interrupts:
            if isinstance(intr.value, dict):
                return intr.value
    return None


def status_of(state: EvolveState, snap: StateSnapshot) -> EvolveStatus:
    """The run's status: a pending interrupt says PENDING_REVIEW or BUDGET; a run with nodes left
    and no interrupt was killed (RUNNING, resumable); else the status the graph wrote."""
    pending = _interrupt(snap)
    if pending is not None:
        return EvolveStatus.PENDING_REVIEW if pending.get("kind") == "review" else EvolveStatus.BUDGET
    if snap.next:
        return EvolveStatus.RUNNING
    return state.status if state.status is not EvolveStatus.RUNNING else EvolveStatus.FAILED


def summarise(state: EvolveState, snap: StateSnapshot, spend: Spend | None = None) -> dict[str, object]:
    """The `--json` object of a run; `spend` is the run's reading of the request ledger (llm_calls:
    the paid requests; budget: paid, cached, refused, tokens and the caps)."""
    spend = spend or Spend()
    selected = next((c for c in state.candidates if c.id == state.selected), None)
    holdout = selected.validation.get("holdout") if selected else None
    if holdout is None:
        holdout = next((c.validation["holdout"] for c in state.candidates if "holdout" in c.validation), None)
    pending = _interrupt(snap)
    return {
        "run_id": state.run_id, "skill": state.skill, "status": status_of(state, snap).value, "mode": state.mode.value,
        "rounds": state.round,
        "candidates": [{"id": c.id, "kind": c.kind.value, "claimed_level": c.claimed_level,
                        "computed_level": c.computed_level, "verdict": c.verdict.value, "rejected_by": c.rejected_by}
                       for c in [*state.history, *state.candidates]],
        "release_id": state.release_id, "llm_calls": spend.calls, "tokens": spend.tokens,
        "budget": {**spend.report(), "caps": state.budget.caps.model_dump()},
        "holdout": holdout.model_dump() if holdout is not None else {},
        "selection": selected.validation["selection"].model_dump() if selected and "selection" in selected.validation else {},
        "root_cause": state.root_cause.model_dump(mode="json") if state.root_cause else None,
        "failures": [f.case.id for f in state.failures], "message": state.message,
        "pending": pending, "suggestion": state.suggestion_path, "failure_report": state.failure_report,
        "started_at": state.started_at,
    }


def write_batch(ws: Workspace, batch_id: str, runs: dict[str, str]) -> Path:
    path = ws.runs_dir / "batches" / f"{require_id(IdKind.BATCH, batch_id)}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"batch_id": batch_id, "runs": runs}, indent=1), encoding="utf-8")
    return path


def read_batch(ws: Workspace, batch_id: str) -> dict[str, str]:
    path = ws.runs_dir / "batches" / f"{require_id(IdKind.BATCH, batch_id)}.json"
    if not path.exists():
        raise UnknownRun(f"no batch '{batch_id}' in {path.parent}")
    return dict(json.loads(path.read_text(encoding="utf-8"))["runs"])


def run_one(runner: Runner, name: str, run_id: str, *, mode: EvolveMode = EvolveMode.AUTONOMOUS,
            max_rounds: int = MAX_ROUNDS, caps: BudgetCaps | None = None) -> dict[str, object]:
    """Start skill `name`'s run `run_id`, or resume it when its thread exists and is unfinished; a
    failure ends FAILED with the reason (never raises)."""
    try:
        if run_id in runner.run_ids():
            res = runner.summary(run_id)
            if res["status"] not in (*TERMINAL, EvolveStatus.PENDING_REVIEW):
                res = runner.resume(run_id, caps=caps)
            return res
        return runner.start(name, mode=mode, max_rounds=max_rounds, caps=caps, run_id=run_id)
    except Exception as e:  # noqa: BLE001 - one broken skill must not stop the batch
        log.warning("run %s of %s failed", run_id, name, exc_info=True)
        return {"run_id": run_id, "skill": name, "status": EvolveStatus.FAILED.value,
                "message": f"{type(e).__name__}: {e}"[:500]}


def run_batch(runner: Runner, runs: dict[str, str], *, mode: EvolveMode = EvolveMode.AUTONOMOUS,
              max_rounds: int = MAX_ROUNDS, caps: BudgetCaps | None = None, concurrency: int = 2,
              on_done: Callable[[dict[str, object]], None] | None = None) -> list[dict[str, object]]:
    """Start (or resume, when its thread exists) one run per skill, `concurrency` at a time. A skill
    that fails ends FAILED with the reason; the others go on."""
    from concurrent.futures import ThreadPoolExecutor

    def one(item: tuple[str, str]) -> dict[str, object]:
        res = run_one(runner, item[0], item[1], mode=mode, max_rounds=max_rounds, caps=caps)
        if on_done is not None:
            on_done(res)
        return res

    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        return list(pool.map(one, runs.items()))
