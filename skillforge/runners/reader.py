"""Reading evolve runs without the graph: `runs list`, `runs show`, `review list` and `review show`
read each run's last checkpoint and its pending interrupt straight from the checkpointer, with the
state types' serializer. No graph is compiled and no model layer is imported (those imports were
most of the 6-8 s these commands took).

The status comes from `rules.runs.run_status`: the pending interrupt (review or budget), else the
status the graph wrote (RUNNING: killed or crashed in a node, resumable).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from skillforge.config import WORKSPACE_ID_FILE, Workspace
from skillforge.errors import UnknownRun
from skillforge.runners.checkpoint import (CHECKPOINT_URL_ENV, checkpoint_url, postgres_saver, redact, refuse_foreign, sqlite_saver,
                                          thread_ids, thread_scope)
from skillforge.llm.ledger import RequestLedger
from skillforge.rules.ids import IdKind, scoped_run_ids, thread_id
from skillforge.rules.evolve_budget import batch_next, evolve_next
from skillforge.rules.review_next import audit_warning
from skillforge.rules.runs import BUDGET, run_status
from skillforge.state.evolve import EvolveState, EvolveStatus
from skillforge.state.ids import require_id
from skillforge.state.llm import BudgetCaps, Spend

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver

GRAPHS_DB = "graphs.sqlite"
INTERRUPT = "__interrupt__"
"""LangGraph's channel for a task's interrupt() values among a checkpoint's pending writes."""


def pending_of(writes: list[tuple[str, str, object]] | None) -> dict[str, object] | None:
    """The payload of the run's pending interrupt (a dict), from its last checkpoint's writes."""
    for _, channel, value in writes or []:
        if channel != INTERRUPT:
            continue
        for intr in value if isinstance(value, list | tuple) else [value]:
            payload = getattr(intr, "value", None)
            if isinstance(payload, dict):
                return payload
    return None


def interrupt_kind(pending: dict[str, object] | None) -> str | None:
    return None if pending is None else str(pending.get("kind") or "budget")


def shared_db_hint(ws: Workspace, url: str | None) -> str:
    """What to add when a run is not found in the workspace's own SQLite file and the
    workspace has used a shared Postgres checkpoint database: `runs/workspace-id` is made only for
    such a database's runs and batch claims (Workspace.workspace_id), and those runs are not in the
    SQLite file. "" when SKILLFORGE_CHECKPOINT_URL is set (`url`) or there is no such evidence. No
    URL is printed: the workspace does not keep one (nor, so, its password)."""
    if url is not None or not (ws.runs_dir / WORKSPACE_ID_FILE).is_file():
        return ""
    return (f"; this workspace has also made runs with a Postgres checkpointer (it has runs/{WORKSPACE_ID_FILE}, "
            f"which only a shared checkpoint database's runs and batches make), and those are not in this file: "
            f"set {CHECKPOINT_URL_ENV}=postgresql://... (the URL they used) to see them")


def _score(s: object) -> dict[str, object]:
    return s.model_dump() if s is not None else {}  # type: ignore[attr-defined]


def in_workspace(ws: Workspace, path: str | None) -> str | None:
    """A report a run recorded (runs/failures/<run>.md, runs/suggestions/...) in this workspace: a
    copied or moved workspace's checkpoints still name the folder it was written in (QA 40 F5), so
    the same file under this workspace's runs/ when it is there, else the path as recorded."""
    if not path or Path(path).is_relative_to(ws.root):
        return path
    here = ws.runs_dir / Path(path).parent.name / Path(path).name
    return str(here) if here.is_file() else path


def caps_in_force(state: EvolveState, pending: dict[str, object] | None, recorded: BudgetCaps | None) -> BudgetCaps:
    """The caps a run counts against now: the latest given (`recorded` in the request ledger by
    start and resume), else those its budget pause asked with, else its state's (a run from before
    the ledger kept them). The state's lag behind a pause: a node writes them only when it ends."""
    if recorded is not None:
        return recorded
    asked = pending.get("caps") if pending is not None and interrupt_kind(pending) == BUDGET else None
    return BudgetCaps.model_validate(asked) if isinstance(asked, dict) else state.budget.caps


