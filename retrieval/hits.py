"""What a search ranks and returns: the index's rows, a hit, a search's outcome, and the two engines that rank rows
(BM25 and dense vectors) behind one protocol."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

import numpy as np

from core.text.language import UNDETERMINED
from retrieval.bm25 import BM25Index
from retrieval.embed import Embedder
from retrieval.tokenize import Tokenizer
from retrieval.vectors import VectorIndex


@dataclass(frozen=True, slots=True)
class IndexedChunk:
    chunk_id: str
    document_id: str
    text: str
    source: str
    fields: dict[str, Any] = field(compare=False, hash=False)
    language: str = UNDETERMINED  # see core.text.language; an undetermined chunk takes the corpus's main language


@dataclass(frozen=True, slots=True)
class Hit:
    chunk_id: str
    rrf_score: float
    text: str
    source: str
    document_id: str
    sparse_rank: int | None
    dense_rank: int | None
    # The score the ranking ordered by (see SearchOutcome.ranking): rrf_score under fusion "rrf" without the
    # lexical rerank, but for a passage a later step moved up (put back first beside the graph walk's list,
    # named by the first hop or titled by the question's names), which takes its new place's score.
    score: float = 0.0
    graph_rank: int | None = None  # rank in the graph walk's list (retrieval.graph_walk)


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    """A search's hits, the weights it applied, and warnings for the caller (e.g. an embedder that does not
    read the query's or the matching chunks' language)."""

    hits: list[Hit]
    sparse_weight: float
    dense_weight: float
    query_language: str
    warnings: list[str]
    # What ordered the hits: "rrf", "convex (BM25 share a)" or "lexical rerank (...)", and the steps after it
    # ("; ... put back first", "; the first hop, then ...").
    ranking: str = "rrf"
    graph_weight: float = 0.0  # the graph walk list's weight (0: not used)
    graph_seeds: tuple[str, ...] = ()  # the entities that seeded the walk
    graph_vector_seeds: tuple[str, ...] = ()  # those of them linked by the question's vector
    hops: tuple[tuple[str, str, str], ...] = ()  # (chunk moved up, the first-hop chunk naming it, the title named)


class RankingEngine(Protocol):
    name: str

    def rank(self, text: str, k: int, mask: np.ndarray | None) -> list[tuple[int, float]]: ...


class SparseEngine:
    name = "bm25"

    def __init__(self, tokenizer: Tokenizer, bm25: BM25Index, language: Callable[[str], str] | None = None) -> None:
        self.tokenizer, self.bm25, self.language = tokenizer, bm25, language  # language: the query's, resolved

    def rank(self, text: str, k: int, mask: np.ndarray | None) -> list[tuple[int, float]]:
        return self.bm25.top(self.tokenizer(text, self.language(text) if self.language else None), k, mask)


class DenseEngine:
    name = "dense"

    def __init__(self, embedder: Embedder, vectors: VectorIndex) -> None:
        self.embedder, self.vectors = embedder, vectors

    def rank(self, text: str, k: int, mask: np.ndarray | None) -> list[tuple[int, float]]:
        return self.rank_with_vector(text, k, mask)[0]

    def query_vector(self, text: str) -> np.ndarray:
        # Models trained with query/passage prefixes (E5) embed queries with their own method.
        embed = getattr(self.embedder, "embed_queries", self.embedder.embed)
        return embed([text])[0]

    def rank_with_vector(self, text: str, k: int, mask: np.ndarray | None,
                         on_vector: Callable[[np.ndarray], Any] | None = None) -> tuple[list[tuple[int, float]],
                                                                                         np.ndarray]:
        """The ranking and the question's vector it was made with (the graph walk links entities by it);
        ``on_vector`` gets the vector as soon as it is embedded, before the ranking."""
        vec = self.query_vector(text)
        if on_vector is not None:
            on_vector(vec)
        return self.vectors.top(vec, k, mask), vec
