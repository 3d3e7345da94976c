"""Runs `skillforge canary promote|rollback SKILL -w WS` in this process and SIGKILLs itself right
after one named step of the transition (used by tests/test_canary_kills.py).

usage: python canary_kill_child.py WORKSPACE SKILL ACTION POINT
  ACTION  promote | rollback
  POINT   decided  after the decision (PROMOTING / ROLLING_BACK) is committed
          logged   after the evaluations.jsonl line is written
          restored after the live bytes are back in the folder (rollback only)
"""

from __future__ import annotations

import os
import signal
import sys

import skillforge.library.canary as driver
from skillforge.library.canaries import Canaries


def die_after(owner: object, name: str) -> None:
    real = getattr(owner, name)

    def wrapped(*args, **kwargs):
        out = real(*args, **kwargs)
        print("dying", name, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
        return out
    setattr(owner, name, wrapped)


def main() -> None:
    ws, skill, action, point = sys.argv[1:5]
    if point == "decided":
        die_after(Canaries, "claim")  # the decision (Canaries.decide is claim without its answer)
    elif point == "logged":
        die_after(driver.CanaryDriver, "_log_once")
    elif point == "restored":
        die_after(driver, "restore_after_abandon")
    else:
        raise SystemExit(f"unknown point {point}")
    from skillforge.cli.main import main as cli

    sys.argv = ["skillforge", "canary", action, skill, "-w", ws]
    cli()


if __name__ == "__main__":
    main()
