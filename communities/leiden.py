"""Hierarchical Leiden on an igraph graph, deterministic for a given input and seed.

Level 0 partitions the whole entity graph; every community larger than ``max_cluster_size`` is partitioned
again on its induced subgraph to form the next level, until communities are small, cannot be split, or
``max_levels`` is reached. Two engines sit behind one function: igraph's built-in ``community_leiden`` (fast,
the default) and leidenalg's ``find_partition`` (more objectives). Nodes and edges are sorted before the graph
is built, because Leiden's result depends on their order even with a fixed seed.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Sequence

import igraph as ig

from strata.records import Community, GraphSnapshot, stable_hash
from strata.settings import CommunitySettings


@dataclass(frozen=True, slots=True)
class WeightedEdge:
    source: str
    target: str
    weight: float


def edges_from_snapshot(snapshot: GraphSnapshot) -> list[WeightedEdge]:
    return [WeightedEdge(r.source_id, r.target_id, r.weight) for r in snapshot.relations]


def build_graph(nodes: Sequence[str], edges: Sequence[WeightedEdge]) -> ig.Graph:
    """An undirected weighted igraph graph with nodes and edges in sorted order (parallel edges summed)."""
    order = sorted(set(nodes))
    index = {n: i for i, n in enumerate(order)}
    weights: dict[tuple[int, int], float] = {}
    for e in edges:
        if e.source not in index or e.target not in index or e.source == e.target:
            continue
        a, b = sorted((index[e.source], index[e.target]))
        weights[(a, b)] = weights.get((a, b), 0.0) + e.weight
    pairs = sorted(weights)
    g = ig.Graph(n=len(order), edges=pairs, directed=False)
    g.vs["name"] = order
    g.es["weight"] = [weights[p] for p in pairs]
    return g


def partition(g: ig.Graph, settings: CommunitySettings) -> list[int]:
    """One Leiden partition of ``g``; returns a membership list."""
    if g.vcount() == 0:
        return []
    weights = "weight" if g.ecount() else None
    if settings.engine == "leidenalg":
        import leidenalg

        if settings.objective == "cpm":
            part = leidenalg.find_partition(g, leidenalg.CPMVertexPartition, weights=weights,
                                            resolution_parameter=settings.resolution, seed=settings.seed,
                                            n_iterations=settings.iterations)
        else:
            part = leidenalg.find_partition(g, leidenalg.RBConfigurationVertexPartition, weights=weights,
                                            resolution_parameter=settings.resolution, seed=settings.seed,
                                            n_iterations=settings.iterations)
        return list(part.membership)
    # igraph draws from Python's random module; seeding it makes the partition repeatable.
    state = random.getstate()
    random.seed(settings.seed)
    try:
        result = g.community_leiden(objective_function="modularity" if settings.objective == "modularity" else "CPM",
                                    weights=weights, resolution=settings.resolution, n_iterations=settings.iterations)
    finally:
        random.setstate(state)
    return list(result.membership)


def community_id(level: int, members: Sequence[str]) -> str:
    return f"c{level}_" + stable_hash(*sorted(members), size=6)


def hierarchical_leiden(nodes: Sequence[str], edges: Sequence[WeightedEdge], settings: CommunitySettings,
                        level_timer: dict[int, float] | None = None) -> list[Community]:
    """All levels of communities with at least two members, parents before children.

    ``level_timer``, when given, receives the seconds spent partitioning at each level (for benchmarks)."""
    g = build_graph(nodes, edges)
    out: list[Community] = []
    # Work list of (vertex ids in g, level, parent id); level 0 starts from the whole graph.
    frontier: list[tuple[list[int], int, str | None]] = [(list(range(g.vcount())), 0, None)]
    while frontier:
        vertices, level, parent = frontier.pop(0)
        started = time.perf_counter()
        sub = g.induced_subgraph(vertices) if level > 0 else g
        membership = partition(sub, settings)
        if level_timer is not None:
            level_timer[level] = level_timer.get(level, 0.0) + time.perf_counter() - started
        groups: dict[int, list[int]] = {}
        for local, label in enumerate(membership):
            groups.setdefault(label, []).append(vertices[local] if level > 0 else local)
        if level > 0 and len(groups) <= 1:
            continue  # Leiden cannot split this community further.
        for label in sorted(groups, key=lambda k: (-len(groups[k]), min(groups[k]))):
            members = groups[label]
            if len(members) < 2:
                continue
            names = sorted(g.vs[i]["name"] for i in members)
            cid = community_id(level, names)
            out.append(Community(cid, level, parent, tuple(names)))
            if len(members) > settings.max_cluster_size and level + 1 < settings.max_levels:
                frontier.append((sorted(members), level + 1, cid))
    return out


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def match_identities(new: Sequence[Community], previous: Sequence[Community], threshold: float) -> list[Community]:
    """Give each new community the id of its best-overlapping predecessor at the same level (Jaccard >= threshold).

    Matching is greedy by overlap, one-to-one, so ids persist across runs and drift can be tracked per id.
    """
    prev_by_level: dict[int, list[Community]] = {}
    for c in previous:
        prev_by_level.setdefault(c.level, []).append(c)
    rename: dict[str, str] = {}
    for level in sorted({c.level for c in new}):
        cands = []
        for n in (c for c in new if c.level == level):
            nm = frozenset(n.entity_ids)
            for p in prev_by_level.get(level, []):
                score = _jaccard(nm, frozenset(p.entity_ids))
                if score >= threshold:
                    cands.append((-score, n.id, p.id))
        used_new: set[str] = set()
        used_prev: set[str] = set()
        for _, nid, pid in sorted(cands):
            if nid not in used_new and pid not in used_prev:
                rename[nid] = pid
                used_new.add(nid)
                used_prev.add(pid)
    return [Community(rename.get(c.id, c.id), c.level, rename.get(c.parent_id, c.parent_id) if c.parent_id else None,
                      c.entity_ids) for c in new]


def detect_communities(snapshot: GraphSnapshot, settings: CommunitySettings,
                       previous: Sequence[Community] = ()) -> list[Community]:
    """Hierarchical communities of a graph snapshot, with ids carried over from ``previous``."""
    found = hierarchical_leiden([e.id for e in snapshot.entities], edges_from_snapshot(snapshot), settings)
    return match_identities(found, previous, settings.identity_jaccard) if previous else found
