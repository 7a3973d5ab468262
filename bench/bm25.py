"""BM25 speed and memory on a synthetic corpus, beside bm25s, tantivy and rank_bm25 measured in the same run.

    python -m bench.bm25 [--n 1000000] [--peer-n 100000] [--queries 100] [--skip rank_bm25,...]

The corpus is seeded: documents of about 120 tokens (Poisson) drawn from a Zipf vocabulary of 200k terms;
queries of 2 to 5 terms drawn from the same distribution without its 100 most frequent terms (the stop words a
real tokenizer drops). At each size (--peer-n, then --n documents: the first documents of the same corpus) every
engine indexes the same term ids and answers the same --queries queries, one at a time, top 10:

- Strata's BM25Index (with MaxScore pruning, and the exhaustive path beside it);
- bm25s (``method="robertson"``, k1 1.5, b 0.75: rank_bm25's formula up to a factor k1 + 1) with its own
  ``retrieve``, on the numba backend (when numba is installed) and on its numpy backend, from one index;
- tantivy (Lucene's BM25 with its own IDF; the terms as whitespace-separated tokens, one on-disk index built by one
  writer thread, its segments merged by its own policy before the timing, searched on the calling thread), timed from query parsing to the top-10 hits;
- rank_bm25's BM25Okapi (``get_scores`` and a top-10 sort), whose scores Strata's must equal.

Every engine's top 10 is compared with Strata's (``*_top10_overlap``: the mean share of Strata's top 10 it
returns; bm25s should reach about 1.0, tantivy less, its IDF differs). Build times and index sizes are printed
beside the query medians. Last line: one JSON object, the --n figures at its top level (``p50_ms``,
``bm25s_p50_ms``, ``bm25s_numpy_p50_ms``, ``tantivy_p50_ms``, ``rank_bm25_p50_ms``) and every size's under
``sizes``.
"""

from __future__ import annotations

import argparse
import gc
import json
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from retrieval.bm25 import BM25Index

VOCAB = 200_000
K = 10


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


class Docs:
    """The first ``n`` documents as lists of term ids, made one at a time (a peer's input without holding a
    billion Python integers)."""

    def __init__(self, flat: np.ndarray, offsets: np.ndarray, n: int, as_str: bool = False) -> None:
        self.flat, self.offsets, self.n, self.as_str = flat, offsets, n, as_str

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> list:  # type: ignore[type-arg]
        ids = self.flat[self.offsets[i]:self.offsets[i + 1]].tolist()
        return [str(t) for t in ids] if self.as_str else ids

    def __iter__(self) -> Iterator[list]:  # type: ignore[type-arg]
        return (self[i] for i in range(self.n))


def median_ms(run: Callable[[np.ndarray], Any], qs: Sequence[np.ndarray], rows: Callable[[Any], Sequence[int]] = list,
              warm: int = 5) -> tuple[float, list[np.ndarray]]:
    """Median milliseconds of ``run`` over the queries (after ``warm`` untimed ones), and each query's top rows
    (``rows`` turns an answer into them, outside the timing)."""
    for q in qs[:warm]:
        run(q)
    times, answers = [], []
    for q in qs:
        t0 = time.perf_counter()
        answer = run(q)
        times.append(time.perf_counter() - t0)
        answers.append(answer)
    return statistics.median(times) * 1000, [np.asarray(rows(a), dtype=np.int64) for a in answers]


def overlap(tops: list[np.ndarray], ref: list[np.ndarray]) -> float:
    return float(np.mean([len(set(a.tolist()) & set(b.tolist())) / max(1, len(b)) for a, b in zip(tops, ref)]))


@dataclass
class Row:
    engine: str
    n: int
    build_s: float
    p50_ms: float
    index_mb: float
    overlap: float = float("nan")


@dataclass
class Size:
    n: int
    rows: list[Row] = field(default_factory=list)
    figures: dict[str, object] = field(default_factory=dict)


