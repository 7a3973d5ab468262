"""Retrieval quality on a BEIR-format set (SciFact test by default): nDCG@10 and Recall@100 per configuration.

    python -m bench.beir [--corpus C.jsonl --queries Q.jsonl --qrels test.tsv] [--embedders hashing minilm]

Configurations: BM25 alone (Strata's tokenizer: stop words + Snowball stemming, lemmas for Polish text), BM25
with English stems for every language (the peer of the Polish lemmas), each embedder alone, and for
each embedder hybrid weighted RRF (1:1, k=60), hybrid adaptive (the default fusion), hybrid convex (alpha 0.5),
and RRF with the lexical rerank. Each document is one chunk (title + text). Vectors are cached by content hash
in --cache, so a second run embeds nothing. Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Callable

from retrieval.e5 import e5_available
from retrieval.embed import minilm_available
from retrieval.index import ChunkIndex
from retrieval.vector_cache import VectorCache
from core.records import Chunk, stable_hash
from core.settings import RetrievalSettings

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"


def load(corpus: Path, queries: Path, qrels: Path) -> tuple[list[Chunk], dict[str, str], dict[str, dict[str, int]]]:
    chunks = []
    for line in open(corpus, encoding="utf-8"):
        row = json.loads(line)
        text = (row.get("title", "") + "\n" + row["text"]).strip()
        chunks.append(Chunk(row["_id"], row["_id"], 0, text, 0, len(text), 0, row["_id"], stable_hash(text, size=12)))
    rel: dict[str, dict[str, int]] = {}
    for i, line in enumerate(open(qrels, encoding="utf-8")):
        parts = line.strip().split("\t")
        if i == 0 and not parts[-1].lstrip("-").isdigit():
            continue
        rel.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    qs = {}
    for line in open(queries, encoding="utf-8"):
        row = json.loads(line)
        if row["_id"] in rel:
            qs[row["_id"]] = row["text"]
    return chunks, qs, rel


def ndcg10(ranked: list[str], rels: dict[str, int]) -> float:
    dcg = sum((2 ** rels.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sorted(rels.values(), reverse=True)[:10]
    idcg = sum((2 ** r - 1) / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall100(ranked: list[str], rels: dict[str, int]) -> float:
    relevant = {d for d, r in rels.items() if r > 0}
    return len(relevant & set(ranked[:100])) / len(relevant) if relevant else 0.0


def evaluate(search: Callable[[str], list[str]], qs: dict[str, str], rel: dict[str, dict[str, int]]) -> tuple[float, float]:
    n = r = 0.0
    for qid, text in qs.items():
        ranked = search(text)
        n += ndcg10(ranked, rel[qid])
        r += recall100(ranked, rel[qid])
    return n / len(qs), r / len(qs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--corpus", type=Path, default=DATA / "corpus.jsonl")
    ap.add_argument("--queries", type=Path, default=DATA / "queries_test.jsonl")
    ap.add_argument("--qrels", type=Path, default=DATA / "qrels" / "test.tsv")
    ap.add_argument("--embedders", nargs="+", default=["hashing"] + (["minilm"] if minilm_available() else [])
                    + (["e5"] if e5_available() else []))
    ap.add_argument("--cache", type=Path, default=Path(".strata") / "bench-vectors.sqlite")
    args = ap.parse_args()
    chunks, qs, rel = load(args.corpus, args.queries, args.qrels)
    cache = VectorCache(args.cache)
    results: dict[str, float] = {}
    rows = []

    def record(name: str, ndcg: float, rec: float, note: str = "") -> None:
        results[name] = round(ndcg, 4)
        results[name + "_recall100"] = round(rec, 4)
        rows.append((name, ndcg, rec, note))

    bm25 = ChunkIndex(RetrievalSettings(embedder="none"))
    t0 = time.perf_counter()
    bm25.add(chunks)
    note = f"built in {time.perf_counter() - t0:.1f} s"
    record("bm25", *evaluate(lambda q: [h.chunk_id for h in bm25.search(q, 100)], qs, rel), note)
    # The peer of BM25's Polish lemmas: every text through English stems (the same as bm25 on other languages).
    stems = ChunkIndex(RetrievalSettings(embedder="none", polish_lemmas=False))
    stems.add(chunks)
    record("bm25_english_stems", *evaluate(lambda q: [h.chunk_id for h in stems.search(q, 100)], qs, rel))
    offline = {"bm25": results["bm25"]}
    for name in args.embedders:
        idx = ChunkIndex(RetrievalSettings(embedder=name), vector_cache=cache)
        t0 = time.perf_counter()
        idx.add(chunks)
        note = f"{idx.dense_name}: indexed in {time.perf_counter() - t0:.1f} s"
        configs = {
            f"{name}_alone": dict(dense_weight=1.0, sparse_weight=0.0),
            f"hybrid_rrf_{name}": dict(dense_weight=1.0, sparse_weight=1.0, rrf_k=60, fusion="rrf"),
            f"hybrid_adaptive_{name}": dict(fusion="adaptive", dense_weight_default=1.0),
            f"hybrid_convex_{name}": dict(dense_weight=1.0, sparse_weight=1.0, fusion="convex"),
        }
        for cname, kw in configs.items():
            if kw.pop("dense_weight_default", None):
                idx.settings = idx.settings.model_copy(update={"dense_weight": 1.0})
                fn = lambda q: [h.chunk_id for h in idx.search(q, 100, fusion="adaptive")]  # noqa: E731
            else:
                fn = lambda q, kw=kw: [h.chunk_id for h in idx.search(q, 100, **kw)]  # noqa: E731
            record(cname, *evaluate(fn, qs, rel), note if cname.endswith("_alone") else "")
            idx.settings = RetrievalSettings(embedder=name)
        idx.settings = RetrievalSettings(embedder=name, rerank=True)
        record(f"hybrid_rrf_rerank_{name}", *evaluate(
            lambda q: [h.chunk_id for h in idx.search(q, 100, dense_weight=1.0, sparse_weight=1.0, fusion="rrf")], qs, rel))
        idx.settings = RetrievalSettings(embedder=name)
        for cname in (f"{name}_alone", f"hybrid_rrf_{name}", f"hybrid_adaptive_{name}", f"hybrid_convex_{name}",
                      f"hybrid_rrf_rerank_{name}"):
            offline[cname] = results[cname]
    print(f"{'configuration':<34}{'nDCG@10':>9}{'R@100':>8}  note")
    for name, n, r, note in rows:
        print(f"{name:<34}{n:>9.4f}{r:>8.4f}  {note}")
    best = max(offline, key=offline.get)  # type: ignore[arg-type]
    results.update(bm25_ndcg10=results["bm25"], best_offline_ndcg10=offline[best], best_offline_config=best,
                   queries=len(qs), documents=len(chunks))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
