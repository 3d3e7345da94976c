"""The response cache: SQLite in the workspace (runs/llm_cache.db).

The key hashes everything that can change an answer: role, endpoint, model, the messages, the
tools or output schema, and the generation parameters. Only successful, validated answers are
stored; an error is never cached.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from pathlib import Path

from skillforge.errors import StoreError

CACHE_FILE = "llm_cache.db"


RUN_NONCE = re.compile(r"sfn-[0-9a-f]{12}")
"""Evaluation runs stamp fixture responses with a fresh nonce (rules/provenance.py). It is masked in
cache keys, so a re-run of the same evaluation is served from the cache; a replayed answer that
repeats the old nonce is then caught by the provenance check as stale."""


def cache_key(**parts: object) -> str:
    """sha256 of the canonical JSON of the parts (sorted keys, no whitespace), nonces masked."""
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(RUN_NONCE.sub("sfn-<nonce>", blob).encode("utf-8")).hexdigest()


class LLMCache:
    """key -> JSON answer. Safe across processes (WAL, busy timeout)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.conn = sqlite3.connect(self.path, isolation_level=None, timeout=15, check_same_thread=False)
            self.conn.execute("PRAGMA journal_mode = WAL")
            self.conn.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, role TEXT NOT NULL, "
                              "model TEXT NOT NULL, answer_json TEXT NOT NULL CHECK (json_valid(answer_json)), "
                              "created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')))")
        except sqlite3.DatabaseError as e:
            raise StoreError(f"{self.path}: cannot open the LLM cache: {e}") from None

    def get(self, key: str) -> dict[str, object] | None:
        row = self.conn.execute("SELECT answer_json FROM responses WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, role: str, model: str, answer: dict[str, object]) -> None:
        self.conn.execute("INSERT OR REPLACE INTO responses(key, role, model, answer_json) VALUES (?, ?, ?, ?)",
                          (key, role, model, json.dumps(answer, ensure_ascii=False)))

    def __len__(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        self.conn.close()
