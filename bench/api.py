"""The HTTP API under load, beside the same queries run in-process.

    python -m bench.api [--seconds 10] [--clients 1 50 200] [--workers N] [--workspace DIR]

Indexes SciFact (offline extraction; the query embedder is whatever ``STRATA_RETRIEVAL__EMBEDDER`` says, the
hashing one unless set) into a workspace kept between runs, starts ``strata serve`` on a free port, and drives it
from a separate process with 1, 50 and 200 keep-alive clients for a fixed time each, over a mix of plain,
weighted and filtered memory queries built from the SciFact test questions. It does so twice: with one server
process and with one process per core (the deployment the README advises on a
machine of its own), or with one and ``--workers N``. The same requests then run in this process through
``Engine.query`` (no HTTP, one thread, the server's BLAS settings), in slices before, between and after the
server passes: the median slice. Prints req/s,
p50/p95/p99 per client count and the share of the in-process rate. These passes run with the query cache off, so
they measure the search itself.

Then a one-process server with the query cache on takes a workload in which 30% of the requests repeat an earlier
one (the rest are distinct: SciFact questions as plain, weighted and filtered queries with three ``top_k``), from 1
and from 50 clients; the server's ``X-Cache`` header tells hits from misses, and their p50 are printed side by side.

Ends with one JSON line: for one server process ``rps_50``, ``p50_ms_50``, ``p99_ms_50``, ``inprocess_qps`` and
``http_overhead_ratio`` (``rps_50 / inprocess_qps``: the share of in-process throughput one process keeps); for
``processes`` server processes (one per core, or ``--workers``) ``rps_50_processes``, ``p50_ms_50_processes``,
``p99_ms_50_processes`` and ``processes_over_inprocess`` (their rate over the one-thread in-process rate: not an
overhead, since they use every core, which the in-process thread does not); ``cpu_ms_per_request_50`` (the one
server process's CPU per request at 50 clients); ``http_only_rps_50`` and ``http_only_cpu_ms_per_request`` (the
peer for HTTP alone: one server process whose search returns the answer it computed for the same text before);
``cache_hit_p50_ms`` and ``cache_miss_p50_ms`` (one client),
``cache_hit_p50_ms_50`` and ``cache_miss_p50_ms_50`` (50 clients), ``cache_hit_ratio`` and ``cache_hit_cost_ratio``
(hit p50 over miss p50, one client).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"


@dataclass(frozen=True, slots=True)
class LoadResult:
    clients: int
    requests: int
    errors: int
    seconds: float
    latencies_ms: tuple[float, ...]
    server_cpu_s: float = float("nan")  # CPU time of the server's processes during the pass

    @property
    def cpu_ms_per_request(self) -> float:
        return self.server_cpu_s / self.requests * 1000 if self.requests else float("nan")

    @property
    def rps(self) -> float:
        return self.requests / self.seconds

    def pct(self, q: float) -> float:
        xs = sorted(self.latencies_ms)
        return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def requests_mix(limit: int = 300) -> list[dict]:
    """Plain, weighted and filtered memory queries, one third each, from the SciFact test questions."""
    out = []
    with open(DATA / "queries_test.jsonl", encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            if i >= limit:
                break
            text = json.loads(line)["text"]
            body: dict = {"query_id": f"q{i}", "search_text": text, "top_k": 10}
            if i % 3 == 1:
                body["hybrid_params"] = {"dense_weight": 0.5, "sparse_weight": 1.0, "rrf_k_constant": 60}
            elif i % 3 == 2:
                body["metadata_filter"] = {"line": {"lte": 2600}}
            out.append(body)
    return out


def repeating_workload(n: int, repeat_share: float = 0.3, seed: int = 17) -> list[dict]:
    """``n`` requests of which ``repeat_share`` repeat an earlier one (chosen at random among those sent before),
    the rest distinct: each SciFact test question as a plain, weighted and filtered query, with top_k 10, 5 and 3."""
    distinct = []
    for top_k in (10, 5, 3):
        for body in requests_mix():
            distinct.append({**body, "query_id": f"{body['query_id']}-k{top_k}", "top_k": top_k})
    rng = random.Random(seed)
    rng.shuffle(distinct)
    out: list[dict] = []
    fresh = iter(distinct)
    for _ in range(n):
        if out and rng.random() < repeat_share:
            out.append(rng.choice(out))
        else:
            out.append(next(fresh))
    return out


def ensure_index(workspace: Path) -> Path:
    data = workspace / "data"
    if not (data / "CURRENT").exists():
        from core.settings import StrataSettings
        from strata.pipeline import index_folder

        corpus = workspace / "corpus"
        corpus.mkdir(parents=True, exist_ok=True)
        link = corpus / "scifact.jsonl"
        if not link.exists():
            link.symlink_to(DATA / "corpus.jsonl")
        start = time.perf_counter()
        index_folder(corpus, StrataSettings(data_dir=data, extraction={"mode": "offline"}))
        print(f"indexed SciFact in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return data


async def _client(host: str, port: int, bodies: list[bytes], stop_at: float, lat: list[float], errs: list[int],
                  offset: int) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    i = offset
    try:
        while time.perf_counter() < stop_at:
            body = bodies[i % len(bodies)]
            i += 1
            t0 = time.perf_counter()
            writer.write(b"POST /v1/memory/query HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
                         b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for h in head.split(b"\r\n"):
                if h.lower().startswith(b"content-length:"):
                    length = int(h.split(b":")[1])
            await reader.readexactly(length)
            lat.append((time.perf_counter() - t0) * 1000)
            if not head.startswith(b"HTTP/1.1 200"):
                errs.append(1)
    finally:
        writer.close()


def drive(host: str, port: int, clients: int, seconds: float, bodies: list[bytes]) -> LoadResult:
    """The load generator (run in its own process): ``clients`` keep-alive connections for ``seconds``."""
    lat: list[float] = []
    errs: list[int] = []

    async def run() -> None:
        stop_at = time.perf_counter() + seconds
        await asyncio.gather(*(_client(host, port, bodies, stop_at, lat, errs, k * 7) for k in range(clients)))

    start = time.perf_counter()
    asyncio.run(run())
    return LoadResult(clients, len(lat), len(errs), time.perf_counter() - start, tuple(lat))


async def _replay(host: str, port: int, clients: int, bodies: list[bytes]) -> tuple[list[float], list[bool], int]:
    """Send ``bodies`` once each, in order, over ``clients`` keep-alive connections taking the next one in turn."""
    lat: list[float] = []
    hits: list[bool] = []
    errs: list[int] = []
    queue = iter(bodies)

    async def one() -> None:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            for body in queue:
                await _send(reader, writer, body, lat, hits, errs)
        finally:
            writer.close()

    await asyncio.gather(*(one() for _ in range(clients)))
    return lat, hits, len(errs)


async def _send(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, body: bytes, lat: list[float],
                hits: list[bool], errs: list[int]) -> None:
    t0 = time.perf_counter()
    writer.write(b"POST /v1/memory/query HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
                 b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    head = await reader.readuntil(b"\r\n\r\n")
    length, hit = 0, False
    for h in head.split(b"\r\n"):
        if h.lower().startswith(b"content-length:"):
            length = int(h.split(b":")[1])
        elif h.lower().startswith(b"x-cache:"):
            hit = h.split(b":")[1].strip() == b"hit"
    await reader.readexactly(length)
    lat.append((time.perf_counter() - t0) * 1000)
    hits.append(hit)
    if not head.startswith(b"HTTP/1.1 200"):
        errs.append(1)


def _median(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else float("nan")


def _tree_cpu_s(pid: int) -> float:
    """CPU seconds (user and system) of a process and its children (a server's worker processes), from /proc,
    with the CPU of children that have ended and been reaped (a worker restarted during a pass)."""
    total, tick = 0.0, os.sysconf("SC_CLK_TCK")
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += sum(int(f) for f in fields[11:15]) / tick  # utime, stime, cutime, cstime
            for task in Path(f"/proc/{p}/task").iterdir():  # a kernel that lists children there (Linux 3.5+)
                todo += [int(c) for c in (task / "children").read_text().split()]
        except FileNotFoundError:
            if p == pid:  # the server itself, or no children lists: the figure would be wrong, so say so
                raise
            # a child that ended just now: its CPU reaches the parent's cutime once it is reaped
    return total


def _start_server(data: Path, env: dict[str, str], stub: bool = False) -> tuple[subprocess.Popen, int]:
    port = _free_port()
    command = (["-m", "bench.api", "--serve-stub", str(port), str(data)] if stub else
               ["-m", "strata.cli", "serve", "--port", str(port), "--data-dir", str(data)])
    server = subprocess.Popen([sys.executable, *command],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # one log line a request
    ready = 0  # ready ten times over fresh connections (with several processes, likely from each of them)
    for _ in range(600):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/ready", timeout=2) as r:
                ready = ready + 1 if r.status == 200 else 0
        except OSError:
            ready = 0
        if ready >= 10:
            return server, port
        if server.poll() is not None:
            raise RuntimeError(f"strata serve exited with status {server.returncode} before it was ready")
        time.sleep(0.1 if ready else 0.2)
    server.terminate()
    raise RuntimeError("strata serve was not ready after two minutes")


def cache_pass(data: Path, env: dict[str, str], requests: int, clients: int) -> dict[str, float]:
    """A fresh server with the query cache on, the repeating workload replayed by ``clients`` connections (in a
    separate process); p50 of hits and of misses as the server's X-Cache header tells them apart."""
    server, port = _start_server(data, {**env, "STRATA_CACHE__ENABLED": "true", "STRATA_SERVER__WORKERS": "1"})
    try:
        out = subprocess.run([sys.executable, "-m", "bench.api", "--replay", str(port), str(clients), str(requests)],
                             capture_output=True, text=True, check=True, env=env).stdout
    finally:
        server.terminate()
        server.wait(timeout=30)
    d = json.loads(out)
    lat, hits = d["latencies_ms"], d["hits"]
    hit_ms = [x for x, h in zip(lat, hits) if h]
    miss_ms = [x for x, h in zip(lat, hits) if not h]
    return {"hit_p50": _median(hit_ms), "miss_p50": _median(miss_ms), "hits": len(hit_ms), "requests": len(lat),
            "errors": d["errors"]}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--clients", type=int, nargs="+", default=[1, 50, 200])
    ap.add_argument("--workspace", type=Path, default=Path("/tmp/strata-bench-api"))
    ap.add_argument("--workers", type=int, default=0,
                    help="server processes measured beside one (default: one per core)")
    ap.add_argument("--cache-requests", type=int, default=1200, help="requests of the 30%%-repeat cache workload")
    ap.add_argument("--drive", nargs=3, metavar=("PORT", "CLIENTS", "SECONDS"), help=argparse.SUPPRESS)
    ap.add_argument("--serve-stub", nargs=2, metavar=("PORT", "DATA"), help=argparse.SUPPRESS)
    ap.add_argument("--replay", nargs=3, metavar=("PORT", "CLIENTS", "REQUESTS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    os.environ.setdefault("STRATA_RETRIEVAL__EMBEDDER", "hashing")
    bodies = [json.dumps(b).encode() for b in requests_mix()]
    if args.replay:  # the load-generator process of the cache workload
        workload = [json.dumps(b).encode() for b in repeating_workload(int(args.replay[2]))]
        lat, hits, errors = asyncio.run(_replay("127.0.0.1", int(args.replay[0]), int(args.replay[1]), workload))
        print(json.dumps({"latencies_ms": lat, "hits": hits, "errors": errors}))
        return
    if args.serve_stub:  # a server whose search returns the answer it computed for the same text before
        serve_stub(int(args.serve_stub[0]), Path(args.serve_stub[1]))
        return
    if args.drive:  # the load-generator process
        r = drive("127.0.0.1", int(args.drive[0]), int(args.drive[1]), float(args.drive[2]), bodies)
        print(json.dumps({"clients": r.clients, "requests": r.requests, "errors": r.errors, "seconds": r.seconds,
                          "latencies_ms": r.latencies_ms}))
        return

    data = ensure_index(args.workspace)
    from core.settings import StrataSettings
    from core.threads import available_cores

    settings = StrataSettings(data_dir=data)
    layouts = sorted({1, args.workers or available_cores()})
    # The throughput passes measure the search: the query cache is off (the mix repeats its 300 requests).
    env = {**os.environ, "STRATA_SERVER__MAX_CONCURRENT_REQUESTS": "256", "STRATA_CACHE__ENABLED": "false"}
    local = InProcess(settings, bodies)
    local.measure(args.seconds / 3)
    passes = {}
    for w in layouts:
        passes[w] = load_passes(data, {**env, "STRATA_SERVER__WORKERS": str(w)}, args.clients, args.seconds)
        local.measure(args.seconds / 3)
    inprocess_qps, slices, retrieval = local.qps, local.slices, local.close()
    stub = load_passes(data, {**env, "STRATA_SERVER__WORKERS": "1"}, [50], args.seconds, stub=True)[-1]

    print(f"SciFact ({retrieval}), {args.seconds:g} s per step; search_threads {settings.server.search_threads}")
    print(f"{'processes':>9} {'clients':>8} {'req/s':>8} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'errors':>7} "
          f"{'of in-proc':>10} {'cpu ms/req':>10}")
    rows = [(str(w), r) for w, results in passes.items() for r in results] + [("1, stub", stub)]
    for label, r in rows:
        share = "-" if r is stub else f"{r.rps / inprocess_qps:.2f}"
        print(f"{label:>9} {r.clients:>8} {r.rps:>8.1f} {r.pct(0.5):>8.1f} {r.pct(0.95):>8.1f} {r.pct(0.99):>8.1f} "
              f"{r.errors:>7} {share:>10} {r.cpu_ms_per_request:>10.3f}")
    print(f"{'':>9} (stub: the search returns the answer stored for the same request, so the server's CPU per "
          "request is that of HTTP, the guard, validation, the hand-over to the search thread, telemetry and "
          "serialization, plus a lookup)")
    print(f"{'in-proc':>9} {'':>8} {inprocess_qps:>8.1f}   (Engine.query in one thread, no HTTP: median of "
          f"{len(slices)} slices, {min(slices):.0f}-{max(slices):.0f})")

    one, fifty = (cache_pass(data, env, args.cache_requests, n) for n in (1, 50))
    print(f"\nquery cache (one process), {args.cache_requests} requests of which 30% repeat an earlier one "
          f"(hits {one['hits']} of {one['requests']} with 1 client, {fifty['hits']} with 50)")
    print(f"{'clients':>8} {'hit p50':>8} {'miss p50':>9} {'hit/miss':>9} {'errors':>7}")
    for n, c in ((1, one), (50, fifty)):
        print(f"{n:>8} {c['hit_p50']:>8.2f} {c['miss_p50']:>9.2f} {c['hit_p50'] / c['miss_p50']:>9.3f} {c['errors']:>7}")

    def at50(w: int) -> LoadResult:
        return next((r for r in passes[w] if r.clients == 50), passes[w][-1])

    single, top = at50(1), at50(max(layouts))
    print(json.dumps({"rps_50": round(single.rps, 1), "p50_ms_50": round(single.pct(0.5), 1),
                      "p99_ms_50": round(single.pct(0.99), 1), "inprocess_qps": round(inprocess_qps, 1),
                      "http_overhead_ratio": round(single.rps / inprocess_qps, 3),
                      "processes": max(layouts), "rps_50_processes": round(top.rps, 1),
                      "p50_ms_50_processes": round(top.pct(0.5), 1), "p99_ms_50_processes": round(top.pct(0.99), 1),
                      "processes_over_inprocess": round(top.rps / inprocess_qps, 3),
                      "cpu_ms_per_request_50": round(single.cpu_ms_per_request, 3),
                      "http_only_rps_50": round(stub.rps, 1), "http_only_cpu_ms_per_request": round(stub.cpu_ms_per_request, 3),
                      "cache_hit_p50_ms": round(one["hit_p50"], 2), "cache_miss_p50_ms": round(one["miss_p50"], 2),
                      "cache_hit_p50_ms_50": round(fifty["hit_p50"], 2),
                      "cache_miss_p50_ms_50": round(fifty["miss_p50"], 2),
                      "cache_hit_ratio": round(one["hits"] / one["requests"], 3),
                      "cache_hit_cost_ratio": round(one["hit_p50"] / one["miss_p50"], 3)}))


def load_passes(data: Path, env: dict[str, str], clients: list[int], seconds: float,
                stub: bool = False) -> list[LoadResult]:
    """A server as ``env`` configures it, driven by 1, then each of ``clients`` connections for ``seconds``
    (after a 2 s warm-up at one client, not reported). ``stub``: the server's search returns the answer it
    computed for the same text before (see ``--serve-stub``), so what is left is the cost of HTTP."""
    server, port = _start_server(data, env, stub)
    try:
        results = []
        for n in [1] + clients:
            cpu = _tree_cpu_s(server.pid)
            out = subprocess.run([sys.executable, "-m", "bench.api", "--drive", str(port), str(n),
                                  str(2.0 if not results else seconds)],
                                 capture_output=True, text=True, check=True, env=env).stdout
            d = json.loads(out)
            results.append(LoadResult(d["clients"], d["requests"], d["errors"], d["seconds"], tuple(d["latencies_ms"]),
                                      _tree_cpu_s(server.pid) - cpu))
        return results[1:]
    finally:
        server.terminate()
        server.wait(timeout=30)


def serve_stub(port: int, data: Path) -> None:
    """``strata serve`` (one process, as configured) whose ``Engine.query`` answers a text it has seen with the
    response it computed then: the request still goes through HTTP, the guard, validation, admission, telemetry
    and serialization, but costs no search. The bench's peer for the cost of HTTP alone."""
    from core.settings import StrataSettings
    from strata.engine import Engine
    from strata.serving import run_server

    search, seen = Engine.query, {}

    def stored(self, request):  # type: ignore[no-untyped-def]
        key = request.model_dump_json(exclude={"query_id"})
        if key not in seen:
            seen[key] = search(self, request)
        return seen[key].model_copy(update={"query_id": request.query_id})

    Engine.query = stored  # type: ignore[method-assign]
    run_server(StrataSettings(data_dir=data), "127.0.0.1", port)


class InProcess:
    """The same requests through ``Engine.query`` in this process's one thread, with the BLAS threads the
    server runs with (``create_app`` configures them the same way). Measured in slices taken before, between and
    after the server passes, so that a machine whose speed drifts during the run (a shared host's memory
    bandwidth, other tenants) weighs on both sides of the ratio alike; the rate is the median slice."""

    def __init__(self, settings, bodies: list[bytes]) -> None:  # type: ignore[no-untyped-def]
        from core.threads import configure
        from retrieval.contract import MemoryQueryRequest
        from strata.engine import Engine

        configure(settings.compute)
        self.engine = Engine(settings)
        self.reqs = [MemoryQueryRequest.model_validate_json(b) for b in bodies]
        for r in self.reqs[:20]:
            self.engine.query(r)
        self.slices: list[float] = []
        self.done = 0

    def measure(self, seconds: float, slices: int = 2) -> None:
        for _ in range(slices):
            n, start = 0, time.perf_counter()
            while time.perf_counter() - start < seconds / slices:
                self.engine.query(self.reqs[self.done % len(self.reqs)])
                self.done, n = self.done + 1, n + 1
            self.slices.append(n / (time.perf_counter() - start))

    @property
    def qps(self) -> float:
        return sorted(self.slices)[len(self.slices) // 2]

    def close(self) -> str:
        retrieval = self.engine.index.describe()
        self.engine.close()
        return retrieval


if __name__ == "__main__":
    main()
