"""The Neo4j graph store: the production backend.

The driver is injected (``Neo4jGraphStore(driver, database)``); :meth:`connect` builds one from settings and
checks connectivity, turning an unreachable server or a refused password into :class:`StoreUnavailableError`
naming the URI. Writes go in batches of ``batch_size`` rows, one managed transaction per batch (the driver
retries transient errors), so a batch commits whole or not at all.

Relations are written by ``write_threads`` concurrent sessions: entities are hashed into buckets, each relation
falls in the cell of its two endpoints' buckets, and the cells written at the same time never share a bucket (a
round-robin schedule over the bucket pairs), so no two concurrent transactions lock the same entity. What is
left is a rare conflict on a relationship record that sits in the chains of two entities written by different
sessions; Neo4j reports it as a deadlock, a transient error, and the driver retries that batch whole.

Graph shape: ``(:Document)-[:HAS_CHUNK]->(:Chunk)<-[:MENTIONED_IN]-(:Entity)``,
``(:Entity)-[:RELATED {id, description, weight, chunk_ids}]->(:Entity)``,
``(:Entity)-[:IN_COMMUNITY]->(:Community)-[:CHILD_OF]->(:Community)``; reports are properties of Community.
"""

from __future__ import annotations

import json
import zlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterator, Sequence

from neo4j import Driver, GraphDatabase, ManagedTransaction
from neo4j.exceptions import AuthError, Neo4jError, ServiceUnavailable, SessionExpired

from core.records import Chunk, Community, DeletionResult, Document, Entity, GraphSnapshot, Relation, Report
from core.settings import StoreSettings
from core.store import cypher
from core.store.codec import dumps, merge_text, report_from_row, report_row
from core.store.port import StoreError, StoreUnavailableError


