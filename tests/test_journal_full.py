"""A log write the disk refuses is a named error, leaves no half line, and the run goes on after
(issue 21: "disk full during evolve (OSError 28 at append_jsonl)" was an internal error, exit 70).

The full disk is real: a 64 KiB tmpfs in a private mount namespace (`unshare -rm`, skipped where
user namespaces are off), RLIMIT_FSIZE in a child process (EFBIG), and /dev/full (ENOSPC)."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SKILLFORGE_EXE, cli_env, flat
from evolve_fakes import SKILL, World, new_workspace, seed_failures

from skillforge.errors import NotWritable
from skillforge.journal import append_jsonl, read_jsonl

RECORD = {"kind": "trace", "answer": "x" * 3000}
"""About 3 KB: a tmpfs page is 4 KiB, so records keep straddling the point where the disk is full."""

# The child appends RECORD until the disk refuses, then checks the file from the inside.
CHILD = r"""
import json, sys
from pathlib import Path
from skillforge.errors import NotWritable
from skillforge.journal import append_jsonl, read_jsonl
path, n = Path(sys.argv[1]), 0
record = json.loads(sys.argv[2])
try:
    while n < 1000:
        append_jsonl(path, {**record, "n": n})
        n += 1
    error = None
except NotWritable as e:
    error = str(e)
raw = path.read_bytes()
print(json.dumps({"appended": n, "error": error, "size": len(raw), "ends_with_newline": raw.endswith(b"\n"),
                  "lines": [json.loads(line)["n"] for line in raw.splitlines()], "read": len(read_jsonl(path))}))
"""


def unshare_works() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=4k tmpfs /tmp"],
                           capture_output=True, timeout=30)
    return probe.returncode == 0


def small_tmpfs(folder: Path, size: str = "64k", seed: Path | None = None) -> list[str]:
    """A command-line prefix: run the rest with a fresh tmpfs of `size` mounted on `folder` (holding
    a copy of `seed`'s files), in a mount namespace of its own (nothing outside sees it)."""
    if not unshare_works():
        pytest.skip("needs `unshare -rm` (user + mount namespaces) to mount a small tmpfs")
    copy = f' && cp -a "{seed}/." "$0"' if seed is not None else ""
    return ["unshare", "-rm", "sh", "-c", f'mount -t tmpfs -o size={size} tmpfs "$0"{copy} && exec "$@"', str(folder)]


def fill(prefix: list[str], path: Path, **kw: object) -> dict[str, object]:
    proc = subprocess.run([*prefix, sys.executable, "-c", CHILD, str(path), json.dumps(RECORD)],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "OMP_NUM_THREADS": "1"},
                          **kw)  # type: ignore[call-overload]
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout)


def limit_file_size() -> None:  # in the child, before exec
    resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))


@pytest.mark.parametrize("how", ["tmpfs", "ulimit"])
def test_a_full_disk_is_a_named_error_and_no_half_line_is_left(tmp_path, how):
    folder = tmp_path / "runs"
    folder.mkdir()
    if how == "tmpfs":
        got = fill(small_tmpfs(folder), folder / "traces.jsonl")
        said = "No space left on device; the disk is full: free some space"
    else:
        got = fill([], folder / "traces.jsonl", preexec_fn=limit_file_size)
        said = "File too large; the file is larger than this process may write"
    assert got["error"] is not None and 0 < got["appended"] < 1000, got
    assert said in got["error"] and str(folder / "traces.jsonl") in got["error"]
    assert "skillforge evolve --resume RUN" in got["error"]
    # every record that was appended is whole, and nothing of the refused one is left
    assert got["ends_with_newline"] and got["lines"] == list(range(got["appended"]))
    assert got["read"] == got["appended"]
    if how == "ulimit":  # the file outlives the child: later appends (no limit) go on cleanly
        append_jsonl(folder / "traces.jsonl", {"n": "after"})
        assert [r["n"] for r in read_jsonl(folder / "traces.jsonl")] == [*range(got["appended"]), "after"]


def test_dev_full_is_a_named_error(tmp_path):
    log = tmp_path / "router.jsonl"
    log.symlink_to("/dev/full")
    with pytest.raises(NotWritable, match="router.jsonl: No space left on device; the disk is full"):
        append_jsonl(log, {"event": "route"})


