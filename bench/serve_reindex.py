"""Serving while reindexing: a server over SciFact answers N concurrent clients while an incremental reindex of
5% of the documents (a third deleted, a third changed, a third added) runs in another process.

    python -m bench.serve_reindex [--clients 20] [--seconds-before 10] [--embedder hashing|minilm|...]

Prints requests, errors and p50/p99 latency before, during and after the reindex, the seconds from the run's end
until the new generation served, and stale results (a chunk id not in the generation that answered). The naive
peer is the same server without hot reload (what a restart-only server would serve): its stale results are
counted against the new generation after the run. Last line: one JSON object with ``errors``,
``stale_results``, ``reload_s``, ``p99_ms_during``, ``p99_ms_before`` (targets: 0, 0, <= 2, <= 3x before).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import uvicorn

from core.settings import StrataSettings
from strata.api import create_app
from strata.generations import load_generation
from strata.pipeline import index_folder
from strata.workspace import Workspace

ROOT = Path(__file__).resolve().parents[1]
SCIFACT = ROOT.parent / "shared" / "data" / "scifact"


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def chunk_ids(ws: Workspace, n: int) -> set[str]:
    path = ws.generation(n).index_dir / "chunks.jsonl"
    return {json.loads(line)["chunk_id"] for line in path.read_text().splitlines()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--seconds-before", type=float, default=10.0)
    ap.add_argument("--seconds-after", type=float, default=5.0)
    ap.add_argument("--share", type=float, default=0.05, help="share of documents the reindex touches")
    ap.add_argument("--embedder", default=os.environ.get("STRATA_RETRIEVAL__EMBEDDER", "hashing"))
    ap.add_argument("--docs", type=int, default=0, help="use only the first N SciFact documents (0: all)")
    args = ap.parse_args()

    rows = [json.loads(line) for line in (SCIFACT / "corpus.jsonl").read_text().splitlines()]
    if args.docs:
        rows = rows[: args.docs]
    queries = [json.loads(line)["text"] for line in (SCIFACT / "queries_test.jsonl").read_text().splitlines()]
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        folder, data = Path(tmp) / "corpus", Path(tmp) / "ws"
        folder.mkdir()
        path = folder / "scifact.jsonl"
        path.write_text("\n".join(json.dumps({"id": r["_id"], "title": r.get("title", ""), "text": r["text"]}) for r in rows))
        os.environ["STRATA_RETRIEVAL__EMBEDDER"] = args.embedder
        settings = StrataSettings(data_dir=data, extraction={"mode": "offline"},
                                  index={"keep_generations": 10, "reload_poll_s": 0.5})
        t0 = time.perf_counter()
        index_folder(folder, settings)
        print(f"indexed {len(rows)} documents in {time.perf_counter() - t0:.1f} s (embedder {args.embedder})")
        ws = Workspace(data)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        server = uvicorn.Server(uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="warning",
                                               timeout_keep_alive=75))
        threading.Thread(target=server.run, daemon=True).start()
        base = f"http://127.0.0.1:{port}"
        while True:
            try:
                if httpx.get(f"{base}/v1/health").json().get("index_generation"):
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        records: list[tuple[float, float, int, int | None, list[str], dict]] = []
        lock, stop = threading.Lock(), threading.Event()

        def client(k: int) -> None:
            local = random.Random(k)
            with httpx.Client(base_url=base, timeout=60) as http:
                while not stop.is_set():
                    q = local.choice(queries)
                    body = {"query_id": f"{k}", "search_text": q, "top_k": 10}
                    if local.random() < 0.3:
                        body["hybrid_params"] = {"dense_weight": 0.5, "sparse_weight": 1.0, "rrf_k_constant": 60}
                    start = time.perf_counter()
                    try:
                        r = http.post("/v1/memory/query", json=body)
                        status, data = r.status_code, r.json()
                    except (httpx.HTTPError, ValueError):
                        status, data = 0, {}
                    ms = (time.perf_counter() - start) * 1000
                    with lock:
                        records.append((time.time(), ms, status, data.get("index_generation"),
                                        [x["chunk_id"] for x in data.get("results", [])], body))

        threads = [threading.Thread(target=client, args=(k,), daemon=True) for k in range(args.clients)]
        for t in threads:
            t.start()
        time.sleep(args.seconds_before)
        began = time.time()
        touched = rng.sample(range(len(rows)), max(3, int(len(rows) * args.share)))
        third = len(touched) // 3
        deleted = set(touched[:third])
        changed = set(touched[third:2 * third])
        kept = [r for i, r in enumerate(rows) if i not in deleted]
        out = []
        for i, r in enumerate(rows):
            if i in deleted:
                continue
            text = r["text"] + (" Revised: the effect was not replicated in a second cohort." if i in changed else "")
            out.append(json.dumps({"id": r["_id"], "title": r.get("title", ""), "text": text}))
        for j in range(len(touched) - 2 * third):
            src = kept[rng.randrange(len(kept))]
            out.append(json.dumps({"id": f"new-{j}", "title": "Added " + src.get("title", ""), "text": src["text"][::-1]}))
        path.write_text("\n".join(out))
        env = {**os.environ, "PYTHONPATH": str(ROOT), "STRATA_DATA_DIR": str(data), "STRATA_EXTRACTION__MODE": "offline",
               "STRATA_INDEX__KEEP_GENERATIONS": "10"}
        proc = subprocess.run([sys.executable, "-m", "strata.cli", "index", str(folder), "--json"], env=env,
                              capture_output=True, text=True)
        finished = time.time()
        published = os.stat(ws.current_path).st_mtime  # the moment CURRENT named the new generation
        if proc.returncode != 0:
            print(proc.stderr[-3000:])
        new_gen = ws.current_number()
        time.sleep(args.seconds_after)
        stop.set()
        for t in threads:
            t.join(timeout=60)
        server.should_exit = True
        valid = {}
        for n in {r[3] for r in records if r[3]}:
            try:
                valid[n] = chunk_ids(ws, n)
            except OSError:
                valid[n] = set()
        stale = sum(1 for r in records if r[3] and not set(r[4]) <= valid[r[3]])
        errors = sum(1 for r in records if r[2] != 200)
        before = [r[1] for r in records if r[0] < began]
        during = [r[1] for r in records if began <= r[0] <= published]
        after = [r[1] for r in records if r[0] > published]
        served_new = [r[0] for r in records if r[3] == new_gen]
        reload_s = (min(served_new) - published) if served_new else float("inf")
        # The naive peer: a server that never reloads answers every request after the publish from generation 1.
        gone = chunk_ids(ws, 1) - valid.get(new_gen, set())
        old_snap = load_generation(ws.generation(1), settings)
        naive_stale = 0
        for r in [r for r in records if r[0] > published][:2000]:
            body = r[5]
            hp = body.get("hybrid_params")
            hits = old_snap.index.search(body["search_text"], body["top_k"],
                                         *((hp["dense_weight"], hp["sparse_weight"], hp["rrf_k_constant"]) if hp else ()),
                                         **({"fusion": "rrf"} if hp else {}))
            naive_stale += any(h.chunk_id in gone for h in hits)
        old_snap.close()
    print(f"reindex: {len(deleted)} deleted, {len(changed)} changed, {len(touched) - 2 * third} added; "
          f"run {finished - began:.1f} s, generation {new_gen}")
    print(f"{'phase':<8}{'requests':>10}{'p50 ms':>10}{'p99 ms':>10}")
    for name, lat in (("before", before), ("during", during), ("after", after)):
        print(f"{name:<8}{len(lat):>10}{pct(lat, 0.5):>10.1f}{pct(lat, 0.99):>10.1f}")
    print(f"errors {errors}; stale results {stale}; a server without hot reload would have answered {naive_stale} of "
          f"the requests after the publish with deleted chunks; the new generation served {reload_s:.2f} s after "
          f"it was published")
    print(json.dumps({"errors": errors, "stale_results": stale, "reload_s": round(reload_s, 3),
                      "p99_ms_during": round(pct(during, 0.99), 2), "p99_ms_before": round(pct(before, 0.99), 2),
                      "p50_ms_before": round(pct(before, 0.5), 2), "p50_ms_during": round(pct(during, 0.5), 2),
                      "requests": len(records), "naive_stale_after": naive_stale, "clients": args.clients,
                      "embedder": args.embedder, "ratio_p99": round(pct(during, 0.99) / pct(before, 0.99), 2)}))


if __name__ == "__main__":
    main()
