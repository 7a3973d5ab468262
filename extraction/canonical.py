"""Merged entity and relation fields as a function of the set of chunk extractions, not of their arrival order.

Each chunk's raw extraction is stored beside the chunk. After every run the whole graph's names, types and
descriptions are recomputed from those extractions taken in chunk-id order (chunk ids are
``<document id>#<ordinal>``, so the order is by document, then position), and whatever differs from the store is
set exactly. A run resumed after a crash, documents indexed in another order, or a document removed and added
back therefore end with the same fields as one uninterrupted run.
"""

from __future__ import annotations

import json
from typing import Callable, Mapping, Sequence

from core.records import Entity, GraphSnapshot, Relation
from extraction.resolution import resolve
from extraction.types import ChunkExtraction, EntityMention, RelationMention


def extraction_to_json(ex: ChunkExtraction) -> str:
    return json.dumps({"e": [[m.name, m.type, m.description] + ([m.written] if m.written else []) for m in ex.entities],
                       "r": [[r.source, r.target, r.description] for r in ex.relations]}, ensure_ascii=False)


def extraction_from_json(chunk_id: str, payload: str) -> ChunkExtraction:
    data = json.loads(payload)
    return ChunkExtraction(chunk_id, tuple(EntityMention(*m) for m in data.get("e", ())),
                           tuple(RelationMention(*r) for r in data.get("r", ())))


def canonical_fields(payloads: Mapping[str, str], description_max_chars: int) -> tuple[list[Entity], list[Relation]]:
    """Entities and relations resolved from every stored extraction, in chunk-id order."""
    return resolve((extraction_from_json(cid, payloads[cid]) for cid in sorted(payloads)), description_max_chars)


def attribute_changes(snapshot: GraphSnapshot, entities: Sequence[Entity], relations: Sequence[Relation],
                      merge: Callable[[list[Entity]], list[Entity]] | None = None) -> tuple[list[Entity], list[Relation]]:
    """The stored entities and relations whose name, type or description differ from the canonical ones.

    ``merge`` rewrites canonical entities' descriptions (the LLM description merge); it is given only entities
    the store holds, in id order, so its calls are the same whatever the run's history.
    """
    stored_e = {e.id: e for e in snapshot.entities}
    stored_r = {r.id: r for r in snapshot.relations}
    wanted = [e for e in entities if e.id in stored_e]
    if merge is not None:
        wanted = merge(wanted)
    changed_e = [e for e in wanted
                 if (stored_e[e.id].name, stored_e[e.id].type, stored_e[e.id].description) != (e.name, e.type, e.description)]
    changed_r = [r for r in relations if r.id in stored_r and stored_r[r.id].description != r.description]
    return changed_e, changed_r
