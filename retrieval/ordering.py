"""How one search orders its candidates once BM25 and the dense list are ranked: fusion (weighted RRF, or a convex
combination under the ``convex`` and ``adaptive`` fusions), the graph walk's list joined to it
(:mod:`retrieval.graph_fusion`), the optional lexical rerank, the first passages of BM25 and dense put back
first, the passages the first hop names by title moved up (:mod:`retrieval.hops`), and the hits a caller reads.

Each step takes the order the step before made and returns a new one, so a search
(:meth:`retrieval.index.ChunkIndex._ranked`) reads as the list of steps it runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from core.settings import RetrievalSettings
from retrieval.fusion import adapt_weights, convex_combination, rerank_scores, weighted_rrf
from retrieval.graph_fusion import GraphList, WalkAhead, fuse_graph
from retrieval.hits import Hit, IndexedChunk, SearchOutcome
from retrieval.hops import Hop

Ranked = list[tuple[int, float]]  # (row, score), best first


@dataclass(slots=True)
class Lists:
    """A search's BM25 and dense lists, the weights they get, the question's vector when the dense list computed it
    (``dense_ran``: whether the dense engine ran at all), the graph walk made while the dense list ranked, and the
    warnings the search gives."""

    sparse: Ranked
    dense: Ranked
    sparse_weight: float
    dense_weight: float
    vector: np.ndarray | None = None
    dense_ran: bool = False
    ahead: WalkAhead | None = None
    warnings: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Order:
    """Candidate rows best first, the score that ordered each, each one's weighted RRF score (``rrf_score``), and
    what ordered them, in words."""

    rows: list[int]
    score: dict[int, float]
    rrf: dict[int, float]
    ranking: str


def two_lists(text: str, lists: Lists, fusion: str, explicit: bool, rrf_k: float, alpha: float
              ) -> tuple[Ranked, Ranked | None, str]:
    """BM25 and dense ordered together: their weighted RRF, or under ``convex`` and ``adaptive`` (both lists
    non-empty) their convex combination, whose BM25 share ``adaptive`` adapts to the query unless the caller gave
    weights. Returns the order, the weighted RRF when it was made, and what ordered them."""
    sparse, dense = lists.sparse, lists.dense
    if not explicit and fusion == "adaptive" and sparse and dense:
        # Adaptive: weights adapted to the query, applied as the share of a convex combination.
        a_sparse, a_dense = adapt_weights(text, sparse, dense, lists.sparse_weight, lists.dense_weight)
        alpha = a_sparse / (a_sparse + a_dense) if a_sparse + a_dense > 0 else alpha
    if fusion in ("convex", "adaptive") and sparse and dense:
        return convex_combination(sparse, dense, alpha), None, f"convex (BM25 share {alpha:.2f})"
    fused = weighted_rrf(_weighted(lists), k=rrf_k)
    return fused, fused, "rrf"


def _weighted(lists: Lists) -> list[tuple[float, list[int]]]:
    return [(lists.sparse_weight, [r for r, _ in lists.sparse]), (lists.dense_weight, [r for r, _ in lists.dense])]


def with_walk(lists: Lists, ranked: Ranked, fused: Ranked | None, ranking: str, walk: GraphList,
              rrf_k: float) -> Order:
    """The order with the graph walk's list in: the three lists' weighted RRF is every candidate's
    ``rrf_score``, and the walk is fused with the order of the other two (:func:`fuse_graph`)."""
    if walk.rows:
        fused = weighted_rrf([*_weighted(lists), walk.ranked()], k=rrf_k)
        ranked, ranking = fuse_graph(ranked, fused, walk, ranking, rrf_k)
    elif fused is None:
        fused = weighted_rrf(_weighted(lists), k=rrf_k)
    return Order([row for row, _ in ranked], dict(ranked), dict(fused), ranking)


def reranked(text: str, order: Order, rows: Sequence[IndexedChunk], terms: Callable[[str], list[str]],
             settings: RetrievalSettings) -> Order:
    """The first ``retrieval.candidate_pool`` candidates reordered by ``rrf_score`` times a term-match bonus
    (:func:`rerank_scores`); the window is the pool, not top_k, so the first k hits do not depend on top_k."""
    window = settings.candidate_pool
    scores = rerank_scores(text, order.rows[:window], rows, terms, order.rrf, settings)
    ordered = sorted(order.rows[:window], key=lambda row: -scores[row]) + order.rows[window:]  # stable
    return Order(ordered, {**order.score, **scores}, order.rrf, "lexical rerank (rrf_score x term-match bonus)")


def first_kept(order: Order, head: Sequence[int], walk: GraphList, lists: Lists) -> Order:
    """``head`` (the first ``retrieval.graph_keeps_first`` rows of the order the search makes without the walk's
    list: BM25 and dense fused, and reranked when the rerank is on) put back first, the rest in ``order``'s: the
    walk's list adds passages, it does not displace the ones the question's words reach best."""
    first = [row for row in head if row in order.score]
    if not walk.rows or order.rows[:len(first)] == first:
        return order
    taken = set(first)
    names = " and ".join(name for name, ranks in (("BM25", lists.sparse), ("dense", lists.dense)) if ranks)
    which = "passage" if len(first) == 1 else f"{len(first)} passages"
    note = f"; the first {which} of {names} without the graph walk put back first"
    return _moved(order, first + [row for row in order.rows if row not in taken], note)


def _moved(order: Order, rows: list[int], note: str) -> Order:
    """``order`` with its rows in the order ``rows``: a passage moved up takes the score of the place it takes,
    so the scores still descend."""
    place = [order.score.get(row, 0.0) for row in rows]
    for i in range(len(rows) - 2, -1, -1):
        place[i] = max(place[i], place[i + 1])
    return Order(rows, {**order.score, **dict(zip(rows, place))}, order.rrf, order.ranking + note)


def hops_promoted(text: str, order: Order, titles: Any, settings: RetrievalSettings) -> tuple[Order, list[Hop]]:
    """The passages the first hop names by title moved up after it (:meth:`retrieval.hops.TitleHops.promote`); a
    passage moved up takes the score of the place it takes, so the scores still descend."""
    rows, hops = titles.promote(text, order.rows, settings.hop_links, settings.hop_window)
    if rows == order.rows:
        return order, hops
    return _moved(order, rows, f"; the first hop, then {len(hops)} passage(s) it names by title" if hops
                  else "; the passages titled by the question's names first"), hops


def outcome(order: Order, keep: int, lists: Lists, walk: GraphList, hops: Sequence[Hop],
            rows: Sequence[IndexedChunk], query_language: str) -> SearchOutcome:
    """The first ``keep`` candidates as hits, with each one's rank in every list, and what the search did."""
    s_rank = {row: i for i, (row, _) in enumerate(lists.sparse, start=1)}
    d_rank = {row: i for i, (row, _) in enumerate(lists.dense, start=1)}
    g_rank = {row: i for i, row in enumerate(walk.rows, start=1)}
    hits = []
    for row in order.rows[:keep]:
        r = rows[row]
        hits.append(Hit(r.chunk_id, order.rrf.get(row, 0.0), r.text, r.source, r.document_id, s_rank.get(row),
                        d_rank.get(row), order.score.get(row, 0.0), g_rank.get(row)))
    moved = tuple((rows[h.row].chunk_id, rows[h.named_by].chunk_id, h.title) for h in hops)
    return SearchOutcome(hits, lists.sparse_weight, lists.dense_weight, query_language, lists.warnings,
                         order.ranking, walk.weight, walk.seeds, walk.vector_seeds, moved)