def bench_strata(size: Size, flat: np.ndarray, lens: np.ndarray, qs: list[np.ndarray]) -> tuple[BM25Index, list[np.ndarray]]:
    tokens = int(lens[: size.n].sum())
    idx = BM25Index()
    t0 = time.perf_counter()
    idx.add_flat(flat[:tokens], lens[: size.n])
    idx.commit()
    build = time.perf_counter() - t0
    rows_of = lambda top: [r for r, _ in top]  # noqa: E731
    p50, tops = median_ms(lambda q: idx.top(q, K), qs, rows_of)
    exhaustive, _ = median_ms(lambda q: idx.top(q, K, prune=False), qs, rows_of)
    mb = idx.nbytes / 2**20
    size.rows += [Row("Strata BM25", size.n, build, p50, mb), Row("Strata BM25, no pruning", size.n, float("nan"), exhaustive, mb)]
    size.figures.update(build_s=round(build, 2), p50_ms=round(p50, 3), p50_ms_no_pruning=round(exhaustive, 3),
                        index_mb=round(mb, 1), postings=int(idx.rows.size))
    return idx, tops


def bench_bm25s(size: Size, flat: np.ndarray, offsets: np.ndarray, qs: list[np.ndarray], ref: list[np.ndarray]) -> None:
    import bm25s
    from bm25s.tokenization import Tokenized

    retriever = bm25s.BM25(method="robertson", k1=1.5, b=0.75, backend="numpy")
    t0 = time.perf_counter()
    retriever.index(Tokenized(ids=Docs(flat, offsets, size.n), vocab={str(t): t for t in range(VOCAB)}),
                    show_progress=False)
    build = time.perf_counter() - t0
    mb = sum(retriever.scores[k].nbytes for k in ("data", "indices", "indptr")) / 2**20

    def run(q: np.ndarray) -> np.ndarray:
        return retriever.retrieve([q.tolist()], k=K, show_progress=False, n_threads=0)

    rows_of = lambda res: res.documents[0]  # noqa: E731
    numpy_p50, numpy_tops = median_ms(run, qs, rows_of)
    size.rows.append(Row("bm25s (numpy backend)", size.n, build, numpy_p50, mb, overlap(numpy_tops, ref)))
    size.figures.update(bm25s_numpy_p50_ms=round(numpy_p50, 3), bm25s_build_s=round(build, 2),
                        bm25s_index_mb=round(mb, 1), bm25s_top10_overlap=round(overlap(numpy_tops, ref), 4))
    try:
        import numba  # noqa: F401
    except ImportError:
        print("numba is not installed: bm25s runs on its numpy backend only (pip install numba)")
        size.figures["bm25s_p50_ms"] = round(numpy_p50, 3)
        size.figures["bm25s_backend"] = "numpy"
        return
    retriever.backend = "numba"  # the same index, retrieved by the numba kernels (compiled by the warm-up queries)
    p50, tops = median_ms(run, qs, rows_of)
    size.rows.append(Row("bm25s (numba backend)", size.n, build, p50, mb, overlap(tops, ref)))
    size.figures.update(bm25s_p50_ms=round(p50, 3), bm25s_backend="numba")


