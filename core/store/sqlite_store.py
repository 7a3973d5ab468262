"""The embedded graph store: SQLite from the standard library, transactional, no server.

Each public write runs in one transaction, so a failed batch leaves nothing half-written. A damaged file is reported
as :class:`StoreDamagedError` naming it and the command that rebuilds it, a full disk as
:class:`core.disk.DiskFullError`, whichever operation meets them.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from pathlib import Path
from typing import Iterable, Sequence

from core.records import Chunk, Community, DeletionResult, Document, Entity, GraphSnapshot, Relation, Report
from core.sqlite_db import connect
from core.store.codec import dumps, merge_text, report_from_row, report_row
from core.disk import disk_full, is_corrupt, is_disk_full
from core.store.port import StoreDamagedError, StoreError

SCHEMA = """
PRAGMA foreign_keys = ON;
CREATE TABLE IF NOT EXISTS documents (id TEXT PRIMARY KEY, source TEXT NOT NULL, content_hash TEXT NOT NULL,
  metadata TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chunks (id TEXT PRIMARY KEY, document_id TEXT NOT NULL REFERENCES documents(id),
  ordinal INTEGER NOT NULL, text TEXT NOT NULL, start INTEGER NOT NULL, "end" INTEGER NOT NULL,
  n_tokens INTEGER NOT NULL, source TEXT NOT NULL, content_hash TEXT NOT NULL, metadata TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS chunks_by_document ON chunks(document_id);
CREATE TABLE IF NOT EXISTS extractions (chunk_id TEXT PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
  payload TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS entities (id TEXT PRIMARY KEY, name TEXT NOT NULL, type TEXT NOT NULL,
  description TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS mentions (entity_id TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
  chunk_id TEXT NOT NULL REFERENCES chunks(id) ON DELETE CASCADE, PRIMARY KEY (entity_id, chunk_id));
CREATE INDEX IF NOT EXISTS mentions_by_chunk ON mentions(chunk_id);
CREATE TABLE IF NOT EXISTS relations (id TEXT PRIMARY KEY, source_id TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
  target_id TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE, description TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS relation_chunks (relation_id TEXT NOT NULL REFERENCES relations(id) ON DELETE CASCADE,
  chunk_id TEXT NOT NULL REFERENCES chunks(id) ON DELETE CASCADE, PRIMARY KEY (relation_id, chunk_id));
CREATE INDEX IF NOT EXISTS relation_chunks_by_chunk ON relation_chunks(chunk_id);
CREATE INDEX IF NOT EXISTS relations_by_source ON relations(source_id);
CREATE INDEX IF NOT EXISTS relations_by_target ON relations(target_id);
CREATE TABLE IF NOT EXISTS communities (id TEXT PRIMARY KEY, level INTEGER NOT NULL, parent_id TEXT);
CREATE TABLE IF NOT EXISTS community_members (community_id TEXT NOT NULL REFERENCES communities(id) ON DELETE CASCADE,
  entity_id TEXT NOT NULL, PRIMARY KEY (community_id, entity_id));
CREATE INDEX IF NOT EXISTS members_by_entity ON community_members(entity_id);
CREATE TABLE IF NOT EXISTS reports (community_id TEXT PRIMARY KEY, level INTEGER NOT NULL, title TEXT NOT NULL,
  summary TEXT NOT NULL, findings TEXT NOT NULL, rating REAL NOT NULL, fingerprint TEXT NOT NULL, mode TEXT NOT NULL,
  model TEXT NOT NULL, created_at TEXT NOT NULL, stale INTEGER NOT NULL DEFAULT 0, inputs TEXT NOT NULL DEFAULT '');
"""


def damaged_message(path: Path | str, exc: BaseException) -> str:
    return (f"{path} is damaged ({exc}); rebuild the graph store from your folder with `strata index FOLDER "
            "--replace-store` (the damaged file is set aside, not deleted), or index into a fresh --data-dir")


def _named(fn):  # type: ignore[no-untyped-def]
    @functools.wraps(fn)
    def call(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        try:
            return fn(self, *args, **kwargs)
        except (sqlite3.Error, StoreError) as exc:
            if isinstance(exc, StoreDamagedError):
                raise
            if is_disk_full(exc):
                raise disk_full(exc, self.path) from exc
            if is_corrupt(exc):
                raise StoreDamagedError(damaged_message(self.path, exc)) from exc
            raise
    return call


def _name_failures(cls):  # type: ignore[no-untyped-def]
    """Every public method (and the constructor) reports a damaged file or a full disk as such."""
    for name, fn in list(vars(cls).items()):
        if callable(fn) and not isinstance(fn, (staticmethod, classmethod)) and (name == "__init__" or not name.startswith("_")):
            setattr(cls, name, _named(fn))
    return cls


@_name_failures
class SQLiteGraphStore:
    """GraphStore on one SQLite file."""

    backend = "embedded"

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._db = connect(self.path)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA synchronous = NORMAL")
        self._db.executescript(SCHEMA)

    # -- transactions -------------------------------------------------------------------------------------
    def _tx(self):  # type: ignore[no-untyped-def]
        store = self

        class _Tx:
            def __enter__(self) -> sqlite3.Connection:
                store._db.execute("BEGIN IMMEDIATE")
                return store._db

            def __exit__(self, exc_type, exc, tb) -> None:  # type: ignore[no-untyped-def]
                if exc_type is None:
                    store._db.execute("COMMIT")
                else:
                    store._db.execute("ROLLBACK")
                    if isinstance(exc, sqlite3.Error):
                        raise StoreError(f"{store.path}: write failed and was rolled back: {exc}") from exc

        return _Tx()

    # -- writes ---------------------------------------------------------------------------------------------
    def upsert_documents(self, documents: Sequence[Document]) -> None:
        with self._tx() as db:
            db.executemany(
                "INSERT INTO documents(id, source, content_hash, metadata) VALUES (?,?,?,?) "
                "ON CONFLICT(id) DO UPDATE SET source=excluded.source, content_hash=excluded.content_hash, metadata=excluded.metadata",
                [(d.id, d.source, d.content_hash, dumps(d.metadata)) for d in documents],
            )

    def upsert_chunks(self, chunks: Sequence[Chunk]) -> None:
        with self._tx() as db:
            db.executemany(
                'INSERT INTO chunks(id, document_id, ordinal, text, start, "end", n_tokens, source, content_hash, metadata) '
                "VALUES (?,?,?,?,?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET document_id=excluded.document_id, "
                'ordinal=excluded.ordinal, text=excluded.text, start=excluded.start, "end"=excluded."end", '
                "n_tokens=excluded.n_tokens, source=excluded.source, content_hash=excluded.content_hash, metadata=excluded.metadata",
                [(c.id, c.document_id, c.ordinal, c.text, c.start, c.end, c.n_tokens, c.source, c.content_hash,
                  dumps(c.metadata)) for c in chunks],
            )

    @staticmethod
    def _upsert_described(db: sqlite3.Connection, table: str, link_table: str, link_column: str, row_id: str,
                          description: str, insert_sql: str, insert_args: tuple, chunk_ids: Sequence[str]) -> None:
        """Insert a row, or merge its description into the stored one; then link it to its existing chunks."""
        row = db.execute(f"SELECT description FROM {table} WHERE id = ?", (row_id,)).fetchone()
        if row is None:
            db.execute(insert_sql, insert_args)
        else:
            db.execute(f"UPDATE {table} SET description = ? WHERE id = ?", (merge_text(row["description"], description), row_id))
        db.executemany(f"INSERT OR IGNORE INTO {link_table}({link_column}, chunk_id) SELECT ?, id FROM chunks WHERE id = ?",
                       [(row_id, cid) for cid in chunk_ids])

    def upsert_entities(self, entities: Sequence[Entity]) -> None:
        with self._tx() as db:
            for e in entities:
                self._upsert_described(db, "entities", "mentions", "entity_id", e.id, e.description,
                                       "INSERT INTO entities(id, name, type, description) VALUES (?,?,?,?)",
                                       (e.id, e.name, e.type, e.description), e.chunk_ids)
                db.execute("UPDATE entities SET name = ?, type = ? WHERE id = ?", (e.name, e.type, e.id))

    def upsert_relations(self, relations: Sequence[Relation]) -> None:
        with self._tx() as db:
            for r in relations:
                self._upsert_described(db, "relations", "relation_chunks", "relation_id", r.id, r.description,
                                       "INSERT INTO relations(id, source_id, target_id, description) VALUES (?,?,?,?)",
                                       (r.id, r.source_id, r.target_id, r.description), r.chunk_ids)

    def save_extractions(self, extractions: Sequence[tuple[str, str]]) -> None:
        """Keep each chunk's raw extraction (chunk id, JSON payload) beside the chunk; unknown chunks are ignored."""
        with self._tx() as db:
            db.executemany("INSERT INTO extractions(chunk_id, payload) SELECT id, ? FROM chunks WHERE id = ? "
                           "ON CONFLICT(chunk_id) DO UPDATE SET payload = excluded.payload",
                           [(payload, cid) for cid, payload in extractions])

    def set_attributes(self, entities: Sequence[Entity], relations: Sequence[Relation]) -> None:
        """Set stored entities' names, types and descriptions and relations' descriptions exactly (no merge)."""
        with self._tx() as db:
            db.executemany("UPDATE entities SET name = ?, type = ?, description = ? WHERE id = ?",
                           [(e.name, e.type, e.description, e.id) for e in entities])
            db.executemany("UPDATE relations SET description = ? WHERE id = ?", [(r.description, r.id) for r in relations])

    def delete_document(self, document_id: str) -> DeletionResult:
        with self._tx() as db:
            chunk_ids = [r[0] for r in db.execute("SELECT id FROM chunks WHERE document_id = ?", (document_id,))]
            if not chunk_ids:
                db.execute("DELETE FROM documents WHERE id = ?", (document_id,))
                return DeletionResult(document_id, 0, 0, 0, 0)
            db.execute("CREATE TEMP TABLE IF NOT EXISTS gone_chunks (id TEXT PRIMARY KEY)")
            db.execute("DELETE FROM gone_chunks")
            db.executemany("INSERT INTO gone_chunks(id) VALUES (?)", [(c,) for c in chunk_ids])
            rel_ids = [r[0] for r in db.execute(
                "SELECT DISTINCT relation_id FROM relation_chunks WHERE chunk_id IN (SELECT id FROM gone_chunks)")]
            touched = {r[0] for r in db.execute(
                "SELECT DISTINCT entity_id FROM mentions WHERE chunk_id IN (SELECT id FROM gone_chunks)")}
            for i in range(0, len(rel_ids), 500):
                part = rel_ids[i:i + 500]
                marks = ",".join("?" * len(part))
                for row in db.execute(f"SELECT source_id, target_id FROM relations WHERE id IN ({marks})", part):
                    touched.update(row)
            marked = 0
            touched_list = sorted(touched)
            for i in range(0, len(touched_list), 500):
                part = touched_list[i:i + 500]
                marks = ",".join("?" * len(part))
                marked += db.execute(
                    f"UPDATE reports SET stale = 1 WHERE stale = 0 AND community_id IN "
                    f"(SELECT community_id FROM community_members WHERE entity_id IN ({marks}))", part).rowcount
            db.execute("DELETE FROM mentions WHERE chunk_id IN (SELECT id FROM gone_chunks)")
            db.execute("DELETE FROM relation_chunks WHERE chunk_id IN (SELECT id FROM gone_chunks)")
            rel_removed = ent_removed = 0
            for i in range(0, len(rel_ids), 500):
                part = rel_ids[i:i + 500]
                marks = ",".join("?" * len(part))
                rel_removed += db.execute(
                    f"DELETE FROM relations WHERE id IN ({marks}) AND id NOT IN "
                    f"(SELECT relation_id FROM relation_chunks WHERE relation_id IN ({marks}))", part + part).rowcount
            for i in range(0, len(touched_list), 500):
                part = touched_list[i:i + 500]
                marks = ",".join("?" * len(part))
                orphans = [r[0] for r in db.execute(
                    f"SELECT id FROM entities WHERE id IN ({marks}) AND id NOT IN "
                    f"(SELECT entity_id FROM mentions WHERE entity_id IN ({marks}))", part + part)]
                if orphans:
                    om = ",".join("?" * len(orphans))
                    rel_removed += db.execute(
                        f"DELETE FROM relations WHERE source_id IN ({om}) OR target_id IN ({om})", orphans + orphans).rowcount
                    ent_removed += db.execute(f"DELETE FROM entities WHERE id IN ({om})", orphans).rowcount
            db.execute("DELETE FROM chunks WHERE document_id = ?", (document_id,))
            db.execute("DELETE FROM documents WHERE id = ?", (document_id,))
        return DeletionResult(document_id, len(chunk_ids), ent_removed, rel_removed, marked)

    def replace_communities(self, communities: Sequence[Community]) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM community_members")
            db.execute("DELETE FROM communities")
            db.executemany("INSERT INTO communities(id, level, parent_id) VALUES (?,?,?)",
                           [(c.id, c.level, c.parent_id) for c in communities])
            db.executemany("INSERT INTO community_members(community_id, entity_id) VALUES (?,?)",
                           [(c.id, e) for c in communities for e in c.entity_ids])

    def save_reports(self, reports: Sequence[Report]) -> None:
        with self._tx() as db:
            rows = [report_row(r) for r in reports]
            db.executemany(
                "INSERT INTO reports(community_id, level, title, summary, findings, rating, fingerprint, mode, model, created_at, stale, inputs) "
                "VALUES (:community_id, :level, :title, :summary, :findings, :rating, :fingerprint, :mode, :model, :created_at, :stale, :inputs) "
                "ON CONFLICT(community_id) DO UPDATE SET level=excluded.level, title=excluded.title, summary=excluded.summary, "
                "findings=excluded.findings, rating=excluded.rating, fingerprint=excluded.fingerprint, mode=excluded.mode, "
                "model=excluded.model, created_at=excluded.created_at, stale=excluded.stale, inputs=excluded.inputs", rows)

    def delete_reports(self, community_ids: Sequence[str]) -> None:
        with self._tx() as db:
            db.executemany("DELETE FROM reports WHERE community_id = ?", [(c,) for c in community_ids])

    def clear(self) -> None:
        with self._tx() as db:
            for table in ("reports", "community_members", "communities", "relation_chunks", "relations", "mentions",
                          "extractions",
                          "entities", "chunks", "documents"):
                db.execute(f"DELETE FROM {table}")

    # -- reads ----------------------------------------------------------------------------------------------
    def document_hashes(self) -> dict[str, str]:
        return {r["id"]: r["content_hash"] for r in self._db.execute("SELECT id, content_hash FROM documents ORDER BY id")}

    def document_sources(self) -> dict[str, str]:
        return {r["id"]: r["source"] for r in self._db.execute("SELECT id, source FROM documents ORDER BY id")}

    def _chunks(self, rows: Iterable[sqlite3.Row]) -> list[Chunk]:
        return [Chunk(r["id"], r["document_id"], r["ordinal"], r["text"], r["start"], r["end"], r["n_tokens"],
                      r["source"], r["content_hash"], json.loads(r["metadata"])) for r in rows]

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        out: list[Chunk] = []
        ids = list(dict.fromkeys(chunk_ids))
        for i in range(0, len(ids), 500):
            part = ids[i:i + 500]
            out += self._chunks(self._db.execute(
                f"SELECT * FROM chunks WHERE id IN ({','.join('?' * len(part))})", part))
        order = {cid: i for i, cid in enumerate(ids)}
        return sorted(out, key=lambda c: order[c.id])

    def all_chunks(self) -> list[Chunk]:
        return self._chunks(self._db.execute("SELECT * FROM chunks ORDER BY document_id, ordinal"))

    def read_graph(self) -> GraphSnapshot:
        mentions: dict[str, list[str]] = {}
        for r in self._db.execute("SELECT entity_id, chunk_id FROM mentions ORDER BY entity_id, chunk_id"):
            mentions.setdefault(r[0], []).append(r[1])
        rel_chunks: dict[str, list[str]] = {}
        for r in self._db.execute("SELECT relation_id, chunk_id FROM relation_chunks ORDER BY relation_id, chunk_id"):
            rel_chunks.setdefault(r[0], []).append(r[1])
        entities = tuple(Entity(r["id"], r["name"], r["type"], r["description"], tuple(mentions.get(r["id"], ())))
                         for r in self._db.execute("SELECT * FROM entities ORDER BY id"))
        relations = tuple(Relation(r["id"], r["source_id"], r["target_id"], r["description"], tuple(rel_chunks.get(r["id"], ())))
                          for r in self._db.execute("SELECT * FROM relations ORDER BY id"))
        return GraphSnapshot(entities, relations)

    def extractions(self) -> dict[str, str]:
        return {r[0]: r[1] for r in self._db.execute("SELECT chunk_id, payload FROM extractions ORDER BY chunk_id")}

    def communities(self) -> list[Community]:
        members: dict[str, list[str]] = {}
        for r in self._db.execute("SELECT community_id, entity_id FROM community_members ORDER BY community_id, entity_id"):
            members.setdefault(r[0], []).append(r[1])
        return [Community(r["id"], r["level"], r["parent_id"], tuple(members.get(r["id"], ())))
                for r in self._db.execute("SELECT * FROM communities ORDER BY level, id")]

    def reports(self) -> list[Report]:
        return [report_from_row(r) for r in self._db.execute("SELECT * FROM reports ORDER BY level, community_id")]

    def counts(self) -> dict[str, int]:
        return {t: self._db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                for t in ("documents", "chunks", "entities", "relations", "communities", "reports")}

    def close(self) -> None:
        self._db.close()
