"""kill -9 during 1 000 appends from 2 processes: every acknowledged event (a seq the writer printed
after `append` returned) is in the log, seqs are unique across both files and strictly increasing
in each, at most one torn line per file is left and it is reported, and the next append goes on."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from skillforge.config import init_workspace
from skillforge.events import EventLog
from skillforge.state.events import Event, EventKind, FeedbackOutcome

REPO = Path(__file__).resolve().parents[1]
WRITER = """
import sys
from skillforge.config import Workspace
from skillforge.events import EventLog
from skillforge.state.events import Event, EventKind, FeedbackOutcome
log, name, n = EventLog(Workspace(__import__('pathlib').Path(sys.argv[1]))), sys.argv[2], int(sys.argv[3])
for i in range(n):
    e = log.append(Event(kind=EventKind.FEEDBACK, session_id=f"{name}-{i}", skill="k", release_id="r",
                         outcome=FeedbackOutcome.GOOD, comment="x" * (i % 50), private=i % 4 == 0))
    sys.stdout.write(f"{e.seq}\\n")
    sys.stdout.flush()
"""
PER_WRITER = 500
KILL_AFTER = 300
"""Acknowledged appends (both writers together) before both are killed: mid-run."""


def _writers(root: Path) -> list[subprocess.Popen[str]]:
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return [subprocess.Popen([sys.executable, "-c", WRITER, str(root), name, str(PER_WRITER)], stdout=subprocess.PIPE,
                             text=True, env=env) for name in ("a", "b")]


def test_kill_9_loses_no_acknowledged_event(tmp_path):
    ws = init_workspace(tmp_path / "ws")
    procs = _writers(ws.root)
    acked: list[int] = []
    os.set_blocking(procs[0].stdout.fileno(), False)
    os.set_blocking(procs[1].stdout.fileno(), False)
    deadline = time.monotonic() + 120
    while len(acked) < KILL_AFTER and time.monotonic() < deadline and any(p.poll() is None for p in procs):
        for p in procs:
            line = p.stdout.readline()
            while line:
                acked.append(int(line))
                line = p.stdout.readline()
        time.sleep(0.001)
    for p in procs:
        os.kill(p.pid, signal.SIGKILL)
    for p in procs:
        p.wait()
        acked += [int(x) for x in p.stdout.read().split()]  # printed before the kill, read after
    assert acked, "the writers printed nothing"
    log = EventLog(ws)
    public, private = log.read_public().events, _private_events(log)
    for events in (public, private):
        seqs = [e.seq for e in events]
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), "strictly increasing in each file"
    all_seqs = [e.seq for e in public + private]
    assert len(set(all_seqs)) == len(all_seqs), "unique across both files"
    assert set(acked) <= set(all_seqs), f"lost acknowledged events: {sorted(set(acked) - set(all_seqs))[:10]}"
    assert not any(p.returncode == 0 for p in procs), "both writers were killed mid-run"
    counts = log.counts()
    for path in (log.public_path, log.private_path):
        assert _bad_lines(path) <= 1
    assert counts.skipped_lines == _bad_lines(log.public_path) + _bad_lines(log.private_path)
    print(f"\nkill -9 after {len(acked)} acknowledged appends: {len(all_seqs)} events in the log "
          f"({counts.public} public, {counts.private} private), {counts.skipped_lines} torn lines, max seq {max(all_seqs)}")
    nxt = log.append(Event(kind=EventKind.FEEDBACK, session_id="after", skill="k", release_id="r",
                           outcome=FeedbackOutcome.BAD))
    assert nxt.seq == max(all_seqs) + 1
    assert log.read_public().events[-1] == nxt


def _private_events(log: EventLog) -> list[Event]:
    out = []
    for line in log.private_path.read_bytes().split(b"\n"):
        try:
            out.append(Event.model_validate(json.loads(line)))
        except ValueError:
            continue
    return out


def _bad_lines(path: Path) -> int:
    n = 0
    for line in path.read_bytes().split(b"\n"):
        if line.strip():
            try:
                json.loads(line)
            except ValueError:
                n += 1
    return n
