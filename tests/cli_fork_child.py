"""Child process of tests/cli_fork.py and conftest.run_cli: a fork server for `skillforge` commands.

It imports the CLI once, then reads one JSON line per command from stdin: {"args": [...], "env":
{...} (added to its own environment) or "full_env": {...} (the whole environment), "cwd": ...,
"argv0": ..., "delay_ms": N, "timeout_s": T}. For each it forks; the fork points stdin at
/dev/null and stdout and stderr at files, moves to `cwd`, takes the environment, sleeps `delay_ms`
and runs what the console script runs, `sys.exit(main())`, then ends as any Python process ends
(the exit code SystemExit carries, non-daemon threads waited for, atexit handlers run, streams
flushed; only the teardown of the modules is skipped): an uncaught exception prints its traceback
and exits 1, as it would for a user. A fork
still running after `timeout_s` is killed. This process then prints one JSON line back: {"code":
..., "stdout": ..., "stderr": ..., "timed_out": bool}. Every command is a real process with a real
exit code, without paying Python's start-up and the CLI's imports each time.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import json
import os
import select
import signal
import sys
import tempfile
import threading
import time

from skillforge.cli import main as cli  # imported once, before any fork
from skillforge.runners.evolve import Runner  # noqa: F401  (the graph and model layers too)

PRELOAD = ("numpy", "skillforge.library.canary", "skillforge.library.importer", "skillforge.library.registry",
           "skillforge.library.releases", "skillforge.library.split", "skillforge.rules.prune",
           "skillforge.runners.evaluate", "skillforge.runners.rejudge", "skillforge.skill.export")
"""What the commands import when they run: the CLI imports them inside its commands, for its start-up
time (tests/test_cli_startup.py); here they are imported once, so that no fork imports them again."""
for _module in PRELOAD:
    importlib.import_module(_module)


def _child(job: dict[str, object], out: str, err: str) -> None:
    """In the fork: become the command. Never returns."""
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdin = sys.__stdin__ = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - the process's own stdin
    for fd, path in ((1, out), (2, err)):
        f = os.open(path, os.O_WRONLY | os.O_TRUNC)
        os.dup2(f, fd)
        os.close(f)
    if job.get("cwd"):
        os.chdir(str(job["cwd"]))
    if job.get("full_env") is not None:
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in dict(job["full_env"]).items()})  # type: ignore[arg-type]
    os.environ.update({str(k): str(v) for k, v in dict(job.get("env") or {}).items()})  # type: ignore[arg-type]
    time.sleep(float(job.get("delay_ms") or 0) / 1000)  # type: ignore[arg-type]
    sys.argv = [str(job.get("argv0") or "skillforge"), *[str(a) for a in job["args"]]]  # type: ignore[union-attr]
    code: int = 1
    try:
        sys.exit(cli.main())
    except SystemExit as e:  # what the interpreter makes of it: None 0, an int itself, else printed and 1
        if e.code is None or isinstance(e.code, int):
            code = e.code or 0
        else:
            print(e.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - an uncaught exception: its traceback, exit 1, as for the script
        sys.excepthook(*sys.exc_info())
    # A Python process's end, less the teardown of every module (in a fork that would copy the
    # server's whole heap page by page, the better part of a second): wait for non-daemon threads,
    # run the atexit handlers, flush.
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


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


def serve() -> None:
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
            _child(job, out, err)
        status, timed_out = _wait(pid, job.get("timeout_s"))
        with open(out, encoding="utf-8") as o, open(err, encoding="utf-8") as e:
            reply = {"code": os.waitstatus_to_exitcode(status), "stdout": o.read(), "stderr": e.read(),
                     "timed_out": timed_out}
        os.unlink(out)
        os.unlink(err)
        print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    serve()
