"""The benchmarks' peers at full strength: bench.bm25 measures bm25s (numba and numpy backends) and tantivy beside
rank_bm25 on the same queries at both sizes; bench.leiden reports the modularity of the partition it timed;
bench.embed runs its numpy peer under one BLAS thread, busy as long as Strata's embedder. Small sizes: these
check what is measured, not how fast."""

from __future__ import annotations

import json
import subprocess
import sys

import networkx as nx
import numpy as np
import pytest

from bench import bm25 as bench_bm25
from bench.leiden import planted_graph, run_hierarchy, top_level_modularity
from tests.conftest import ROOT, in_own_process

PEERS = ("bm25s_p50_ms", "bm25s_numpy_p50_ms", "tantivy_p50_ms", "rank_bm25_p50_ms")


@pytest.mark.slow
def test_bm25_bench_times_every_peer_on_the_same_queries_at_both_sizes() -> None:
    proc = subprocess.run([sys.executable, "-m", "bench.bm25", "--n", "4000", "--peer-n", "1500", "--queries", "12"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["queries"] == 12 and set(out["sizes"]) == {"1500", "4000"}
    for size in out["sizes"].values():
        assert all(size[k] > 0 for k in ("p50_ms", *PEERS)), size
        assert size["bm25s_backend"] == "numba" and size["max_score_diff"] < 1e-9
        # bm25s (robertson) ranks as rank_bm25 and Strata do, up to ties; tantivy's Lucene IDF differs a little.
        assert size["bm25s_top10_overlap"] >= 0.9 and size["tantivy_top10_overlap"] >= 0.6
    assert all(out[k] == out["sizes"]["4000"][k] for k in ("p50_ms", *PEERS))


def test_every_engine_answers_the_same_queries() -> None:
    flat, lens = bench_bm25.corpus(800)
    qs = bench_bm25.queries(9)
    offsets = np.concatenate([[0], np.cumsum(lens)])
    seen: list[int] = []
    size = bench_bm25.Size(800)
    real = bench_bm25.median_ms

    def counting(run, queries, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(len(queries))
        return real(run, queries, *args, **kwargs)

    bench_bm25.median_ms = counting  # type: ignore[assignment]
    try:
        strata, ref = bench_bm25.bench_strata(size, flat, lens, qs)
        bench_bm25.bench_tantivy(size, flat, offsets, qs, ref)
        bench_bm25.bench_rank_bm25(size, flat, offsets, qs, ref, strata)
    finally:
        bench_bm25.median_ms = real  # type: ignore[assignment]
    assert seen == [9, 9, 9, 9]  # Strata (pruned and exhaustive), tantivy, rank_bm25
    assert {"tantivy_p50_ms", "rank_bm25_p50_ms", "p50_ms"} <= set(size.figures)


def test_leiden_reports_the_modularity_of_the_timed_partition() -> None:
    nodes, edges = planted_graph(2000)
    G = nx.Graph()
    G.add_weighted_edges_from((e.source, e.target, e.weight) for e in edges)
    _, _, counts, top = run_hierarchy(nodes, edges, "igraph")
    q = top_level_modularity(G, top)
    assert counts[0] == len(top) and 0.5 < q < 1.0
    # The timed top level is the partition the hierarchy was split from: its modularity, not another run's.
    assert q == pytest.approx(nx.community.modularity(G, [c for c in top] + [{v} for v in G.nodes
                                                                             if not any(v in c for c in top)]))


@in_own_process
def test_embed_peer_runs_under_one_blas_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    from threadpoolctl import threadpool_info

    from bench import embed

    threads: list[int] = []
    docs: list[int] = []

    class Recorded:
        def __init__(self) -> None:
            self.dim = 384

        def embed(self, texts):  # type: ignore[no-untyped-def]
            threads.extend(i["num_threads"] for i in threadpool_info() if i.get("user_api") == "blas")
            docs.append(len(texts))
            return np.ones((len(texts), 384), np.float32) / np.sqrt(384)

    class Shipped:
        tokenizer = type("T", (), {"encode_batch": staticmethod(lambda texts: [type("E", (), {"ids": [1, 2]})()
                                                                               for _ in texts])})()

        def embed(self, texts):  # type: ignore[no-untyped-def]
            return np.ones((len(texts), 384), np.float32) / np.sqrt(384)

    monkeypatch.setattr(embed, "PlainMiniLM", Recorded)
    monkeypatch.setattr(embed, "MiniLMEmbedder", Shipped)
    monkeypatch.setattr(embed, "sample_texts", lambda corpus, n: [f"text {i}" for i in range(n)])
    monkeypatch.setattr(sys, "argv", ["bench.embed", "--docs", "6", "--repeats", "2", "--corpus", str(ROOT / "README.md")])
    embed.main()
    assert threads and set(threads) == {1}
    # The peer: one warm-up, then quiet and busy runs on all 6 documents, as many as Strata's.
    assert docs == [6, 6, 6, 6, 6]
