"""Hybrid query latency (BM25 + vectors + weighted RRF + a metadata filter) at 100k and 1M chunks.

    python -m bench.hybrid [--sizes 100000 1000000] [--hnsw-sizes 200000] [--queries 200]

Chunks are synthetic and seeded: BM25 term ids as in bench.bm25, 384-d vectors drawn around 2,000 cluster
centres (realistic for recall: uniform random vectors make every HNSW look broken), and a ``team`` field with
ten values, so the filter keeps 10%. Each query runs both engines for 4 x top_k = 40 candidates and fuses them,
through the same ChunkIndex code that serves `strata search`. At each size the exact numpy path is measured;
at --hnsw-sizes the HNSW graph is built too, its recall@10 measured against exact search on the same queries.
The naive peer is the exact path. Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from bench.bm25 import corpus, queries
from retrieval.bm25 import BM25Index
from retrieval.filters import ColumnIndex, parse_filter
from retrieval.fusion import weighted_rrf
from retrieval.vectors import VectorIndex

DIM = 384


def vectors(n: int, seed: int = 21) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((2000, DIM)).astype(np.float32)
    out = np.empty((n, DIM), np.float32)
    labels = rng.integers(0, 2000, n)
    for start in range(0, n, 100_000):
        part = slice(start, min(n, start + 100_000))
        block = centres[labels[part]] + 0.6 * rng.standard_normal((part.stop - part.start, DIM)).astype(np.float32)
        out[part] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out, labels


def hybrid_query(bm25: BM25Index, vec: VectorIndex, columns: ColumnIndex, q_terms: np.ndarray, q_vec: np.ndarray,
                 team: int, k: int = 10) -> list[tuple[int, float]]:
    mask = columns.mask(parse_filter({"team": f"t{team}"}), bm25.alive)
    sparse = bm25.top(q_terms, 4 * k, mask)
    dense = vec.top(q_vec, 4 * k, mask)
    return weighted_rrf([(1.0, [r for r, _ in sparse]), (1.0, [r for r, _ in dense])], k=60)[:k]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--hnsw-sizes", type=int, nargs="*", default=[200_000])
    ap.add_argument("--queries", type=int, default=200)
    args = ap.parse_args()
    results: dict[str, float] = {}
    print(f"{'chunks':>9}  {'dense path':<10}{'build s':>9}{'p50 ms':>9}{'recall@10':>11}")
    qs = queries(args.queries)
    for n in sorted(set(args.sizes) | set(args.hnsw_sizes)):
        flat, lens = corpus(n)
        bm25 = BM25Index()
        bm25.add_flat(flat, lens)
        bm25.commit()
        del flat
        vecs, labels = vectors(n)
        rows = [{"team": f"t{i % 10}"} for i in range(n)]
        columns = ColumnIndex(rows)
        rng = np.random.default_rng(5)
        q_vecs = vecs[rng.integers(0, n, len(qs))] + 0.2 * rng.standard_normal((len(qs), DIM)).astype(np.float32)
        q_vecs /= np.linalg.norm(q_vecs, axis=1, keepdims=True)
        exact = VectorIndex(DIM, hnsw_threshold=10**12)
        exact.matrix = vecs
        columns.mask(parse_filter({"team": "t0"}))  # build the column once, as a long-lived index would
        paths = [("exact", exact, 0.0)]
        if n in args.hnsw_sizes:
            ann = VectorIndex(DIM, hnsw_threshold=1)
            ann.matrix = vecs
            t0 = time.perf_counter()
            ann.build_ann()
            paths.append(("hnsw", ann, time.perf_counter() - t0))
        truth = [[r for r, _ in exact.exact_top(q, 10)] for q in q_vecs[:100]]
        for name, vec, build in paths:
            if n not in args.sizes and name == "exact":
                continue
            times = []
            for i, (qt, qv) in enumerate(zip(qs, q_vecs)):
                t0 = time.perf_counter()
                hybrid_query(bm25, vec, columns, qt, qv, i % 10)
                times.append(time.perf_counter() - t0)
            p50 = statistics.median(times[5:]) * 1000
            recall = float(np.mean([len(set(truth[i]) & {r for r, _ in vec.top(q, 10)}) / 10
                                    for i, q in enumerate(q_vecs[:100])]))
            print(f"{n:>9}  {name:<10}{build:>9.1f}{p50:>9.2f}{recall:>11.3f}")
            tag = "1m" if n == 1_000_000 else f"{n // 1000}k"
            results[f"p50_ms_{tag}_{name}"] = round(p50, 3)
            if name == "hnsw":
                results["hnsw_recall10"] = round(recall, 4)
                results[f"hnsw_build_s_{tag}"] = round(build, 1)
        del vecs, bm25, columns
    for tag in ("100k", "1m"):
        cands = [v for k, v in results.items() if k.startswith(f"p50_ms_{tag}_")]
        if cands:
            results[f"p50_ms_{tag}"] = min(cands)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
