"""BM25 speed and memory on a synthetic corpus, beside rank_bm25 measured in the same run.

    python -m bench.bm25 [--n 1000000] [--peer-n 100000] [--queries 200]

The corpus is seeded: documents of about 120 tokens (Poisson) drawn from a Zipf vocabulary of 200k terms;
queries of 2 to 5 terms drawn from the same distribution without its 100 most frequent terms (the stop words a
real tokenizer drops). Strata's index is built from term ids (tokenizing is not what is measured) and timed with
and without MaxScore pruning; rank_bm25's BM25Okapi is measured on the first --peer-n documents (it is too slow
for 1M), and the speed-up is taken there, on the same documents and queries. Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time

import numpy as np

from retrieval.bm25 import BM25Index

VOCAB = 200_000


def corpus(n: int, seed: int = 11) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    lens = np.maximum(8, rng.poisson(120, n)).astype(np.int64)
    p = 1.0 / np.arange(1, VOCAB + 1) ** 1.05
    cdf = np.cumsum(p / p.sum())
    flat = np.searchsorted(cdf, rng.random(int(lens.sum()))).astype(np.int32)
    return flat, lens


def queries(count: int, seed: int = 12) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, VOCAB + 1) ** 1.05
    p[:100] = 0
    p /= p.sum()
    return [rng.choice(VOCAB, size=rng.integers(2, 6), p=p).astype(np.int32) for _ in range(count)]


def timed_queries(idx: BM25Index, qs: list[np.ndarray], k: int = 10, exhaustive: bool = False) -> float:
    """Median milliseconds for a top-k query; ``exhaustive`` times the path without MaxScore pruning."""
    for q in qs[:5]:
        idx.top(q, k, prune=not exhaustive)
    times = []
    for q in qs:
        t0 = time.perf_counter()
        idx.top(q, k, prune=not exhaustive)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--peer-n", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--peer-queries", type=int, default=40)
    args = ap.parse_args()
    flat, lens = corpus(args.n)
    qs = queries(args.queries)
    offsets = np.concatenate([[0], np.cumsum(lens)])
    peer_tokens = int(offsets[args.peer_n])

    results: dict[str, object] = {"n": args.n}
    rows = []
    idx = BM25Index()
    t0 = time.perf_counter()
    idx.add_flat(flat, lens)
    idx.commit()
    build = time.perf_counter() - t0
    p50 = timed_queries(idx, qs)
    exhaustive = timed_queries(idx, qs, exhaustive=True)
    mb = idx.nbytes / 2**20
    rows.append(("Strata BM25", args.n, build, p50, mb))
    rows.append(("Strata BM25, no pruning", args.n, float("nan"), exhaustive, mb))
    results.update(build_s=round(build, 2), p50_ms=round(p50, 3), p50_ms_no_pruning=round(exhaustive, 3),
                   index_mb=round(mb, 1), postings=int(idx.rows.size))
    del idx
    gc.collect()

    small = BM25Index()
    small.add_flat(flat[:peer_tokens], lens[: args.peer_n])
    small.commit()
    ours_small = timed_queries(small, qs)

    from rank_bm25 import BM25Okapi

    docs = [[str(t) for t in flat[offsets[i]:offsets[i + 1]]] for i in range(args.peer_n)]
    t0 = time.perf_counter()
    ref = BM25Okapi(docs)
    ref_build = time.perf_counter() - t0
    times, worst = [], 0.0
    for q in qs[: args.peer_queries]:
        sq = [str(t) for t in q]
        t0 = time.perf_counter()
        scores = ref.get_scores(sq)
        top = np.argsort(-scores)[:10]
        times.append(time.perf_counter() - t0)
        ours = small.get_scores(q)
        worst = max(worst, float(np.max(np.abs(scores[top] - ours[top]))))
    ref_p50 = statistics.median(times) * 1000
    rows.append(("Strata BM25", args.peer_n, float("nan"), ours_small, small.nbytes / 2**20))
    rows.append(("rank_bm25 BM25Okapi", args.peer_n, ref_build, ref_p50, float("nan")))
    print(f"{'engine':<26}{'docs':>10}{'build s':>10}{'p50 ms':>10}{'index MB':>10}")
    for name, n, b, p, m in rows:
        print(f"{name:<26}{n:>10}{b:>10.2f}{p:>10.3f}{m:>10.1f}")
    print(f"speed-up over rank_bm25 at {args.peer_n}: {ref_p50 / ours_small:.0f}x; top-10 score difference {worst:.2e}")
    results.update(rank_bm25_p50_ms=round(ref_p50, 2), speedup=round(ref_p50 / ours_small, 1), peer_n=args.peer_n,
                   p50_ms_peer_n=round(ours_small, 3), max_score_diff=worst)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