def bench_tantivy(size: Size, flat: np.ndarray, offsets: np.ndarray, qs: list[np.ndarray], ref: list[np.ndarray]) -> None:
    import tantivy

    folder = Path(tempfile.mkdtemp(prefix="bench-tantivy-"))
    try:
        sb = tantivy.SchemaBuilder()
        sb.add_text_field("body", stored=False, tokenizer_name="whitespace", index_option="freq")
        sb.add_unsigned_field("row", stored=True)  # read back only to compare the hits, outside the timing
        index = tantivy.Index(sb.build(), path=str(folder))
        t0 = time.perf_counter()
        writer = index.writer(heap_size=512 * 2**20, num_threads=1)
        docs = Docs(flat, offsets, size.n)
        for i in range(size.n):
            writer.add_document(tantivy.Document(body=" ".join(map(str, docs[i])), row=i))
        writer.commit()
        writer.wait_merging_threads()  # the segments its merge policy merges, merged before the timing
        index.reload()
        build = time.perf_counter() - t0
        searcher = index.searcher()
        mb = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20

        def run(q: np.ndarray) -> list:  # type: ignore[type-arg]
            return searcher.search(index.parse_query(" ".join(map(str, q.tolist())), ["body"]), K).hits

        p50, rows_of = median_ms(run, qs, lambda hits: [searcher.doc(addr)["row"][0] for _, addr in hits])
        share = overlap(rows_of, ref)
        size.rows.append(Row("tantivy", size.n, build, p50, mb, share))
        size.figures.update(tantivy_p50_ms=round(p50, 3), tantivy_build_s=round(build, 2), tantivy_disk_mb=round(mb, 1),
                            tantivy_segments=searcher.num_segments, tantivy_top10_overlap=round(share, 4))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def bench_rank_bm25(size: Size, flat: np.ndarray, offsets: np.ndarray, qs: list[np.ndarray], ref: list[np.ndarray],
                    strata: BM25Index) -> None:
    from rank_bm25 import BM25Okapi

    t0 = time.perf_counter()
    model = BM25Okapi(Docs(flat, offsets, size.n, as_str=True))
    build = time.perf_counter() - t0
    worst = 0.0
    scored: list[np.ndarray] = []

    def run(q: np.ndarray) -> np.ndarray:
        scores = model.get_scores([str(t) for t in q])
        top = np.argsort(-scores)[:K]
        scored.append(scores[top])
        return top

    p50, tops = median_ms(run, qs, warm=0)  # each query takes about a second at a million documents: no warm-up
    for q, top, s in zip(qs, tops, scored):
        worst = max(worst, float(np.max(np.abs(s - strata.get_scores(q)[top]))))
    size.rows.append(Row("rank_bm25 BM25Okapi", size.n, build, p50, float("nan"), overlap(tops, ref)))
    size.figures.update(rank_bm25_p50_ms=round(p50, 2), rank_bm25_build_s=round(build, 2), max_score_diff=worst)
    del model
    gc.collect()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--peer-n", type=int, default=100_000, help="the smaller size, measured first")
    ap.add_argument("--queries", type=int, default=100, help="queries timed for every engine, at every size")
    ap.add_argument("--skip", default="", help="comma-separated peers to leave out: bm25s, tantivy, rank_bm25")
    args = ap.parse_args()
    from core.settings import StrataSettings
    from core.threads import configure

    configure(StrataSettings().compute)  # one BLAS thread, as every Strata process
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    flat, lens = corpus(args.n)
    qs = queries(args.queries)
    offsets = np.concatenate([[0], np.cumsum(lens)])
    sizes = []
    for n in sorted({args.peer_n, args.n}):
        size = Size(n)
        strata, ref = bench_strata(size, flat, lens, qs)
        if "bm25s" not in skip:
            bench_bm25s(size, flat, offsets, qs, ref)
            gc.collect()
        if "tantivy" not in skip:
            bench_tantivy(size, flat, offsets, qs, ref)
            gc.collect()
        if "rank_bm25" not in skip:
            bench_rank_bm25(size, flat, offsets, qs, ref, strata)
        del strata
        gc.collect()
        sizes.append(size)
        print(f"{'engine':<26}{'docs':>10}{'build s':>10}{'p50 ms':>10}{'index MB':>10}{'top-10 overlap':>16}", flush=True)
        for r in size.rows:
            print(f"{r.engine:<26}{r.n:>10}{r.build_s:>10.2f}{r.p50_ms:>10.3f}{r.index_mb:>10.1f}{r.overlap:>16.3f}", flush=True)
    top = sizes[-1].figures
    results: dict[str, object] = {"n": args.n, "queries": args.queries, **top,
                                  "sizes": {str(s.n): s.figures for s in sizes}}
    if "tantivy_p50_ms" in top:
        results["p50_vs_tantivy"] = round(float(top["p50_ms"]) / float(top["tantivy_p50_ms"]), 3)  # type: ignore[arg-type]
    if "rank_bm25_p50_ms" in top:
        results["speedup"] = round(float(top["rank_bm25_p50_ms"]) / float(top["p50_ms"]), 1)  # type: ignore[arg-type]
    print(json.dumps(results))


if __name__ == "__main__":
    main()
