"""`skillforge` commands as real processes, forked from one that has already imported the CLI
(tests/cli_fork_child.py): the same entry point, exit codes and output as `run_cli`, at a fraction
of its cost (Python's start-up and imports are paid once per server, not per command)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import _checked, cli_env

CHILD = Path(__file__).with_name("cli_fork_child.py")


class ForkCLI:
    """One fork server. `run` a command and wait; or `send` one and collect its `result` later."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        full = {**cli_env(env), "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "NO_COLOR": "1",
                "COLUMNS": "400", "OMP_NUM_THREADS": "1"}
        self.proc = subprocess.Popen([sys.executable, str(CHILD)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=full)
        ready = self.proc.stdout.readline()  # type: ignore[union-attr]
        assert ready.strip() == "ready", self.proc.stderr.read()  # type: ignore[union-attr]

    def send(self, args: list[str], env: dict[str, str] | None = None, delay_ms: int = 0) -> None:
        self.proc.stdin.write(json.dumps({"args": args, "env": env or {}, "delay_ms": delay_ms}) + "\n")  # type: ignore[union-attr]
        self.proc.stdin.flush()  # type: ignore[union-attr]

    def result(self, ok: int | None = None) -> subprocess.CompletedProcess[str]:
        line = self.proc.stdout.readline()  # type: ignore[union-attr]
        assert line, self.proc.stderr.read()  # type: ignore[union-attr]
        r = json.loads(line)
        return _checked(subprocess.CompletedProcess(["skillforge"], r["code"], r["stdout"], r["stderr"]), ok)

    def run(self, args: list[str], env: dict[str, str] | None = None, *, ok: int | None = 0) -> subprocess.CompletedProcess[str]:
        self.send(args, env)
        return self.result(ok)

    def close(self) -> None:
        self.proc.stdin.close()  # type: ignore[union-attr]
        self.proc.wait(timeout=60)