def summarise(state: EvolveState, pending: dict[str, object] | None, spend: Spend | None = None,
              caps: BudgetCaps | None = None) -> dict[str, object]:
    """The `--json` object of a run: status, each candidate (with its rationale, leak findings and
    notes), the selection and holdout scores, the base release and the review answer; `spend` is the
    run's reading of the request ledger (llm_calls: the paid requests; budget: paid, cached, refused,
    tokens and `caps`, the caps in force); `next`, for a run paused at its budget, the command that
    continues it."""
    from skillforge.evolution.archive import masked  # a candidate with a leak finding shows it masked (QA 45 F7)

    spend = spend or Spend()
    caps = caps or caps_in_force(state, pending, None)
    status = run_status(state.status, interrupt_kind(pending))
    estimate = pending.get("estimate") if pending is not None else None
    batch = pending.get("batch") if pending is not None else None
    next_step = None
    if status is EvolveStatus.BUDGET and isinstance(batch, str):  # the batch's caps stopped it: raise those
        next_step = batch_next(batch, str(pending.get("batch_cap") or "calls"))  # type: ignore[union-attr]
    elif status is EvolveStatus.BUDGET:
        next_step = evolve_next(state.run_id, caps, estimate if isinstance(estimate, dict) else None, spend.calls,
                                spend.tokens + spend.reserved_tokens)
    selected = next((c for c in state.candidates if c.id == state.selected), None)
    holdout = selected.validation.get("holdout") if selected else None
    if holdout is None:
        holdout = next((c.validation["holdout"] for c in state.candidates if "holdout" in c.validation), None)
    return {
        "run_id": state.run_id, "skill": state.skill,
        "status": status.value, "mode": state.mode.value,
        "rounds": state.round,
        "candidates": [{"id": c.id, "kind": c.kind.value, "target": c.target, "claimed_level": c.claimed_level,
                        "computed_level": c.computed_level, "level": c.level, "verdict": c.verdict.value,
                        "rejected_by": c.rejected_by, "rationale": c.rationale, "leaks": list(c.leaks),
                        "notes": list(c.notes), "diff": c.applied_diff}
                       for c in (masked(c) if c.leaks else c for c in [*state.history, *state.candidates])],
        "release_id": state.release_id, "llm_calls": spend.calls, "tokens": spend.tokens,
        "budget": {**spend.report(), "caps": caps.model_dump()}, "next": next_step,
        "holdout": _score(holdout),
        **({"need": state.need, "conflict": _score(next((c.validation["conflict"] for c in state.candidates
                                                          if "conflict" in c.validation), None))} if state.need else {}),
        "selection": _score(selected.validation.get("selection")) if selected else {},
        "final_audit": _score(selected.validation.get("final_audit")) if selected else {},
        "audit_warning": audit_warning(selected.validation.get("final_audit")) if selected else "",
        "root_cause": state.root_cause.model_dump(mode="json") if state.root_cause else None,
        "failures": [f.case.id for f in state.failures], "message": state.message,
        "proposer_notes": list(state.proposer_notes),
        "pending": pending, "suggestion": state.suggestion_path, "failure_report": state.failure_report,
        "started_at": state.started_at,
        "base": {"release_id": state.base_release_id, "version": state.base_version} if state.base_release_id else None,
        "review": state.review.model_dump(mode="json") if state.review else None,
    }


NEW_SKILL_KINDS = ("DERIVED", "CAPTURED")


def pause_message(summary: dict[str, object]) -> str:
    """What a paused run's `message` says when no node said why it stopped (QA msgs15 item 2: a BUDGET
    pause or a new skill waiting for review had an empty message): what happened and the command that
    goes on. "" for a run that is not paused."""
    status, run_id, pending = summary.get("status"), summary.get("run_id"), summary.get("pending")
    pending = pending if isinstance(pending, dict) else {}
    if status == EvolveStatus.BUDGET.value:
        why = f" ({pending['reason']})" if pending.get("reason") else ""
        return (f"paused at its budget{why}: nothing more is spent until it is resumed: {summary.get('next')} "
                f"(or close it: skillforge runs cancel {run_id})")
    if status != EvolveStatus.PENDING_REVIEW.value:
        return ""
    step = summary.get("review_next")
    then = (step.get("then") if isinstance(step, dict) else None) or \
        f'skillforge review approve {run_id} --comment "..." (or: skillforge review reject {run_id})'
    kind, level = str(pending.get("candidate_kind") or "FIX"), pending.get("level")
    what = (f"candidate {pending.get('candidate')}, a new skill {pending.get('target')} ({kind} from {summary['skill']}"
            f"{f', level {level}' if level else ''})" if kind in NEW_SKILL_KINDS else
            f"candidate {pending.get('candidate')}, a {f'level {level} ' if level else ''}change to {summary['skill']}")
    return (f"{what}, waits for a person's review: nothing is published until one approves it. Read it: "
            f"skillforge review show {run_id}; then: {then}")


def _noted_only(summary: dict[str, object]) -> bool:
    """Whether the run's message is empty or only the proposer's last note (kept in proposer_notes)."""
    notes = summary.get("proposer_notes") or []
    said = str(summary.get("message") or "")
    return not said or bool(notes) and said == str(notes[-1]).split(": ", 1)[-1]  # type: ignore[index]


