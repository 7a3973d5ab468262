"""Multi-hop passage retrieval on a BEIR-format set: does the graph walk find the second hop?

    python -m bench.multihop --corpus C.jsonl --queries Q.jsonl --qrels R.tsv [--data-dir DIR] [--reindex]

The corpus is indexed once by the full pipeline (offline extraction, MiniLM when installed, one passage per
chunk: chunks of up to 8,192 tokens) into ``--data-dir`` (default: a folder under the system's temporary
directory named by the corpus's path), and later runs reuse that index unless another extractor made it (then it
is indexed again first). The published generation is loaded as
``strata serve`` loads it, and every question is ranked five ways: BM25 alone, the dense list alone, the graph
walk alone, the default fusion without the graph (``graph_weight=0``), the default without the second hop by
title (``retrieval.hop_links`` 0: the walk's list fused, nothing moved beside the first hop) and the default. For
each: passage
``recall_at_2`` and ``recall_at_5`` (share of a question's supporting passages in the top 2 / 5, averaged),
``all_at_8`` (share of questions with every supporting passage in the top 8), ``ndcg10`` and ``query_p50_ms``.
Also printed: entity, relation and synonym-edge counts, how many entities have a vector, and the share of
questions linked to an entity (by its name, and with a seed linked by the question's vector). Last
line: one JSON object with those figures nested under ``bm25``, ``dense_alone``, ``graph_alone``,
``default_no_graph``, ``default_no_hops`` and ``default``.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from core.records import stable_hash
from core.settings import ChunkingSettings, ExtractionSettings, StrataSettings
from core.threads import configure

CONFIGS = ("bm25", "dense_alone", "graph_alone", "default_no_graph", "default_no_hops", "default")


def load_queries(queries: Path, qrels: Path) -> tuple[dict[str, str], dict[str, set[str]]]:
    rel: dict[str, set[str]] = {}
    for i, line in enumerate(open(qrels, encoding="utf-8")):
        parts = line.rstrip("\n").split("\t")
        if i == 0 and not parts[-1].lstrip("-").isdigit():
            continue
        if int(parts[2]) > 0:
            rel.setdefault(parts[0], set()).add(parts[1])
    qs = {}
    for line in open(queries, encoding="utf-8"):
        row = json.loads(line)
        if row["_id"] in rel:
            qs[row["_id"]] = row["text"]
    return qs, rel


def ndcg10(ranked: list[str], relevant: set[str]) -> float:
    dcg = sum(1 / math.log2(i + 2) for i, d in enumerate(ranked[:10]) if d in relevant)
    idcg = sum(1 / math.log2(i + 2) for i in range(min(10, len(relevant))))
    return dcg / idcg if idcg else 0.0


def score(rankings: dict[str, list[str]], rel: dict[str, set[str]], ms: list[float]) -> dict[str, float]:
    n = len(rankings)
    recall = lambda k: sum(len(rel[q] & set(r[:k])) / len(rel[q]) for q, r in rankings.items()) / n  # noqa: E731
    return {"recall_at_2": round(recall(2), 4), "recall_at_5": round(recall(5), 4),
            "all_at_8": round(sum(rel[q] <= set(r[:8]) for q, r in rankings.items()) / n, 4),
            "ndcg10": round(sum(ndcg10(r, rel[q]) for q, r in rankings.items()) / n, 4),
            "query_p50_ms": round(statistics.median(ms), 2)}


def bench_settings(data_dir: Path, embedder: str | None = None) -> StrataSettings:
    """One passage per chunk, offline extraction; ``embedder``: a ``retrieval.embedder`` other than the
    settings' (the STRATA_RETRIEVAL__EMBEDDER variable, else MiniLM)."""
    settings = StrataSettings(data_dir=data_dir, chunking=ChunkingSettings(chunk_tokens=8192, overlap_tokens=0),
                              extraction=ExtractionSettings(mode="offline"))
    if embedder is not None:
        settings = settings.model_copy(update={"retrieval": settings.retrieval.model_copy(update={"embedder": embedder})})
    return settings


