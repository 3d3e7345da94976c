"""A workspace with one skill and an open canary, and synthetic traffic for it (used by tests).

Traffic goes where real traffic goes: each session is served by the real bucketing
(`Canaries.served`) and its events are appended to the real public log (runs/events/public.jsonl,
the format `EventLog` writes: seq, ts, kind, ...), in one write per batch so that thousands of
sessions take milliseconds instead of one fsync each.
"""

from __future__ import annotations

import json
import random
import shutil
from dataclasses import dataclass
from pathlib import Path

from conftest import EXAMPLE_SKILLS

from skillforge.config import Workspace, init_workspace
from skillforge.events import EventLog
from skillforge.journal import utc_now
from skillforge.library.canaries import Canaries
from skillforge.library.releases import ReleaseStateMachine
from skillforge.library.store import Store
from skillforge.skill import file as skillfile
from skillforge.state.canary import CanaryPlan

SKILL = "news-digest"
CANARY_LINE = "- canary candidate line"


def canary_workspace(root: Path, *, share: float = 0.10, min_sessions: int = 100, max_age_hours: float = 168.0,
                     files: bool = True) -> tuple[Workspace, str, str]:
    """(workspace, live release id, canary release id): SKILL imported, then a candidate with one
    more line opened as a canary."""
    ws = init_workspace(root)
    shutil.copytree(EXAMPLE_SKILLS / SKILL, ws.skills_dir / SKILL)
    m = ReleaseStateMachine.open(ws)
    live = m.import_skills(skillfile.scan(ws.skills_dir, ws.root)).imported[0]
    folder = m.folder_of(SKILL)
    tree = {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    tree["SKILL.md"] = tree["SKILL.md"].rstrip(b"\n") + f"\n{CANARY_LINE}\n".encode()
    plan = CanaryPlan(share=share, min_sessions=min_sessions, max_age_hours=max_age_hours)
    if not files:
        (folder / "SKILL.md").write_bytes(tree["SKILL.md"])
    rel = m.publish(SKILL, tree if files else None, canary=plan, triggered_by="test canary")
    m.store.close()
    return ws, live.release_id, rel.release_id


@dataclass
class Session:
    session_id: str
    bad: bool | None = None
    """None: no feedback."""
    tool_error: bool = False
    corrected: bool = False
    tokens: int | None = None


def feed(ws: Workspace, sessions: list[Session], skill: str = SKILL) -> dict[str, str]:
    """Serve every session (real bucketing) and append its events; session id -> release served."""
    store = Store(ws.db_path)
    try:
        canaries = Canaries(store)
        served = {s.session_id: canaries.served(skill, s.session_id)[0].release_id for s in sessions}  # type: ignore[union-attr]
    finally:
        store.close()
    log = EventLog(ws)
    seq = log.counts().last_seq
    lines = []

    def add(**event: object) -> int:
        nonlocal seq
        seq += 1
        lines.append(json.dumps({"ts": utc_now(), "seq": seq, "skill": skill, **event}))
        return seq

    for s in sessions:
        rid = served[s.session_id]
        add(kind="skill_used", session_id=s.session_id, release_id=rid, reason="synthetic")
        if s.tool_error:
            add(kind="tool_error", session_id=s.session_id, release_id=rid, reason="synthetic tool failure")
        if s.bad is not None:
            outcome = "bad" if s.bad else "good"
            extra = {"tokens": s.tokens} if s.tokens is not None else {}
            first = add(kind="feedback", session_id=s.session_id, release_id=rid, outcome=outcome, **extra)
            if s.corrected:
                add(kind="correction", session_id=s.session_id, release_id=rid, outcome=outcome, corrects=first)
    log.dir.mkdir(parents=True, exist_ok=True)
    with log.public_path.open("a", encoding="utf-8") as fh:
        fh.write("".join(line + "\n" for line in lines))
    return served


def traffic(rng: random.Random, n: int, prefix: str, served_canary: set[str] | None = None, *,
            live_bad: float = 0.2, canary_bad: float | None = None, tool_error: float = 0.1,
            correction: float = 0.05, feedback: float = 1.0) -> list[Session]:
    """`n` sessions; a session's outcome rates depend on whether `served_canary` holds it (the
    caller decides arms by serving first: see `split`)."""
    out = []
    for i in range(n):
        sid = f"{prefix}-{i}"
        in_canary = served_canary is not None and sid in served_canary
        bad_rate = canary_bad if in_canary and canary_bad is not None else live_bad
        has_feedback = rng.random() < feedback
        out.append(Session(sid, bad=(rng.random() < bad_rate) if has_feedback else None,
                           tool_error=rng.random() < tool_error, corrected=has_feedback and rng.random() < correction))
    return out


def canary_sessions(ws: Workspace, ids: list[str], skill: str = SKILL) -> set[str]:
    """The ids the open canary of `skill` serves (real bucketing)."""
    store = Store(ws.db_path)
    try:
        c = Canaries(store)
        canary = c.open_of(skill)
        assert canary is not None
        return {sid for sid in ids if c.served(skill, sid)[0].release_id == canary.release_id}  # type: ignore[union-attr]
    finally:
        store.close()
