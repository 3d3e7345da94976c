"""`runs prune` archives old router log lines (library/logarchive.py): on a real workspace, with the
console script; the lines moved and kept are byte-identical to what was there, `skills health`
reads the same, an open canary keeps its loads, routes written during a prune are all kept (an
appender that waited for the lock writes into the new file), and a prune SIGKILLed at each step
leaves every line in exactly one place."""

from __future__ import annotations

import gzip
import json
import multiprocessing
import os
import signal
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from canary_world import canary_workspace
from conftest import run_cli
from evolve_fakes import SKILL, new_workspace

from skillforge.journal import append_jsonl, read_jsonl
from skillforge.library.health import archived_uses
from skillforge.library.logarchive import archive_router_log
from skillforge.rules.health import UseEvent, UseKind, latest_uses
from skillforge.rules.prune import line_goes, log_horizon
from skillforge.runners.prune import prune_runs

NOW = datetime.now(UTC)


def stamp(t: datetime) -> str:
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def route(t: datetime, chosen: str | None, source: str = "route", query: str = "q") -> bytes:
    return (json.dumps({"ts": stamp(t), "event": "route", "source": source, "query": query, "chosen": chosen},
                       ensure_ascii=False) + "\n").encode()


def use(t: datetime, name: str) -> bytes:
    return (json.dumps({"ts": stamp(t), "event": "use_skill", "name": name}) + "\n").encode()


def old_and_new(days: int = 60) -> list[bytes]:
    """A log of 60 days: a route hit of SKILL a day (the last 40 days ago), use_skill loads of it,
    `route eval` lines, NONE decisions, a line that is not JSON and one without a time."""
    lines = []
    for d in range(days, 0, -1):
        t = NOW - timedelta(days=d)
        lines.append(route(t, SKILL if d >= 40 else None, query=f"ask {d} 打车"))
        if d % 7 == 0:
            lines.append(use(t, SKILL))
        lines.append(route(t, SKILL, source="route eval"))
        if d == 50:
            lines += [b"{torn line\n", b'{"event": "route", "chosen": "x"}\n']
    return lines


def write_log(path: Path, lines: list[bytes]) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = b"".join(lines)
    path.write_bytes(data)
    return data


def archived_lines(runs: Path) -> list[bytes]:
    out = []
    for f in sorted((runs / "archive").glob("router-*.jsonl.gz")):
        out += gzip.decompress(f.read_bytes()).splitlines(keepends=True)
    return out


def health(ws) -> dict[str, object]:  # noqa: ANN001
    rows = json.loads(run_cli(["skills", "health", "--window-days", "30", "--json", "-w", str(ws.root)]).stdout)
    return {r["name"]: {k: r[k] for k in ("route_hits", "use_skill", "last_used")} for r in rows["skills"]}


# ---- the rules ------------------------------------------------------------------------------

def test_log_horizon_is_the_cutoff_or_an_earlier_open_canary() -> None:
    cut = NOW - timedelta(days=30)
    assert log_horizon(cut, []) == cut
    assert log_horizon(cut, [NOW - timedelta(days=40)]) == NOW - timedelta(days=40)
    assert log_horizon(cut, [NOW - timedelta(days=1)]) == cut
    assert log_horizon(cut, [NOW - timedelta(days=1), None]) is None  # an unreadable start: nothing moves
    assert line_goes(cut - timedelta(seconds=1), cut) and not line_goes(cut, cut)
    assert not line_goes(None, cut) and not line_goes(cut - timedelta(days=1), None)


def test_latest_uses_keeps_the_newest_of_each_skill_and_kind() -> None:
    t = NOW - timedelta(days=100)
    events = [UseEvent("a", t, UseKind.ROUTE), UseEvent("a", t + timedelta(days=2), UseKind.ROUTE),
              UseEvent("a", t + timedelta(days=1), UseKind.USE_SKILL), UseEvent("b", t, UseKind.ROUTE)]
    assert latest_uses(events) == [UseEvent("a", t + timedelta(days=2), UseKind.ROUTE),
                                   UseEvent("a", t + timedelta(days=1), UseKind.USE_SKILL),
                                   UseEvent("b", t, UseKind.ROUTE)]
    assert latest_uses([]) == []


