"""One contract suite for every Embedder (retrieval.embed.Embedder); subclassed once per embedder with an
``embedder`` fixture (class-scoped: models load once)."""

from __future__ import annotations

from typing import Any

import numpy as np

from core.settings import RetrievalSettings
from retrieval.embed import embed_with_progress
from retrieval.index import ChunkIndex

TEXTS = [
    "The payment service timed out after thirty seconds.",
    "x",
    "billing-service latency spiked and requests failed with HTTP 504",
    "The cat sat on the warm windowsill, watching the rain fall on the garden below for most of the afternoon.",
    "Zürich, São Paulo and Kraków: names with accents.",
]
# A query, the passage that answers it and one about something else: any embedder that claims meaning
# (``semantic``) puts the query nearer its passage.
PAIR_QUERY = "Why did checkout requests fail?"
PAIR_RELEVANT = "Checkout requests failed because the payment gateway timed out under load."
PAIR_UNRELATED = "The museum's new wing displays medieval tapestries from Flanders."


def embed_queries(embedder: Any, texts: list[str]) -> np.ndarray:
    return getattr(embedder, "embed_queries", embedder.embed)(texts)


class EmbedderContract:
    def test_declares_name_dimension_and_kind(self, embedder: Any) -> None:
        assert isinstance(embedder.name, str) and embedder.name
        assert isinstance(embedder.dim, int) and embedder.dim > 0
        assert isinstance(embedder.semantic, bool)
        langs = getattr(embedder, "languages", None)
        assert langs is None or (isinstance(langs, frozenset) and all(isinstance(c, str) for c in langs))

    def test_rows_are_unit_float32_in_input_order(self, embedder: Any) -> None:
        v = embedder.embed(TEXTS)
        assert v.dtype == np.float32 and v.shape == (len(TEXTS), embedder.dim)
        assert np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)
        alone = np.stack([embedder.embed([t])[0] for t in TEXTS])
        assert np.allclose(alone, v, atol=1e-4)  # neither the batch nor its order changes a text's vector
        assert np.allclose(embedder.embed(TEXTS[::-1])[::-1], v, atol=1e-4)

    def test_no_texts_no_rows(self, embedder: Any) -> None:
        for v in (embedder.embed([]), embed_queries(embedder, [])):
            assert v.shape == (0, embedder.dim) and v.dtype == np.float32

    def test_queries_are_unit_vectors_of_the_same_space(self, embedder: Any) -> None:
        q = embed_queries(embedder, [PAIR_QUERY, "x"])
        assert q.dtype == np.float32 and q.shape == (2, embedder.dim)
        assert np.allclose(np.linalg.norm(q, axis=1), 1, atol=1e-5)

    def test_a_long_text_is_embedded_not_refused(self, embedder: Any) -> None:
        long = " ".join(["the service restarted after the cache filled"] * 100)  # past 512 tokens
        v = embedder.embed([long, TEXTS[0]])
        assert np.isfinite(v).all() and np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)

    def test_progress_counts_every_text(self, embedder: Any) -> None:
        # As an index run embeds: through the embedder's own callback, or 16 texts at a time.
        seen: list[int] = []
        v = embed_with_progress(embedder, TEXTS * 5, seen.append)
        assert v.shape == (len(TEXTS) * 5, embedder.dim)
        assert sum(seen) == len(TEXTS) * 5 and all(n > 0 for n in seen)

    def test_its_semantic_claim_holds(self, embedder: Any) -> None:
        idx = ChunkIndex(RetrievalSettings(), embedder=embedder)
        if not embedder.semantic:  # spelling, not meaning: the index does not fuse it by default
            assert idx.default_dense_weight == 0.0
            return
        assert idx.default_dense_weight == 1.0
        q = embed_queries(embedder, [PAIR_QUERY])[0]
        relevant, unrelated = embedder.embed([PAIR_RELEVANT, PAIR_UNRELATED])
        assert q @ relevant > q @ unrelated + 0.1
