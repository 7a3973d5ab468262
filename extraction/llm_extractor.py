"""Entity and relation extraction with an LLM: JSON answers validated against a schema, one repair round,
optional gleaning rounds, chunks processed concurrently under the client's concurrency limit.

A chunk whose answer still cannot be used is returned as a failure (for the ledger), never silently dropped.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

from pydantic import BaseModel, Field, field_validator

from extraction.ledger import ChunkFailure
from extraction.llm_client import LLMClient, LLMError, ParseFailure, parse_json_object
from extraction.types import ChunkExtraction, EntityMention, ExtractionResult, RelationMention
from prompts import load_prompt
from core.records import Chunk
from core.settings import ExtractionSettings


class _Entity(BaseModel):
    name: str = Field(..., min_length=1, max_length=300)
    type: str = "concept"
    description: str = ""

    @field_validator("name", "type", "description", mode="before")
    @classmethod
    def _strings(cls, v: object) -> object:
        return v.strip() if isinstance(v, str) else v


class _Relationship(BaseModel):
    source: str = Field(..., min_length=1, max_length=300)
    target: str = Field(..., min_length=1, max_length=300)
    description: str = ""
    strength: float | None = None


class _Payload(BaseModel):
    entities: list[_Entity]
    relationships: list[_Relationship] = Field(default_factory=list)


def parse_payload(text: str) -> _Payload:
    """An extraction answer: one JSON object with entities and relationships (see :func:`parse_json_object`)."""
    return parse_json_object(text, _Payload)


def _merge(into: _Payload, more: _Payload) -> _Payload:
    names = {e.name.casefold() for e in into.entities}
    ents = into.entities + [e for e in more.entities if e.name.casefold() not in names]
    rels = into.relationships + more.relationships
    return _Payload(entities=ents, relationships=rels)


class LLMExtractor:
    mode = "llm"

    def __init__(self, client: LLMClient, settings: ExtractionSettings, prompts_dir=None) -> None:  # type: ignore[no-untyped-def]
        self.client = client
        self.settings = settings
        self.extract_prompt = load_prompt("extract_entities", prompts_dir)
        self.glean_prompt = load_prompt("glean", prompts_dir)
        self.repair_prompt = load_prompt("repair_json", prompts_dir)

    def _ask(self, stage: str, messages: list[dict[str, str]]) -> _Payload:
        try:
            return self.client.complete(stage, messages, json_mode=True, parse=parse_payload)
        except ParseFailure as failure:
            repair = messages + [{"role": "assistant", "content": failure.text},
                                 {"role": "user", "content": self.repair_prompt.render(error=failure.error)}]
            return self.client.complete(stage, repair, json_mode=True, parse=parse_payload)

    def extract_chunk(self, chunk: Chunk) -> ChunkExtraction:
        types = ", ".join(self.settings.entity_types)
        messages = [{"role": "user", "content": self.extract_prompt.render(entity_types=types, text=chunk.text)}]
        payload = self._ask("extract", messages)
        for _ in range(self.settings.gleanings):
            messages = messages + [{"role": "assistant", "content": payload.model_dump_json()},
                                   {"role": "user", "content": self.glean_prompt.render(entity_types=types)}]
            payload = _merge(payload, self._ask("glean", messages))
        entities: dict[str, EntityMention] = {}
        for e in payload.entities:
            entities.setdefault(e.name.casefold(), EntityMention(e.name, (e.type or "concept").lower(), e.description))
        relations = [RelationMention(entities[r.source.casefold()].name, entities[r.target.casefold()].name, r.description)
                     for r in payload.relationships
                     if r.source.casefold() in entities and r.target.casefold() in entities
                     and r.source.casefold() != r.target.casefold()]
        return ChunkExtraction(chunk.id, tuple(entities.values()), tuple(relations))

    def extract(self, chunks: Sequence[Chunk]) -> ExtractionResult:
        def one(chunk: Chunk) -> ChunkExtraction | ChunkFailure:
            try:
                return self.extract_chunk(chunk)
            except ParseFailure as f:
                return ChunkFailure(chunk.id, f"unusable answer after one repair round: {f.error}")
            except LLMError as exc:
                return ChunkFailure(chunk.id, str(exc))

        with ThreadPoolExecutor(max_workers=self.client.settings.max_concurrency) as pool:
            results = list(pool.map(one, chunks))
        return ExtractionResult(tuple(r for r in results if isinstance(r, ChunkExtraction)),
                                tuple(r for r in results if isinstance(r, ChunkFailure)))
