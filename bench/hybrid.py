"""Hybrid query latency (BM25 + vectors + weighted RRF + a metadata filter) at 100k and 1M chunks.

    python -m bench.hybrid [--sizes 100000 1000000] [--hnsw-sizes 200000] [--queries 200] [--graph-sizes 100000]
                           [--reindex-sizes 100000]

Chunks are synthetic and seeded: BM25 term ids as in bench.bm25, 384-d unit vectors of low intrinsic dimension
(LatentTopics below; uniform random vectors make every HNSW look broken), and a ``team`` field with ten values,
so the filter keeps 10%. Each query goes through ChunkIndex.search, the code that serves `strata search` and the
API, with top_k 10 and the default settings: the filter's columns, both engines concurrently for 4 x top_k
candidates under the filter, and the default fusion (the query vectors are precomputed). At each size the exact
numpy path (the naive peer) is measured; at --hnsw-sizes the HNSW graph is built too, and its recall@10 is
measured against exact search on the same queries, without and with the filter. At --graph-sizes the same
queries also run with the graph walk's list (retrieval.graph_walk) beside its peer, the same search without it
(graph_weight 0): a synthetic entity graph of one entity per 5 chunks, each mentioned by 1-20 chunks (Zipf-like),
two relations per entity, entity vectors from the same topics as the chunks; each query names one entity (a
word BM25 does not index), so the walk is seeded by name and by vector. Its 20,000 entities at 100k chunks are
above ``retrieval.entity_hnsw_threshold``, so the nearest entities come from their HNSW graph, as a generation
serves them; the share of queries whose vector-linked seeds equal those of exact search is printed beside the
times. There each chunk is a titled document whose text names two others by title, so the "with" side also runs
the second hop by title (retrieval.hops: the top passage's text searched for the candidates' titles). At
--reindex-sizes an HNSW graph goes through three reindexes of 1% each (1% of rows dropped, as many new ones added,
the rows put in a new order, as ``ChunkIndex.sync`` does: ``VectorIndex.reorder`` keeps the graph and marks the
dropped rows deleted), beside its peer, a graph built afresh on the same rows after each: the seconds each takes,
their recall@10 against exact search, and how many searches the graphs could not answer (then answered exactly;
none expected). Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

import numpy as np

from bench.bm25 import corpus, queries
from core.records import Entity, GraphSnapshot, Relation
from retrieval.bm25 import BM25Index
from retrieval.entity_vectors import EntityVectors, with_ann
from retrieval.graph_walk import walk_for_index
from retrieval.filters import ColumnIndex, parse_filter
from retrieval.hits import DenseEngine, IndexedChunk, SparseEngine
from retrieval.index import ChunkIndex
from retrieval.vectors import VectorIndex
from core.settings import ComputeSettings, RetrievalSettings
from core.threads import configure

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


class QueryVectors:
    """An embedder that answers the benchmark's query texts with their precomputed vectors."""

    name, semantic = "bench-latent", True

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors, self.dim = vectors, DIM

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.vectors[t] for t in texts])


def chunk_index(bm25: BM25Index, rows: list[IndexedChunk], vectors: VectorIndex, embedder: QueryVectors) -> ChunkIndex:
    """A ChunkIndex over prebuilt parts, so queries take the same path as `strata search` (filter columns,
    both engines concurrently, fusion)."""
    index = ChunkIndex(RetrievalSettings(), embedder=embedder)
    index.bm25, index.rows, index.vectors = bm25, rows, vectors
    index.sparse = SparseEngine(index.tokenizer, bm25)
    index.dense = DenseEngine(embedder, vectors)
    return index


