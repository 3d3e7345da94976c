"""The shared auto-routing cache (routing.autocache): a second workspace with the same skills takes
the first one's auto head and thresholds instead of training them; an entry that was tampered with,
moved under another key or made for other skills is not taken (trained again, and replaced); a
changed skill misses; SKILLFORGE_CACHE_DIR=off or a cache that cannot be written only costs the training.
Whether a workspace trained is counted at compute_auto_head / compute_auto, never timed."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from helpers import FakeEmbedder
from skillforge.config import init_workspace
from skillforge.routing import autocache, defaults
from skillforge.routing.autocache import MANIFEST, cache_root
from skillforge.routing.head import ScoringHead
from skillforge.routing.index import AUTO_FILE, AUTO_HEAD_FILE, AUTO_HEAD_THRESHOLDS_FILE, RouteIndex, routing_dir
from skillforge.rules.thresholds import RouteThresholds, Scorer
from skillforge.state.skill import SkillFile

DOMAINS = ["invoice", "weather", "flight", "hotel", "recipe", "taxi", "stock", "email", "calendar", "package"]


def library(extra: str = "") -> list[SkillFile]:
    return [SkillFile(name=f"{d}-helper", description=f"Everything about {d} requests.", keywords=[],
                      examples=[f"help me with my {d}", f"a question about {d} please", f"{d} status now{extra}"],
                      body="## Overview\nx\n") for d in DOMAINS]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder of this test's own (not the session's)."""
    monkeypatch.setenv("SKILLFORGE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "auto-routing"


@pytest.fixture
def trained(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many times the auto head was trained and the cosine auto thresholds computed."""
    counts = {"head": 0, "cosine": 0}

    def counting(kind: str, fn: Callable) -> Callable:
        def wrapped(*args, **kwargs):  # passed through
            counts[kind] += 1
            return fn(*args, **kwargs)
        return wrapped

    monkeypatch.setattr(defaults, "compute_auto_head", counting("head", defaults.compute_auto_head))
    monkeypatch.setattr(defaults, "compute_auto", counting("cosine", defaults.compute_auto))
    return counts


def entries(cache: Path) -> list[Path]:
    return sorted(p for p in cache.iterdir() if not p.name.startswith("."))


def test_a_second_workspace_with_the_same_skills_takes_the_cached_head(tmp_path: Path, cache: Path,
                                                                       trained: dict[str, int]) -> None:
    emb = FakeEmbedder()
    first = RouteIndex.for_workspace(init_workspace(tmp_path / "a"), library(), emb)
    assert trained["head"] == 1 and first.scorer is Scorer.HEAD and first.thresholds.origin == "auto"
    [entry] = entries(cache)
    assert sorted(p.name for p in entry.iterdir()) == sorted([MANIFEST, AUTO_HEAD_FILE, AUTO_HEAD_THRESHOLDS_FILE])
    ws = init_workspace(tmp_path / "b")
    second = RouteIndex.for_workspace(ws, library(), emb)
    assert trained["head"] == 1  # not trained again
    assert second.thresholds == first.thresholds and second.head.labels == first.head.labels
    np.testing.assert_array_equal(second.head.weights, first.head.weights)
    folder = routing_dir(ws, emb.name)  # copied into the workspace, which routing reads from then on
    assert (folder / AUTO_HEAD_FILE).is_file() and (folder / AUTO_HEAD_THRESHOLDS_FILE).is_file()
    shutil.rmtree(cache)
    assert RouteIndex.for_workspace(ws, library(), emb).thresholds == first.thresholds and trained["head"] == 1
    # the cosine auto thresholds (no head wanted) are kept the same way, under an entry of their own
    RouteIndex.for_workspace(init_workspace(tmp_path / "c"), library(), emb, use_head=False)
    cosine = RouteIndex.for_workspace(init_workspace(tmp_path / "d"), library(), emb, use_head=False)
    assert trained["cosine"] == 1 and cosine.thresholds.origin == "auto" and cosine.thresholds.scorer is Scorer.COSINE
    assert [sorted(p.name for p in e.iterdir()) for e in entries(cache)] == [[MANIFEST, AUTO_FILE]]


def test_a_tampered_entry_is_trained_again_and_replaced(tmp_path: Path, cache: Path, trained: dict[str, int]) -> None:
    emb = FakeEmbedder()
    good = RouteIndex.for_workspace(init_workspace(tmp_path / "a"), library(), emb).thresholds
    [entry] = entries(cache)
    cached = entry / AUTO_HEAD_THRESHOLDS_FILE
    original = cached.read_bytes()
    cached.write_text(cached.read_text(encoding="utf-8").replace(f'"high": {good.high}', '"high": 0.0001'),
                      encoding="utf-8")
    assert cached.read_bytes() != original
    ws = init_workspace(tmp_path / "b")
    again = RouteIndex.for_workspace(ws, library(), emb).thresholds
    assert trained["head"] == 2 and again == good and again.high != 0.0001
    assert cached.read_bytes() == original  # the entry was replaced by what was trained
    assert json.loads((routing_dir(ws, emb.name) / AUTO_HEAD_THRESHOLDS_FILE).read_text())["high"] == good.high


def test_an_entry_is_taken_only_if_its_manifest_and_contents_are_for_these_skills(tmp_path: Path, cache: Path) -> None:
    """Each way an entry can be wrong, read directly (no training needed to tell): the manifest, the
    digests, the thresholds inside, the head's labels and shape."""
    emb = FakeEmbedder()
    index = RouteIndex.for_workspace(init_workspace(tmp_path / "a"), library(), emb)
    ws = init_workspace(tmp_path / "b")
    [entry] = entries(cache)
    files = {n: (entry / n).read_bytes() for n in (MANIFEST, AUTO_HEAD_FILE, AUTO_HEAD_THRESHOLDS_FILE)}
    manifest = json.loads(files[MANIFEST])
    th = RouteThresholds.model_validate_json(files[AUTO_HEAD_THRESHOLDS_FILE])

    def taken() -> bool:
        got = defaults._cached(ws, index, Scorer.HEAD)
        return got is not None and got[1] == index.thresholds

    def restore() -> None:
        for name, data in files.items():
            (entry / name).write_bytes(data)

    def vouched(name: str, data: bytes, **fields: object) -> None:
        """`name` replaced by `data`, with a manifest that vouches for it (digest, and `fields`)."""
        (entry / name).write_bytes(data)
        digests = {**manifest["files"], name: hashlib.sha256(data).hexdigest()}
        (entry / MANIFEST).write_text(json.dumps({**manifest, **fields, "files": digests}), encoding="utf-8")

    assert taken()
    (entry / AUTO_HEAD_FILE).write_bytes(files[AUTO_HEAD_FILE][:-40])  # truncated: its digest
    assert not taken()
    restore()
    (entry / MANIFEST).write_text(json.dumps({**manifest, "stamp": "another"}), encoding="utf-8")
    assert not taken()
    restore()
    (entry / MANIFEST).write_text(json.dumps({**manifest, "key": "another"}), encoding="utf-8")  # moved here
    assert not taken()
    restore()
    (entry / MANIFEST).write_text("{not json", encoding="utf-8")
    assert not taken()
    restore()
    (entry / AUTO_HEAD_THRESHOLDS_FILE).unlink()
    assert not taken()
    restore()
    vouched(AUTO_HEAD_THRESHOLDS_FILE, th.model_copy(update={"stamp": "0" * 32}).model_dump_json().encode())
    assert not taken()  # the thresholds inside were made for other skills
    restore()
    vouched(AUTO_HEAD_THRESHOLDS_FILE, th.model_copy(update={"embedder": "other"}).model_dump_json().encode())
    assert not taken()
    restore()
    head = index.head
    fewer = ScoringHead(head.labels[:-1], head.weights[:, :-1], head.bias[:-1], head.embedder)  # a skill dropped
    vouched(AUTO_HEAD_FILE, fewer.to_bytes())
    assert not taken()  # a head without one of the skills
    restore()
    narrow = ScoringHead(head.labels, head.weights[:8], head.bias, head.embedder)
    vouched(AUTO_HEAD_FILE, narrow.to_bytes())
    assert not taken()  # a head for vectors of another size
    restore()
    vouched(AUTO_HEAD_FILE, b"not an npz file")
    assert not taken()
    restore()
    assert taken()


def test_a_changed_skill_misses_the_cache(tmp_path: Path, cache: Path, trained: dict[str, int]) -> None:
    emb = FakeEmbedder()
    before = RouteIndex.for_workspace(init_workspace(tmp_path / "a"), library(), emb).thresholds
    skills = library()
    skills[3] = skills[3].model_copy(update={"examples": [*skills[3].examples, "book a room near the beach"]})
    after = RouteIndex.for_workspace(init_workspace(tmp_path / "b"), skills, emb).thresholds
    assert trained["head"] == 2 and after.stamp != before.stamp and after.cases == before.cases + 1
    assert len(entries(cache)) == 2


def test_off_keeps_nothing_and_an_unwritable_cache_only_costs_the_training(tmp_path: Path, trained: dict[str, int],
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    emb = FakeEmbedder()
    monkeypatch.setenv("SKILLFORGE_CACHE_DIR", "off")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # nor in the default folder
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert cache_root() is None
    a = RouteIndex.for_workspace(init_workspace(tmp_path / "a"), library(), emb).thresholds
    assert trained["head"] == 1 and not (tmp_path / "home").exists()
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x", encoding="utf-8")
    monkeypatch.setenv("SKILLFORGE_CACHE_DIR", str(blocker))  # auto-routing/ cannot be made under a file
    c = RouteIndex.for_workspace(init_workspace(tmp_path / "c"), library(), emb)
    assert trained["head"] == 2 and c.thresholds == a and c.scorer is Scorer.HEAD


def test_the_cache_folder_follows_the_environment(tmp_path: Path) -> None:
    assert cache_root({"SKILLFORGE_CACHE_DIR": str(tmp_path)}) == tmp_path / "auto-routing"
    assert cache_root({"SKILLFORGE_CACHE_DIR": "OFF"}) is None
    assert cache_root({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "skillforge" / "auto-routing"
    assert cache_root({"XDG_CACHE_HOME": "relative/not/used"}) == Path.home() / ".cache" / "skillforge" / "auto-routing"
    assert cache_root({}) == Path.home() / ".cache" / "skillforge" / "auto-routing"
    v = np.ones((3, 4), dtype=np.float32)
    assert autocache.entry_key("s", v) == autocache.entry_key("s", v.copy())
    assert autocache.entry_key("s", v) != autocache.entry_key("s", v * 0.5)  # same stamp, other vectors
    assert autocache.entry_key("s", v) != autocache.entry_key("t", v)
