"""The memory-query contract, spoken by ``strata search --json`` and ``POST /v1/memory/query``.

Request: ``{"query_id", "search_text", "top_k", "hybrid_params": {"dense_weight", "sparse_weight",
"rrf_k_constant"}, "metadata_filter": {...}}``. Response: ``{"query_id", "total_retrieved", "results":
[{"chunk_id", "rrf_score", "text", "source"}]}`` with ``total_retrieved == len(results)``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from retrieval.filters import parse_filter


class HybridParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dense_weight: float = Field(1.0, ge=0, le=1000)
    sparse_weight: float = Field(1.0, ge=0, le=1000)
    rrf_k_constant: float = Field(60, gt=0, le=100_000)

    @model_validator(mode="after")
    def _some_weight(self) -> "HybridParams":
        if self.dense_weight == 0 and self.sparse_weight == 0:
            raise ValueError("hybrid_params: dense_weight and sparse_weight cannot both be 0")
        return self


class MemoryQueryRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query_id: str = Field(..., min_length=1, max_length=256)
    search_text: str = Field(..., min_length=1, max_length=10_000)
    top_k: int = Field(10, ge=1, le=1000)
    hybrid_params: HybridParams | None = Field(
        None, description="absent: the index's defaults (query-adaptive weights); given: used exactly")
    metadata_filter: dict[str, Any] = Field(default_factory=dict)

    @field_validator("search_text")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("search_text must contain non-whitespace text")
        return v

    @field_validator("metadata_filter")
    @classmethod
    def _valid_filter(cls, v: dict[str, Any]) -> dict[str, Any]:
        parse_filter(v)  # raises ValueError naming the bad field or operator
        return v


class MemoryResult(BaseModel):
    chunk_id: str
    rrf_score: float
    text: str
    source: str


class MemoryQueryResponse(BaseModel):
    query_id: str
    total_retrieved: int
    results: list[MemoryResult]

    @model_validator(mode="after")
    def _count_matches(self) -> "MemoryQueryResponse":
        if self.total_retrieved != len(self.results):
            raise ValueError("total_retrieved must equal the number of results")
        return self
