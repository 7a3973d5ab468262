"""What a community report is written from: its members, their internal relations, their source chunks.

The fingerprint is a stable hash of exactly these inputs (including the content hashes of the source passages
a report reads, the ``report_passages`` chunks that mention the most members);
a report whose stored fingerprint differs from the current one was written from a graph that has since
changed. The inputs manifest keeps the same inputs item by item, so the drift report can say how much changed.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

from core.records import Community, Entity, GraphSnapshot, Relation, document_of, stable_hash


@dataclass(frozen=True, slots=True)
class CommunityContext:
    community: Community
    entities: tuple[Entity, ...]
    relations: tuple[Relation, ...]
    chunk_hashes: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
    passages: tuple[str, ...] = ()
    # Per document of the passages: (mentions of members in it, mentions of any entity in it), a mention being an
    # entity named in one of the document's chunks; how much of a page is about the community.
    pages: dict[str, tuple[int, int]] = field(default_factory=dict, compare=False, hash=False)

    @property
    def chunk_ids(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for e in self.entities:
            for c in e.chunk_ids:
                seen.setdefault(c, None)
        return tuple(seen)

    def degree(self) -> dict[str, float]:
        deg = {e.id: 0.0 for e in self.entities}
        for r in self.relations:
            deg[r.source_id] += r.weight
            deg[r.target_id] += r.weight
        return deg


class GraphIndex:
    """Entities and relations of a snapshot, indexed for building many community contexts."""

    def __init__(self, snapshot: GraphSnapshot, chunk_hashes: dict[str, str] | None = None, passages: int = 8) -> None:
        self.entities = {e.id: e for e in snapshot.entities}
        self.chunk_hashes = chunk_hashes or {}
        self.mentions = Counter(document_of(c) for e in snapshot.entities for c in e.chunk_ids)
        self.n_passages = passages
        self.by_entity: dict[str, list[Relation]] = {}
        for r in snapshot.relations:
            self.by_entity.setdefault(r.source_id, []).append(r)
            self.by_entity.setdefault(r.target_id, []).append(r)

    def context(self, community: Community) -> CommunityContext:
        members = set(community.entity_ids)
        entities = tuple(self.entities[e] for e in sorted(members) if e in self.entities)
        rels: dict[str, Relation] = {}
        for e in members:
            for r in self.by_entity.get(e, ()):
                if r.source_id in members and r.target_id in members:
                    rels[r.id] = r
        coverage: dict[str, int] = {}
        for e in entities:
            for c in e.chunk_ids:
                coverage[c] = coverage.get(c, 0) + 1
        # The source passages a report reads: the chunks that mention the most members.
        passages = tuple(sorted(coverage, key=lambda c: (-coverage[c], c))[: self.n_passages])
        hashes = {c: self.chunk_hashes.get(c, "") for c in passages}
        read = {document_of(c) for c in passages}
        named = Counter[str]()
        for c, n in coverage.items():
            if (d := document_of(c)) in read:
                named[d] += n
        pages = {d: (n, self.mentions[d]) for d, n in named.items()}  # (members' mentions are among all of them)
        return CommunityContext(community, entities, tuple(rels[k] for k in sorted(rels)), hashes, passages, pages)


def _h(text: str) -> str:
    return stable_hash(text, size=6)


def inputs_manifest(ctx: CommunityContext) -> dict[str, dict[str, str]]:
    """The report's inputs item by item: members (description and source chunk ids), internal relations
    (description and chunk ids), the content hashes of the source passages it reads, and how much of each of
    their pages is about the community (``pages``: members' mentions / all mentions; a docs title weighs it)."""
    return {
        "entities": {e.id: _h(e.description + "|" + ",".join(sorted(e.chunk_ids))) for e in ctx.entities},
        "relations": {r.id: _h(r.description + "|" + ",".join(sorted(r.chunk_ids))) for r in ctx.relations},
        "chunks": {c: ctx.chunk_hashes.get(c, "") for c in sorted(ctx.passages)},
        "pages": {d: f"{n}/{m}" for d, (n, m) in sorted(ctx.pages.items())},
    }


def fingerprint(ctx: CommunityContext, manifest: dict[str, dict[str, str]] | None = None) -> str:
    """A hash of the inputs manifest (member ids and descriptions, internal relations, source chunks, their pages'
    shares)."""
    return stable_hash(json.dumps(manifest or inputs_manifest(ctx), sort_keys=True), size=12)
