"""The hierarchy's bookkeeping (vectorized graph build, grouping, ordering) against a plain oracle.

The oracle builds the graph with a dict of summed pairs and walks the hierarchy with igraph's own subgraphs and
vertex names, the obvious way; the library must give exactly the same communities, ids and parents, on a graph
with parallel edges, self-loops, edges to unknown nodes, isolated nodes and uneven weights.
"""

from __future__ import annotations

import random

import igraph as ig

from communities.leiden import WeightedEdge, build_graph, community_id, hierarchical_leiden, partition
from core.records import Community
from core.settings import CommunitySettings


def messy_graph(n: int = 900, seed: int = 3) -> tuple[list[str], list[WeightedEdge]]:
    rng = random.Random(seed)
    nodes = [f"ent-{rng.randrange(10**6):06d}-{i}" for i in range(n)]
    edges = []
    for _ in range(n * 3):
        a = rng.randrange(n)
        b = (a // 40) * 40 + rng.randrange(40) if rng.random() < 0.8 else rng.randrange(n)
        edges.append(WeightedEdge(nodes[a], nodes[min(b, n - 1)], rng.choice([0.5, 1.0, 2.0, 3.5])))
    edges += [WeightedEdge(nodes[5], nodes[5], 1.0), WeightedEdge(nodes[1], "not-a-node", 1.0)]
    edges += edges[:50]  # parallel edges, summed
    return nodes + ["isolated-a", "isolated-b"], edges


def oracle(nodes: list[str], edges: list[WeightedEdge], settings: CommunitySettings) -> list[Community]:
    order = sorted(set(nodes))
    index = {n: i for i, n in enumerate(order)}
    weights: dict[tuple[int, int], float] = {}
    for e in edges:
        if e.source in index and e.target in index and e.source != e.target:
            key = (min(index[e.source], index[e.target]), max(index[e.source], index[e.target]))
            weights[key] = weights.get(key, 0.0) + e.weight
    pairs = sorted(weights)
    g = ig.Graph(n=len(order), edges=pairs)
    g.vs["name"] = order
    g.es["weight"] = [weights[p] for p in pairs]
    out: list[Community] = []
    frontier: list[tuple[list[int], int, str | None]] = [(list(range(g.vcount())), 0, None)]
    while frontier:
        vertices, level, parent = frontier.pop(0)
        sub = g.induced_subgraph(vertices)
        groups: dict[int, list[int]] = {}
        for local, label in enumerate(partition(sub, settings)):
            groups.setdefault(label, []).append(vertices[local])
        if level > 0 and len(groups) <= 1:
            continue
        for label in sorted(groups, key=lambda k: (-len(groups[k]), min(groups[k]))):
            members = groups[label]
            if len(members) >= 2:
                names = sorted(g.vs[i]["name"] for i in members)
                cid = community_id(level, names)
                out.append(Community(cid, level, parent, tuple(names)))
                if len(members) > settings.max_cluster_size and level + 1 < settings.max_levels:
                    frontier.append((sorted(members), level + 1, cid))
    return out


def test_hierarchy_equals_the_plain_oracle() -> None:
    nodes, edges = messy_graph()
    for settings in (CommunitySettings(max_cluster_size=8, max_levels=6),
                     CommunitySettings(engine="leidenalg", max_cluster_size=12, seed=7)):
        got = hierarchical_leiden(nodes, edges, settings)
        assert got == oracle(nodes, edges, settings)
        assert len({c.level for c in got}) >= 2


def test_hierarchy_ignores_input_order() -> None:
    nodes, edges = messy_graph(400, seed=9)
    settings = CommunitySettings(max_cluster_size=6)
    shuffled_nodes, shuffled_edges = nodes[:], edges[:]
    random.Random(1).shuffle(shuffled_nodes)
    random.Random(2).shuffle(shuffled_edges)
    flipped = [WeightedEdge(e.target, e.source, e.weight) for e in shuffled_edges]
    assert hierarchical_leiden(nodes, edges, settings) == hierarchical_leiden(shuffled_nodes, flipped, settings)


def test_build_graph_sums_parallel_edges_and_drops_loops() -> None:
    g = build_graph(["b", "a", "c", "a"], [WeightedEdge("a", "b", 1.0), WeightedEdge("b", "a", 2.5),
                                           WeightedEdge("c", "c", 4.0), WeightedEdge("c", "zz", 1.0),
                                           WeightedEdge("c", "a", 0.5)])
    assert g.vs["name"] == ["a", "b", "c"]
    assert [e.tuple for e in g.es] == [(0, 1), (0, 2)] and g.es["weight"] == [3.5, 0.5]
    empty = build_graph(["x"], [])
    assert empty.vcount() == 1 and empty.ecount() == 0
    assert hierarchical_leiden([], [], CommunitySettings()) == []
