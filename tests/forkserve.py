"""Fork servers for tests: a process that has imported what its jobs need runs each job as a fresh
fork of itself, so a job is a real process (its own pid, exit status, SIGKILL) without paying
Python's start-up and imports again. Used by cli_fork_child.py (`skillforge` commands: conftest's
`run_cli`, cli_fork.py's `ForkCLI`) and evolve_child.py --serve (test_evolve_durability's kills).

Protocol: the server prints "ready", then reads one JSON line per job from stdin and prints one
back: {"code": exit code (-9 when SIGKILLed), "stdout": ..., "stderr": ..., "timed_out": bool}.
"""

from __future__ import annotations

import atexit
import gc
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

Job = dict[str, object]


# ---- the server side (in the child script) ----------------------------------------------------------
def exit_as_python_does(code: int) -> NoReturn:
    """A Python process's end, less the teardown of every module (in a fork that would copy the
    server's whole heap page by page, the better part of a second): wait for non-daemon threads,
    run the atexit handlers, flush, exit with `code`."""
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def run_as_script(body: Callable[[], object]) -> NoReturn:
    """Run `body` as a script's top level would, then end the process: SystemExit's code (None 0, an
    int itself, anything else printed and 1), an uncaught exception's traceback and 1."""
    code = 1
    try:
        body()
        code = 0
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            code = e.code or 0
        else:
            print(e.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - an uncaught exception: its traceback, exit 1, as for a script
        sys.excepthook(*sys.exc_info())
    exit_as_python_does(code)


def _in_fork(job: Job, out: str, err: str, run_job: Callable[[Job], NoReturn]) -> NoReturn:
    """Point stdin at /dev/null and stdout/stderr at the files, then hand over to `run_job`."""
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        sys.stdin = sys.__stdin__ = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - the process's own stdin
        for fd, path in ((1, out), (2, err)):
            f = os.open(path, os.O_WRONLY | os.O_TRUNC)
            os.dup2(f, fd)
            os.close(f)
        run_job(job)
    finally:
        os._exit(70)  # run_job never returns; this only ends a fork that failed before it ran


def _wait(pid: int, timeout_s: float | None) -> tuple[int, bool]:
    """The fork's exit status, killing it after `timeout_s` (a pidfd to wait on, where the kernel has one)."""
    timed_out = False
    if timeout_s:
        try:
            fd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            fd = None
        if fd is not None:
            try:
                ready, _, _ = select.select([fd], [], [], timeout_s)
            finally:
                os.close(fd)
            if not ready:
                os.kill(pid, signal.SIGKILL)
                timed_out = True
    _, status = os.waitpid(pid, 0)
    return status, timed_out


def serve(run_job: Callable[[Job], NoReturn]) -> None:
    """The server loop: each job line runs as `run_job(job)` in a fork (`timeout_s` in the job: killed
    after that long). Call it once everything the jobs need is imported."""
    gc.freeze()  # the imported modules' objects: never scanned by a fork's collections (no copy on write)
    print("ready", flush=True)
    for line in sys.stdin:
        job = json.loads(line)
        fd_out, out = tempfile.mkstemp(prefix="sf-fork-out-")
        fd_err, err = tempfile.mkstemp(prefix="sf-fork-err-")
        os.close(fd_out)
        os.close(fd_err)
        pid = os.fork()
        if pid == 0:
            _in_fork(job, out, err, run_job)
        status, timed_out = _wait(pid, job.get("timeout_s"))  # type: ignore[arg-type]
        with open(out, encoding="utf-8") as o, open(err, encoding="utf-8") as e:
            reply = {"code": os.waitstatus_to_exitcode(status), "stdout": o.read(), "stderr": e.read(),
                     "timed_out": timed_out}
        os.unlink(out)
        os.unlink(err)
        print(json.dumps(reply), flush=True)


# ---- the client side (in the test process) ----------------------------------------------------------
class ForkServer:
    """A started fork server (`argv`: its command line, `env`: its environment). `send` a job and
    collect its `result` later, or `run` one and wait."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env)
        ready = self.proc.stdout.readline()  # type: ignore[union-attr]
        assert ready.strip() == "ready", f"the fork server {Path(argv[-1]).name} did not start: {self.proc.stderr.read()}"  # type: ignore[union-attr]

    def alive(self) -> bool:
        return self.proc.poll() is None

    def send(self, job: Job) -> None:
        self.proc.stdin.write(json.dumps(job) + "\n")  # type: ignore[union-attr]
        self.proc.stdin.flush()  # type: ignore[union-attr]

    def result(self) -> dict[str, object]:
        line = self.proc.stdout.readline()  # type: ignore[union-attr]
        assert line, f"the fork server died: {self.proc.stderr.read()}"  # type: ignore[union-attr]
        return json.loads(line)

    def run(self, job: Job) -> dict[str, object]:
        self.send(job)
        return self.result()

    def close(self) -> None:
        if self.alive():
            self.proc.stdin.close()  # type: ignore[union-attr]
            self.proc.wait(timeout=60)
