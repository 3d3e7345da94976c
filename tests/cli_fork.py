"""`skillforge` commands as real processes, forked from one that has already imported the CLI
(tests/cli_fork_child.py): the same entry point, exit codes and output as `run_cli`, at a fraction
of its cost (Python's start-up and imports are paid once per server, not per command)."""

from __future__ import annotations

import subprocess

from conftest import _checked, cli_env, cli_fork_server


class ForkCLI:
    """One fork server of its own (NO_COLOR, 400 columns). `run` a command and wait; or `send` one
    and collect its `result` later."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self.server = cli_fork_server({**cli_env(env), "NO_COLOR": "1", "COLUMNS": "400", "OMP_NUM_THREADS": "1"})

    def send(self, args: list[str], env: dict[str, str] | None = None, delay_ms: int = 0) -> None:
        self.server.send({"args": args, "env": env or {}, "delay_ms": delay_ms})

    def result(self, ok: int | None = None) -> subprocess.CompletedProcess[str]:
        r = self.server.result()
        return _checked(subprocess.CompletedProcess(["skillforge"], r["code"], r["stdout"], r["stderr"]), ok)  # type: ignore[arg-type]

    def run(self, args: list[str], env: dict[str, str] | None = None, *, ok: int | None = 0) -> subprocess.CompletedProcess[str]:
        self.send(args, env)
        return self.result(ok)

    def close(self) -> None:
        self.server.close()
