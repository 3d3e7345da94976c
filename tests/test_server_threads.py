"""The embedded server's thread count comes from what other processes use now, not from the 1-minute
load average, which still counts processes that have just finished (the demo's own steps)."""

from __future__ import annotations

import subprocess
import sys

from skillforge.llm import local_server as ls


def test_an_idle_box_gets_every_core_however_busy_the_last_minute_was(monkeypatch):
    monkeypatch.setattr(ls.os, "getloadavg", lambda: (1.6, 0.9, 0.4))  # the demo's routing steps just ended
    monkeypatch.setattr(ls, "others_busy_now", lambda: 0.05, raising=False)  # nothing else runs now
    assert ls.default_threads() == min(2, ls.cores())


def test_a_busy_box_gets_one_thread_and_without_proc_stat_the_load_average_decides(monkeypatch):
    monkeypatch.setattr(ls, "others_busy_now", lambda: 1.9)
    assert ls.default_threads() == 1
    monkeypatch.setattr(ls, "others_busy_now", lambda: None)
    monkeypatch.setattr(ls.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert ls.default_threads() == ls.cores()
    monkeypatch.setattr(ls.os, "getloadavg", lambda: (50.0, 50.0, 50.0))
    assert ls.default_threads() == 1


def test_others_busy_now_sees_another_process_spinning():
    spin = subprocess.Popen([sys.executable, "-c", "import time\nt = time.time() + 5\nwhile time.time() < t: pass"])
    try:
        busy = ls.others_busy_now(0.5)
    finally:
        spin.kill()
        spin.wait()
    assert busy is not None and busy >= 0.3  # one spinning process (shared with whatever else runs on the box)
