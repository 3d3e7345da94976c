"""Checks an evolve run makes before its first model call: every set its validation needs must have
cases for the skill. Without holdout cases no candidate can be confirmed, so a run would spend its
whole budget (93 requests in one report) and end "no candidate passed"."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from skillforge.config import Workspace
from skillforge.errors import RunIdTaken
from skillforge.evaluation.datasets import DatasetError, read_set, set_files
from skillforge.state.evaluate import EvalSet, Partition

REQUIRED = (Partition.HOLDOUT,)
"""The partitions validation cannot do without: the selected candidate is confirmed on holdout."""


class MissingCases(DatasetError):
    """A set an evolve run needs has no cases for the skill; refused before any model call."""


def require_new_run(ws: Workspace, run_id: str, thread: str | None) -> None:
    """RunIdTaken when another run of the workspace already used `run_id`: a release it triggered,
    its review, suggestion or failure report, or another graph thread claimed it. Publish is
    idempotent per run id (a release the run published is returned), so a second run under a used
    id would be told "published" for the first run's release (two Studio threads given the same
    example input, two notebooks). The claim (runs/claims/<run>, made atomically, holding the
    checkpointer's thread id) also refuses two threads started at once; a resume of the same
    thread re-enters its first node and passes. `thread` None (no checkpointer): never resumed."""
    from skillforge.library.orphans import EVOLVE_TRIGGER
    from skillforge.library.store import Store

    store = Store(ws.db_path)
    try:
        released = store.triggered(f"{EVOLVE_TRIGGER}{run_id}")
    finally:
        store.close()
    files = [p for p in (ws.runs_dir / d / f"{run_id}.md" for d in ("reviews", "suggestions", "failures")) if p.exists()]
    if released or files:
        used = ([f"release {r.skill_name} {r.version} ({r.release_id[:8]}, {r.status.value})" for r in released]
                + [str(p) for p in files])
        raise RunIdTaken(f"run id '{run_id}' was already used in this workspace ({'; '.join(used[:3])}): a new run "
                         "needs an id of its own (skillforge's runs get a fresh one; give another run_id)")
    if squatted := derived_taken(ws.traces_dir, run_id, thread):  # QA 38 F5: else refused mid-run, for good
        raise RunIdTaken(f"run id '{run_id}' cannot be used: evaluations already took the ids its validations record "
                         f"under ({', '.join(squatted[:3])} in {ws.traces_dir}); give another run_id. Nothing was sent")
    claim_run(ws, run_id, thread)


def require_cases(ws: Workspace, skill: str, run_id: str, sets: Mapping[str, EvalSet]) -> int:
    """The number of holdout cases for `skill` in `sets` (the workspace's); MissingCases, naming the
    set files of the partition (or the file to create) and how to add cases, when a REQUIRED
    partition has none."""
    counts: dict[Partition, int] = {p: 0 for p in REQUIRED}
    for s in sets.values():
        if s.meta.partition in counts:
            counts[s.meta.partition] += sum(1 for c in s.cases if c.skill == skill)
    for part, n in counts.items():
        if n:
            continue
        files = [str(path) for path in set_files(ws) if read_set(path).meta.partition is part]  # to name them
        where = (f"{', '.join(files)} (partition {part.value}) has no case for it" if files else
                 f"no set file declares partition {part.value} (create {ws.evaluation_sets_dir / f'{part.value}.json'} "
                 f"with \"meta\": {{\"partition\": \"{part.value}\", \"skills\": [\"{skill}\"]}})")
        raise MissingCases(f"evolve needs {part.value} cases for '{skill}' to confirm a candidate, and {where}. "
                           f"Nothing was sent to a model. Add cases with \"skill\": \"{skill}\" (and \"{skill}\" to "
                           f"meta.skills): queries the proposer never sees, with fixtures and expectations "
                           f"(evaluation_sets/README.md); then resume: "
                           f"skillforge evolve --resume {run_id}")
    return counts[Partition.HOLDOUT]


DERIVED = r"-r\d+c\d+(?:-rebase\d+)*-(?:selection|holdout|final_audit)"
"""How an evolve run's validation evaluations are named after it (`<run>-r1c2-selection`)."""


def derived_taken(traces_dir: Path, run_id: str, thread: str | None) -> list[str]:
    """The ids an evolve run `run_id` would record its validations under that another run holds: a
    claim of another thread (an evaluate run given such an id by hand), or a record without a claim.
    A resumed run's own claims (`thread`'s) are its own."""
    import glob
    import re

    shape = re.compile(re.escape(run_id) + DERIVED)
    mine = thread_owner(thread) if thread is not None else None
    taken: set[str] = set()
    for path in traces_dir.glob(f"{glob.escape(run_id)}-r*"):
        name = path.name
        for ext in (".claim", ".meta.json", ".jsonl"):
            name = name.removesuffix(ext) if name.endswith(ext) else name
        if name in taken or not shape.fullmatch(name):
            continue
        claim = traces_dir / f"{name}.claim"
        held = claim.read_text(encoding="utf-8", errors="replace").strip() if claim.exists() else None
        if mine is None or held != mine:
            taken.add(name)
    return sorted(taken)


def claim_run(ws: Workspace, run_id: str, thread: str | None) -> None:
    """Claim `run_id` for the graph thread `thread`: runs/claims/<run>, created exclusively, holds the
    thread id. RunIdTaken when another thread (or a run without a checkpointer) holds it."""
    from skillforge.safewrite import claim_file

    held = claim_file(ws.runs_dir / "claims" / run_id, thread_owner(thread))
    if held is not None:
        raise RunIdTaken(f"run id '{run_id}' is taken by another graph thread ({held[:80] or 'a run starting now'}): "
                         "a new run needs an id of its own (skillforge's runs get a fresh one; give another run_id)")


def thread_owner(thread: str | None) -> str:
    """What a claim made by the graph thread `thread` holds: its id, or for a run without a
    checkpointer (never resumed) a token no other run can hold."""
    import uuid

    return thread if thread is not None else f"unresumable-{uuid.uuid4().hex}"


def graph_thread() -> str | None:
    """The thread id of the graph run this node runs in (its checkpointer's), or None outside one."""
    from langgraph.config import get_config

    try:
        thread = (get_config().get("configurable") or {}).get("thread_id")
    except RuntimeError:  # not inside a runnable
        return None
    return str(thread) if thread is not None else None
