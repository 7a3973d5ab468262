"""A ``search_memory`` call through ``strata mcp`` beside ``POST /v1/memory/query`` through ``strata serve``, for
the same queries, in the same run.

    python -m bench.mcp [--queries 20] [--rounds 10] [--workspace DIR]

Indexes SciFact (offline extraction; the embedder is whatever ``STRATA_RETRIEVAL__EMBEDDER`` says, the hashing one
unless set) into a workspace kept between runs (as ``bench.api`` does), then starts three servers on it: ``strata
serve``, ``strata mcp --http`` and ``strata mcp`` on stdio. One client at a time, each SciFact test question of the
sample is sent as the same memory-query request (top_k 10) through each of four clients in turn, their order
rotating from one call to the next so that none is always first; ``--rounds`` passes over the sample:

- ``api``: ``POST /v1/memory/query`` with httpx over one keep-alive connection;
- ``mcp_http``: the official MCP SDK's client over streamable HTTP, one open session;
- ``mcp_http_raw``: the same ``tools/call`` as one JSON-RPC POST of the 2026-07-28 protocol with the API's httpx
  client, which tells the server's share of the MCP overhead from the SDK client's (which validates each result
  against the tool's output schema, in Python);
- ``mcp_stdio``: the SDK's client over stdio, one open session.

Each figure is a whole call as its client sees it: request out, response parsed. The query cache of ``strata
serve`` is off, so every call runs the search (a hit would compare a lookup with a search). Before timing, every
query is checked to give the same results through all four.

Prints the p50 and p95 of each and its p50 over the API's, and ends with one JSON line: ``api_p50_ms``,
``mcp_http_p50_ms``, ``mcp_http_raw_p50_ms``, ``mcp_stdio_p50_ms``, ``http_ratio``, ``http_raw_ratio`` and
``stdio_ratio`` (each MCP p50 over the API p50), ``calls`` (per client), and ``retrieval``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Awaitable, Callable

from bench.api import _free_port, _start_server, ensure_index, requests_mix

Call = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
# A tools/call of the 2026-07-28 protocol on its own: no session, the version and client in each request's _meta.
RAW_HEADERS = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2026-07-28",
               "mcp-method": "tools/call", "mcp-name": "search_memory"}
RAW_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "bench.mcp", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}}


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))] if s else float("nan")


def _start_mcp_http(data: Path, env: dict[str, str]) -> tuple[Any, str]:
    import subprocess
    import urllib.error
    import urllib.request

    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "strata.cli", "mcp", "--http", "--port", str(port), "--data-dir",
                             str(data)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/mcp"
    for _ in range(600):
        try:
            urllib.request.urlopen(url, timeout=2)
        except urllib.error.HTTPError:  # answering (a bare GET is refused): the engine is loaded
            return proc, url
        except OSError:
            pass
        if proc.poll() is not None:
            raise RuntimeError(f"strata mcp --http exited with status {proc.returncode} before it was ready")
        time.sleep(0.2)
    proc.terminate()
    raise RuntimeError("strata mcp --http was not ready after two minutes")


async def measure(data: Path, env: dict[str, str], bodies: list[dict[str, Any]], rounds: int) -> dict[str, list[float]]:
    import httpx
    from mcp import Client, StdioServerParameters

    api, api_port = _start_server(data, env)
    mcp_http, url = _start_mcp_http(data, env)
    stdio = StdioServerParameters(command=sys.executable, args=["-m", "strata.cli", "mcp", "--data-dir", str(data)],
                                  env=env, cwd=os.getcwd())
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{api_port}", timeout=60) as http, \
                Client(url, read_timeout_seconds=60) as over_http, Client(stdio, read_timeout_seconds=60) as over_stdio:

            async def via_api(body: dict[str, Any]) -> dict[str, Any]:
                r = await http.post("/v1/memory/query", json=body)
                r.raise_for_status()
                return r.json()  # type: ignore[no-any-return]

            def via_mcp(client: Client) -> Call:
                async def call(body: dict[str, Any]) -> dict[str, Any]:
                    result = await client.call_tool("search_memory", body)
                    if result.is_error:
                        raise RuntimeError(result.content[0].text)  # type: ignore[union-attr]
                    return result.structured_content  # type: ignore[return-value]
                return call

            ids = iter(range(1, 1 << 30))

            async def via_jsonrpc(body: dict[str, Any]) -> dict[str, Any]:
                r = await http.post(url, headers=RAW_HEADERS, json={
                    "jsonrpc": "2.0", "id": next(ids), "method": "tools/call",
                    "params": {"name": "search_memory", "arguments": body, "_meta": RAW_META}})
                r.raise_for_status()
                result = r.json()["result"]
                if result.get("isError"):
                    raise RuntimeError(result["content"][0]["text"])
                return result["structuredContent"]  # type: ignore[no-any-return]

            calls: dict[str, Call] = {"api": via_api, "mcp_http": via_mcp(over_http), "mcp_http_raw": via_jsonrpc,
                                      "mcp_stdio": via_mcp(over_stdio)}
            for body in bodies:  # the same results through all four (and every server warmed on every query)
                got = {name: await call(body) for name, call in calls.items()}
                if any(v != got["api"] for v in got.values()):
                    raise RuntimeError(f"different results for {body['query_id']}: {got}")
            names = list(calls)
            times: dict[str, list[float]] = {n: [] for n in names}
            k = 0
            for _ in range(rounds):
                for body in bodies:
                    order = names[k % len(names):] + names[:k % len(names)]
                    k += 1
                    for name in order:
                        start = time.perf_counter()
                        await calls[name](body)
                        times[name].append((time.perf_counter() - start) * 1000)
            return times
    finally:
        for proc in (api, mcp_http):
            proc.terminate()
            proc.wait(timeout=30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=20, help="SciFact test questions in the sample")
    ap.add_argument("--rounds", type=int, default=10, help="passes over the sample")
    ap.add_argument("--workspace", type=Path, default=Path("/tmp/strata-bench-mcp"))
    args = ap.parse_args()
    os.environ.setdefault("STRATA_RETRIEVAL__EMBEDDER", "hashing")
    data = ensure_index(args.workspace)
    # Plain questions (no weights, no filter): the request an agent sends most.
    bodies = [{"query_id": b["query_id"], "search_text": b["search_text"], "top_k": 10}
              for b in requests_mix(args.queries * 3)[::3]][:args.queries]
    env = {**os.environ, "STRATA_CACHE__ENABLED": "false", "STRATA_SERVER__WORKERS": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")]))}
    times = asyncio.run(measure(data, env, bodies, args.rounds))

    from core.settings import StrataSettings
    from strata.workspace import Workspace

    current = Workspace(StrataSettings(data_dir=data).data_dir).current()
    retrieval = current.manifest().get("retrieval", "") if current is not None else ""
    p50 = {n: pct(t, 0.5) for n, t in times.items()}
    print(f"SciFact ({retrieval}); {len(bodies)} questions x {args.rounds} rounds, one client, query cache off")
    labels = {"api": "POST /v1/memory/query", "mcp_http": "MCP HTTP, SDK client",
              "mcp_http_raw": "MCP HTTP, one POST", "mcp_stdio": "MCP stdio, SDK client"}
    print(f"{'':>22} {'p50 ms':>8} {'p95 ms':>8} {'of API p50':>11}")
    for name, t in times.items():
        print(f"{labels[name]:>22} {p50[name]:>8.2f} {pct(t, 0.95):>8.2f} {p50[name] / p50['api']:>11.2f}")
    print(json.dumps({"api_p50_ms": round(p50["api"], 2), "mcp_http_p50_ms": round(p50["mcp_http"], 2),
                      "mcp_http_raw_p50_ms": round(p50["mcp_http_raw"], 2),
                      "mcp_stdio_p50_ms": round(p50["mcp_stdio"], 2),
                      "http_ratio": round(p50["mcp_http"] / p50["api"], 3),
                      "http_raw_ratio": round(p50["mcp_http_raw"] / p50["api"], 3),
                      "stdio_ratio": round(p50["mcp_stdio"] / p50["api"], 3),
                      "calls": len(times["api"]), "retrieval": retrieval}))


if __name__ == "__main__":
    main()