def synthetic_graph(n: int, topics: "LatentTopics", seed: int = 31) -> tuple[GraphSnapshot, EntityVectors]:
    """An entity graph over ``n`` chunks (see the module docstring) and its entity vectors."""
    rng = np.random.default_rng(seed)
    n_e = max(1, n // 5)
    sizes = np.minimum(20, rng.zipf(2.0, n_e))
    entities = tuple(Entity(f"e{i}", f"ent{i}", "name", "", tuple(f"c{r}" for r in rng.integers(0, n, k)))
                     for i, k in enumerate(sizes))
    a, b = rng.integers(0, n_e, 2 * n_e), rng.integers(0, n_e, 2 * n_e)
    relations = tuple(Relation(f"r{j}", f"e{min(x, y)}", f"e{max(x, y)}", "", (f"c{rng.integers(0, n)}",))
                      for j, (x, y) in enumerate(zip(a, b)) if x != y)
    vecs = topics.sample(rng, n_e)
    return GraphSnapshot(entities, relations), EntityVectors(tuple(e.id for e in entities), vecs, QueryVectors.name)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="*", default=[100_000, 1_000_000])
    ap.add_argument("--hnsw-sizes", type=int, nargs="*", default=[1_000_000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--graph-sizes", type=int, nargs="*", default=[100_000],
                    help="sizes at which queries also run with the graph walk's list (against graph_weight 0)")
    ap.add_argument("--reindex-sizes", type=int, nargs="*", default=[100_000],
                    help="sizes at which an HNSW graph kept across three 1%% reindexes is compared with fresh ones")
    args = ap.parse_args()
    configure(ComputeSettings())  # BLAS threads as a server sets them (one), so both engines' threads run side by side
    results: dict[str, Any] = {}
    print(f"{'chunks':>9}  {'dense path':<10}{'build s':>9}{'p50 ms':>9}{'recall@10':>11}{'filtered r@10':>15}")
    qs = queries(args.queries)
    texts = [" ".join(f"w{t}" for t in q) for q in qs]  # term ids as words the tokenizer keeps whole
    for n in sorted(set(args.sizes) | set(args.hnsw_sizes) | set(args.graph_sizes)):
        flat, lens = corpus(n)
        bm25 = BM25Index()
        bm25.add_flat(flat, lens)
        bm25.commit()
        bm25.vocab = {f"w{i}": i for i in range(bm25.n_terms)}
        del flat
        vecs, topics = vectors(n)
        rows = [IndexedChunk(f"c{i}", f"d{i}", "", "bench", {"team": f"t{i % 10}"}) for i in range(n)]
        rng = np.random.default_rng(5)
        q_vecs = topics.sample(rng, len(qs))
        embedder = QueryVectors(dict(zip(texts, q_vecs)))
        if n in args.graph_sizes:
            graph_latency(n, bm25, rows, vecs, topics, texts, q_vecs, results)
        exact = VectorIndex(DIM, hnsw_threshold=10**12)
        exact.matrix = vecs
        paths = [("exact", exact, 0.0)]
        if n in args.hnsw_sizes:
            ann = VectorIndex(DIM, hnsw_threshold=1)
            ann.matrix = vecs
            t0 = time.perf_counter()
            ann.build_ann()
            paths.append(("hnsw", ann, time.perf_counter() - t0))
        columns = ColumnIndex([r.fields for r in rows])
        masks = [columns.mask(parse_filter({"team": f"t{t}"}), bm25.alive) for t in range(10)]
        truth = [[r for r, _ in exact.exact_top(q, 10)] for q in q_vecs[:100]]
        truth_filtered = [[r for r, _ in exact.exact_top(q, 10, masks[i % 10])] for i, q in enumerate(q_vecs[:100])]
        for name, vec, build in paths:
            if n not in args.sizes and n not in args.hnsw_sizes:
                continue
            if n not in args.sizes and name == "exact":
                continue
            index = chunk_index(bm25, rows, vec, embedder)
            index.search(texts[0], 10, metadata_filter={"team": "t0"})  # builds the filter columns once
            times = []
            for i, text in enumerate(texts):
                t0 = time.perf_counter()
                hits = index.search(text, 10, metadata_filter={"team": f"t{i % 10}"})
                times.append(time.perf_counter() - t0)
                assert len(hits) == 10 and all(int(h.chunk_id[1:]) % 10 == i % 10 for h in hits)  # the filter held
            index.close()
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
        del vecs, bm25, rows, columns, paths
    for n in args.reindex_sizes:
        kept_graph(n, results)
    for tag in ("100k", "1m"):
        cands = [v for k, v in results.items() if k.startswith(f"p50_ms_{tag}_")]
        if cands:
            results[f"p50_ms_{tag}"] = min(cands)
    print(json.dumps(results))


def kept_graph(n: int, results: dict[str, Any], rounds: int = 3) -> None:
    """An HNSW graph kept through ``rounds`` reindexes of 1% each, beside a graph built afresh after each one."""
    vecs, topics = vectors(n)
    rng = np.random.default_rng(9)
    q_vecs = topics.sample(rng, 100)
    kept = VectorIndex(DIM, hnsw_threshold=1)
    kept.matrix = vecs
    kept.build_ann()
    print(f"{'chunks':>9}  {'reindex':<8}{'kept s':>8}{'fresh s':>9}{'kept r@10':>11}{'fresh r@10':>12}{'deleted':>9}"
          f"{'exact':>7}")
    rows = []
    for r in range(1, rounds + 1):
        m = kept.matrix.shape[0]
        t0 = time.perf_counter()
        kept.add(topics.sample(rng, m // 100))  # the new rows, appended ...
        kept.reorder(rng.permutation(m + m // 100)[:m])  # ... a new order without m // 100 rows, as ChunkIndex.sync
        kept_s = time.perf_counter() - t0
        fresh = VectorIndex(DIM, hnsw_threshold=1)
        fresh.matrix = np.array(kept.matrix)
        t0 = time.perf_counter()
        fresh.build_ann()
        fresh_s = time.perf_counter() - t0
        fallbacks = kept.exact_fallbacks
        truth = [{i for i, _ in kept.exact_top(q, 10)} for q in q_vecs]
        recall = [float(np.mean([len(t & {i for i, _ in v.top(q, 10)}) / 10 for t, q in zip(truth, q_vecs)]))
                  for v in (kept, fresh)]
        # this round's searches the graphs could not answer (none expected)
        exact = kept.exact_fallbacks - fallbacks + fresh.exact_fallbacks
        print(f"{n:>9}  {r:<8}{kept_s:>8.1f}{fresh_s:>9.1f}{recall[0]:>11.3f}{recall[1]:>12.3f}{kept._deleted:>9}"
              f"{exact:>7}")
        rows.append({"kept_s": round(kept_s, 2), "fresh_s": round(fresh_s, 2), "kept_recall10": round(recall[0], 4),
                     "fresh_recall10": round(recall[1], 4), "deleted": kept._deleted, "exact_fallbacks": exact})
    results[f"reindex_{n // 1000}k"] = rows


def graph_latency(n: int, bm25: BM25Index, rows: list[IndexedChunk], vecs: np.ndarray, topics: "LatentTopics",
                  texts: list[str], q_vecs: np.ndarray, results: dict[str, float]) -> None:
    """p50 of the filtered memory query with the graph walk's list (the default's, as a linked question gets it)
    beside the same queries with graph_weight 0, on the exact dense path."""
    graph, entity_vecs = synthetic_graph(n, topics)
    rng = np.random.default_rng(9)
    named = [f"{t} ent{rng.integers(0, len(graph.entities))}" for t in texts]  # each names one entity
    embedder = QueryVectors(dict(zip(named, q_vecs)))
    exact = VectorIndex(DIM, hnsw_threshold=10**12)
    exact.matrix = vecs
    # Each chunk is a titled document whose text names two others by title, so the second hop by title
    # (retrieval.hops) runs on the "on" side as on a titled corpus: the first hop's text is searched for the
    # candidates' titles and what it names moves up.
    named_rows = rng.integers(0, n, (n, 2))
    rows = [IndexedChunk(r.chunk_id, r.document_id, f"This passage cites Topic {a} and then Topic {b} at length.",
                         r.source, {**r.fields, "title": f"Topic {i}"})
            for i, (r, (a, b)) in enumerate(zip(rows, named_rows.tolist()))]
    index = chunk_index(bm25, rows, exact, embedder)
    index.by_id = {r.chunk_id: i for i, r in enumerate(rows)}
    t0 = time.perf_counter()
    index.graph_walk = walk_for_index(graph, index)
    build = time.perf_counter() - t0
    t0 = time.perf_counter()
    served = with_ann(entity_vecs, RetrievalSettings().entity_hnsw_threshold)  # as a generation loads them
    ann_build = time.perf_counter() - t0
    index.graph_walk.attach_vectors(entity_vecs)  # exact first: the seeds the HNSW graph's are compared with

    def seeds(text: str, qv: np.ndarray) -> list[str]:  # the walk's seeds, by entity (the similarities computed
        return [s.entity_id for s in index.graph_walk.link(text, qv).seeds]  # by HNSW differ in the last bits)

    exact_seeds = [seeds(t, q) for t, q in zip(named, q_vecs)]
    index.graph_walk.attach_vectors(served)
    same = sum(seeds(t, q) == e for t, q, e in zip(named, q_vecs, exact_seeds))
    index.search(named[0], 10, metadata_filter={"team": "t0"})  # builds the filter columns once
    times: dict[str, list[float]] = {"off": [], "on": []}
    linked = moved = 0
    for i, text in enumerate(named):
        # Each query runs without and with the graph list, in turn (which goes first alternates), so a noisy
        # stretch of the machine slows both sides alike.
        for label in (("off", "on") if i % 2 == 0 else ("on", "off")):
            t0 = time.perf_counter()
            out = index.search_detailed(text, 10, metadata_filter={"team": f"t{i % 10}"},
                                        graph_weight=0.0 if label == "off" else None)
            times[label].append(time.perf_counter() - t0)
            linked += label == "on" and bool(out.graph_weight)
            moved += label == "on" and bool(out.hops)
    p50 = {label: statistics.median(ts[5:]) * 1000 for label, ts in times.items()}
    index.close()
    tag = "1m" if n == 1_000_000 else f"{n // 1000}k"
    ratio = p50["on"] / p50["off"]
    how = "an HNSW graph" if served.ann is not None else "one product"
    print(f"{n:>9}  graph walk: {len(graph.entities)} entities, matrices built in {build:.1f} s; nearest entities "
          f"by {how} (built in {ann_build:.1f} s; the same seeds as exact linking for {same}/{len(named)} "
          f"queries); filtered query p50 {p50['on']:.2f} ms with the graph list ({linked}/{len(named)} linked, "
          f"{moved} with passages moved up by title), "
          f"{p50['off']:.2f} ms without (graph_weight 0): {ratio:.2f}x")
    results[f"p50_ms_{tag}_graph_on"] = round(p50["on"], 3)
    results[f"p50_ms_{tag}_graph_off"] = round(p50["off"], 3)
    results[f"graph_ratio_{tag}"] = round(ratio, 3)
    results[f"graph_seeds_as_exact_{tag}"] = round(same / len(named), 4)


if __name__ == "__main__":
    main()
