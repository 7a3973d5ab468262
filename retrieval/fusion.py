"""Weighted Reciprocal Rank Fusion: score(d) = sum_i w_i / (k + rank_i(d)), ranks starting at 1."""

from __future__ import annotations

from typing import Hashable, Sequence, TypeVar

K = TypeVar("K", bound=Hashable)


def weighted_rrf(ranked_lists: Sequence[tuple[float, Sequence[K]]], k: float = 60) -> list[tuple[K, float]]:
    """Fuse ranked lists given as (weight, ids best-first); returns (id, score) best-first, ties by first appearance."""
    scores: dict[K, float] = {}
    for weight, ids in ranked_lists:
        if weight == 0:
            continue
        for rank, item in enumerate(ids, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    order = {item: i for i, item in enumerate(scores)}
    return sorted(scores.items(), key=lambda kv: (-kv[1], order[kv[0]]))