# ---- the workspace ---------------------------------------------------------------------------

def test_prune_moves_old_lines_byte_for_byte_and_health_reads_the_same(tmp_path: Path) -> None:
    ws = new_workspace(tmp_path / "ws")
    lines = old_and_new()
    original = write_log(ws.router_log, lines)
    before = health(ws)
    assert before[SKILL]["last_used"] is not None and before[SKILL]["route_hits"] == 0

    dry = json.loads(run_cli(["runs", "prune", "--older-than", "30", "--dry-run", "--json", "-w", str(ws.root)]).stdout)
    old = [x for x in lines if b'"ts"' in x and x.startswith(b'{"ts"')
           and datetime.fromisoformat(json.loads(x)["ts"]) < NOW - timedelta(days=30)]
    assert dry["router_log"]["lines"] == len(old) and dry["router_log"]["archive"] is None
    assert ws.router_log.read_bytes() == original and not (ws.runs_dir / "archive").exists()

    done = json.loads(run_cli(["runs", "prune", "--older-than", "30", "--json", "-w", str(ws.root)]).stdout)
    assert done["router_log"]["lines"] == len(old) and done["router_log"]["kept_lines"] == len(lines) - len(old)
    assert archived_lines(ws.runs_dir) == old  # byte for byte, in their order
    kept = ws.router_log.read_bytes().splitlines(keepends=True)
    assert kept == [x for x in lines if x not in old]  # the torn and untimed lines stay
    assert health(ws) == before  # last_used comes from runs/archive/router-uses.json
    uses, horizon = archived_uses(ws)
    assert {u.kind for u in uses} == {UseKind.ROUTE, UseKind.USE_SKILL} and horizon is not None

    again = json.loads(run_cli(["runs", "prune", "--older-than", "30", "--json", "-w", str(ws.root)]).stdout)
    assert again["router_log"]["lines"] == 0 and len(list((ws.runs_dir / "archive").glob("*.gz"))) == 1
    text = run_cli(["runs", "prune", "--older-than", "0", "-w", str(ws.root)]).stdout
    assert "runs/router.jsonl:" in text and "moved to runs/archive/router-" in text
    after = health(ws)  # a window reaching before the archived lines sees only the newest of them
    assert after[SKILL]["last_used"] == before[SKILL]["last_used"] and after[SKILL]["use_skill"] == 1
    ws.router_log.write_bytes(route(NOW, None))  # only what came after
    note = run_cli(["skills", "suggest", "--window-days", "90", "-w", str(ws.root)]).stderr
    assert "were moved to runs/archive/ by `runs prune`" in " ".join(note.split())
    assert len(archived_lines(ws.runs_dir)) + len(read_jsonl(ws.router_log)) == len(lines) - 1  # the torn one


def test_an_open_canary_keeps_the_lines_since_it_began(tmp_path: Path) -> None:
    ws, _, _ = canary_workspace(tmp_path / "ws")
    lines = [route(NOW + timedelta(days=d), "news-digest") for d in (-20, -10, -1)]
    lines += [use(NOW + timedelta(days=d, seconds=5), "news-digest") for d in (1, 5, 9)]
    write_log(ws.router_log, lines)
    later = NOW + timedelta(days=60)  # the cutoff (later - 30 days) is after the canary's start
    report = prune_runs(ws, 30, now=later)
    assert report.router_log is not None and report.router_log.lines == 3  # only those before it began
    assert ws.router_log.read_bytes() == b"".join(lines[3:])


