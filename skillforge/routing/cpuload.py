"""How many cores' worth of CPU other processes are using, for the query embedder's thread count.

Linux only: the busy time in /proc/stat minus this process's own CPU time, over a window of at
least `MIN_WINDOW_S` (the kernel counts /proc/stat in 10 ms ticks, so a shorter window is mostly
rounding). Before the first window is complete, the kernel's 1-minute load average (which
counts this process too, but a process that has not run for 0.2 s adds little to it). Elsewhere
the load is unknown (None).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

MIN_WINDOW_S = 0.2
"""The shortest window a load figure is computed over (20 ticks per core at 100 Hz)."""
PROC_STAT = Path("/proc/stat")
TICKS_PER_S = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0


@dataclass(frozen=True)
class CpuSample:
    wall: float
    """time.monotonic() when read."""
    busy_s: float
    """CPU seconds all cores have spent busy since boot (user, nice, system, irq, softirq, steal)."""
    own_s: float
    """CPU seconds this process has used (all of its threads)."""


def others_busy(before: CpuSample, after: CpuSample) -> float | None:
    """Cores' worth of CPU that other processes used between two samples; None for an empty
    window. Pure. Never negative (the kernel's tick counts and this process's precise time
    disagree by a tick or two)."""
    dt = after.wall - before.wall
    if dt <= 0:
        return None
    return max(0.0, (after.busy_s - before.busy_s) - (after.own_s - before.own_s)) / dt


def parse_stat(text: str, ticks_per_s: float) -> float | None:
    """Busy CPU seconds from the `cpu` line of /proc/stat; None if it is not there. Pure."""
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu" and len(fields) >= 9:
            try:
                user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[1:9])
            except ValueError:
                return None
            # guest time is already inside user and nice
            return (user + nice + system + irq + softirq + steal) / ticks_per_s
    return None


def read_sample() -> CpuSample | None:
    try:
        busy = parse_stat(PROC_STAT.read_text(), TICKS_PER_S)
    except (OSError, ValueError):
        return None
    return None if busy is None else CpuSample(time.monotonic(), busy, time.process_time())


def load_1min() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


class OtherLoad:
    """Reads how busy other processes keep the CPU, each time it is asked, from the latest
    complete window of at least MIN_WINDOW_S."""

    def __init__(self) -> None:
        self._base = read_sample()
        self._value: float | None = None

    def cores_busy(self) -> float | None:
        now = read_sample()
        if now is None or self._base is None:
            return None
        if now.wall - self._base.wall >= MIN_WINDOW_S:
            self._value = others_busy(self._base, now)
            self._base = now
        return load_1min() if self._value is None else self._value
