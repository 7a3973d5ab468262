"""Hierarchical Leiden on planted-partition graphs beside networkx's Louvain on the same graphs.

    python -m bench.leiden [--sizes 10000 100000] [--repeats 3]

For each size: the whole hierarchy (max_cluster_size 10) with igraph's engine and with leidenalg's, time per
level and in total (median of --repeats), the modularity of the timed run's top level (the partition the
hierarchy was built from, entities outside any community counted as their own) beside that of a separate igraph
run iterated to convergence, and networkx ``louvain_communities`` (one run; it is the slow peer). Last line: one
JSON object with leiden_100k_s, louvain_nx_100k_s, levels, modularity_100k (the timed igraph partition's),
modularity_leidenalg_100k and modularity_converged_100k.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time

import networkx as nx

from communities.leiden import WeightedEdge, build_graph, hierarchical_leiden
from core.settings import CommunitySettings


def planted_graph(n: int, edges_per_node: float = 5.0, group: int = 50, p_in: float = 0.85, seed: int = 1) -> tuple[list[str], list[WeightedEdge]]:
    rng = random.Random(seed)
    nodes = [f"n{i:07d}" for i in range(n)]
    seen: set[tuple[int, int]] = set()
    edges: list[WeightedEdge] = []
    target = int(n * edges_per_node / 2)
    while len(edges) < target:
        a = rng.randrange(n)
        if rng.random() < p_in:
            base = (a // group) * group
            b = base + rng.randrange(min(group, n - base))
        else:
            b = rng.randrange(n)
        if a == b:
            continue
        key = (min(a, b), max(a, b))
        if key in seen:
            continue
        seen.add(key)
        edges.append(WeightedEdge(nodes[key[0]], nodes[key[1]], 1.0))
    return nodes, edges


def run_hierarchy(nodes, edges, engine: str) -> tuple[float, dict[int, float], dict[int, int], list[set[str]]]:  # type: ignore[no-untyped-def]
    """Seconds in all, seconds and communities per level, and the top level's communities."""
    settings = CommunitySettings(engine=engine, max_cluster_size=10, max_levels=8)
    per_level: dict[int, float] = {}
    counts: dict[int, int] = {}
    t0 = time.perf_counter()
    comms = hierarchical_leiden(nodes, edges, settings, level_timer=per_level)
    total = time.perf_counter() - t0
    for c in comms:
        counts[c.level] = counts.get(c.level, 0) + 1
    return total, per_level, counts, [set(c.entity_ids) for c in comms if c.level == 0]


def top_level_modularity(G: nx.Graph, top: list[set[str]]) -> float:
    """Modularity of a top level (communities of two or more) with every other node on its own."""
    covered = set().union(*top) if top else set()
    return float(nx.community.modularity(G, [c & G.nodes for c in top] + [{v} for v in G.nodes if v not in covered]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    result: dict[str, object] = {}
    print(f"{'graph':<14}{'method':<34}{'total s':>9}{'levels':>8}  per level (s) / communities per level")
    for n in args.sizes:
        nodes, edges = planted_graph(n)
        label = f"{n // 1000}k/{len(edges) // 1000}k"
        G = nx.Graph()
        G.add_weighted_edges_from((e.source, e.target, e.weight) for e in edges)
        for engine in ("igraph", "leidenalg"):
            runs = [run_hierarchy(nodes, edges, engine) for _ in range(args.repeats if engine == "igraph" else 1)]
            total = statistics.median(r[0] for r in runs)
            _, per_level, counts, top_level = runs[0]
            q_timed = top_level_modularity(G, top_level)
            levels = " ".join(f"L{k}:{v:.2f}" for k, v in sorted(per_level.items()))
            print(f"{label:<14}{'Leiden hierarchy, ' + engine:<34}{total:>9.2f}{len(counts):>8}  {levels} / "
                  f"{dict(sorted(counts.items()))}; top level's modularity {q_timed:.4f}")
            if n == 100_000 and engine == "igraph":
                result["leiden_100k_s"] = round(total, 3)
                result["levels"] = len(counts)
                result["modularity_100k"] = round(q_timed, 4)
            if n == 100_000 and engine == "leidenalg":
                result["leidenalg_100k_s"] = round(total, 3)
                result["modularity_leidenalg_100k"] = round(q_timed, 4)
        g = build_graph(nodes, edges)
        top = g.community_leiden(objective_function="modularity", weights="weight", n_iterations=-1)
        if n == 100_000:
            result["modularity_converged_100k"] = round(top.modularity, 4)
        t0 = time.perf_counter()
        louvain = nx.community.louvain_communities(G, seed=1)
        t_nx = time.perf_counter() - t0
        q_nx = nx.community.modularity(G, louvain)
        print(f"{label:<14}{'networkx louvain (one level)':<34}{t_nx:>9.2f}{1:>8}  modularity {q_nx:.4f} vs Leiden "
              f"converged (a separate igraph run, not timed) {top.modularity:.4f}")
        if n == 100_000:
            result["louvain_nx_100k_s"] = round(t_nx, 3)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
