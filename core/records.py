"""Typed domain records shared by every stage.

Records are frozen dataclasses: stages build new records instead of mutating shared ones. Collections inside
records are tuples, so records hash and compare by value and can be used in sets and as cache keys.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any


def stable_hash(*parts: str, size: int = 16) -> str:
    """A hex digest that is the same in every process (unlike Python's ``hash``)."""
    h = hashlib.blake2b(digest_size=size)
    for part in parts:
        h.update(part.encode("utf-8"))
        h.update(b"\x1f")
    return h.hexdigest()


@dataclass(frozen=True, slots=True)
class Document:
    """A source document: its stable id, text, content hash and metadata."""

    id: str
    source: str
    text: str
    content_hash: str
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


def chunk_id(document_id: str, ordinal: int) -> str:
    """A chunk's id: its document's id and its place in the document."""
    return f"{document_id}#{ordinal:04d}"


def document_of(chunk_id: str) -> str:
    """The document id of a chunk id (``<document id>#<ordinal>``)."""
    return chunk_id.rsplit("#", 1)[0]


@dataclass(frozen=True, slots=True)
class Chunk:
    """A window of a document. ``start``/``end`` are character offsets into the document text."""

    id: str
    document_id: str
    ordinal: int
    text: str
    start: int
    end: int
    n_tokens: int
    source: str
    content_hash: str
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True, slots=True)
class Entity:
    """A resolved entity and the chunks that mention it."""

    id: str
    name: str
    type: str
    description: str
    chunk_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Relation:
    """An undirected relation between two entities (``source_id < target_id``), with its supporting chunks."""

    id: str
    source_id: str
    target_id: str
    description: str
    chunk_ids: tuple[str, ...]

    @property
    def weight(self) -> float:
        """How many chunks support the relation."""
        return float(len(self.chunk_ids))


@dataclass(frozen=True, slots=True)
class GraphSnapshot:
    """The whole entity graph as read back from a store."""

    entities: tuple[Entity, ...]
    relations: tuple[Relation, ...]


@dataclass(frozen=True, slots=True)
class Community:
    """A community at one level of the hierarchy; level 0 is the coarsest."""

    id: str
    level: int
    parent_id: str | None
    entity_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Finding:
    """One statement of a report, with the chunks that support it.

    An extractive finding quotes one sentence: ``text`` is exactly ``chunk.text[start:end]`` of the first cited
    chunk. A written (LLM) finding has no offsets (``start == end == -1``)."""

    text: str
    chunk_ids: tuple[str, ...]
    start: int = -1
    end: int = -1

    @property
    def quoted(self) -> bool:
        return 0 <= self.start <= self.end and bool(self.chunk_ids)


@dataclass(frozen=True, slots=True)
class Report:
    """A community's summary report and the evidence of what it was written from."""

    community_id: str
    level: int
    title: str
    summary: str
    findings: tuple[Finding, ...]
    rating: float
    fingerprint: str
    mode: str
    model: str
    created_at: str
    stale: bool = False
    inputs: str = field(default="", compare=False, repr=False)  # JSON manifest of what it was written from

    @property
    def chunk_ids(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for finding in self.findings:
            for cid in finding.chunk_ids:
                seen.setdefault(cid, None)
        return tuple(seen)


@dataclass(frozen=True, slots=True)
class DeletionResult:
    """What deleting one document removed from a store."""

    document_id: str
    chunks: int
    entities_removed: int
    relations_removed: int
    communities_marked: int


@dataclass(frozen=True, slots=True)
class LoadProblem:
    """A file that could not be indexed, and why."""

    path: str
    reason: str