def ensure_index(corpus: Path, data_dir: Path, reindex: bool, embedder: str | None = None) -> StrataSettings:
    """Index ``corpus`` into ``data_dir`` unless a generation of it is already published there."""
    from extraction.fingerprint import fingerprint_of
    from strata.extractor_record import recorded_extractor
    from strata.pipeline import index_folder
    from strata.workspace import Workspace

    settings = bench_settings(data_dir, embedder)
    ws = Workspace(data_dir)
    if reindex and data_dir.exists():
        shutil.rmtree(data_dir)
    if ws.current() is not None and recorded_extractor(ws) != fingerprint_of(settings):
        # An index made by another extractor is not this code's index: figures from it would be stale.
        print(f"the index in {data_dir} was made by another extractor: indexing it again", flush=True)
        index_folder(data_dir / "corpus", settings)
    if ws.current() is None:
        folder = data_dir / "corpus"
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(corpus, folder / "corpus.jsonl")  # the folder holds the corpus alone, not its queries
        started = time.perf_counter()
        run = index_folder(folder, settings)
        print(f"indexed {run.documents} passages into {data_dir} in {time.perf_counter() - started:.0f} s "
              f"({run.entities} entities, {run.relations} relations)", flush=True)
    return settings


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--queries", type=Path, required=True)
    ap.add_argument("--qrels", type=Path, required=True)
    ap.add_argument("--data-dir", type=Path, default=None)
    ap.add_argument("--reindex", action="store_true", help="index the corpus again even if an index is there")
    args = ap.parse_args()
    for p in (args.corpus, args.queries, args.qrels):
        if not p.is_file():
            ap.error(f"no such file: {p}")
    data_dir = args.data_dir or Path(tempfile.gettempdir()) / f"strata-multihop-{stable_hash(str(args.corpus.resolve()), size=6)}"
    settings = bench_settings(data_dir)
    configure(settings.compute)
    ensure_index(args.corpus, data_dir, args.reindex)
    run_bench(settings, *load_queries(args.queries, args.qrels))


