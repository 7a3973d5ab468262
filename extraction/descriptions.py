"""Description merging in LLM mode: an entity seen with several descriptions gets one merged description,
asked for as a JSON object ``{"description": ...}`` (structured output)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Sequence

from pydantic import BaseModel, Field

from core.llm_client import LLMClient, LLMError, ParseFailure
from prompts import load_prompt
from core.records import Entity
from core.settings import StrataSettings


MERGE_MAX_TOKENS = 250  # 80 words in a JSON object


class _Merged(BaseModel):
    description: str = Field(..., json_schema_extra={"maxLength": 600})  # within MERGE_MAX_TOKENS (grammar-enforced)


def description_parts(e: Entity) -> list[str]:
    return [p for p in e.description.split("\n") if p.strip()]


def needs_merge(e: Entity, settings: StrataSettings) -> bool:
    """Whether the entity's description holds enough distinct parts to be merged by the LLM."""
    return len(description_parts(e)) >= settings.llm.merge_descriptions_over


def merge_entity_descriptions(entities: Sequence[Entity], client: LLMClient, settings: StrataSettings) -> list[Entity]:
    """Entities whose description holds ``llm.merge_descriptions_over`` or more distinct parts get an LLM-merged
    one; on failure the concatenated description is kept (nothing is lost)."""
    prompt = load_prompt("merge_descriptions", settings.llm.prompts_dir)

    def merged(e: Entity) -> Entity:
        if not needs_merge(e, settings):  # the one rule, which stage_merge also uses to pick what to dispatch
            return e
        parts = description_parts(e)
        try:
            text = client.complete_json("merge", [{"role": "user", "content": prompt.render(
                name=e.name, descriptions="\n".join(f"- {p}" for p in parts))}], _Merged,
                max_tokens=MERGE_MAX_TOKENS, what="merge schema").description.strip()
        except (LLMError, ParseFailure):
            text = ""
        return replace(e, description=text[: settings.extraction.description_max_chars]) if text else e

    # Concurrent under the client's own limit; order is kept.
    with ThreadPoolExecutor(max_workers=client.settings.max_concurrency) as pool:
        return list(pool.map(merged, entities))
