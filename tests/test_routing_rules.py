"""Pure routing rules at their edges: keyword scores, threshold verdicts and calibration, the
scoring head, and the on-disk vector cache. No graph, no real embedder."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from skillforge.routing.embedding import VectorCache, normalise as normalise_rows
from skillforge.routing.head import NONE_LABEL, HeadError, ScoringHead, fit_head
from skillforge.rules.keywords import (NEGATIVE_WEIGHT, build_keyword_index, negative_terms, normalise,
                                       rule_decision, rule_scores)
from skillforge.rules.thresholds import (CORRECT, FALL_THROUGH, WRONG, EmbedCase, EmbedVerdict, RuleCase,
                                         calibrate_embed, calibrate_rule, embed_decision)


# ---- keywords ------------------------------------------------------------------------------
def _index(keywords: dict[str, list[str]], not_for: dict[str, list[str]] | None = None):
    return build_keyword_index(keywords, not_for or {})


def test_cjk_keyword_matches_as_substring() -> None:
    idx = _index({"weather": ["天气"], "other": ["股票"]})
    assert rule_scores("北京今天天气", idx) == {"weather": 1.0}
    assert rule_scores("天气", idx) == {"weather": 1.0}
    assert rule_scores("北京今天", idx) == {}


@pytest.mark.parametrize("query, hit", [
    ("rain", True), ("will it rain tomorrow", True), ("rains in spring", True), ("Rain?", True),
    ("train tickets", False), ("my brain hurts", False), ("raining", False), ("rainbow", False),
])
def test_latin_keyword_matches_on_word_boundaries(query: str, hit: bool) -> None:
    idx = _index({"weather": ["rain"]})
    assert (rule_scores(query, idx) == {"weather": 1.0}) is hit


def test_latin_keyword_es_plural() -> None:
    idx = _index({"post": ["box"]})
    assert rule_scores("two boxes", idx) == {"post": 1.0}
    assert rule_scores("boxer", idx) == {}


def test_nfkc_and_casefold() -> None:
    idx = _index({"air": ["PM2.5"]})
    assert normalise("ＰＭ２.５") == "pm2.5"
    assert rule_scores("ＰＭ２.５", idx) == {"air": 1.0}
    assert rule_scores("pm2.5 levels today", idx) == {"air": 1.0}
    assert rule_scores("PM2.5 LEVELS", idx) == {"air": 1.0}
    assert normalise("  Hello\t  WORLD \n") == "hello world"


def test_latin_keyword_next_to_cjk_characters_matches() -> None:
    idx = _index({"air": ["pm2.5", "aqi"]})
    assert rule_scores("北京现在PM2.5多少", idx) == {"air": 1.0}
    assert rule_scores("AQI指数高吗", idx) == {"air": 1.0}


def test_shared_keyword_weighs_one_over_owners() -> None:
    idx = _index({"a": ["shared", "alpha"], "b": ["shared"], "c": ["shared", "gamma"]})
    assert rule_scores("shared", idx) == pytest.approx({"a": 1 / 3, "b": 1 / 3, "c": 1 / 3}, abs=1e-6)
    scores = rule_scores("shared alpha", idx)
    assert list(scores) == ["a", "b", "c"]  # best first, then by name
    assert scores["a"] == pytest.approx(1 + 1 / 3, abs=1e-6)
    # duplicates in one skill's list count once, and do not count as extra owners
    idx = _index({"a": ["x", "X", "x"], "b": ["y"]})
    assert rule_scores("x", idx) == {"a": 1.0}


@pytest.mark.parametrize("phrase, terms", [
    (["air quality or PM2.5"], ["air quality", "pm2.5"]),
    (["rain, snow, wind"], ["rain", "snow", "wind"]),
    (["空气质量、雾霾或沙尘"], ["空气质量", "雾霾", "沙尘"]),
    (["flights or trains", "hotel、民宿"], ["flights", "trains", "hotel", "民宿"]),
    (["x or y", "a"], []),  # shorter than MIN_TERM_CHARS
    (["Temperature."], ["temperature"]),
])
def test_negative_terms_split(phrase: list[str], terms: list[str]) -> None:
    assert negative_terms(phrase) == terms


def test_negative_terms_are_unique() -> None:
    assert negative_terms(["smog or fog", "SMOG"]) == ["smog", "fog"]


def test_not_for_hit_lowers_the_score() -> None:
    idx = _index({"weather": ["weather", "forecast"], "air": ["air quality"]},
                 {"weather": ["air quality or PM2.5"], "air": ["temperature or rain forecast"]})
    assert rule_scores("weather forecast", idx) == {"weather": 2.0}
    lowered = rule_scores("weather forecast with pm2.5", idx)
    assert lowered["weather"] == pytest.approx(2.0 - NEGATIVE_WEIGHT)
    # a negative term alone never creates a score: only skills with a positive hit are scored
    assert "weather" not in rule_scores("pm2.5", idx)


def test_rule_scores_candidates_filter() -> None:
    idx = _index({"a": ["alpha", "common"], "b": ["beta", "common"], "c": ["common"]})
    assert set(rule_scores("alpha beta common", idx)) == {"a", "b", "c"}
    assert set(rule_scores("alpha beta common", idx, ["b", "c"])) == {"b", "c"}
    assert rule_scores("alpha", idx, ["b"]) == {}
    assert rule_scores("alpha", idx, []) == {}


@pytest.mark.parametrize("scores, margin, min_score, expected", [
    ({"a": 2.0, "b": 2.0}, 1.0, 1.0, None),           # tie
    ({"a": 2.0, "b": 2.0}, 0.5, 0.0, None),           # tie, small margin
    ({"a": 2.0, "b": 1.0}, 1.0, 1.0, "a"),            # lead exactly = margin
    ({"b": 1.0, "a": 2.0}, 1.0, 1.0, "a"),            # order of the mapping does not matter
    ({"a": 2.0, "b": 1.25}, 1.0, 1.0, None),          # lead below margin
    ({"a": 0.75}, 0.5, 1.0, None),                    # below min_score
    ({"a": 1.0}, 1.0, 1.0, "a"),                      # exactly min_score, lead over 0 = margin
    ({"a": 0.5}, 0.5, 0.5, "a"),
    ({}, 1.0, 1.0, None),                             # empty
    ({"a": 1.5, "b": -1.0}, 1.5, 1.0, "a"),           # a negative runner-up counts as 0
    ({"a": -0.5, "b": -1.0}, 0.25, -1.0, None),       # nothing positive to lead with
])
def test_rule_decision_edges(scores: dict[str, float], margin: float, min_score: float, expected: str | None) -> None:
    assert rule_decision(scores, margin, min_score) == expected


def test_rule_decision_lead_of_one_unique_keyword_with_a_keyword_shared_by_six() -> None:
    owners = {f"s{i}": ["shared"] for i in range(6)}
    owners["s0"] = ["shared", "unique"]
    scores = rule_scores("shared unique", _index(owners))
    assert rule_decision(scores, 1.0, 1.0) == "s0"


def test_rule_decision_on_real_scores() -> None:
    idx = _index({"weather": ["天气", "rain"], "air": ["空气质量", "pm2.5"]})
    assert rule_decision(rule_scores("明天北京天气怎么样，会 rain 吗", idx), 1.0, 1.0) == "weather"
    assert rule_decision(rule_scores("天气和空气质量", idx), 1.0, 1.0) is None


# ---- thresholds: the embed verdict -----------------------------------------------------------
@pytest.mark.parametrize("top1, top2, expected", [
    (0.25, 0.0, EmbedVerdict.UNSURE),     # top1 == low: not rejected
    (0.24, 0.0, EmbedVerdict.REJECT),     # below low
    (0.75, 0.5, EmbedVerdict.ACCEPT),     # top1 == high, lead == margin
    (0.75, 0.625, EmbedVerdict.UNSURE),   # top1 == high, lead below margin
    (0.74, 0.0, EmbedVerdict.UNSURE),     # just below high
    (1.0, 0.5, EmbedVerdict.ACCEPT),
    (-1.0, -1.0, EmbedVerdict.REJECT),
])
def test_embed_decision_boundaries(top1: float, top2: float, expected: EmbedVerdict) -> None:
    assert embed_decision(top1, top2, high=0.75, low=0.25, margin=0.25) is expected


def test_embed_decision_low_wins_over_high_when_they_cross() -> None:
    assert embed_decision(0.5, 0.0, high=0.4, low=0.6, margin=0.0) is EmbedVerdict.REJECT


# ---- thresholds: calibration ---------------------------------------------------------------
def _utility(cases: Sequence[EmbedCase], high: float, low: float, margin: float) -> float:
    total = 0.0
    for c in cases:
        verdict = embed_decision(c.top1, c.top2, high, low, margin)
        if verdict is EmbedVerdict.ACCEPT:
            total += CORRECT if c.top1_correct else WRONG
        elif verdict is EmbedVerdict.REJECT:
            total += WRONG if c.in_scope else CORRECT
        else:
            total += FALL_THROUGH
    return total


def _separable() -> list[EmbedCase]:
    rng = np.random.default_rng(7)
    cases = [EmbedCase(float(t), float(t) - 0.05 - float(rng.uniform(0, 0.03)), True, True)
             for t in rng.uniform(0.88, 0.96, 12)]
    cases += [EmbedCase(float(t), float(t) - 0.01, False, False) for t in rng.uniform(0.80, 0.84, 8)]
    return cases


def test_calibrate_embed_separable() -> None:
    cases = _separable()
    high, low, margin, utility = calibrate_embed(cases, (0.93, 0.80, 0.03))
    assert utility == len(cases)  # every in-scope query accepted, every out-of-scope one rejected
    max_out = max(c.top1 for c in cases if not c.in_scope)
    min_in = min(c.top1 for c in cases if c.in_scope)
    assert max_out < low <= min_in
    assert high <= min_in and low <= high
    assert _utility(cases, high, low, margin) == utility
    for c in cases:
        verdict = embed_decision(c.top1, c.top2, high, low, margin)
        assert verdict is (EmbedVerdict.ACCEPT if c.in_scope else EmbedVerdict.REJECT)


def test_calibrate_embed_prefers_fall_through_to_wrong() -> None:
    # two in-scope queries whose top-1 is wrong score above the correct one and lead by more:
    # any setting that accepts the correct one accepts both wrong ones, and rejecting them is wrong too
    cases = [EmbedCase(0.90, 0.85, True, True), EmbedCase(0.95, 0.85, False, True), EmbedCase(0.96, 0.86, False, True)]
    high, low, margin, utility = calibrate_embed(cases, (0.93, 0.80, 0.03))
    assert utility == 0.0
    for c in cases:
        assert embed_decision(c.top1, c.top2, high, low, margin) is EmbedVerdict.UNSURE
    # answering them all would have scored -1: the fit did not take it
    assert _utility(cases, 0.0, 0.0, 0.0) == -1.0


def test_calibrate_embed_empty_cases_keep_defaults() -> None:
    assert calibrate_embed([], (0.93, 0.80, 0.03)) == (0.93, 0.80, 0.03, 0.0)


def test_calibrate_embed_is_deterministic() -> None:
    cases = _separable() + [EmbedCase(0.9, 0.89, False, True), EmbedCase(0.87, 0.80, True, True)]
    assert calibrate_embed(cases, (0.93, 0.80, 0.03)) == calibrate_embed(list(cases), (0.93, 0.80, 0.03))


def test_calibrate_embed_single_case() -> None:
    high, low, margin, utility = calibrate_embed([EmbedCase(0.9, 0.8, True, True)], (0.93, 0.80, 0.03))
    assert utility == 1.0
    assert embed_decision(0.9, 0.8, high, low, margin) is EmbedVerdict.ACCEPT


def test_calibrate_rule_separable() -> None:
    cases = [RuleCase(3.0, 0.0, True), RuleCase(2.0, 0.0, True), RuleCase(2.5, 0.5, True),
             RuleCase(1.0, 0.5, False), RuleCase(1.5, 1.0, False)]
    margin, min_score, utility = calibrate_rule(cases, (1.0, 1.0))
    assert utility == 3.0
    assert margin > 0.5 and margin <= 2.0
    for c in cases:
        decided = rule_decision({"top": c.top, "second": c.second}, margin, min_score) is not None
        assert decided is c.top_correct


def test_calibrate_rule_prefers_fall_through_to_wrong() -> None:
    cases = [RuleCase(1.0, 0.0, True), RuleCase(3.0, 0.0, False), RuleCase(4.0, 0.0, False)]
    margin, min_score, utility = calibrate_rule(cases, (1.0, 1.0))
    assert utility == 0.0
    assert margin > 0
    for c in cases:
        assert rule_decision({"top": c.top, "second": c.second}, margin, min_score) is None


def test_calibrate_rule_empty_and_deterministic() -> None:
    assert calibrate_rule([], (1.0, 1.0)) == (1.0, 1.0, 0.0)
    cases = [RuleCase(2.0, 1.0, True), RuleCase(1.0, 1.0, False), RuleCase(1.5, 0.0, True), RuleCase(2.0, 0.5, False)]
    assert calibrate_rule(cases, (1.0, 1.0)) == calibrate_rule(list(cases), (1.0, 1.0))


# ---- the scoring head ----------------------------------------------------------------------
DIM = 16


def _clusters(n: int, seed: int) -> tuple[np.ndarray, list[str]]:
    centres = np.eye(DIM)[:3]
    rng = np.random.default_rng(seed)
    xs, ys = [], []
    for label, centre in zip("abc", centres, strict=True):
        xs.append(centre + rng.normal(0, 0.15, (n, DIM)))
        ys += [label] * n
    return normalise_rows(np.concatenate(xs)), ys


@pytest.fixture(scope="module")
def head() -> ScoringHead:
    x, y = _clusters(30, seed=1)
    rng = np.random.default_rng(2)
    far = normalise_rows(np.eye(DIM)[8] + rng.normal(0, 0.15, (30, DIM)))
    return fit_head(np.concatenate([x, far]), y + [NONE_LABEL] * 30, "fake-embedder", epochs=150)


def test_fit_head_separates_clusters(head: ScoringHead) -> None:
    x, y = _clusters(40, seed=99)  # held out
    pred = [max(head.skill_scores(v).items(), key=lambda kv: kv[1])[0] for v in x]
    accuracy = np.mean([p == t for p, t in zip(pred, y, strict=True)])
    assert accuracy >= 0.95
    assert head.labels == sorted(["a", "b", "c", NONE_LABEL])
    p = head.proba(x)
    assert p.shape == (len(x), 4) and np.allclose(p.sum(axis=1), 1.0, atol=1e-5)


def test_none_class_takes_far_away_points(head: ScoringHead) -> None:
    rng = np.random.default_rng(5)
    far = normalise_rows(np.eye(DIM)[8] + rng.normal(0, 0.15, (20, DIM)))
    for v in far:
        scores = head.skill_scores(v)
        assert set(scores) == {"a", "b", "c"}
        assert sum(scores.values()) < 0.5  # NONE holds the rest
    near = _clusters(5, seed=6)[0]
    assert all(sum(head.skill_scores(v).values()) > 0.5 for v in near)


def test_head_save_load_round_trip(head: ScoringHead, tmp_path: Path) -> None:
    path = tmp_path / "routing" / "head.npz"
    head.save(path)
    loaded = ScoringHead.load(path)
    assert loaded.labels == head.labels and loaded.embedder == "fake-embedder"
    x, _ = _clusters(3, seed=3)
    np.testing.assert_allclose(loaded.proba(x), head.proba(x), rtol=1e-6)


def test_head_load_junk_file_is_head_error(tmp_path: Path) -> None:
    path = tmp_path / "head.npz"
    path.write_bytes(b"this is not a numpy archive" * 10)
    with pytest.raises(HeadError, match="route fit"):
        ScoringHead.load(path)


def test_head_load_missing_array_is_head_error(tmp_path: Path) -> None:
    path = tmp_path / "head.npz"
    np.savez(path, labels=np.array(["a", "b"]), weights=np.zeros((4, 2)))
    with pytest.raises(HeadError):
        ScoringHead.load(path)


def test_head_load_wrong_shapes_is_head_error(tmp_path: Path) -> None:
    path = tmp_path / "head.npz"
    np.savez(path, labels=np.array(["a", "b"]), weights=np.zeros((4, 3)), bias=np.zeros(2), embedder=np.array("e"))
    with pytest.raises(HeadError, match="shapes"):
        ScoringHead.load(path)


@pytest.mark.parametrize("cut", ["half", "empty"])
def test_head_load_truncated_file_is_head_error(head: ScoringHead, tmp_path: Path, cut: str) -> None:
    path = tmp_path / "head.npz"
    head.save(path)
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2] if cut == "half" else b"")
    with pytest.raises(HeadError):
        ScoringHead.load(path)


def test_fit_head_single_class_is_head_error() -> None:
    x = normalise_rows(np.random.default_rng(0).normal(size=(5, DIM)))
    with pytest.raises(HeadError, match="two classes"):
        fit_head(x, ["a"] * 5, "e", epochs=2)
    with pytest.raises(HeadError):
        fit_head(x[:0], [], "e", epochs=2)


def test_fit_head_is_deterministic() -> None:
    x, y = _clusters(5, seed=4)
    h1, h2 = fit_head(x, y, "e", epochs=20), fit_head(x, y, "e", epochs=20)
    np.testing.assert_array_equal(h1.weights, h2.weights)
    np.testing.assert_array_equal(h1.bias, h2.bias)


# ---- the vector cache ----------------------------------------------------------------------
class CountingEmbedder:
    """Hashes each text to a deterministic unit vector and counts what it was asked to embed."""

    def __init__(self, name: str = "counting", dim: int = 8) -> None:
        self.name, self.dim = name, dim
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:self.dim], dtype=np.uint8).astype(np.float32) + 1
                for t in texts]
        return normalise_rows(np.array(rows, dtype=np.float32).reshape(len(texts), self.dim))

    @property
    def embedded(self) -> list[str]:
        return [t for call in self.calls for t in call]


TEXTS = ["北京今天天气", "what's the AQI", "book a train", "review this diff"]


def test_cache_second_embed_calls_embedder_zero_times(tmp_path: Path) -> None:
    emb = CountingEmbedder()
    cache = VectorCache(tmp_path / "vectors.db")
    first = cache.embed(emb, TEXTS)
    assert emb.embedded == TEXTS and first.shape == (4, 8)
    second = cache.embed(emb, TEXTS)
    assert len(emb.calls) == 1
    np.testing.assert_array_equal(first, second)
    cache.close()
    reopened = VectorCache(tmp_path / "vectors.db")  # persists across processes
    np.testing.assert_array_equal(reopened.embed(emb, list(reversed(TEXTS))), first[::-1])
    assert len(emb.calls) == 1


def test_cache_duplicate_texts_embedded_once(tmp_path: Path) -> None:
    emb = CountingEmbedder()
    out = VectorCache(tmp_path / "v.db").embed(emb, ["a", "b", "a"])
    assert emb.embedded == ["a", "b"]
    np.testing.assert_array_equal(out[0], out[2])
    assert VectorCache(tmp_path / "v2.db").embed(emb, []).shape == (0, 8)


def test_cache_changed_text_embeds_only_that_text(tmp_path: Path) -> None:
    emb = CountingEmbedder()
    cache = VectorCache(tmp_path / "vectors.db")
    cache.embed(emb, TEXTS)
    changed = [*TEXTS[:2], "book a train to Shanghai", TEXTS[3]]
    out = cache.embed(emb, changed)
    assert emb.calls[1:] == [["book a train to Shanghai"]]
    np.testing.assert_array_equal(out, emb.embed(changed))


def _set_blob(path: Path, text: str, blob: object) -> None:
    conn = sqlite3.connect(path)
    conn.execute("UPDATE vectors SET vec = ? WHERE text_sha = ?", (blob, hashlib.sha256(text.encode()).hexdigest()))
    conn.commit()
    conn.close()


@pytest.mark.parametrize("blob", [
    np.full(8, 3.0, dtype=np.float32).tobytes(),         # right size, not unit length
    np.full(8, np.nan, dtype=np.float32).tobytes(),      # not finite
    np.ones(4, dtype=np.float32).tobytes(),              # wrong size
    "not even bytes",                                    # a TEXT value
], ids=["not-unit", "nan", "short", "text"])
def test_cache_corrupt_row_is_dropped_and_reembedded(tmp_path: Path, blob: object) -> None:
    emb = CountingEmbedder()
    path = tmp_path / "vectors.db"
    cache = VectorCache(path)
    expected = cache.embed(emb, TEXTS)
    _set_blob(path, TEXTS[1], blob)
    out = cache.embed(emb, TEXTS)
    assert emb.calls[1:] == [[TEXTS[1]]]
    np.testing.assert_allclose(out, expected)
    cache.embed(emb, TEXTS)  # repaired in place
    assert len(emb.calls) == 2


def test_cache_garbage_blob_is_dropped_and_reembedded(tmp_path: Path) -> None:
    emb = CountingEmbedder()
    path = tmp_path / "vectors.db"
    cache = VectorCache(path)
    expected = cache.embed(emb, TEXTS)
    _set_blob(path, TEXTS[0], b"garbage")
    np.testing.assert_allclose(cache.embed(emb, TEXTS), expected)
    assert emb.calls[1:] == [[TEXTS[0]]]


def test_cache_corrupt_db_file_is_rebuilt(tmp_path: Path) -> None:
    emb = CountingEmbedder()
    path = tmp_path / "vectors.db"
    cache = VectorCache(path)
    expected = cache.embed(emb, TEXTS)
    cache.close()
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    path.write_bytes(b"\x00junk, not sqlite\xff" * 512)
    rebuilt = VectorCache(path)
    np.testing.assert_allclose(rebuilt.embed(emb, TEXTS), expected)
    assert emb.calls[1:] == [TEXTS]
    rebuilt.embed(emb, TEXTS)
    assert len(emb.calls) == 2
    assert sqlite3.connect(path).execute("SELECT count(*) FROM vectors").fetchone()[0] == 4


def test_cache_rows_are_per_embedder(tmp_path: Path) -> None:
    a, b = CountingEmbedder("emb-a"), CountingEmbedder("emb-b")
    cache = VectorCache(tmp_path / "vectors.db")
    cache.embed(a, TEXTS)
    cache.embed(b, TEXTS)
    assert b.embedded == TEXTS  # nothing borrowed from emb-a
    cache.embed(a, TEXTS)
    cache.embed(b, TEXTS)
    assert len(a.calls) == 1 and len(b.calls) == 1
    rows = sqlite3.connect(tmp_path / "vectors.db").execute(
        "SELECT embedder, count(*) FROM vectors GROUP BY embedder ORDER BY embedder").fetchall()
    assert rows == [("emb-a", 4), ("emb-b", 4)]