def run_bench(settings: StrataSettings, qs: dict[str, str], rel: dict[str, set[str]]) -> None:
    from strata.engine import Engine

    engine = Engine(settings)
    snap = engine.current
    index = snap.index
    # The same generation without the second hop by title (retrieval.hops): the walk's own list, and the default
    # before that step.
    no_hops = Engine(settings.model_copy(update={"retrieval": settings.retrieval.model_copy(update={"hop_links": 0})}))
    bare = no_hops.current.index
    walk = index.graph_walk
    doc_of = {r.chunk_id: r.document_id for r in index.rows}
    depth = 10

    def docs(hits: list) -> list[str]:  # type: ignore[type-arg]
        return list(dict.fromkeys(doc_of[h.chunk_id] for h in hits))

    searches: dict[str, Callable[[str], list[str]]] = {
        "bm25": lambda q: docs(index.search(q, depth, dense_weight=0.0, sparse_weight=1.0, graph_weight=0.0,
                                            fusion="rrf")),
        "dense_alone": lambda q: docs(index.search(q, depth, dense_weight=1.0, sparse_weight=0.0, graph_weight=0.0,
                                                   fusion="rrf")),
        "graph_alone": lambda q: docs(bare.search(q, depth, dense_weight=0.0, sparse_weight=0.0, graph_weight=1.0,
                                                  fusion="rrf")),
        "default_no_graph": lambda q: docs(index.search(q, depth, graph_weight=0.0)),
        "default_no_hops": lambda q: docs(bare.search(q, depth)),
        "default": lambda q: docs(index.search(q, depth)),
    }
    results: dict[str, dict[str, float]] = {}
    for name, search in searches.items():
        for q in list(qs.values())[:3]:
            search(q)  # warm up
        rankings, ms = {}, []
        for qid, q in qs.items():
            t = time.perf_counter()
            rankings[qid] = search(q)
            ms.append((time.perf_counter() - t) * 1000)
        results[name] = score(rankings, rel, ms)
        r = results[name]
        print(f"{name:18s} R@2 {r['recall_at_2']:.3f}  R@5 {r['recall_at_5']:.3f}  all@8 {r['all_at_8']:.3f}  "
              f"nDCG@10 {r['ndcg10']:.3f}  p50 {r['query_p50_ms']:.1f} ms", flush=True)
    links = [index.graph_link(q) for q in qs.values()] if walk is not None else []
    linked = sum(bool(link.seeds) for link in links)
    by_name = sum(link.by_name for link in links)
    by_vector = sum(bool(link.by_vector) for link in links)
    stats = walk.stats() if walk is not None else {}
    if walk is not None:
        stats["entity_vectors"] = len(walk.vector_positions) if walk.entity_vectors is not None else 0
    print(f"graph: {stats}; questions linked to an entity: {linked}/{len(qs)} (by name {by_name}, with a seed "
          f"linked by vector {by_vector})")
    timing = pagerank_timing(walk, list(qs.values())) if walk is not None else {}
    if timing:
        print(f"personalized PageRank per question: Strata's local walk {timing['walk_ms']:.2f} ms, "
              f"igraph (PRPACK, exact) {timing['igraph_ms']:.2f} ms; the local walk drops at most "
              f"{timing['max_mass_dropped']:.1%} of the mass (largest difference at a node "
              f"{timing['max_abs_diff']:.1e}), and shares {timing['top40_chunk_overlap']:.0%} of igraph's top 40 "
              "chunks")
    out = {**results, "graph": stats, "linked_share": round(linked / len(qs), 4),
           "name_linked_share": round(by_name / len(qs), 4), "vector_linked_share": round(by_vector / len(qs), 4),
           "questions": len(qs),
           "passages": len(index), "pagerank": timing}
    engine.close()
    no_hops.close()
    print(json.dumps(out))


def pagerank_timing(walk: Any, questions: list[str]) -> dict[str, float]:
    """The walk's PageRank (GraphWalk.pagerank_sparse: the local walk, which drops mass below ``prune``) beside igraph's
    exact ``personalized_pagerank`` on the same transition matrix and seeds (the peer): median milliseconds a
    question, and how far the two results differ."""
    import igraph as ig
    import numpy as np

    p = walk.out_edges.tocoo()  # row j: where a walker at j steps
    g = ig.Graph(n=walk.out_edges.shape[0], edges=list(zip(p.row.tolist(), p.col.tolist())), directed=True)
    weights = p.data.tolist()
    ours, theirs, diff, dropped, overlap = [], [], 0.0, 0.0, []
    n_e = walk.n_entities
    for q in questions:
        link = walk.link(q)
        if not link.seeds:
            continue
        reset = np.zeros(walk.out_edges.shape[0])
        for seed in link.seeds:
            reset[walk.position[seed.entity_id]] += seed.weight
        reset /= reset.sum()
        at = np.flatnonzero(reset)
        t = time.perf_counter()
        a = walk.pagerank_sparse(at, reset[at], at, reset[at])
        ours.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        b = np.asarray(g.personalized_pagerank(damping=walk.params.damping, reset=reset.tolist(), weights=weights))
        theirs.append((time.perf_counter() - t) * 1000)
        diff = max(diff, float(np.abs(a - b).max()))
        dropped = max(dropped, 1.0 - float(a.sum()))
        top = lambda m: set(np.argsort(-m[n_e:], kind="stable")[:40].tolist())  # noqa: E731
        overlap.append(len(top(a) & top(b)) / 40)
    if not ours:
        return {}
    return {"walk_ms": round(statistics.median(ours), 3), "igraph_ms": round(statistics.median(theirs), 3),
            "max_abs_diff": diff, "max_mass_dropped": round(dropped, 5),
            "top40_chunk_overlap": round(statistics.mean(overlap), 4)}


if __name__ == "__main__":
    main()
