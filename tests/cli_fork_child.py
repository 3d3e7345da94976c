"""Child process of tests/cli_fork.py: a fork server for `skillforge` commands.

It imports the CLI once, then reads one JSON line per command from stdin: {"args": [...], "env":
{...}, "delay_ms": N}. For each it forks; the fork sets `env`, sleeps `delay_ms`, runs the console
script's `main()` with those arguments (stdout and stderr to files) and exits with its code. This
process then prints one JSON line back: {"code": ..., "stdout": ..., "stderr": ...}. Every command
is a real process with a real exit code, without paying Python's start-up each time (and two of
these, fed at the same moment, answer one review at nearly the same time).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time

from skillforge.cli import main as cli  # imported once, before any fork
from skillforge.runners.evolve import Runner  # noqa: F401  (the graph and model layers too)


def _run(job: dict[str, object], out: str, err: str) -> None:
    """In the fork: run one command and exit with its code."""
    code = 70
    try:
        os.dup2(os.open(out, os.O_WRONLY | os.O_CREAT), 1)
        os.dup2(os.open(err, os.O_WRONLY | os.O_CREAT), 2)
        os.environ.update({str(k): str(v) for k, v in dict(job.get("env") or {}).items()})
        time.sleep(float(job.get("delay_ms") or 0) / 1000)
        sys.argv = ["skillforge", *[str(a) for a in job["args"]]]  # type: ignore[union-attr]
        try:
            cli.main()
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def serve() -> None:
    print("ready", flush=True)
    for line in sys.stdin:
        job = json.loads(line)
        with tempfile.TemporaryDirectory() as tmp:
            out, err = os.path.join(tmp, "out"), os.path.join(tmp, "err")
            pid = os.fork()
            if pid == 0:
                _run(job, out, err)
            _, status = os.waitpid(pid, 0)
            with open(out, encoding="utf-8") as o, open(err, encoding="utf-8") as e:
                print(json.dumps({"code": os.waitstatus_to_exitcode(status), "stdout": o.read(),
                                  "stderr": e.read()}), flush=True)


if __name__ == "__main__":
    serve()