def _batches(rows: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for i in range(0, len(rows), size):
        yield rows[i:i + size]


def disjoint_rounds(buckets: int) -> list[list[tuple[int, int]]]:
    """Every unordered pair of buckets (a bucket with itself included), grouped into rounds whose pairs share no
    bucket: the circle method's buckets - 1 rounds for the pairs of distinct buckets, then one for the diagonal."""
    if buckets < 2 or buckets % 2:
        raise ValueError(f"need an even number of buckets, got {buckets}")
    rounds = []
    ring = buckets - 1
    for r in range(ring):
        pairs = [(r, ring)] + [((r + t) % ring, (r - t) % ring) for t in range(1, buckets // 2)]
        rounds.append([(min(a, b), max(a, b)) for a, b in pairs])
    rounds.append([(b, b) for b in range(buckets)])
    return rounds


def _coalesce(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per id: a statement sees its own MERGEs but computes every row's SET from values read before
    them, so repeats of an id within one batch would overwrite each other. Repeats are folded here as the
    store folds them across calls: descriptions merged, chunk ids unioned in order, other fields from the last."""
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        seen = out.get(row["id"])
        if seen is None:
            out[row["id"]] = dict(row)
        else:
            merged = {**row, "description": merge_text(seen["description"], row["description"]),
                      "chunk_ids": list(dict.fromkeys(seen["chunk_ids"] + row["chunk_ids"]))}
            out[row["id"]] = merged
    return list(out.values())


def _bucket(entity_id: str, buckets: int) -> int:
    return zlib.crc32(entity_id.encode("utf-8")) % buckets


class Neo4jGraphStore:
    backend = "neo4j"

    def __init__(self, driver: Driver, database: str = "neo4j", batch_size: int = 2000, uri: str = "",
                 write_threads: int = 2) -> None:
        self.driver = driver
        self.database = database
        self.batch_size = batch_size
        self.write_threads = write_threads
        self.uri = uri or "neo4j"
        self._schema_ready = False

    @classmethod
    def connect(cls, settings: StoreSettings) -> "Neo4jGraphStore":
        driver = GraphDatabase.driver(settings.neo4j_uri, auth=(settings.neo4j_user, settings.neo4j_password.get_secret_value()),
                                      connection_timeout=settings.connection_timeout_s,
                                      max_transaction_retry_time=settings.retry_time_s,
                                      # Transient errors here are mostly a rare lock conflict between the
                                      # concurrent relation writers: retry soon rather than after the 1 s default.
                                      initial_retry_delay=0.1,
                                      # Only notifications a user must act on: warnings, and none about labels
                                      # not created yet (a fresh database), our own queries' deprecated syntax,
                                      # planner hints or performance remarks.
                                      notifications_min_severity="WARNING",
                                      notifications_disabled_classifications=[
                                          "UNRECOGNIZED", "DEPRECATION", "HINT", "PERFORMANCE", "GENERIC"])
        try:
            driver.verify_connectivity()
        except AuthError as exc:
            driver.close()
            raise StoreUnavailableError(f"Neo4j at {settings.neo4j_uri} refused the credentials for user "
                                        f"{settings.neo4j_user!r}: {exc.message}") from exc
        except (ServiceUnavailable, OSError, Neo4jError) as exc:
            driver.close()
            raise StoreUnavailableError(f"Neo4j at {settings.neo4j_uri} is not reachable: {exc}") from exc
        store = cls(driver, settings.neo4j_database, settings.batch_size, settings.neo4j_uri, settings.write_threads)
        store.ensure_schema()
        return store

    # -- plumbing -------------------------------------------------------------------------------------------
    def _write(self, fn, *args: Any) -> Any:  # type: ignore[no-untyped-def]
        try:
            with self.driver.session(database=self.database) as session:
                return session.execute_write(fn, *args)
        except (ServiceUnavailable, SessionExpired) as exc:
            raise StoreUnavailableError(f"Neo4j at {self.uri} became unreachable; the batch was not committed: {exc}") from exc
        except Neo4jError as exc:
            raise StoreError(f"Neo4j at {self.uri} rejected a write; the batch was not committed: {exc.message}") from exc

    def _read(self, query: str, **params: Any) -> list[Any]:
        try:
            records, _, _ = self.driver.execute_query(query, params, database_=self.database, routing_="r")
            return records
        except (ServiceUnavailable, SessionExpired) as exc:
            raise StoreUnavailableError(f"Neo4j at {self.uri} is not reachable: {exc}") from exc
        except Neo4jError as exc:
            raise StoreError(f"Neo4j at {self.uri} rejected a read: {exc.message}") from exc

    def _write_rows(self, query: str, rows: Sequence[dict[str, Any]]) -> None:
        def run(tx: ManagedTransaction, batch: Sequence[dict[str, Any]]) -> None:
            tx.run(query, rows=list(batch)).consume()

        for batch in _batches(rows, self.batch_size):
            self._write(run, batch)

    def ensure_schema(self) -> None:
        """Create the unique-id constraints once; safe to call again."""
        if self._schema_ready:
            return
        for statement in cypher.CONSTRAINTS:
            self._write(lambda tx, q=statement: tx.run(q).consume())
        self._schema_ready = True

    # -- writes ---------------------------------------------------------------------------------------------
    def upsert_documents(self, documents: Sequence[Document]) -> None:
        self._write_rows(cypher.UPSERT_DOCUMENTS, [
            {"id": d.id, "source": d.source, "content_hash": d.content_hash, "metadata": dumps(d.metadata)} for d in documents])

    def upsert_chunks(self, chunks: Sequence[Chunk]) -> None:
        self._write_rows(cypher.UPSERT_CHUNKS, [
            {"id": c.id, "document_id": c.document_id, "ordinal": c.ordinal, "text": c.text, "start": c.start,
             "end": c.end, "n_tokens": c.n_tokens, "source": c.source, "content_hash": c.content_hash,
             "metadata": dumps(c.metadata)} for c in chunks])

    def upsert_entities(self, entities: Sequence[Entity]) -> None:
        self._write_rows(cypher.UPSERT_ENTITIES, _coalesce([
            {"id": e.id, "name": e.name, "type": e.type, "description": e.description, "chunk_ids": list(e.chunk_ids)}
            for e in entities]))

    def upsert_relations(self, relations: Sequence[Relation]) -> None:
        rows = _coalesce([{"id": r.id, "source_id": r.source_id, "target_id": r.target_id,
                           "description": r.description, "chunk_ids": list(r.chunk_ids)} for r in relations])
        if self.write_threads < 2 or len(rows) < 4 * self.batch_size:
            self._write_rows(cypher.UPSERT_RELATIONS, rows)
            return
        buckets = 2 * self.write_threads
        cells: dict[tuple[int, int], list[dict[str, Any]]] = {}
        for row in rows:
            a, b = _bucket(row["source_id"], buckets), _bucket(row["target_id"], buckets)
            cells.setdefault((min(a, b), max(a, b)), []).append(row)
        with ThreadPoolExecutor(self.write_threads, thread_name_prefix="strata-neo4j") as pool:
            for pairs in disjoint_rounds(buckets):
                # A round ends before the next starts: its cells' entities are disjoint only among themselves.
                for done in [pool.submit(self._write_rows, cypher.UPSERT_RELATIONS, cells.get(p, [])) for p in pairs]:
                    done.result()

    def save_extractions(self, extractions: Sequence[tuple[str, str]]) -> None:
        self._write_rows(cypher.SAVE_EXTRACTIONS, [{"id": cid, "payload": payload} for cid, payload in extractions])

    def set_attributes(self, entities: Sequence[Entity], relations: Sequence[Relation]) -> None:
        self._write_rows(cypher.SET_ENTITY_ATTRIBUTES, [
            {"id": e.id, "name": e.name, "type": e.type, "description": e.description} for e in entities])
        self._write_rows(cypher.SET_RELATION_DESCRIPTIONS, [
            {"id": r.id, "source_id": r.source_id, "target_id": r.target_id, "description": r.description}
            for r in relations])

    def delete_document(self, document_id: str) -> DeletionResult:
        def run(tx: ManagedTransaction) -> DeletionResult:
            ids = tx.run(cypher.DOCUMENT_CHUNK_IDS, id=document_id).single()["ids"]
            touched = tx.run(cypher.TOUCHED_ENTITIES, ids=ids).single()["touched"] if ids else []
            marked = tx.run(cypher.MARK_COMMUNITIES_STALE, touched=touched).single()["marked"] if touched else 0
            rel_removed = tx.run(cypher.PRUNE_RELATION_CHUNKS, touched=touched, ids=ids).single()["removed"] if touched else 0
            tx.run(cypher.DELETE_CHUNKS, ids=ids).consume()
            orphans = tx.run(cypher.COUNT_ORPHANS, touched=touched).single() if touched else None
            if orphans is not None:
                tx.run(cypher.DELETE_ORPHANS, touched=touched).consume()
            tx.run(cypher.DELETE_DOCUMENT, id=document_id).consume()
            return DeletionResult(document_id, len(ids), orphans["entities"] if orphans else 0,
                                  rel_removed + (orphans["relations"] if orphans else 0), marked)

        return self._write(run)

    def replace_communities(self, communities: Sequence[Community]) -> None:
        rows = [{"id": c.id, "level": c.level, "parent_id": c.parent_id, "entity_ids": list(c.entity_ids)} for c in communities]

        def run(tx: ManagedTransaction) -> None:
            tx.run(cypher.DROP_GONE_COMMUNITIES, keep=[c.id for c in communities]).consume()
            tx.run(cypher.CLEAR_COMMUNITY_LINKS).consume()
            for batch in _batches(rows, self.batch_size):
                tx.run(cypher.UPSERT_COMMUNITIES, rows=list(batch)).consume()
            linked = [r for r in rows if r["parent_id"]]
            for batch in _batches(linked, self.batch_size):
                tx.run(cypher.LINK_COMMUNITY_PARENTS, rows=list(batch)).consume()

        # Communities are replaced as one unit: readers never see a half-replaced hierarchy.
        self._write(run)

    def save_reports(self, reports: Sequence[Report]) -> None:
        self._write_rows(cypher.SAVE_REPORTS, [report_row(r) for r in reports])

    def delete_reports(self, community_ids: Sequence[str]) -> None:
        self._write(lambda tx: tx.run(cypher.DELETE_REPORTS, ids=list(community_ids)).consume())

    def clear(self) -> None:
        while True:
            removed = self._write(lambda tx: tx.run(cypher.CLEAR_BATCH).single()["removed"])
            if not removed:
                return

    # -- reads ----------------------------------------------------------------------------------------------
    def document_hashes(self) -> dict[str, str]:
        return {r["id"]: r["hash"] for r in self._read(cypher.DOCUMENT_HASHES)}

    def document_sources(self) -> dict[str, str]:
        return {r["id"]: r["source"] for r in self._read(cypher.DOCUMENT_SOURCES)}

    @staticmethod
    def _chunk(node: Any) -> Chunk:
        return Chunk(node["id"], node["document_id"], node["ordinal"], node["text"], node["start"], node["end"],
                     node["n_tokens"], node["source"], node["content_hash"], json.loads(node["metadata"]))

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        ids = list(dict.fromkeys(chunk_ids))
        found = {c.id: c for c in (self._chunk(r["c"]) for r in self._read(cypher.GET_CHUNKS, ids=ids))}
        return [found[i] for i in ids if i in found]

    def all_chunks(self) -> list[Chunk]:
        return [self._chunk(r["c"]) for r in self._read(cypher.ALL_CHUNKS)]

    def read_graph(self) -> GraphSnapshot:
        entities, relations = [], []
        for r in self._read(cypher.READ_GRAPH):
            entities.append(Entity(r["id"], r["name"], r["type"], r["description"], tuple(sorted(r["chunk_ids"]))))
            relations.extend(Relation(rid, r["id"], target, description, tuple(sorted(chunk_ids)))
                             for rid, target, description, chunk_ids in r["related"])
        entities.sort(key=lambda e: e.id)
        relations.sort(key=lambda x: x.id)
        return GraphSnapshot(tuple(entities), tuple(relations))

    def extractions(self) -> dict[str, str]:
        return {r["id"]: r["payload"] for r in self._read(cypher.READ_EXTRACTIONS)}

    def communities(self) -> list[Community]:
        return [Community(r["id"], r["level"], r["parent_id"], tuple(sorted(r["entity_ids"])))
                for r in self._read(cypher.READ_COMMUNITIES)]

    def reports(self) -> list[Report]:
        return [report_from_row(r) for r in self._read(cypher.READ_REPORTS)]

    def counts(self) -> dict[str, int]:
        rows = self._read(cypher.COUNTS)
        return dict(rows[0]) if rows else {}

    def close(self) -> None:
        self.driver.close()
