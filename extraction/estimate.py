"""Predict the LLM calls, tokens and cost of indexing documents before anything is spent.

Input tokens are computed from the real prompts around each chunk; output tokens from ``llm.output_ratio``;
community reports from an expected number of communities per chunk and the report context budget; description
merges from the entities that recur in enough chunks to be merged. Token counts
use the same four-characters-a-token estimate as the client's accounting when a server reports no usage.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Sequence

from extraction.chunking import chunk_document
from extraction.genre import entity_types_for
from extraction.llm_context import fit_to_context
from extraction.llm_extractor import parse_example
from core.llm_client import estimate_tokens
from prompts import load_prompt
from core.records import Chunk, Document
from core.settings import StrataSettings

COMMUNITIES_PER_CHUNK = 0.5
REPORT_OUTPUT_TOKENS = 350
DESCRIPTION_TOKENS = 20  # one chunk's description of an entity
MERGE_OUTPUT_TOKENS = 70  # a merged description in its JSON object


@dataclass(frozen=True, slots=True)
class Estimate:
    documents: int
    chunks: int
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float

    def to_dict(self) -> dict[str, float | int]:
        return asdict(self)


def _merges(chunks: Sequence[Chunk], settings: StrataSettings) -> list[int]:
    """The predicted description merges, as the number of descriptions each would merge: an entity gets one
    description per chunk it is found in, and one that collects ``llm.merge_descriptions_over`` or more is merged
    by the LLM. Which entities recur is read from the offline extractor over the same chunks (free and
    deterministic; the LLM finds more entities, but the recurring ones are mostly the same names)."""
    from extraction.offline import OfflineExtractor
    from core.text.keys import normalize_name

    seen: dict[str, set[str]] = {}
    for ex in OfflineExtractor(settings.extraction).extract(chunks).extractions:
        for e in ex.entities:
            seen.setdefault(normalize_name(e.name, e.type), set()).add(ex.chunk_id)
    return [len(c) for c in seen.values() if len(c) >= settings.llm.merge_descriptions_over]


def estimate_documents(docs: Sequence[Document], settings: StrataSettings) -> Estimate:
    settings = fit_to_context(settings)  # LLM-mode chunks, as the index run will cut them
    llm, ext = settings.llm, settings.extraction
    prompt = load_prompt("extract_entities", llm.prompts_dir)
    glean = load_prompt("glean", llm.prompts_dir)
    merge = load_prompt("merge_descriptions", llm.prompts_dir)
    passage = load_prompt("passage", llm.prompts_dir)
    examples = {}
    for g in ("prose", "technical"):
        ex = parse_example(load_prompt(f"example_{g}", llm.prompts_dir).render())
        examples[g] = estimate_tokens(passage.render(text=ex.passage)) + estimate_tokens(ex.answer)
    calls = input_tokens = output_tokens = 0
    report_context = 0
    chunks = [c for doc in docs for c in chunk_document(doc, settings.chunking)]
    for chunk in chunks:
        genre, types = entity_types_for(chunk.text, ext.entity_types)
        tin = (estimate_tokens(prompt.render(entity_types=", ".join(types))) + examples[genre]
               + estimate_tokens(passage.render(text=chunk.text)))
        tout = int(estimate_tokens(chunk.text) * llm.output_ratio)
        calls += 1
        input_tokens += tin
        output_tokens += tout
        history = tin + tout
        for _ in range(ext.gleanings):
            g_in = history + estimate_tokens(glean.render(entity_types=", ".join(types)))
            g_out = max(8, tout // 4)
            calls += 1
            input_tokens += g_in
            output_tokens += g_out
            history = g_in + g_out
        report_context += estimate_tokens(chunk.text) * 2
    merge_prompt = estimate_tokens(merge.render(name="", descriptions=""))
    for parts in _merges(chunks, settings):
        calls += 1
        input_tokens += merge_prompt + parts * DESCRIPTION_TOKENS
        output_tokens += MERGE_OUTPUT_TOKENS
    n_chunks = len(chunks)
    n_reports = round(n_chunks * COMMUNITIES_PER_CHUNK)
    if n_reports:
        per_report = min(settings.communities.report_context_tokens, report_context // max(1, n_reports) + 250)
        calls += n_reports
        input_tokens += n_reports * per_report
        output_tokens += n_reports * REPORT_OUTPUT_TOKENS
    cost = input_tokens / 1000 * llm.price_input_per_1k + output_tokens / 1000 * llm.price_output_per_1k
    return Estimate(len(docs), n_chunks, calls, input_tokens, output_tokens, round(cost, 6))