def test_an_appender_that_waited_for_the_lock_writes_into_the_new_file(tmp_path: Path) -> None:
    import fcntl

    path = tmp_path / "runs" / "router.jsonl"
    write_log(path, [route(NOW, None)])
    held = os.open(path, os.O_RDWR)
    fcntl.flock(held, fcntl.LOCK_EX)  # what a prune holds while it copies the tail
    writer = threading.Thread(target=append_jsonl, args=(path, {"event": "route", "query": "late"}))
    writer.start()
    writer.join(0.3)
    assert writer.is_alive()  # waiting for the lock
    new = tmp_path / "runs" / ".compact"
    new.write_bytes(b"")
    os.replace(new, path)
    os.close(held)
    writer.join(10)
    assert [x["query"] for x in read_jsonl(path)] == ["late"]


def _killed_prune(root: str, nth: int) -> None:
    """A child process: the prune, SIGKILLed at its `nth` os.replace (1: saving the uses, 2: the
    log replaced, 3: the archive given its name)."""
    from skillforge.config import Workspace

    calls = [0]
    real = os.replace

    def replace(src, dst):  # noqa: ANN001, ANN202
        calls[0] += 1
        if calls[0] == nth:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(src, dst)

    os.replace = replace
    archive_router_log(Workspace.open(root), NOW - timedelta(days=30))


@pytest.mark.parametrize("nth", [1, 2, 3])
def test_a_prune_killed_at_each_step_loses_and_doubles_nothing(tmp_path: Path, nth: int) -> None:
    ws = new_workspace(tmp_path / "ws")
    lines = old_and_new()
    write_log(ws.router_log, lines)
    child = multiprocessing.get_context("fork").Process(target=_killed_prune, args=(str(ws.root), nth))
    child.start()
    child.join(60)
    assert child.exitcode == -signal.SIGKILL
    run_cli(["runs", "prune", "--older-than", "30", "-w", str(ws.root)])
    moved, kept = archived_lines(ws.runs_dir), ws.router_log.read_bytes().splitlines(keepends=True)
    assert sorted(moved + kept) == sorted(lines)  # each line exactly once
    assert len(moved) == sum(1 for x in lines if x.startswith(b'{"ts"')
                             and datetime.fromisoformat(json.loads(x)["ts"]) < NOW - timedelta(days=30))
    assert not list((ws.runs_dir / "archive").glob(".*.pending")) and not (ws.runs_dir / ".router.jsonl.compact").exists()
    assert {u.kind for u in archived_uses(ws)[0]} == {UseKind.ROUTE, UseKind.USE_SKILL}


def _append_until(path: str, stop, written) -> None:  # noqa: ANN001 - multiprocessing Event and Value
    n = 0
    while not stop.is_set() or n < 50:
        append_jsonl(Path(path), {"event": "route", "source": "mcp", "query": f"live {n}", "chosen": None})
        n += 1
    written.value = n


def test_routes_written_during_the_prune_are_all_kept(tmp_path: Path) -> None:
    ws = new_workspace(tmp_path / "ws")
    lines = old_and_new(days=400) * 40  # ~50 000 lines: the prune takes long enough to overlap
    write_log(ws.router_log, lines)
    ctx = multiprocessing.get_context("fork")
    stop, written = ctx.Event(), ctx.Value("i", 0)
    writer = ctx.Process(target=_append_until, args=(str(ws.router_log), stop, written))
    writer.start()
    try:
        report = archive_router_log(ws, NOW - timedelta(days=30))
    finally:
        stop.set()
        writer.join(60)
    assert writer.exitcode == 0 and report.lines > 0
    live = [x.get("query") for x in read_jsonl(ws.router_log)]
    appended = [q for q in live if isinstance(q, str) and q.startswith("live ")]
    assert appended == [f"live {i}" for i in range(written.value)]  # every one, once, in order
    moved = archived_lines(ws.runs_dir)
    assert len(moved) + len(live) + 40 == len(lines) + written.value  # the 40 torn lines are skipped by read_jsonl
