"""Child process of the review race test: a fork server for `skillforge review ...` commands.

It imports the CLI once, then reads one JSON line per command from stdin: {"args": [...], "delay_ms":
N}. For each it forks; the fork sleeps `delay_ms`, runs the console script's `main()` with those
arguments (stdout and stderr to files) and exits with its code. The parent of the fork prints one
JSON line back: {"code": ..., "stdout": ..., "stderr": ...}. Two of these, fed at the same moment,
answer one review at (nearly) the same time without paying Python's start-up in the race.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time

from skillforge.cli import main as cli  # noqa: F401  (imported once, before any fork)
from skillforge.cli.evolve_run import Runner  # noqa: F401


def serve() -> None:
    print("ready", flush=True)
    for line in sys.stdin:
        job = json.loads(line)
        with tempfile.TemporaryDirectory() as tmp:
            out, err = os.path.join(tmp, "out"), os.path.join(tmp, "err")
            pid = os.fork()
            if pid == 0:
                code = 70
                try:
                    os.dup2(os.open(out, os.O_WRONLY | os.O_CREAT), 1)
                    os.dup2(os.open(err, os.O_WRONLY | os.O_CREAT), 2)
                    time.sleep(job["delay_ms"] / 1000)
                    sys.argv = ["skillforge", *job["args"]]
                    try:
                        cli.main()
                        code = 0
                    except SystemExit as e:
                        code = e.code if isinstance(e.code, int) else 1
                finally:
                    sys.stdout.flush()
                    sys.stderr.flush()
                    os._exit(code)
            _, status = os.waitpid(pid, 0)
            code = os.waitstatus_to_exitcode(status)
            with open(out, encoding="utf-8") as o, open(err, encoding="utf-8") as e:
                print(json.dumps({"code": code, "stdout": o.read(), "stderr": e.read()}), flush=True)


if __name__ == "__main__":
    serve()
