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
from collections import deque
from dataclasses import dataclass
from typing import Sequence

import igraph as ig
import numpy as np

from core.records import Community, GraphSnapshot, stable_hash
from core.settings import CommunitySettings
from core.threads import blas_limit


@dataclass(frozen=True, slots=True)
class WeightedEdge:
    source: str
    target: str
    weight: float


def edges_from_snapshot(snapshot: GraphSnapshot) -> list[WeightedEdge]:
    return [WeightedEdge(r.source_id, r.target_id, r.weight) for r in snapshot.relations]


def _sorted_graph(nodes: Sequence[str], edges: Sequence[WeightedEdge]) -> tuple[list[str], ig.Graph]:
    """The sorted node names and an undirected graph over their positions, edges in sorted order, parallel
    edges summed, self-loops and edges to unknown nodes dropped; its only attribute is the edge weight.

    Vectorized: 250k edges take a fraction of what a dict of pairs took, with the same sums (``bincount``
    adds each pair's weights in edge order, as the dict did)."""
    order = sorted(set(nodes))
    n, m = len(order), len(edges)
    index = {name: i for i, name in enumerate(order)}
    src = np.fromiter((index.get(e.source, -1) for e in edges), np.int64, m)
    dst = np.fromiter((index.get(e.target, -1) for e in edges), np.int64, m)
    weight = np.fromiter((e.weight for e in edges), np.float64, m)
    keep = (src >= 0) & (dst >= 0) & (src != dst)
    lo, hi = np.minimum(src, dst)[keep], np.maximum(src, dst)[keep]
    keys, inverse = np.unique(lo * n + hi, return_inverse=True)
    sums = np.bincount(inverse.reshape(-1), weights=weight[keep], minlength=len(keys))
    g = ig.Graph(n=n, directed=False)
    # add_edges takes the array about six times faster than the constructor's edges argument, same edge ids.
    g.add_edges(np.column_stack([keys // n, keys % n]) if len(keys) else [])
    g.es["weight"] = sums.tolist()
    return order, g


def build_graph(nodes: Sequence[str], edges: Sequence[WeightedEdge]) -> ig.Graph:
    """An undirected weighted igraph graph with nodes and edges in sorted order (parallel edges summed)."""
    order, g = _sorted_graph(nodes, edges)
    g.vs["name"] = order
    return g


def partition(g: ig.Graph, settings: CommunitySettings, initial: list[int] | None = None) -> list[int]:
    """One Leiden partition of ``g``, optionally starting from ``initial``; returns a membership list."""
    if g.vcount() == 0:
        return []
    weights = "weight" if g.ecount() else None
    if settings.engine == "leidenalg":
        import leidenalg

        if settings.objective == "cpm":
            part = leidenalg.find_partition(g, leidenalg.CPMVertexPartition, weights=weights,
                                            resolution_parameter=settings.resolution, seed=settings.seed,
                                            n_iterations=settings.iterations, initial_membership=initial)
        else:
            part = leidenalg.find_partition(g, leidenalg.RBConfigurationVertexPartition, weights=weights,
                                            resolution_parameter=settings.resolution, seed=settings.seed,
                                            n_iterations=settings.iterations, initial_membership=initial)
        return list(part.membership)
    # igraph draws from Python's random module; seeding it makes the partition repeatable.
    state = random.getstate()
    random.seed(settings.seed)
    try:
        result = g.community_leiden(objective_function="modularity" if settings.objective == "modularity" else "CPM",
                                    weights=weights, resolution=settings.resolution, n_iterations=settings.iterations,
                                    initial_membership=initial)
    finally:
        random.setstate(state)
    return list(result.membership)


def community_id(level: int, members: Sequence[str]) -> str:
    return f"c{level}_" + stable_hash(*sorted(members), size=6)


def _initial(names: Sequence[str], level: int, previous_owner: dict[tuple[int, str], str]) -> list[int] | None:
    """Labels from the previous partition at ``level`` (new nodes get labels of their own), or None."""
    if not previous_owner:
        return None
    labels: dict[str, int] = {}
    out = []
    for name in names:
        owner = previous_owner.get((level, name))
        key = owner if owner is not None else "\x00" + name
        out.append(labels.setdefault(key, len(labels)))
    return out


@blas_limit()
def hierarchical_leiden(nodes: Sequence[str], edges: Sequence[WeightedEdge], settings: CommunitySettings,
                        level_timer: dict[int, float] | None = None,
                        previous: Sequence[Community] = ()) -> list[Community]:
    """All levels of communities with at least two members, parents before children.

    With ``previous`` communities, each partition starts from the previous one (new entities on their own), so
    a small change to the graph moves few entities and leaves most communities, and their reports, as they were.
    ``level_timer``, when given, receives the seconds spent partitioning at each level (for benchmarks)."""
    order, g = _sorted_graph(nodes, edges)
    previous_owner = {(c.level, e): c.id for c in previous for e in c.entity_ids}
    out: list[Community] = []
    # Work list of (vertex ids in g, ascending, or None for all of g; level; parent id). Names are looked up in
    # ``order`` (sorted, so ascending ids give sorted names); the graph carries no name attribute to copy.
    frontier: deque[tuple[list[int] | None, int, str | None]] = deque([(None, 0, None)])
    while frontier:
        vertices, level, parent = frontier.popleft()
        started = time.perf_counter()
        sub = g if vertices is None else g.induced_subgraph(vertices)
        initial = None
        if previous_owner:
            initial = _initial(order if vertices is None else [order[i] for i in vertices], level, previous_owner)
        membership = partition(sub, settings, initial)
        if level_timer is not None:
            level_timer[level] = level_timer.get(level, 0.0) + time.perf_counter() - started
        if not membership:
            continue
        buckets: list[list[int]] = [[] for _ in range(max(membership) + 1)]
        for v, label in zip(range(len(membership)) if vertices is None else vertices, membership):
            buckets[label].append(v)
        groups = [b for b in buckets if b]
        if level > 0 and len(groups) <= 1:
            continue  # Leiden cannot split this community further.
        for members in sorted(groups, key=lambda b: (-len(b), b[0])):
            if len(members) < 2:
                continue
            names = [order[i] for i in members]
            cid = community_id(level, names)
            out.append(Community(cid, level, parent, tuple(names)))
            if len(members) > settings.max_cluster_size and level + 1 < settings.max_levels:
                frontier.append((members, level + 1, cid))
    return out


def match_identities(new: Sequence[Community], previous: Sequence[Community], threshold: float) -> list[Community]:
    """Give each new community the id of its best-overlapping predecessor at the same level (Jaccard >= threshold).

    Matching is greedy by overlap, one-to-one, so ids persist across runs and drift can be tracked per id. Only
    pairs that share a member are compared (found through an entity -> predecessor index).
    """
    owners: dict[tuple[int, str], list[int]] = {}
    prev_sets = [frozenset(p.entity_ids) for p in previous]
    for i, p in enumerate(previous):
        for e in p.entity_ids:
            owners.setdefault((p.level, e), []).append(i)
    cands = []
    for n in new:
        nm = frozenset(n.entity_ids)
        shared: dict[int, int] = {}
        for e in nm:
            for i in owners.get((n.level, e), ()):
                shared[i] = shared.get(i, 0) + 1
        for i, inter in shared.items():
            score = inter / (len(nm) + len(prev_sets[i]) - inter)
            if score >= threshold:
                cands.append((-score, n.id, previous[i].id))
    rename: dict[str, str] = {}
    used_prev: set[str] = set()
    for _, nid, pid in sorted(cands):
        if nid not in rename and pid not in used_prev:
            rename[nid] = pid
            used_prev.add(pid)
    return [Community(rename.get(c.id, c.id), c.level, rename.get(c.parent_id, c.parent_id) if c.parent_id else None,
                      c.entity_ids) for c in new]


def entity_signatures(snapshot: GraphSnapshot) -> dict[str, str]:
    """A hash per entity of everything clustering and reports read about it: description, source chunks, and
    incident relations with their descriptions and weights."""
    incident: dict[str, list[str]] = {}
    for r in snapshot.relations:
        item = f"{r.id}:{r.weight}:{stable_hash(r.description, size=6)}"
        incident.setdefault(r.source_id, []).append(item)
        incident.setdefault(r.target_id, []).append(item)
    return {e.id: stable_hash(e.description, ",".join(sorted(e.chunk_ids)), ",".join(sorted(incident.get(e.id, []))), size=8)
            for e in snapshot.entities}


def changed_entities(previous: dict[str, str], current: dict[str, str]) -> set[str]:
    """Entities that are new or whose signature differs (removed ones are absent from the graph already)."""
    return {e for e, sig in current.items() if previous.get(e) != sig}


@blas_limit()
def incremental_hierarchy(nodes: Sequence[str], edges: Sequence[WeightedEdge], settings: CommunitySettings,
                          previous: Sequence[Community], touched: set[str]) -> list[Community]:
    """Update a previous hierarchy after a change, keeping every community the change did not reach.

    At each level, inside each community being split, the previous communities whose members all still exist
    and include no touched entity are contracted into single weighted nodes (internal edges become self-loops,
    so modularity is measured exactly as on the expanded graph) and Leiden runs on that small graph, starting
    from the previous labels. A contracted community that comes out alone is kept with its whole subtree, id and
    report; one that absorbed other nodes or merged with another is expanded and split again like any new one.
    """
    g = build_graph(nodes, edges)
    index = {name: i for i, name in enumerate(g.vs["name"])}
    present = set(index)
    by_id = {c.id: c for c in previous}
    children: dict[str, list[Community]] = {}
    for c in previous:
        if c.parent_id:
            children.setdefault(c.parent_id, []).append(c)
    owner = {(c.level, e): c.id for c in previous for e in c.entity_ids}
    out: list[Community] = []
    contracted = settings.model_copy(update={"engine": "leidenalg"})

    def keep_subtree(c: Community, parent: str | None) -> None:
        out.append(Community(c.id, c.level, parent, c.entity_ids))
        for child in children.get(c.id, []):
            keep_subtree(child, c.id)

    frontier: list[tuple[set[str], int, str | None]] = [(present, 0, None)]
    while frontier:
        members, level, parent = frontier.pop(0)
        candidates = sorted({owner[(level, e)] for e in members if (level, e) in owner})
        frozen = [by_id[cid] for cid in candidates
                  if set(by_id[cid].entity_ids) <= members and not (set(by_id[cid].entity_ids) & touched)]
        # Contract: each frozen community becomes one vertex; every other member stays a vertex of its own.
        group_of: dict[str, int] = {}
        labels: list[str] = []
        for c in sorted(frozen, key=lambda c: c.id):
            for e in c.entity_ids:
                group_of[e] = len(labels)
            labels.append(c.id)
        for e in sorted(members - set(group_of)):
            group_of[e] = len(labels)
            labels.append(e)
        if len(labels) < 2 and not frozen:
            continue
        sub = g.induced_subgraph(sorted(index[e] for e in members))
        mapping = [group_of[name] for name in sub.vs["name"]]
        sub.contract_vertices(mapping, combine_attrs="first")
        sub.simplify(multiple=True, loops=False, combine_edges={"weight": "sum"})
        frozen_by_id = {c.id: c for c in frozen}
        initial_keys = [lab if lab in frozen_by_id else owner.get((level, lab), "\x00" + lab) for lab in labels]
        ids: dict[str, int] = {}
        initial = [ids.setdefault(k, len(ids)) for k in initial_keys]
        # leidenalg measures modularity with self-loops as on the expanded graph (igraph's built-in Leiden does
        # not, and would merge contracted communities); these contracted graphs are small.
        membership = partition(sub, contracted, initial) if sub.vcount() > 1 else [0] * sub.vcount()
        groups: dict[int, list[int]] = {}
        for v, label in enumerate(membership):
            groups.setdefault(label, []).append(v)
        if level > 0 and len(groups) <= 1:
            continue  # Leiden cannot split this community further (as in hierarchical_leiden): no child equal to it.
        for label in sorted(groups, key=lambda k: min(groups[k])):
            verts = groups[label]
            if len(verts) == 1 and labels[verts[0]] in frozen_by_id:
                keep_subtree(frozen_by_id[labels[verts[0]]], parent)
                continue
            names = sorted(e for v in verts for e in (
                frozen_by_id[labels[v]].entity_ids if labels[v] in frozen_by_id else (labels[v],)))
            if len(names) < 2:
                continue
            cid = community_id(level, names)
            out.append(Community(cid, level, parent, tuple(names)))
            if len(names) > settings.max_cluster_size and level + 1 < settings.max_levels:
                frontier.append((set(names), level + 1, cid))
    return out


def detect_communities(snapshot: GraphSnapshot, settings: CommunitySettings, previous: Sequence[Community] = (),
                       touched: set[str] | None = None) -> list[Community]:
    """Hierarchical communities of a graph snapshot, with ids carried over from ``previous``.

    Given the entities that changed since ``previous`` was computed (and ``settings.incremental``), the
    hierarchy is updated with :func:`incremental_hierarchy`, which keeps every community the change did not
    touch; otherwise the whole hierarchy is computed, starting from the previous partition where there is one.
    (Incremental updates need the modularity objective: CPM on contracted communities would need node sizes.)
    """
    nodes = [e.id for e in snapshot.entities]
    edges = edges_from_snapshot(snapshot)
    if previous and touched is not None and settings.incremental and settings.objective == "modularity":
        found = incremental_hierarchy(nodes, edges, settings, previous, touched)
        kept = {c.id for c in previous}
        fresh = [c for c in found if c.id not in kept]
        found_ids = {f.id for f in found}
        renamed = match_identities(fresh, [c for c in previous if c.id not in found_ids], settings.identity_jaccard)
        rename = {f.id: r.id for f, r in zip(fresh, renamed)}
        return sorted((Community(rename.get(c.id, c.id), c.level, rename.get(c.parent_id, c.parent_id) if c.parent_id else None,
                                 c.entity_ids) for c in found), key=lambda c: (c.level, c.id))
    found = hierarchical_leiden(nodes, edges, settings, previous=previous)
    return match_identities(found, previous, settings.identity_jaccard) if previous else found
