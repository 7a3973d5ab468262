"""bge-small-en-v1.5 against MiniLM on a BEIR set (SciFact test by default): which truncation, which query form.

    python -m bench.bge_small [--corpus C.jsonl --queries Q.jsonl --qrels test.tsv] [--docs 128] [--cache F]

For bge-small truncated at 512 and at 256 tokens, each with and without its query instruction ("Represent this
sentence for searching relevant passages: "), and for MiniLM as shipped (the peer): nDCG@10 and Recall@100 of
the dense list alone and of Strata's default (adaptive) fusion with BM25. Each document is one chunk
(title + text), as in bench.beir; vectors are cached by content hash in --cache, so a second run embeds nothing.
Speed: documents per second on a fixed sample of --docs documents (seed 0), each embedder under the same default
compute settings one after the other, and the median milliseconds to embed one query. Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from bench.beir import DATA, evaluate, load
from bench.embed import sample_texts
from core.settings import ComputeSettings, RetrievalSettings
from core.threads import configure
from retrieval.bge_small import BgeSmallEmbedder
from retrieval.index import ChunkIndex
from retrieval.minilm import MiniLMEmbedder
from retrieval.vector_cache import VectorCache


def docs_per_s(embedder: Any, texts: list[str]) -> float:
    embedder.embed(texts[:4])  # warm up
    t = time.perf_counter()
    embedder.embed(texts)
    return len(texts) / (time.perf_counter() - t)


def query_ms(embedder: Any, queries: list[str]) -> float:
    embed = getattr(embedder, "embed_queries", embedder.embed)
    ms = []
    for q in queries:
        t = time.perf_counter()
        embed([q])
        ms.append((time.perf_counter() - t) * 1000)
    return statistics.median(ms)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=DATA / "corpus.jsonl")
    ap.add_argument("--queries", type=Path, default=DATA / "queries_test.jsonl")
    ap.add_argument("--qrels", type=Path, default=DATA / "qrels" / "test.tsv")
    ap.add_argument("--docs", type=int, default=128, help="documents in the speed sample")
    ap.add_argument("--cache", type=Path, default=Path(".strata") / "bench-vectors.sqlite")
    args = ap.parse_args()
    configure(ComputeSettings())
    chunks, qs, rel = load(args.corpus, args.queries, args.qrels)
    args.cache.parent.mkdir(parents=True, exist_ok=True)
    cache = VectorCache(args.cache)
    settings = RetrievalSettings(embedder="none", dense_weight=1.0)
    results: dict[str, Any] = {}
    rows: list[tuple[str, float, float, float, float]] = []

    def measure(label: str, idx: ChunkIndex) -> None:
        alone = evaluate(lambda q: [h.chunk_id for h in idx.search(q, 100, dense_weight=1.0, sparse_weight=0.0)],
                         qs, rel)
        fused = evaluate(lambda q: [h.chunk_id for h in idx.search(q, 100, fusion="adaptive")], qs, rel)
        results[label] = {"dense_alone": round(alone[0], 4), "dense_alone_recall100": round(alone[1], 4),
                          "default": round(fused[0], 4), "default_recall100": round(fused[1], 4)}
        rows.append((label, *alone, *fused))
        print(f"{label:<34}{alone[0]:>8.4f}{alone[1]:>8.4f}{fused[0]:>10.4f}{fused[1]:>8.4f}", flush=True)

    print(f"{'embedder':<34}{'alone':>8}{'R@100':>8}{'default':>10}{'R@100':>8}   (nDCG@10)")
    minilm = MiniLMEmbedder()
    idx = ChunkIndex(settings, embedder=minilm, vector_cache=cache)
    idx.add(chunks)
    measure("minilm", idx)
    bge: dict[int, BgeSmallEmbedder] = {}
    for tokens in (512, 256):
        bge[tokens] = e = BgeSmallEmbedder(max_tokens=tokens)
        idx = ChunkIndex(settings, embedder=e, vector_cache=cache)
        t = time.perf_counter()
        idx.add(chunks)
        print(f"bge-small at {tokens} tokens: corpus indexed in {time.perf_counter() - t:.0f} s", flush=True)
        for instruction in (False, True):
            e.query_instruction = instruction
            measure(f"bge_small_{tokens}" + ("_instruction" if instruction else ""), idx)
        e.query_instruction = False
    texts = sample_texts(args.corpus, args.docs)
    queries = list(qs.values())[:100]
    speed = {"minilm": docs_per_s(minilm, texts), "bge_small_512": docs_per_s(bge[512], texts),
             "bge_small_256": docs_per_s(bge[256], texts)}
    latency = {"minilm": query_ms(minilm, queries), "bge_small_512": query_ms(bge[512], queries),
               "bge_small_256": query_ms(bge[256], queries)}
    print(f"{'speed':<20}{'docs/s':>10}{'x MiniLM':>10}{'query p50 ms':>14}")
    for name, v in speed.items():
        print(f"{name:<20}{v:>10.1f}{v / speed['minilm']:>10.2f}{latency[name]:>14.2f}")
    results.update(docs_per_s={k: round(v, 2) for k, v in speed.items()},
                   speed_vs_minilm={k: round(v / speed["minilm"], 3) for k, v in speed.items()},
                   query_p50_ms={k: round(v, 2) for k, v in latency.items()},
                   queries=len(qs), documents=len(chunks), speed_sample=len(texts))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
