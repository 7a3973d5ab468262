"""What an extractor returns for one chunk, before entities are resolved across chunks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

from extraction.ledger import ChunkFailure
from core.records import Chunk


@dataclass(frozen=True, slots=True)
class EntityMention:
    name: str
    type: str
    description: str
    written: str = ""  # the name as the text writes it, when ``name`` is another form of it (a Polish base form)


@dataclass(frozen=True, slots=True)
class RelationMention:
    source: str
    target: str
    description: str


@dataclass(frozen=True, slots=True)
class ChunkExtraction:
    """Entities and relations found in one chunk; relation ends name entities of the same chunk."""

    chunk_id: str
    entities: tuple[EntityMention, ...]
    relations: tuple[RelationMention, ...]


@dataclass(frozen=True, slots=True)
class ExtractionResult:
    """Extractions of the chunks that succeeded, and the chunks that failed with their reasons."""

    extractions: tuple[ChunkExtraction, ...]
    failures: tuple[ChunkFailure, ...] = ()


class Extractor(Protocol):
    """Turns chunks into per-chunk extractions. Offline and LLM extractors implement it."""

    mode: str

    def extract(self, chunks: Sequence[Chunk]) -> ExtractionResult: ...
