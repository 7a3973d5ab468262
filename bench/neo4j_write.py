"""Neo4j write throughput: batched UNWIND writes against a naive one-MERGE-per-transaction path.

    python -m bench.neo4j_write [--entities 100000] [--relations 300000] [--naive-sample 2000]

Needs the server from ``scripts/neo4j start`` (or STRATA_STORE__NEO4J_* settings). The database is cleared
before and after. A warm-up graph (--warmup, half the size) is written and cleared first, because a fresh JVM
has not compiled its write paths yet; its rate is printed too. Relations are written by --write-threads
concurrent sessions (the store's default, 2) in batches of --batch-size rows. Prints a table, then one JSON
line with batched_rel_per_s, naive_rel_per_s, ratio, readback_s.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time

from core.records import Chunk, Document, Entity, Relation
from core.settings import StrataSettings
from core.store import cypher
from core.store.neo4j_store import Neo4jGraphStore


def synthetic(n_entities: int, n_relations: int, n_chunks: int, seed: int = 7) -> tuple[list[Chunk], list[Entity], list[Relation]]:
    rng = random.Random(seed)
    chunks = [Chunk(f"bench#{i:05d}", "bench", i, f"chunk {i}", 0, 8, 2, "bench.txt", f"h{i}") for i in range(n_chunks)]
    entities = [Entity(f"e{i:07d}", f"entity {i}", "name", f"description of entity {i}", (chunks[i % n_chunks].id,))
                for i in range(n_entities)]
    seen: set[tuple[int, int]] = set()
    relations = []
    while len(relations) < n_relations:
        a, b = rng.randrange(n_entities), rng.randrange(n_entities)
        if a == b:
            continue
        a, b = min(a, b), max(a, b)
        if (a, b) in seen:
            continue
        seen.add((a, b))
        relations.append(Relation(f"r{len(relations):07d}", f"e{a:07d}", f"e{b:07d}", f"e{a} relates to e{b}",
                                  (chunks[(a + b) % n_chunks].id,)))
    return chunks, entities, relations


def write_graph(store: Neo4jGraphStore, chunks: list[Chunk], entities: list[Entity],
                relations: list[Relation]) -> tuple[float, float]:
    """Write one document's chunks, then the entities and the relations; seconds for each of the last two."""
    store.upsert_documents([Document("bench", "bench.txt", "", "h")])
    store.upsert_chunks(chunks)
    t0 = time.perf_counter()
    store.upsert_entities(entities)
    t_ent = time.perf_counter() - t0
    t0 = time.perf_counter()
    store.upsert_relations(relations)
    return t_ent, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--entities", type=int, default=100_000)
    ap.add_argument("--relations", type=int, default=300_000)
    ap.add_argument("--naive-sample", type=int, default=2000)
    ap.add_argument("--batch-size", type=int, default=2000)
    ap.add_argument("--write-threads", type=int, default=2)
    ap.add_argument("--warmup", type=float, default=0.5, help="size of the warm-up graph, as a share of the measured one")
    args = ap.parse_args()

    settings = StrataSettings().store.model_copy(update={"backend": "neo4j", "batch_size": args.batch_size,
                                                               "write_threads": args.write_threads})
    store = Neo4jGraphStore.connect(settings)
    store.clear()
    chunks, entities, relations = synthetic(args.entities, args.relations, 1000)
    try:
        warmup = None
        if args.warmup > 0:
            # A long-running server has compiled its write paths; a fresh JVM has not. Write a smaller graph
            # first (its relation rate is reported too), clear it, then measure.
            w_chunks, w_entities, w_relations = synthetic(int(args.entities * args.warmup),
                                                          int(args.relations * args.warmup), 1000, seed=8)
            warmup = len(w_relations) / write_graph(store, w_chunks, w_entities, w_relations)[1]
            store.clear()
        t_ent, t_rel = write_graph(store, chunks, entities, relations)
        batched = len(relations) / t_rel

        # The naive path on a sample: one auto-committed transaction per relation, as a per-row loop would do.
        sample = relations[: args.naive_sample]
        naive_ids = [Relation("n" + r.id, r.source_id, r.target_id, r.description, r.chunk_ids) for r in sample]
        t0 = time.perf_counter()
        with store.driver.session(database=store.database) as session:
            for r in naive_ids:
                session.execute_write(lambda tx, r=r: tx.run(cypher.NAIVE_MERGE_RELATION, id=r.id, source_id=r.source_id,
                                                              target_id=r.target_id, description=r.description,
                                                              chunk_ids=list(r.chunk_ids)).consume())
        t_naive = time.perf_counter() - t0
        naive = len(sample) / t_naive

        readbacks = []
        for _ in range(3):
            t0 = time.perf_counter()
            snap = store.read_graph()
            readbacks.append(time.perf_counter() - t0)
        readback = statistics.median(readbacks)
        assert len(snap.entities) == len(entities)
    finally:
        store.clear()
        store.close()

    print(f"{'path':<38}{'rows':>10}{'seconds':>10}{'rows/s':>12}")
    print(f"{'entities, batched UNWIND':<38}{len(entities):>10}{t_ent:>10.2f}{len(entities) / t_ent:>12,.0f}")
    print(f"{'relations, batched UNWIND':<38}{len(relations):>10}{t_rel:>10.2f}{batched:>12,.0f}")
    if warmup is not None:
        print(f"{'relations, batched, warm-up pass':<38}{int(args.relations * args.warmup):>10}{'':>10}{warmup:>12,.0f}")
    print(f"{'relations, naive (1 MERGE per tx)':<38}{len(sample):>10}{t_naive:>10.2f}{naive:>12,.0f}")
    print(f"{'read back for Leiden (median of 3)':<38}{len(snap.entities) + len(snap.relations):>10}{readback:>10.2f}")
    print(f"batched / naive: {batched / naive:.1f}x")
    print(json.dumps({"batched_rel_per_s": round(batched), "naive_rel_per_s": round(naive),
                      "ratio": round(batched / naive, 1), "readback_s": round(readback, 2),
                      "warmup_rel_per_s": round(warmup) if warmup else None, "batch_size": args.batch_size,
                      "write_threads": args.write_threads}))


if __name__ == "__main__":
    main()
