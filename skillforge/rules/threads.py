"""How many threads the embedded llama.cpp server gets. Pure, no I/O."""

from __future__ import annotations

import math

IDLE_ROUNDING = 0.5
"""A core counts as idle when the load leaves at least half of it free."""


def idle_threads(n_cores: int, load_1min: float) -> int:
    """Threads for llama.cpp: one per core that is idle (load rounded), at least 1. Pure.

    Measured on the 2-core reference box at load 7-9 (other processes running): 2 threads generated
    0.4-0.9 tokens/s (a 25-token reply took 30-60 s) against 8-9 tokens/s with 1 thread (3.5-4 s),
    because ggml's threads wait for each other at every step and one of them is always descheduled.
    On idle cores 2 threads are faster (a cold 1.3k-token prompt: 18 s against 32 s)."""
    return max(1, min(n_cores, math.floor(n_cores - load_1min + IDLE_ROUNDING)))
