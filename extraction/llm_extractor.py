"""Entity and relation extraction with an LLM: JSON answers asked for with a schema (structured output) and
validated against it, one repair round, optional gleaning rounds, chunks processed concurrently under the
client's concurrency limit. The entity types asked for follow the passage's genre (extraction/genre.py) unless
set; the prompt's worked example matches the genre, and an entity named in the example but not in the passage
is dropped (counted in ``leaked``), so the example's words never become part of the graph.

A chunk whose answer still cannot be used is returned as a failure (for the ledger), never silently dropped.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Sequence

from pydantic import BaseModel, Field, create_model, field_validator

from extraction.ledger import ChunkFailure
from extraction.genre import entity_types_for
from core.llm_client import LLMClient, LLMError, ParseFailure, estimate_tokens, parse_json_object
from extraction.types import ChunkExtraction, EntityMention, ExtractionResult, RelationMention
from prompts import PromptError, load_prompt
from core.records import Chunk
from core.settings import ExtractionSettings


# Length bounds a grammar-compiling endpoint enforces (core.structured.wire_schema): a name, a type and a
# description cannot run on without end. Validation keeps its own, looser limits for endpoints that ignore them.
class _Entity(BaseModel):
    name: str = Field(..., min_length=1, max_length=300, json_schema_extra={"maxLength": 80})
    type: str = Field("concept", json_schema_extra={"maxLength": 40})
    description: str = Field("", json_schema_extra={"maxLength": 200})

    @field_validator("name", "type", "description", mode="before")
    @classmethod
    def _strings(cls, v: object) -> object:
        return v.strip() if isinstance(v, str) else v


class _Relationship(BaseModel):
    source: str = Field(..., min_length=1, max_length=300, json_schema_extra={"maxLength": 80})
    target: str = Field(..., min_length=1, max_length=300, json_schema_extra={"maxLength": 80})
    description: str = Field("", json_schema_extra={"maxLength": 200})
    strength: float | None = None


class _Payload(BaseModel):
    entities: list[_Entity]
    relationships: list[_Relationship] = Field(default_factory=list)


ITEM_TOKENS = 30  # a typical entity or relation as JSON in an answer


@lru_cache(maxsize=64)
def payload_schema(max_tokens: int) -> type[_Payload]:
    """The extraction schema for an answer of at most ``max_tokens``: each list holds at most as many items as
    half the tokens can take at ``ITEM_TOKENS`` each (13 for an 800-token answer; the 0.5B model found 7.6
    entities a chunk), so a model repeating itself meets the end of its lists and closes the object, usually
    before its tokens run out (not always: bench.llm lists the answers cut). Validated as a ``_Payload``."""
    items = max(4, max_tokens // (2 * ITEM_TOKENS))
    return create_model(  # type: ignore[call-overload, no-any-return]
        "_Payload", __base__=_Payload,
        entities=(list[_Entity], Field(..., json_schema_extra={"maxItems": items})),
        relationships=(list[_Relationship], Field(default_factory=list, json_schema_extra={"maxItems": items})))


def parse_payload(text: str) -> _Payload:
    """An extraction answer: one JSON object with entities and relationships (see :func:`parse_json_object`)."""
    return parse_json_object(text, _Payload)


def _merge(into: _Payload, more: _Payload) -> _Payload:
    names = {e.name.casefold() for e in into.entities}
    ents = into.entities + [e for e in more.entities if e.name.casefold() not in names]
    rels = into.relationships + more.relationships
    return _Payload(entities=ents, relationships=rels)


@dataclass(frozen=True, slots=True)
class Example:
    """A worked example, shown as an earlier turn of the conversation: a passage and its answer."""

    passage: str
    answer: str
    names: frozenset[str]  # casefolded entity names of the answer: they must never come back as entities


def parse_example(text: str) -> Example:
    """An example prompt file's body: the passage, a line ``---``, the answer's JSON object."""
    passage, sep, answer = text.partition("\n---\n")
    if not sep:
        raise PromptError("an example prompt needs its passage, a line '---', then its JSON answer")
    data = json.loads(answer)
    names = frozenset(str(e["name"]).casefold() for e in data["entities"])
    return Example(passage.strip(), json.dumps(data, ensure_ascii=False), names)


def output_budget(chunk_text: str, ceiling: int) -> int:
    """Output tokens an extraction of ``chunk_text`` may take: enough for a dense passage's entities and
    relations (twice its length, plus room for the JSON), so that only a runaway answer is cut."""
    return max(256, min(ceiling, 200 + 2 * estimate_tokens(chunk_text)))


class LLMExtractor:
    mode = "llm"

    def __init__(self, client: LLMClient, settings: ExtractionSettings, prompts_dir=None) -> None:  # type: ignore[no-untyped-def]
        self.client = client
        self.settings = settings
        self.extract_prompt = load_prompt("extract_entities", prompts_dir)
        self.passage_prompt = load_prompt("passage", prompts_dir)
        self.glean_prompt = load_prompt("glean", prompts_dir)
        self.repair_prompt = load_prompt("repair_json", prompts_dir)
        self.examples = {g: parse_example(load_prompt(f"example_{g}", prompts_dir).render())
                         for g in ("prose", "technical")}
        self.leaked = 0  # entities dropped because they came from a prompt's example, not from the passage

    def _ask(self, stage: str, messages: list[dict[str, str]], max_tokens: int) -> _Payload:
        return self.client.complete_json(stage, messages, payload_schema(max_tokens), repair=self.repair_prompt,
                                         max_tokens=max_tokens,
                                         what="extraction schema")

    def messages(self, chunk: Chunk) -> tuple[list[dict[str, str]], str, Example]:
        """The first request for ``chunk`` (the instructions, the genre's worked example as an earlier turn, the
        passage), the entity types it asks for and the example it shows."""
        genre, types = entity_types_for(chunk.text, self.settings.entity_types)
        ex = self.examples[genre]
        messages = [{"role": "system", "content": self.extract_prompt.render(entity_types=", ".join(types))},
                    {"role": "user", "content": self.passage_prompt.render(text=ex.passage)},
                    {"role": "assistant", "content": ex.answer},
                    {"role": "user", "content": self.passage_prompt.render(text=chunk.text)}]
        return messages, ", ".join(types), ex

    def extract_chunk(self, chunk: Chunk) -> ChunkExtraction:
        messages, types, example = self.messages(chunk)
        budget = output_budget(chunk.text, self.client.settings.max_tokens)
        payload = self._ask("extract", messages, budget)
        for _ in range(self.settings.gleanings):
            messages = messages + [{"role": "assistant", "content": payload.model_dump_json()},
                                   {"role": "user", "content": self.glean_prompt.render(entity_types=types)}]
            payload = _merge(payload, self._ask("glean", messages, budget))
        passage = chunk.text.casefold()
        borrowed = {n for n in example.names if n not in passage}  # the example's names this passage lacks

        def own(description: str) -> str:  # a description that names the example's entities is the example's
            low = description.casefold()
            return "" if any(n in low for n in borrowed) else description

        entities: dict[str, EntityMention] = {}
        for e in payload.entities:
            key = e.name.casefold()
            if key in borrowed:  # copied from the example, not found in the passage
                self.leaked += 1
                continue
            entities.setdefault(key, EntityMention(e.name, (e.type or "concept").lower(), own(e.description)))
        relations = [RelationMention(entities[r.source.casefold()].name, entities[r.target.casefold()].name,
                                     own(r.description))
                     for r in payload.relationships
                     if r.source.casefold() in entities and r.target.casefold() in entities
                     and r.source.casefold() != r.target.casefold()]
        return ChunkExtraction(chunk.id, tuple(entities.values()), tuple(relations))

    def extract(self, chunks: Sequence[Chunk], on_progress: Callable[[int], None] | None = None) -> ExtractionResult:
        """Every chunk, concurrently; ``on_progress(1)`` as each one is done (so a run shows a rate and an ETA)."""
        def one(chunk: Chunk) -> ChunkExtraction | ChunkFailure:
            try:
                return self.extract_chunk(chunk)
            except ParseFailure as f:
                return ChunkFailure(chunk.id, f"unusable answer after one repair round: {f.error}")
            except LLMError as exc:
                return ChunkFailure(chunk.id, str(exc))
            finally:
                if on_progress is not None:
                    on_progress(1)

        with ThreadPoolExecutor(max_workers=self.client.settings.max_concurrency) as pool:
            results = list(pool.map(one, chunks))
        return ExtractionResult(tuple(r for r in results if isinstance(r, ChunkExtraction)),
                                tuple(r for r in results if isinstance(r, ChunkFailure)))
