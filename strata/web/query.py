"""The memory query as the console shows it: the same request as ``POST /v1/memory/query``, answered with the
score each result was ranked by beside its ``rrf_score``.

Without ``hybrid_params`` the index ranks by its query-adaptive default (a convex combination of the two
engines' normalized scores), so the ``rrf_score`` the contract returns is not what ordered the results; the
console shows both, labelled, so a list never looks out of order.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from retrieval.contract import MemoryQueryRequest
from retrieval.hits import SearchOutcome
from strata.web.markdown import plain_text


class ExplainedResult(BaseModel):
    chunk_id: str
    score: float = Field(description="the score the ranking ordered by (see `ranking`)")
    rrf_score: float = Field(description="sum_i w_i / (k + rank_i), as POST /v1/memory/query returns it")
    sparse_rank: int | None = Field(None, description="rank in the BM25 list (from 1), absent if not in it")
    dense_rank: int | None = Field(None, description="rank in the dense list (from 1), absent if not in it")
    graph_rank: int | None = Field(None, description="rank in the graph walk's list (from 1), when it was fused")
    text: str
    preview: str = Field(description="the text as it reads rendered from Markdown, on one line, shortened")
    source: str


class ExplainedQuery(BaseModel):
    query_id: str
    search_text: str
    total_retrieved: int
    ranking: str = Field(description="what ordered the results: rrf, convex (BM25 share a), or a lexical rerank, "
                                     "and the steps after it (passages put back first or moved up by title)")
    sparse_weight: float
    dense_weight: float
    graph_weight: float = Field(0.0, description="the graph walk list's weight (0: not fused)")
    results: list[ExplainedResult]
    index_generation: int | None = None
    warnings: list[str] = Field(default_factory=list)


def explain(request: MemoryQueryRequest, outcome: SearchOutcome, generation: int | None) -> ExplainedQuery:
    results = [ExplainedResult(chunk_id=h.chunk_id, score=h.score, rrf_score=h.rrf_score, sparse_rank=h.sparse_rank,
                               dense_rank=h.dense_rank, graph_rank=h.graph_rank, text=h.text, preview=plain_text(h.text),
                               source=h.source) for h in outcome.hits]
    return ExplainedQuery(query_id=request.query_id, search_text=request.search_text, total_retrieved=len(results),
                          ranking=outcome.ranking, sparse_weight=outcome.sparse_weight,
                          dense_weight=outcome.dense_weight, graph_weight=outcome.graph_weight, results=results,
                          index_generation=generation, warnings=outcome.warnings)
