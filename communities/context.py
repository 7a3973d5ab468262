"""What a community report is written from: its members, their internal relations, their source chunks.

The fingerprint is a stable hash of exactly these inputs; a report whose stored fingerprint differs from the
current one was written from a graph that has since changed.
"""

from __future__ import annotations

from dataclasses import dataclass

from strata.records import Community, Entity, GraphSnapshot, Relation, stable_hash


@dataclass(frozen=True, slots=True)
class CommunityContext:
    community: Community
    entities: tuple[Entity, ...]
    relations: tuple[Relation, ...]

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

    def __init__(self, snapshot: GraphSnapshot) -> None:
        self.entities = {e.id: e for e in snapshot.entities}
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
        return CommunityContext(community, entities, tuple(rels[k] for k in sorted(rels)))


def fingerprint(ctx: CommunityContext) -> str:
    """A hash of member ids and descriptions, internal relations and source chunk ids."""
    parts: list[str] = []
    for e in ctx.entities:
        parts += ["E", e.id, e.description, ",".join(sorted(e.chunk_ids))]
    for r in ctx.relations:
        parts += ["R", r.id, r.description, ",".join(sorted(r.chunk_ids))]
    return stable_hash(*parts, size=12)
