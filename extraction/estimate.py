"""Predict the LLM calls, tokens and cost of indexing documents before anything is spent.

Input tokens are computed from the real prompts around each chunk; output tokens from ``llm.output_ratio``;
community reports from an expected number of communities per chunk and the report context budget. Token counts
use the same four-characters-a-token estimate as the client's accounting when a server reports no usage.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Sequence

from extraction.chunking import chunk_document
from extraction.llm_client import estimate_tokens
from prompts import load_prompt
from core.records import Document
from core.settings import StrataSettings

COMMUNITIES_PER_CHUNK = 0.5
REPORT_OUTPUT_TOKENS = 350


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


def estimate_documents(docs: Sequence[Document], settings: StrataSettings) -> Estimate:
    llm, ext = settings.llm, settings.extraction
    prompt = load_prompt("extract_entities", llm.prompts_dir)
    glean = load_prompt("glean", llm.prompts_dir)
    types = ", ".join(ext.entity_types)
    calls = input_tokens = output_tokens = 0
    n_chunks = 0
    report_context = 0
    for doc in docs:
        for chunk in chunk_document(doc, settings.chunking):
            n_chunks += 1
            tin = estimate_tokens(prompt.render(entity_types=types, text=chunk.text))
            tout = int(estimate_tokens(chunk.text) * llm.output_ratio)
            calls += 1
            input_tokens += tin
            output_tokens += tout
            history = tin + tout
            for _ in range(ext.gleanings):
                g_in = history + estimate_tokens(glean.render(entity_types=types))
                g_out = max(8, tout // 4)
                calls += 1
                input_tokens += g_in
                output_tokens += g_out
                history = g_in + g_out
            report_context += estimate_tokens(chunk.text) * 2
    n_reports = round(n_chunks * COMMUNITIES_PER_CHUNK)
    if n_reports:
        per_report = min(settings.communities.report_context_tokens, report_context // max(1, n_reports) + 250)
        calls += n_reports
        input_tokens += n_reports * per_report
        output_tokens += n_reports * REPORT_OUTPUT_TOKENS
    cost = input_tokens / 1000 * llm.price_input_per_1k + output_tokens / 1000 * llm.price_output_per_1k
    return Estimate(len(docs), n_chunks, calls, input_tokens, output_tokens, round(cost, 6))
