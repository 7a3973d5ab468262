"""How the graph walk's list joins BM25 and the dense list in a search.

- :func:`graph_list` decides the list's weight (given by the caller, else the default's: ``retrieval.graph_weight``
  when the question names entities the index knows, 0 when it names none, so corpora where the graph cannot
  help rank as before) and runs the walk from the question's entities and the other lists' top passages.
- :func:`fuse_graph` orders the candidates: under RRF the three lists are fused by weighted RRF; under the
  convex and adaptive rankings the order of BM25 and dense (their convex combination) is fused with the walk's
  list by weighted RRF, the walk weighing ``graph_weight`` against 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from retrieval.fusion import weighted_rrf


@dataclass(frozen=True, slots=True)
class GraphList:
    """The walk's ranked rows (best first), the weight they get, and the entities that seeded the walk."""

    rows: tuple[int, ...]
    weight: float
    seeds: tuple[str, ...]


NO_GRAPH = GraphList((), 0.0, ())


def graph_list(walk: Any, text: str, given: float | None, default: float, depth: int, mask: np.ndarray | None,
               ranked: Sequence[tuple[int, float]]) -> GraphList:
    """The graph list of a search (``walk``: the generation's :class:`~retrieval.graph_walk.GraphWalk` or None;
    ``given``: the caller's ``graph_weight``; ``ranked``: the other lists' order, whose top passages seed the
    walk beside the question's entities)."""
    if walk is None or given == 0:
        return NO_GRAPH
    link = walk.link(text)
    weight = given if given is not None else (default if link.seeds else 0.0)
    if weight <= 0:
        return NO_GRAPH
    rows = walk.rank(link, depth, mask, [row for row, _ in ranked])
    return GraphList(tuple(row for row, _ in rows), weight, link.names)


def fuse_graph(ranked: Sequence[tuple[int, float]], fused: Sequence[tuple[int, float]], graph: GraphList,
               ranking: str, rrf_k: float) -> tuple[list[tuple[int, float]], str]:
    """The order with the graph list in, as (row, score) best first, and what ordered it. ``ranked``: the order
    of BM25 and dense (``ranking`` says how it was made); ``fused``: the weighted RRF of all three lists."""
    if ranking == "rrf" or not ranked:
        return list(fused), "rrf"
    both = weighted_rrf([(1.0, [row for row, _ in ranked]), (graph.weight, list(graph.rows))], k=rrf_k)
    return both, f"{ranking} fused with the graph walk (weighted rrf, graph {graph.weight:g})"
