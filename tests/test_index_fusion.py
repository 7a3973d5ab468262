import time
from pathlib import Path

import numpy as np
import pytest

from retrieval.filters import parse_filter
from retrieval.fusion import weighted_rrf
from retrieval.index import ChunkIndex
from core.records import Chunk
from core.settings import RetrievalSettings


def test_weighted_rrf_is_the_stated_formula() -> None:
    fused = dict(weighted_rrf([(0.7, ["a", "b", "c"]), (0.3, ["c", "a"])], k=60))
    assert fused["a"] == pytest.approx(0.7 / 61 + 0.3 / 62)
    assert fused["b"] == pytest.approx(0.7 / 62)
    assert fused["c"] == pytest.approx(0.7 / 63 + 0.3 / 61)
    assert [k for k, _ in weighted_rrf([(1.0, ["x", "y"]), (0.0, ["y"])])] == ["x", "y"]


def chunks() -> list[Chunk]:
    rows = [
        ("a", "The billing-service timed out with HTTP 504 during the nightly batch.", {"team": "payments", "date": "2024-01-10"}),
        ("b", "Raise max_connections on the PostgreSQL primary before the sale.", {"team": "core", "date": "2024-03-02"}),
        ("c", "The billing-service writes invoices to PostgreSQL.", {"team": "core", "date": "2024-06-20"}),
        ("d", "Redis evicts keys when maxmemory is reached.", {"team": "cache", "date": "2023-12-01"}),
    ]
    return [Chunk(f"{d}#0000", d, 0, t, 0, len(t), 10, f"{d}.md", d, m) for d, t, m in rows]


@pytest.fixture
def index() -> ChunkIndex:
    idx = ChunkIndex(RetrievalSettings(embedder="hashing"))
    idx.add(chunks())
    return idx


def test_exact_identifier_ranks_first(index: ChunkIndex) -> None:
    assert index.search("HTTP 504", 3)[0].chunk_id == "a#0000"
    assert index.search("max_connections", 3)[0].chunk_id == "b#0000"


def test_filter_applies_before_ranking(index: ChunkIndex) -> None:
    hits = index.search("billing-service", 1, metadata_filter={"team": "core"})
    assert [h.chunk_id for h in hits] == ["c#0000"]  # the best overall (a) is excluded before truncation
    hits = index.search("PostgreSQL billing", 5, metadata_filter={"date": {"gte": "2024-02-01", "lt": "2024-12-31"}})
    assert {h.chunk_id for h in hits} <= {"b#0000", "c#0000"} and hits
    assert index.search("Redis", 5, metadata_filter={"team": ["payments", "core"]}) == []
    allowed = index.search("PostgreSQL", 5, metadata_filter={"team": ["payments", "core"]})
    assert {h.chunk_id for h in allowed} == {"b#0000", "c#0000"}


def test_bad_filter_names_the_problem() -> None:
    with pytest.raises(ValueError, match="metadata_filter.date: unknown operator 'after'"):
        parse_filter({"date": {"after": "2024"}})


def test_save_load_round_trip_and_removal(index: ChunkIndex, tmp_path: Path) -> None:
    before = index.search("billing-service PostgreSQL", 4)
    index.save(tmp_path / "idx")
    loaded = ChunkIndex.load(tmp_path / "idx", RetrievalSettings(embedder="hashing"))
    assert loaded.search("billing-service PostgreSQL", 4) == before
    assert loaded.sync([c for c in chunks() if c.document_id != "c"]) == (0, 1)  # what a run does when "c" goes
    assert all(h.document_id != "c" for h in loaded.search("billing-service PostgreSQL", 4))
    loaded.save(tmp_path / "idx")
    again = ChunkIndex.load(tmp_path / "idx", RetrievalSettings(embedder="hashing"))
    assert len(again) == 3 and "c#0000" not in again.by_id


def test_both_engines_run_concurrently(index: ChunkIndex) -> None:
    class Slow:
        def __init__(self, inner, name):  # type: ignore[no-untyped-def]
            self.inner, self.name = inner, name

        def rank(self, text, k, mask):  # type: ignore[no-untyped-def]
            time.sleep(0.4)
            return self.inner.rank(text, k, mask)

    index.sparse = Slow(index.sparse, "bm25")
    index.dense = Slow(index.dense, "dense")
    start = time.perf_counter()
    hits = index.search("billing-service", 2, dense_weight=1.0, sparse_weight=1.0)
    elapsed = time.perf_counter() - start
    assert hits and elapsed < 0.75  # sequential would take at least 0.8 s


def test_hashing_embedder_is_stable_and_normalized() -> None:
    from retrieval.embed import HashingEmbedder

    e = HashingEmbedder(256)
    v = e.embed(["billing-service timeout", "billing-service timeout", "unrelated words"])
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(v[0], v[1]) and float(v[0] @ v[2]) < 0.5


