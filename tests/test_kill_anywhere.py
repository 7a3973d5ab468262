"""Kills at any instant: `strata index` / `strata reindex` over 300 SciFact documents, killed (SIGKILL) at seeded
random wall-clock times (inside store transactions, batches and the publish's file writes as much as between
stages), then run to the end, end field by field as an uninterrupted run, on the embedded store and on Neo4j.

The harness is bench/kill.py (``python -m bench.kill --trials N`` runs more); each trial prints its seed, and
``python -m bench.kill --seeds N`` reruns one. ``KILL_SEEDS=3,17`` runs other seeds here."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench.kill import STAGES, Harness, Plan, Store, Timing, state_differences
from tests.conftest import shared

SQLITE_SEEDS = [int(s) for s in os.environ.get("KILL_SEEDS", "").split(",") if s.strip()] or list(range(1, 13))
NEO4J_SEEDS = [101, 102, 103]


def _run(harness: Harness, seeds: list[int]) -> None:
    results = []
    for seed in seeds:
        results.append(harness.run(seed))
        print(results[-1].line())
    differing = [r.line() for r in results if r.differences]
    assert not differing, "trials that differ from the uninterrupted run:\n" + "\n".join(differing)
    assert sum(sum(r.killed) for r in results) >= len(seeds) // 2, "too few kills landed before the run ended"


@pytest.mark.slow
def test_kills_at_random_instants_end_as_an_uninterrupted_run(tmp_path: Path) -> None:
    shared("scifact", "corpus.jsonl")
    _run(Harness(tmp_path, Store(), docs=300), SQLITE_SEEDS)


@pytest.mark.neo4j
@pytest.mark.slow
def test_neo4j_kills_at_random_instants_end_as_an_uninterrupted_embedded_run(tmp_path: Path,
                                                                            neo4j_store_settings) -> None:  # type: ignore[no-untyped-def]
    shared("scifact", "corpus.jsonl")
    store = Store("neo4j", neo4j_store_settings.neo4j_uri, neo4j_store_settings.neo4j_password.get_secret_value())
    _run(Harness(tmp_path, store, docs=300), NEO4J_SEEDS)


def test_a_seed_decides_the_whole_trial() -> None:
    timing = Timing(8.0, {s: (1.0 + i, 1.5 + i) for i, s in enumerate(STAGES)})
    timings = {"index": timing, "reindex": timing}
    plans = [Plan.draw(seed, timings) for seed in range(200)]
    assert plans[:20] == [Plan.draw(seed, timings) for seed in range(20)]
    assert {p.scenario for p in plans} == {"index", "reindex"} and {p.command for p in plans} == {"index", "reindex"}
    aims = {aim for p in plans for _, aim in p.kills}
    assert "any" in aims and "publish" in aims and "extract" in aims
    for p in plans:
        for at, aim in p.kills:
            lo, hi = timing.windows[aim] if aim != "any" else (0.0, timing.wall)
            if aim == "publish":  # timed from the moment the publish starts writing
                lo, hi = 0.0, hi - lo
            assert lo <= at <= hi


def test_state_differences_name_the_field() -> None:
    want = {"documents": {"a": "1"}, "hits": {"q": [("c#0", 0.5, "a")]}}
    assert state_differences(want, want) == []
    got = {"documents": {"a": "2"}, "hits": {"q": [("c#1", 0.5, "a")]}}
    assert state_differences(got, want) == ["documents differ at ['a']", "hits differ at ['q']"]
