"""The memory-query contract, spoken by ``strata search --json`` and ``POST /v1/memory/query``.

Request: ``{"query_id", "search_text", "top_k", "hybrid_params": {"dense_weight", "sparse_weight",
"rrf_k_constant", "graph_weight"?}, "metadata_filter": {...}}``. Response: ``{"query_id", "total_retrieved", "results":
[{"chunk_id", "rrf_score", "text", "source"}]}`` with ``total_retrieved == len(results)``.

Types are strict where JSON is ambiguous: ``top_k`` is an integer (``true`` is not 1), weights are finite
numbers (no NaN or Infinity, no booleans), text is valid Unicode (no lone surrogates), and the metadata filter
follows the grammar of :mod:`retrieval.filters`, limits included.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StrictInt, model_validator

from retrieval.filters import MetadataFilter, check_unicode


def _json_number(v: Any) -> Any:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError("expected a number")
    return v


# A finite number given as a JSON number (an integer or a float, never a boolean or a string).
Number = Annotated[float, BeforeValidator(_json_number)]
def _not_blank(v: str) -> str:
    if not v.strip():
        raise ValueError("must contain non-whitespace text")
    return v


UnicodeText = Annotated[str, AfterValidator(check_unicode)]
# Text to search or answer: valid Unicode, not only whitespace.
QueryText = Annotated[str, AfterValidator(check_unicode), AfterValidator(_not_blank)]


class HybridParams(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    dense_weight: Number = Field(1.0, ge=0, le=1000)
    sparse_weight: Number = Field(1.0, ge=0, le=1000)
    rrf_k_constant: Number = Field(60, gt=0, le=100_000)
    graph_weight: Number | None = Field(
        None, ge=0, le=1000, description="the graph walk's list; absent: the default decides (weighted when the "
                                         "question names entities the index knows), 0: left out")

    @model_validator(mode="after")
    def _some_weight(self) -> "HybridParams":
        if self.dense_weight == 0 and self.sparse_weight == 0 and not self.graph_weight:
            raise ValueError("hybrid_params: dense_weight and sparse_weight cannot both be 0 "
                             "(unless graph_weight is above 0)")
        return self


class MemoryQueryRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query_id: UnicodeText = Field(..., min_length=1, max_length=256)
    search_text: QueryText = Field(..., min_length=1, max_length=10_000)
    top_k: StrictInt = Field(10, ge=1, le=1000)
    hybrid_params: HybridParams | None = Field(
        None, description="absent: the index's defaults (query-adaptive weights); given: used exactly")
    metadata_filter: MetadataFilter = Field(default_factory=dict)


class MemoryResult(BaseModel):
    chunk_id: str
    rrf_score: float
    text: str
    source: str


class MemoryQueryResponse(BaseModel):
    query_id: str
    total_retrieved: int
    results: list[MemoryResult]
    index_generation: int | None = Field(None, description="the published index generation that answered")
    warnings: list[str] = Field(default_factory=list, description="e.g. a language the dense embedder does not read")

    @model_validator(mode="after")
    def _count_matches(self) -> "MemoryQueryResponse":
        if self.total_retrieved != len(self.results):
            raise ValueError("total_retrieved must equal the number of results")
        return self
