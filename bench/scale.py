"""Indexing spread over Dask workers: the same offline index of SciFact with the plain one-process path and with
1 and 2 Dask workers (a LocalCluster of worker processes, one thread and one BLAS thread each).

    python -m bench.scale [--docs N] [--embedder minilm|hashing|...]

Prints the wall time of each and whether the three indexes are identical (graph, communities, reports and the
top 10 of 50 SciFact queries, compared field by field). Last line: one JSON object with ``index_s_1``,
``index_s_2``, ``speedup_2`` (1 worker's time over 2 workers') and ``identical``; ``index_s_plain`` is the
one-process peer. Targets on 2 cores: the whole SciFact offline index in at most 6 minutes with 2 workers,
``speedup_2`` >= 1.6, ``identical`` true.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCIFACT = ROOT.parent / "shared" / "data" / "scifact"


def observable(data_dir: Path, queries: list[str]) -> dict[str, Any]:
    from core.settings import StrataSettings
    from core.store import open_store
    from strata.engine import Engine

    settings = StrataSettings(data_dir=data_dir, extraction={"mode": "offline"})
    store = open_store(settings)
    try:
        out: dict[str, Any] = {"graph": store.read_graph(), "communities": store.communities(),
                               "reports": [replace(r, created_at="") for r in store.reports()]}
    finally:
        store.close()
    engine = Engine(settings)
    try:
        out["hits"] = [[(h.chunk_id, round(h.rrf_score, 9)) for h in engine.index.search(q, 10)] for q in queries]
    finally:
        engine.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=0, help="the first N SciFact documents (0: all 5,183)")
    ap.add_argument("--embedder", default=os.environ.get("STRATA_RETRIEVAL__EMBEDDER", "minilm"))
    args = ap.parse_args()
    os.environ["STRATA_RETRIEVAL__EMBEDDER"] = args.embedder
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")  # no telemetry to hosts outside

    from prefect.testing.utilities import prefect_test_harness

    from core.settings import StrataSettings
    from flows.index import run_flow
    from strata.pipeline import index_folder

    rows = [json.loads(line) for line in (SCIFACT / "corpus.jsonl").read_text().splitlines()]
    rows = rows[: args.docs] if args.docs else rows
    queries = [json.loads(line)["text"] for line in (SCIFACT / "queries_test.jsonl").read_text().splitlines()][:50]
    times: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp, prefect_test_harness():
        folder = Path(tmp) / "corpus"
        folder.mkdir()
        (folder / "scifact.jsonl").write_text("\n".join(
            json.dumps({"id": r["_id"], "title": r.get("title", ""), "text": r["text"]}) for r in rows))
        t = time.perf_counter()
        index_folder(folder, StrataSettings(data_dir=Path(tmp) / "plain", extraction={"mode": "offline"}))
        times["plain"] = time.perf_counter() - t
        print(f"one process: {times['plain']:.1f} s", flush=True)
        os.environ["STRATA_EXTRACTION__MODE"] = "offline"
        for n in (1, 2):
            t = time.perf_counter()
            if n == 1:
                # One worker process: the Dask path with compute.workers = 1 would run in-process, so a cluster of
                # one is started explicitly.
                from distributed import LocalCluster

                from flows.index import worker_environment

                with worker_environment(), LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as c:
                    os.environ["STRATA_COMPUTE__DASK_ADDRESS"] = c.scheduler_address
                    os.environ["STRATA_COMPUTE__THREADS"] = "1"
                    try:
                        run_flow(str(folder), str(Path(tmp) / "w1"), "changed", True, None)
                    finally:
                        del os.environ["STRATA_COMPUTE__DASK_ADDRESS"], os.environ["STRATA_COMPUTE__THREADS"]
            else:
                run_flow(str(folder), str(Path(tmp) / "w2"), "changed", True, 2)
            times[f"w{n}"] = time.perf_counter() - t
            print(f"{n} Dask worker(s): {times[f'w{n}']:.1f} s", flush=True)
        plain = observable(Path(tmp) / "plain", queries)
        identical = all(observable(Path(tmp) / w, queries) == plain for w in ("w1", "w2"))
    speedup = times["w1"] / times["w2"]
    print(f"{len(rows)} documents, embedder {args.embedder}: one process {times['plain']:.1f} s, 1 worker "
          f"{times['w1']:.1f} s, 2 workers {times['w2']:.1f} s (speed-up {speedup:.2f}); identical: {identical}")
    print(json.dumps({"index_s_1": round(times["w1"], 2), "index_s_2": round(times["w2"], 2),
                      "speedup_2": round(speedup, 3), "identical": identical, "index_s_plain": round(times["plain"], 2),
                      "documents": len(rows), "embedder": args.embedder}))


if __name__ == "__main__":
    main()
