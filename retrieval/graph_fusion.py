"""How the graph walk's list joins BM25 and the dense list in a search.

- :func:`graph_list` decides the list's weight (given by the caller, else the default's: ``retrieval.graph_weight``
  when the question names entities the index knows, 0 when it names none, so corpora where the graph cannot
  help rank as before) and runs the walk from the question's entities and the other lists' top passages.
  Entities linked by the question's vector join the seeds; alone (the question spells no entity's name) they
  give the list weight only when one's similarity stands out at least ``retrieval.graph_vector_strong_score``
  (a standard score: :meth:`retrieval.graph_walk.GraphWalk.standard_scores`),
  since a question is always somewhat similar to some entity, and a corpus whose questions name no entity
  must rank as before.
- :func:`fuse_graph` orders the candidates: under RRF the three lists are fused by weighted RRF; under the
  convex and adaptive rankings the order of BM25 and dense (their convex combination) is fused with the walk's
  list by weighted RRF, the walk weighing ``graph_weight`` against 1.
- The first ``retrieval.graph_keeps_first`` passages of BM25 and dense stay first under the default's weight
  (:func:`retrieval.ordering.first_kept`, which the search applies). The walk adds passages the
  question's words do not reach (a second hop); it does not displace the passage they reach best. RRF with
  k = 60 is nearly flat in rank, so a passage first in BM25 and dense but absent from the walk's list (its
  paragraph holds a longer term than the question's, or no entity) fell below any few passages both lists hold:
  21 of the 26 paragraphs the graph list pushed out of the top five on the one-paragraph sets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from retrieval.fusion import weighted_rrf


@dataclass(frozen=True, slots=True)
class GraphList:
    """The walk's ranked rows (best first), the weight they get, the entities that seeded the walk and those of
    them linked by the question's vector alone."""

    rows: tuple[int, ...]
    weight: float
    seeds: tuple[str, ...]
    vector_seeds: tuple[str, ...] = ()
    places: tuple[float, ...] = ()  # each row's place for fusion, ties sharing one (GraphWalk.places); () = 1, 2, ...

    def ranked(self) -> tuple[float, list[int], tuple[float, ...]]:
        """The list as :func:`~retrieval.fusion.weighted_rrf` takes it: (weight, rows, places)."""
        return self.weight, list(self.rows), self.places


NO_GRAPH = GraphList((), 0.0, ())


def default_weight(link: Any, default: float, strong: float) -> float:
    """The adaptive default's weight for a walk from ``link``: ``default`` when the question names a seed, or when
    a seed linked by vector has a standard score of at least ``strong``; else 0."""
    if link.by_name:
        return default
    best = max((s.score or 0.0 for s in link.seeds if s.by == "vector"), default=0.0)
    return default if link.seeds and best >= strong else 0.0


@dataclass(frozen=True, slots=True)
class WalkAhead:
    """A walk made while the dense list was still ranking (:func:`walk_ahead`): the question's link, made with
    ``vector``, and the walk's rows, or None when they depend on the other lists' order (no entity linked: the
    other lists' top passages seed the walk)."""

    vector: np.ndarray | None
    link: Any
    rows: tuple[tuple[int, float], ...] | None


def walk_ahead(walk: Any, text: str, query_vector: np.ndarray | None, depth: int, mask: np.ndarray | None
               ) -> WalkAhead:
    """Link ``text`` (by names, and by ``query_vector`` when given)
    and, when the other lists' order cannot change the walk, walk it now: a search does this while the dense
    list ranks, so the graph list costs little more than the dense list's wait."""
    link = walk.link(text, query_vector)
    rows = None
    if link.seeds:  # passages seed a walk only when no entity does
        rows = tuple(walk.rank(link, depth, mask, ()))
    return WalkAhead(query_vector, link, rows)


def graph_list(walk: Any, text: str, given: float | None, default: float, depth: int, mask: np.ndarray | None,
               ranked: Sequence[tuple[int, float]], query_vector: np.ndarray | None = None,
               strong: float = 1.0, ahead: WalkAhead | None = None) -> GraphList:
    """The graph list of a search (``walk``: the generation's :class:`~retrieval.graph_walk.GraphWalk` or None;
    ``given``: the caller's ``graph_weight``; ``ranked``: the other lists' order, whose top passages seed the
    walk when no entity of the question does; ``query_vector``: the question's vector, to link entities by;
    ``strong``: see :func:`default_weight`; ``ahead``: the walk made while the dense list ranked, used when it
    was linked with this same ``query_vector``)."""
    if walk is None or given == 0:
        return NO_GRAPH
    if ahead is not None and ahead.vector is not query_vector:
        ahead = None
    link = ahead.link if ahead is not None else walk.link(text, query_vector)
    weight = given if given is not None else default_weight(link, default, strong)
    if weight <= 0:
        return NO_GRAPH
    if ahead is not None and ahead.rows is not None:
        rows: Sequence[tuple[int, float]] = ahead.rows
    else:
        rows = walk.rank(link, depth, mask, [row for row, _ in ranked])
    order = tuple(row for row, _ in rows)
    return GraphList(order, weight, link.names, link.by_vector, walk.places(link, order))


def fuse_graph(ranked: Sequence[tuple[int, float]], fused: Sequence[tuple[int, float]], graph: GraphList,
               ranking: str, rrf_k: float) -> tuple[list[tuple[int, float]], str]:
    """The order with the graph list in, as (row, score) best first, and what ordered it. ``ranked``: the order
    of BM25 and dense (``ranking`` says how it was made); ``fused``: the weighted RRF of all three lists."""
    if ranking == "rrf" or not ranked:
        return list(fused), "rrf"
    both = weighted_rrf([(1.0, [row for row, _ in ranked]), graph.ranked()], k=rrf_k)
    return both, f"{ranking} fused with the graph walk (weighted rrf, graph {graph.weight:g})"
