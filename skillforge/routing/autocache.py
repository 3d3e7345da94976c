"""A cache of the auto routing files shared by every workspace of this user, keyed by what they are computed from.

routing.defaults trains the auto head (and measures the auto thresholds) at a workspace's first
route: ~2.5 s at 10 skills, ~20 s at 200. They depend only on the embedder, the skills' cards,
examples and keywords, the out-of-scope bank and the method (the auto stamp), and on the skills'
vectors; a second workspace with the same skills (a copy, a fresh checkout, a test's workspace)
would train the same head again. So each result is also kept once under a key of those inputs:
`<cache>/auto-routing/<key>/`, where <cache> is $SKILLFORGE_CACHE_DIR, else $XDG_CACHE_HOME/skillforge,
else ~/.cache/skillforge (SKILLFORGE_CACHE_DIR=off keeps nothing).

An entry is written whole (a temporary folder renamed into place) with a manifest of its key, stamp
and each file's SHA-256. It is read only through `read_entry`, which returns the files' bytes when
the manifest, the key and every digest match; routing.defaults then checks what the files say (the
stamp, the embedder, the scorer, the head's shape and labels) before copying them into the
workspace's runs/routing/<embedder>/, which stays what routing reads. Anything that does not match
is ignored, computed again and the entry replaced. A cache folder that cannot be read or written
only costs the computation (logged), never a route.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import uuid
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

CACHE_ENV = "SKILLFORGE_CACHE_DIR"
OFF = "off"
SUBDIR = "auto-routing"
MANIFEST = "manifest.json"


def cache_base(env: dict[str, str] | None = None) -> Path | None:
    """The user's skillforge cache folder (also routing.vectorshare's), or None when
    SKILLFORGE_CACHE_DIR is `off`."""
    env = os.environ if env is None else env
    value = env.get(CACHE_ENV, "").strip()
    if value.lower() == OFF:
        return None
    if value:
        return Path(value).expanduser()
    xdg = env.get("XDG_CACHE_HOME", "").strip()
    try:
        base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    except RuntimeError:  # no home folder to be found: nothing is kept
        return None
    return base / "skillforge"


def cache_root(env: dict[str, str] | None = None) -> Path | None:
    """The auto-routing cache folder, or None when SKILLFORGE_CACHE_DIR is `off`."""
    base = cache_base(env)
    return None if base is None else base / SUBDIR


def entry_key(stamp: str, vectors: np.ndarray) -> str:
    """The key of an entry: the auto stamp and a digest of the skills' vectors (two embedders that
    share a name, say a model path whose files were replaced, never share an entry)."""
    h = hashlib.sha256(f"{stamp}\0{vectors.dtype.str}\0{vectors.shape}\0".encode())
    h.update(np.ascontiguousarray(vectors).tobytes())
    return h.hexdigest()[:32]


def read_entry(key: str, stamp: str, names: tuple[str, ...]) -> dict[str, bytes] | None:
    """The bytes of each file in `names` of the entry `key`, if it holds exactly what its manifest
    vouches for (key, stamp, every digest); None if there is no such entry or it does not match."""
    root = cache_root()
    if root is None:
        return None
    folder = root / key
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        if not isinstance(manifest, dict) or manifest.get("key") != key or manifest.get("stamp") != stamp:
            raise ValueError("its manifest is for another key or stamp")
        digests = manifest.get("files")
        if not isinstance(digests, dict) or set(digests) != set(names):
            raise ValueError("its manifest lists other files")
        out = {name: (folder / name).read_bytes() for name in names}
    except FileNotFoundError:
        return None
    except (OSError, ValueError, UnicodeDecodeError) as e:
        log.warning("auto-routing cache entry %s is unusable (%s); computing it again", folder, e)
        return None
    bad = [n for n, data in out.items() if hashlib.sha256(data).hexdigest() != digests[n]]
    if bad:
        log.warning("auto-routing cache entry %s: %s do not match the manifest; computing them again", folder,
                    ", ".join(bad))
        return None
    return out


def write_entry(key: str, stamp: str, files: dict[str, bytes]) -> None:
    """Keep `files` as the entry `key`: written in a temporary folder, then renamed into place (an
    entry already there is replaced). A failure is logged and otherwise ignored."""
    root = cache_root()
    if root is None:
        return
    tag = f"{os.getpid()}.{uuid.uuid4().hex[:8]}"
    tmp = root / f".tmp.{key}.{tag}"
    folder = root / key
    try:
        tmp.mkdir(parents=True)
        for name, data in files.items():
            (tmp / name).write_bytes(data)
        manifest = {"key": key, "stamp": stamp, "files": {n: hashlib.sha256(d).hexdigest() for n, d in files.items()}}
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2), encoding="utf-8")
        if folder.exists():  # one that did not match: moved aside first (a rename cannot replace a full folder)
            old = root / f".old.{key}.{tag}"
            folder.rename(old)
            shutil.rmtree(old, ignore_errors=True)
        tmp.rename(folder)
    except OSError as e:  # a read-only or full disk, or another writer placed the same entry first
        if not (folder / MANIFEST).exists():
            log.warning("auto-routing cache %s not written (%s)", folder, e)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
