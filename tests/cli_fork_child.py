"""Child process of tests/cli_fork.py and conftest.run_cli: a fork server for `skillforge` commands
(tests/forkserve.py has the server loop and the protocol).

It imports the CLI once. Each job: {"args": [...], "env": {...} (added to its own environment) or
"full_env": {...} (the whole environment), "cwd": ..., "argv0": ..., "delay_ms": N, "timeout_s": T}.
Its fork moves to `cwd`, takes the environment, sleeps `delay_ms` and runs what the console script
runs, `sys.exit(main())`, then ends as any Python process ends (forkserve.run_as_script): the exit
code SystemExit carries, or an uncaught exception's traceback and 1. Every command is a real process
with a real exit code, without paying Python's start-up and the CLI's imports each time.
"""

from __future__ import annotations

import importlib
import os
import sys
import time
from typing import NoReturn

from forkserve import Job, run_as_script, serve

from skillforge.cli import main as cli  # imported once, before any fork
from skillforge.runners.evolve import Runner  # noqa: F401  (the graph and model layers too)

PRELOAD = ("numpy", "skillforge.library.canary", "skillforge.library.importer", "skillforge.library.registry",
           "skillforge.library.releases", "skillforge.library.split", "skillforge.rules.prune",
           "skillforge.runners.evaluate", "skillforge.runners.rejudge", "skillforge.skill.export")
"""What the commands import when they run: the CLI imports them inside its commands, for its start-up
time (tests/test_cli_startup.py); here they are imported once, so that no fork imports them again."""
for _module in PRELOAD:
    importlib.import_module(_module)


def command(job: Job) -> NoReturn:
    """In the fork (stdin, stdout and stderr already set): become the command."""
    if job.get("cwd"):
        os.chdir(str(job["cwd"]))
    if job.get("full_env") is not None:
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in dict(job["full_env"]).items()})  # type: ignore[arg-type]
    os.environ.update({str(k): str(v) for k, v in dict(job.get("env") or {}).items()})  # type: ignore[arg-type]
    time.sleep(float(job.get("delay_ms") or 0) / 1000)  # type: ignore[arg-type]
    sys.argv = [str(job.get("argv0") or "skillforge"), *[str(a) for a in job["args"]]]  # type: ignore[union-attr]
    run_as_script(lambda: sys.exit(cli.main()))


if __name__ == "__main__":
    serve(command)