def test_column_filters_agree_with_row_by_row_matching() -> None:
    import random

    from retrieval.filters import ColumnIndex, matches

    rng = random.Random(5)
    rows = [{"team": rng.choice(["a", "b", "c"]), "n": rng.choice([1, 2, 3, 2.5]), "date": f"2024-0{rng.randint(1, 9)}-01",
             "tags": rng.sample(["x", "y", "z"], rng.randint(0, 2)), "flag": rng.choice([True, False])}
            for _ in range(300)]
    rows[3] = {}
    cols = ColumnIndex(rows)
    filters = [{"team": "a"}, {"team": ["a", "c"]}, {"n": {"gte": 2, "lt": 3}}, {"date": {"gte": "2024-03-01", "lte": "2024-06-01"}},
               {"tags": "x"}, {"tags": {"in": ["y", "z"]}}, {"team": {"ne": "b"}}, {"flag": True}, {"n": 2},
               {"team": "a", "date": {"gt": "2024-05-01"}}, {"missing": "q"}]
    for f in filters:
        conds = parse_filter(f)
        expected = np.array([matches(r, conds) for r in rows])
        assert np.array_equal(cols.mask(conds), expected), f


def test_embedding_reports_progress_chunk_by_chunk() -> None:
    """An index build tells its progress as the embedder goes (so a long embedding shows a rate and an ETA),
    not once per 256 chunks; chunks whose vectors are cached are counted at once."""
    from retrieval.vector_cache import VectorCache

    many = [Chunk(f"d{i}#0000", f"d{i}", 0, f"note {i} about service-{i % 7} and port {i}", 0, 30, 8, f"d{i}.md",
                  f"d{i}", {}) for i in range(100)]
    steps: list[int] = []
    idx = ChunkIndex(RetrievalSettings(embedder="hashing"))
    idx.add(many, on_progress=steps.append)
    assert sum(steps) == 100 and len(steps) >= 7 and max(steps) <= 16

    class Batched:  # an embedder with its own callback (as MiniLM and e5 have): its batches are the steps
        name, dim, semantic, languages = "batched", 8, True, None

        def embed(self, texts, on_progress=None):  # type: ignore[no-untyped-def]
            for start in range(0, len(texts), 5):
                if on_progress:
                    on_progress(len(texts[start:start + 5]))
            return np.ones((len(texts), 8), np.float32) / np.sqrt(8)

    cache = VectorCache(Path(__import__("tempfile").mkdtemp()) / "v.sqlite")
    idx = ChunkIndex(RetrievalSettings(embedder="hashing"), embedder=Batched(), vector_cache=cache)
    steps.clear()
    idx.add(many[:40], on_progress=steps.append)
    assert steps == [5] * 8
    steps.clear()
    idx.add(many[:60], on_progress=steps.append)  # 40 cached, 20 embedded
    assert steps == [40, 5, 5, 5, 5]


def test_a_reindex_of_a_large_index_keeps_its_hnsw_graph_and_finds_chunks_by_their_new_rows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Above ``hnsw_threshold`` a sync that deletes, edits and adds chunks keeps the vectors' graph (it does not
    build it again), and dense search through it finds each chunk under its new row, before and after a save."""
    from retrieval import vectors

    monkeypatch.setattr(vectors, "EXACT_ROWS", 10)  # this small index stands in for a large one
    settings = RetrievalSettings(embedder="hashing", hnsw_threshold=200)
    words = [f"w{i:03d}" for i in range(400)]
    rng = np.random.default_rng(2)

    def chunk(doc: str, text: str) -> Chunk:
        return Chunk(f"{doc}#0000", doc, 0, text, 0, len(text), 12, f"{doc}.md", doc, {})

    docs = {f"d{i:03d}": " ".join(rng.choice(words, 12)) for i in range(300)}
    idx = ChunkIndex(settings)
    idx.add([chunk(d, t) for d, t in sorted(docs.items())])
    graph = idx.vectors._hnsw
    assert graph is not None
    for gone in ("d003", "d150", "d299"):
        del docs[gone]
    docs["d010"] = " ".join(rng.choice(words, 12))  # edited
    docs["d100a"] = " ".join(rng.choice(words, 12))  # added between two kept rows
    assert idx.sync([chunk(d, t) for d, t in sorted(docs.items())]) == (2, 4)
    assert idx.vectors._hnsw is graph and [r.chunk_id for r in idx.rows] == [f"{d}#0000" for d in sorted(docs)]
    idx.save(tmp_path / "idx")
    loaded = ChunkIndex.load(tmp_path / "idx", settings)
    assert loaded.vectors._hnsw is not None
    for d in ("d000", "d010", "d100a", "d101", "d298"):
        for served in (idx, loaded):
            hits = served.search(docs[d], 3, dense_weight=1.0, sparse_weight=0.0, graph_weight=0.0)
            assert hits[0].chunk_id == f"{d}#0000"
    for d in sorted(docs)[::2]:  # half the documents edited: past a quarter deleted, the graph is built afresh
        docs[d] = " ".join(rng.choice(words, 12))
    loaded.sync([chunk(d, t) for d, t in sorted(docs.items())])
    ann = loaded.vectors._hnsw
    assert ann is not None and loaded.vectors._deleted == 0
    assert ann.get_current_count() == len(loaded)  # built afresh from the live rows alone
    hits = loaded.search(docs["d010"], 3, dense_weight=1.0, sparse_weight=0.0, graph_weight=0.0)
    assert hits[0].chunk_id == "d010#0000"