def test_a_torn_last_line_breaks_no_reader_and_no_later_record(tmp_path, caplog):
    log = tmp_path / "evaluations.jsonl"
    append_jsonl(log, {"n": 1})
    with log.open("ab") as fh:
        fh.write(b'{"n": 2, "answer": "cut \xe4\xb8')  # a writer killed mid-record, mid-character
    assert [r["n"] for r in read_jsonl(log)] == [1] and "torn write" in caplog.text
    append_jsonl(log, {"n": 3})
    assert [r["n"] for r in read_jsonl(log)] == [1, 3]
    assert log.read_bytes().count(b"\n") == 3


def test_evolve_on_a_full_disk_stops_with_a_named_error_and_resumes(tmp_path):
    """The issue's case through the CLI: the traces folder fills up during evolve. It used to be
    `internal error: OSError` (exit 70); now it is exit 2 naming the file and what to do, and
    `evolve --resume` (the disk freed) finishes the run exactly as an unhindered run would."""
    from world_server import WorldServer

    ws = new_workspace(tmp_path / "ws")
    seed_failures(ws, World(lambda r: []).llm())
    traces, saved = ws.traces_dir, tmp_path / "seed-traces"
    shutil.copytree(traces, saved)
    room = sum(p.stat().st_size for p in saved.iterdir()) // 1024 + 8  # the seed's traces and a little more
    mount = small_tmpfs(traces, f"{room}k", seed=saved)
    with WorldServer() as srv:
        env = {"SKILLFORGE_LLM_BASE_URL": srv.base_url, "SKILLFORGE_LLM_MODEL": "world",
               "SKILLFORGE_JUDGE_MODEL": "world-judge", "SKILLFORGE_LLM_MAX_RETRIES": "0", "OMP_NUM_THREADS": "1"}
        w = ["-w", str(ws.root)]
        full = subprocess.run([*mount, str(SKILLFORGE_EXE), "evolve", SKILL, "--json", "--max-rounds", "1", *w],
                              capture_output=True, text=True, env=cli_env(env), timeout=300)
        said = flat(full.stderr)
        assert full.returncode == 2, full.stdout + full.stderr
        assert "internal error" not in said and "No space left on device; the disk is full" in said
        assert f"{traces}/" in said and "evolve --resume" in said
        listed = subprocess.run([str(SKILLFORGE_EXE), "runs", "list", "--json", *w], capture_output=True, text=True,
                                env=cli_env(env), timeout=120)
        [run_id] = [r["run_id"] for r in json.loads(listed.stdout)]  # the stopped run is listed
        resumed = subprocess.run([str(SKILLFORGE_EXE), "evolve", "--resume", run_id, "--json", *w],
                                 capture_output=True, text=True, env=cli_env(env), timeout=300)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    out = json.loads(resumed.stdout)
    assert out["status"] == "PENDING_REVIEW" and out["selection"]["improvement"] == "WIN", out
    for trace in traces.glob("*.jsonl"):  # what the resumed run wrote is whole
        assert trace.read_bytes().endswith(b"\n") and read_jsonl(trace)


def test_the_evaluate_trace_meta_file_on_a_full_disk_is_a_named_error(tmp_path):
    """runs/traces/<run>.meta.json (what `evaluate --rejudge` reads back) was written with a bare
    write_text: a full disk there was an OSError (exit 70). No temp file is left either."""
    code = ("import sys; from pathlib import Path; from skillforge.config import init_workspace; "
            "from skillforge.evaluation.stored import write_meta; from skillforge.errors import NotWritable\n"
            "ws = init_workspace(Path(sys.argv[1]))\n"
            "try:\n    write_meta(ws.traces_dir, {'run_id': 'run-1', 'candidate': 'x' * 50000})\n"
            "except NotWritable as e:\n    print(e)")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "ws")], capture_output=True, text=True,
                          timeout=120, preexec_fn=limit_file_size)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "run-1.meta.json: File too large" in proc.stdout
    assert list((tmp_path / "ws" / "runs" / "traces").iterdir()) == []
