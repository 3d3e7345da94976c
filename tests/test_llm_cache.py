"""The LLM response cache shared by threads and processes (evolve workers, `--all` batches).

One connection shared by a run's worker threads failed under a second process with "database is
locked" (a write on a connection whose other thread still had a read open, after another process had
written: a stale WAL snapshot, which SQLite's busy handler does not retry) and with DatabaseError("not
an error"). These tests run real processes and threads on one real SQLite file.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

from skillforge.llm.cache import LLMCache

ROOT = Path(__file__).resolve().parents[1]
THREADS, OPS = 4, 800

CHILD = textwrap.dedent(f"""
    import json, logging, random, sys, threading
    from pathlib import Path
    from skillforge.llm.cache import LLMCache
    warnings = []
    class Catch(logging.Handler):
        def emit(self, record): warnings.append(record.getMessage())
    logging.getLogger("skillforge.llm.cache").addHandler(Catch())
    cache, tag, errors = LLMCache(Path(sys.argv[1])), sys.argv[2], []
    def work(i):
        rnd = random.Random(i)
        try:
            for k in range({OPS}):
                cache.put(f"{{tag}}-{{i}}-{{k}}", "judge", "m", {{"value": "x" * rnd.randint(10, 4000)}})
                got = cache.get(f"{{tag}}-{{i}}-{{k // 2}}")
                assert got is not None and got["value"].startswith("x"), got
        except Exception as e:
            errors.append(repr(e))
    threads = [threading.Thread(target=work, args=(i,)) for i in range({THREADS})]
    [t.start() for t in threads]; [t.join() for t in threads]
    print(json.dumps({{"errors": errors, "warnings": warnings, "skipped": cache.skipped_writes}}))
""")


def test_processes_and_threads_share_one_cache_file_without_losing_a_write(tmp_path):
    db = tmp_path / "llm_cache.db"
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(db), tag], stdout=subprocess.PIPE, text=True, env=env)
             for tag in ("a", "b", "c")]
    reports = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert reports == [{"errors": [], "warnings": [], "skipped": 0}] * 3
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM responses").fetchone()[0] == 3 * THREADS * OPS


def test_a_write_that_cannot_get_the_lock_is_skipped_not_raised(tmp_path, monkeypatch, caplog):
    import skillforge.llm.cache as cache_mod

    monkeypatch.setattr(cache_mod, "BUSY_TIMEOUT_S", 0.05)
    cache = LLMCache(tmp_path / "c.db")
    cache.put("before", "judge", "m", {"value": 1})
    holder = sqlite3.connect(tmp_path / "c.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock past the busy timeout
    try:
        cache.put("during", "judge", "m", {"value": 2})
        assert cache.get("before") == {"value": 1}  # reads still work under a writer (WAL)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert cache.skipped_writes == 1
    assert "write skipped" in caplog.text
    assert cache.get("during") is None
    cache.put("after", "judge", "m", {"value": 3})
    assert cache.get("after") == {"value": 3} and len(cache) == 2


def test_each_thread_uses_its_own_connection_and_close_closes_them_all(tmp_path):
    cache = LLMCache(tmp_path / "c.db")
    seen: list[int] = []

    def use(i: int) -> None:  # not keyed by get_ident(): a finished thread's ident is reused
        cache.put(f"k{i}", "r", "m", {"value": 0})
        seen.append(id(cache._conn()))

    threads = [threading.Thread(target=use, args=(i,)) for i in range(3)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert len(set(seen)) == 3 and len(cache) == 3
    cache.close()
    assert cache._conns == []
