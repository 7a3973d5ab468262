"""Hybrid query latency (BM25 + vectors + weighted RRF + a metadata filter) at 100k and 1M chunks.

    python -m bench.hybrid [--sizes 100000 1000000] [--hnsw-sizes 200000] [--queries 200]

Chunks are synthetic and seeded: BM25 term ids as in bench.bm25, 384-d unit vectors of low intrinsic dimension
(LatentTopics below; uniform random vectors make every HNSW look broken), and a ``team`` field with ten values,
so the filter keeps 10%. Each query runs both engines for 4 x top_k = 40 candidates under the filter and fuses
them with weighted RRF. At each size the exact numpy path (the naive peer) is measured; at --hnsw-sizes the
HNSW graph is built too, and its recall@10 is measured against exact search on the same queries, without and
with the filter. Last line: one JSON object.
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
LATENT = 64


def vectors(n: int, seed: int = 21) -> tuple[np.ndarray, "LatentTopics"]:
    topics = LatentTopics(seed)
    rng = np.random.default_rng(seed + 1)
    out = np.empty((n, DIM), np.float32)
    for start in range(0, n, 100_000):
        stop = min(n, start + 100_000)
        out[start:stop] = topics.sample(rng, stop - start)
    return out, topics


class LatentTopics:
    """Unit vectors with the low intrinsic dimension of sentence embeddings: points around 2,000 topic centres in
    a 64-d latent space, mapped linearly to 384-d, plus a little isotropic noise. Queries are fresh points from
    the same topics, not perturbed copies of indexed rows."""

    def __init__(self, seed: int, topics: int = 2000) -> None:
        rng = np.random.default_rng(seed)
        self.centres = rng.standard_normal((topics, LATENT)).astype(np.float32)
        self.lift = (rng.standard_normal((LATENT, DIM)) / np.sqrt(LATENT)).astype(np.float32)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        z = self.centres[rng.integers(0, len(self.centres), n)] + 0.5 * rng.standard_normal((n, LATENT)).astype(np.float32)
        x = z @ self.lift + 0.05 * rng.standard_normal((n, DIM)).astype(np.float32)
        return x / np.linalg.norm(x, axis=1, keepdims=True)


def hybrid_query(bm25: BM25Index, vec: VectorIndex, columns: ColumnIndex, q_terms: np.ndarray, q_vec: np.ndarray,
                 team: int, k: int = 10) -> list[tuple[int, float]]:
    mask = columns.mask(parse_filter({"team": f"t{team}"}), bm25.alive)
    sparse = bm25.top(q_terms, 4 * k, mask)
    dense = vec.top(q_vec, 4 * k, mask)
    return weighted_rrf([(1.0, [r for r, _ in sparse]), (1.0, [r for r, _ in dense])], k=60)[:k]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--hnsw-sizes", type=int, nargs="*", default=[1_000_000])
    ap.add_argument("--queries", type=int, default=200)
    args = ap.parse_args()
    results: dict[str, float] = {}
    print(f"{'chunks':>9}  {'dense path':<10}{'build s':>9}{'p50 ms':>9}{'recall@10':>11}{'filtered r@10':>15}")
    qs = queries(args.queries)
    for n in sorted(set(args.sizes) | set(args.hnsw_sizes)):
        flat, lens = corpus(n)
        bm25 = BM25Index()
        bm25.add_flat(flat, lens)
        bm25.commit()
        del flat
        vecs, topics = vectors(n)
        rows = [{"team": f"t{i % 10}"} for i in range(n)]
        columns = ColumnIndex(rows)
        rng = np.random.default_rng(5)
        q_vecs = topics.sample(rng, len(qs))
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
        masks = [columns.mask(parse_filter({"team": f"t{t}"}), bm25.alive) for t in range(10)]
        truth = [[r for r, _ in exact.exact_top(q, 10)] for q in q_vecs[:100]]
        truth_filtered = [[r for r, _ in exact.exact_top(q, 10, masks[i % 10])] for i, q in enumerate(q_vecs[:100])]
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
            recall_f = float(np.mean([len(set(truth_filtered[i]) & {r for r, _ in vec.top(q, 10, masks[i % 10])}) / 10
                                      for i, q in enumerate(q_vecs[:100])]))
            print(f"{n:>9}  {name:<10}{build:>9.1f}{p50:>9.2f}{recall:>11.3f}{recall_f:>15.3f}")
            tag = "1m" if n == 1_000_000 else f"{n // 1000}k"
            results[f"p50_ms_{tag}_{name}"] = round(p50, 3)
            if name == "hnsw":
                results["hnsw_recall10"] = round(recall, 4)
                results["hnsw_recall10_filtered"] = round(recall_f, 4)
                results[f"hnsw_build_s_{tag}"] = round(build, 1)
        del vecs, bm25, columns
    for tag in ("100k", "1m"):
        cands = [v for k, v in results.items() if k.startswith(f"p50_ms_{tag}_")]
        if cands:
            results[f"p50_ms_{tag}"] = min(cands)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
