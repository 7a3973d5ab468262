"""The merge stage's reads and resolution on a workspace's store, with the collector as an index run sets it and
with Python's default, in the same process.

    python -m bench.merge WORKSPACE [--repeats 2]

Reads the store (``graph.sqlite``: the graph and every stored extraction; nothing is written) and resolves the
extractions as ``stage_merge`` does (``extraction.canonical.canonical_fields``), ``--repeats`` times in each
setting, alternating: Python's default collector thresholds (the peer) and ``core.threads.batch_collector``'s.
Prints the median seconds of each part per setting, their ratio, and a digest of every resolved entity's and
relation's fields, which must be the same in both settings; run it at two commits to compare their resolution
code on the same store (the digests must match there too). Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import statistics
import time
from pathlib import Path

from core.store.sqlite_store import SQLiteGraphStore
from core.threads import batch_collector
from extraction.canonical import canonical_fields


def one_pass(path: Path) -> tuple[dict[str, float], str]:
    store = SQLiteGraphStore(path)
    try:
        t0 = time.perf_counter()
        store.read_graph()
        t1 = time.perf_counter()
        payloads = store.extractions()
        t2 = time.perf_counter()
        entities, relations = canonical_fields(payloads, 600)
        t3 = time.perf_counter()
    finally:
        store.close()
    digest = hashlib.sha256(json.dumps(
        [[e.id, e.name, e.type, e.description, list(e.chunk_ids)] for e in entities]
        + [[r.id, r.source_id, r.target_id, r.description, list(r.chunk_ids)] for r in relations],
        ensure_ascii=False).encode()).hexdigest()[:16]
    return {"read_graph_s": t1 - t0, "extractions_s": t2 - t1, "resolve_s": t3 - t2}, digest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("workspace", type=Path)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    path = args.workspace / "graph.sqlite"
    if not path.exists():
        raise SystemExit(f"{path}: no embedded store here (give the workspace folder of an index run)")
    default = gc.get_threshold()
    times: dict[str, list[dict[str, float]]] = {"default": [], "batch": []}
    digests: set[str] = set()
    for _ in range(args.repeats):
        for setting in ("default", "batch"):
            end = batch_collector() if setting == "batch" else None
            try:
                t, digest = one_pass(path)
            finally:
                if end is not None:
                    end()
            assert gc.get_threshold() == default
            times[setting].append(t)
            digests.add(digest)
            print(f"{setting:<8}" + "".join(f"{k} {v:7.1f}  " for k, v in t.items()) + digest, flush=True)
    if len(digests) != 1:
        raise SystemExit(f"the settings resolved differently: {sorted(digests)}")
    result: dict[str, object] = {"digest": digests.pop(), "repeats": args.repeats}
    for part in ("read_graph_s", "extractions_s", "resolve_s"):
        for setting in times:
            result[f"{part}_{setting}"] = round(statistics.median(t[part] for t in times[setting]), 1)
        result[f"{part}_ratio"] = round(result[f"{part}_batch"] / max(1e-9, result[f"{part}_default"]), 3)  # type: ignore[operator]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