class RunReader:
    """The evolve runs of one workspace, as its checkpointer holds them (read only)."""

    def __init__(self, ws: Workspace, saver: BaseCheckpointSaver | None = None) -> None:
        self.ws = ws
        self.path: Path = ws.checkpoints_dir / GRAPHS_DB
        url = checkpoint_url()
        self.where = str(self.path) if url is None else redact(url)
        if saver is None:
            saver = sqlite_saver(self.path) if url is None else postgres_saver(url, GRAPHS_DB)
        self.saver = saver
        self.scope = thread_scope(ws, saver)  # the workspace id in a shared (Postgres) database
        self.elsewhere = shared_db_hint(ws, url)  # why runs may be missing here, or ""
        self._ledger: RequestLedger | None = None

    @property
    def ledger(self) -> RequestLedger:
        """The workspace's request ledger: what every run has spent (opened on first use)."""
        if self._ledger is None:
            self._ledger = RequestLedger.of_workspace(self.ws.runs_dir)
        return self._ledger

    def config(self, run_id: str) -> dict[str, object]:
        return {"configurable": {"thread_id": thread_id(self.scope, run_id)}}

    def run_ids(self) -> list[str]:
        """Every evolve run id of this workspace in the checkpointer, sorted."""
        return scoped_run_ids(thread_ids(self.saver, self.path), self.scope)

    def _last(self, run_id: str):  # noqa: ANN202 - a CheckpointTuple or None
        return self.saver.get_tuple({"configurable": {"thread_id": thread_id(self.scope, run_id), "checkpoint_ns": ""}})

    def read(self, run_id: str) -> tuple[EvolveState, dict[str, object] | None]:
        """The run's state and its pending interrupt's payload (None when it is not paused).
        InvalidId for an id that could name a path; ForeignRun for another workspace's run in a
        shared database; UnknownRun otherwise."""
        require_id(IdKind.RUN, run_id)
        last = self._last(run_id)
        values = last.checkpoint.get("channel_values") if last is not None else None
        if not values:
            refuse_foreign(self.saver, self.ws, run_id)
            raise UnknownRun(self._evaluate_run(run_id) or f"no evolve run '{run_id}' in {self.where}{self.elsewhere}")
        return EvolveState.model_validate(values), pending_of(last.pending_writes)

    def _evaluate_run(self, run_id: str) -> str | None:
        """What to say when `run_id` is an evaluation's run (the id `evaluate` prints), not an evolve
        run's: where its result is and the commands that read it. None for any other id."""
        meta, traces = self.ws.traces_dir / f"{run_id}.meta.json", self.ws.traces_dir / f"{run_id}.jsonl"
        if not (meta.exists() or traces.exists()):
            return None
        return (f"'{run_id}' is an evaluate run, not an evolve run: its result is a line of "
                f"{self.ws.evaluations_log} and its cases are in {traces}; `skillforge evaluate --rejudge {run_id}` "
                f"judges them again, `skillforge evaluate --resume {run_id}` continues it if it stopped, and "
                "`skillforge report SKILL --html FILE` shows the skill's evaluations")

    def summary(self, run_id: str) -> dict[str, object]:
        """`summarise`, and for a run waiting for review `review_next`: its warning and the command
        that can work as the workspace stands now (runners/review_step.py)."""
        state, pending = self.read(run_id)
        out = summarise(state, pending, self.ledger.spend(run_id),
                        caps_in_force(state, pending, self.ledger.caps(run_id)))
        if out["status"] == EvolveStatus.PENDING_REVIEW.value and state.selected:
            from skillforge.runners.review_step import review_step

            step = review_step(self.ws, state)
            out["review_next"] = {"warning": step.warning, "then": step.then}
        if _noted_only(out) and pause_message(out):
            out["message"] = pause_message(out)
        for key in ("failure_report", "suggestion"):
            out[key] = in_workspace(self.ws, out[key])  # type: ignore[arg-type]
        stop = self.stop_path(run_id)  # why a run that an endpoint stopped is open (QA 38 F8)
        if out["status"] == EvolveStatus.RUNNING.value and stop.is_file():
            out["message"] = stop.read_text(encoding="utf-8", errors="replace").strip()
        return out

    def stop_path(self, run_id: str) -> Path:
        """runs/stops/<run>.txt: what stopped the run open (an endpoint that did not answer), kept
        until the run is driven again."""
        return self.ws.runs_dir / "stops" / f"{run_id}.txt"

    def rows(self) -> list[dict[str, object]]:
        """One short row per run (run_id, skill, status, started_at), oldest first, read without
        validating whole states."""
        out = []
        for run_id in self.run_ids():
            last = self._last(run_id)
            values = last.checkpoint.get("channel_values") if last is not None else None
            if not values:
                continue
            pending = pending_of(last.pending_writes)
            written = EvolveStatus(values.get("status", EvolveStatus.RUNNING))
            out.append({"run_id": run_id, "kind": "new" if values.get("need") else "evolve", "skill": values.get("skill"),
                        "status": run_status(written, interrupt_kind(pending)).value,
                        "started_at": values.get("started_at", "")})
        return sorted(out, key=lambda r: str(r["started_at"]))
