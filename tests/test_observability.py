"""Operating Strata: /metrics (parsed with prometheus-client's parser, counters moving with traffic, the API-key
rule), structured logs with request ids, the index run's figures (index.prom, one line per stage), readiness,
the cache of hot queries (same body when repeated, a new one after a new generation, bounds, time to live) and a
clean stop on SIGTERM with a slow request in flight."""

from __future__ import annotations

import io
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from core.settings import CacheSettings, LogSettings, StrataSettings
from strata.api import create_app
from strata.logs import configure_logging
from strata.pipeline import index_folder
from strata.qcache import QueryCache
from strata.runmetrics import STAGES, index_metrics_path, read_index_metrics

ROOT = Path(__file__).resolve().parents[1]
KEY = "obs-test-key"
AUTH = {"authorization": f"Bearer {KEY}"}
QUERY = {"query_id": "q-1", "search_text": "HTTP 504 billing-service", "top_k": 3}


def make_settings(data_dir: Path, **sections: object) -> StrataSettings:
    return StrataSettings(data_dir=data_dir, extraction={"mode": "offline"}, **sections)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("obs")
    shutil.copytree(ROOT / "samples" / "infra-notes", root / "notes")
    index_folder(root / "notes", make_settings(root / "data"))
    return root / "data"


def scrape(client: TestClient, headers: dict[str, str] | None = None) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of /metrics by (name, sorted labels), parsed by prometheus-client's own parser."""
    r = client.get("/metrics", headers=headers or {})
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    out = {}
    for family in text_string_to_metric_families(r.text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


# -- /metrics -------------------------------------------------------------------------------------------------
def test_metrics_parse_and_move_with_traffic(data_dir: Path) -> None:
    with TestClient(create_app(make_settings(data_dir)), raise_server_exceptions=False) as c:
        before = scrape(c)
        for i in range(3):
            assert c.post("/v1/memory/query", json={**QUERY, "search_text": f"billing-service {i}"}).status_code == 200
        assert c.post("/v1/memory/query", json=QUERY).status_code == 200
        assert c.post("/v1/memory/query", json=QUERY).status_code == 200  # a repeat: a cache hit
        assert c.post("/v1/memory/query", json={**QUERY, "search_text": "x" * 5000}).status_code == 422
        assert c.post("/v1/memory/query", content=b"{}", headers={"content-type": "text/plain"}).status_code == 415
        assert c.get("/v1/no-such-route").status_code == 404
        assert c.get("/console/console.js").status_code == 200  # a static asset: counted under its mount
        after = scrape(c)
    assert value(after, "strata_http_requests_total", route="/console", method="GET", status="200") == 1
    route = "/v1/memory/query"
    assert value(after, "strata_http_requests_total", route=route, method="POST", status="200") \
        - value(before, "strata_http_requests_total", route=route, method="POST", status="200") == 5
    assert value(after, "strata_http_requests_total", route=route, method="POST", status="422") == 1
    assert value(after, "strata_http_requests_total", route="unmatched", method="GET", status="404") == 1
    assert value(after, "strata_http_request_duration_seconds_count", route=route) \
        - value(before, "strata_http_request_duration_seconds_count", route=route) == 7
    assert value(after, "strata_http_request_duration_seconds_bucket", route=route, le="+Inf") == \
        value(after, "strata_http_request_duration_seconds_count", route=route)
    assert value(after, "strata_http_rejected_total", reason="limits") == 1
    assert value(after, "strata_http_rejected_total", reason="content_type") == 1
    assert value(after, "strata_http_rejected_total", reason="auth") == 0
    assert value(after, "strata_http_requests_in_flight") == 1  # the scrape itself
    assert value(after, "strata_query_cache_hits_total", kind="memory") == 1
    assert value(after, "strata_query_cache_misses_total", kind="memory") == 4
    assert value(after, "strata_query_cache_hit_ratio") == pytest.approx(1 / 5)
    # the serving generation and what is in it, from its manifest
    from strata.workspace import Workspace

    manifest = Workspace(data_dir).generation(1).manifest()
    assert value(after, "strata_index_loaded") == 1 and value(after, "strata_index_generation") == 1
    for what in ("chunks", "entities", "communities"):
        assert value(after, f"strata_index_{what}") == manifest[what] > 0
    assert 0 <= value(after, "strata_index_generation_age_seconds") < 3600
    embedder = [k for k in after if k[0] == "strata_embedder_info"]
    assert len(embedder) == 1 and dict(embedder[0][1])["state"] in {"dense", "lexical_only", "none"}
    # the last index run's figures, from <data-dir>/metrics/index.prom
    assert value(after, "strata_index_run_documents", change="new") == 6
    assert value(after, "strata_index_run_chunks_extracted") == manifest["chunks"]
    assert value(after, "strata_index_run_ledger_failures") == 0
    assert {dict(k[1])["stage"] for k in after if k[0] == "strata_index_run_stage_seconds"} == set(STAGES)


def test_metrics_follow_the_api_key_rule_unless_open(data_dir: Path) -> None:
    with TestClient(create_app(make_settings(data_dir, server={"api_keys": [KEY]}))) as c:
        assert c.get("/metrics").status_code == 401
        assert c.post("/v1/memory/query", json=QUERY).status_code == 401
        assert c.get("/v1/ready").status_code == 200  # probes need no key, like /v1/health
        samples = scrape(c, AUTH)
        assert value(samples, "strata_http_rejected_total", reason="auth") == 2
        # a refusal before routing is still counted under the route it was meant for
        assert value(samples, "strata_http_requests_total", route="/v1/memory/query", method="POST", status="401") == 1
    with TestClient(create_app(make_settings(data_dir, server={"api_keys": [KEY], "metrics_open": True}))) as c:
        assert c.get("/metrics").status_code == 200
        assert c.post("/v1/memory/query", json=QUERY).status_code == 401


# -- logs -----------------------------------------------------------------------------------------------------
@pytest.fixture
def json_log() -> io.StringIO:
    stream = io.StringIO()
    handler = configure_logging(LogSettings(format="json", level="INFO"), stream)
    yield stream
    logging.getLogger().removeHandler(handler)


def lines(stream: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in stream.getvalue().splitlines() if line.strip()]


def test_one_json_line_per_request_with_its_id_and_no_query_text(data_dir: Path, json_log: io.StringIO) -> None:
    secret_text = "zebra-quokka-4711 billing-service"
    with TestClient(create_app(make_settings(data_dir, server={"api_keys": [KEY]}))) as c:
        r = c.post("/v1/memory/query", json={**QUERY, "search_text": secret_text}, headers={**AUTH, "x-request-id": "abc-123"})
        assert r.status_code == 200 and r.headers["x-request-id"] == "abc-123"
        r = c.post("/v1/memory/query", json={**QUERY, "search_text": secret_text},
                   headers={**AUTH, "x-request-id": "bad id;{x}"})
        generated = r.headers["x-request-id"]
        assert generated != "bad id;{x}" and len(generated) == 32
        assert c.get("/v1/health").headers["x-request-id"]
    requests = [x for x in lines(json_log) if x.get("event") == "request"]
    assert [x["request_id"] for x in requests] == ["abc-123", generated, requests[2]["request_id"]]
    first = requests[0]
    assert first["route"] == "/v1/memory/query" and first["status"] == 200 and first["cache"] == "miss"
    assert first["generation"] == 1 and first["ms"] > 0 and first["level"] == "info"
    assert first["client"] == "testclient"  # the peer's address (TestClient's)
    assert requests[1]["cache"] == "hit"
    text = json_log.getvalue()
    assert "zebra" not in text and KEY not in text


def test_a_server_writes_its_log_lines_from_a_thread_of_their_own_with_each_request_id(data_dir: Path) -> None:
    stream = io.StringIO()
    handler = configure_logging(LogSettings(format="json", level="INFO"), stream, background=True)
    try:
        with TestClient(create_app(make_settings(data_dir, server={"api_keys": [KEY]}))) as c:
            ids = [f"req-{i}" for i in range(20)]
            for rid in ids:
                assert c.post("/v1/memory/query", json=QUERY, headers={**AUTH, "x-request-id": rid}).status_code == 200
    finally:
        logging.getLogger().removeHandler(handler)
        handler.close()  # the lines still queued are written before close returns
    assert [x["request_id"] for x in lines(stream) if x.get("event") == "request"] == ids


def test_index_run_logs_each_stage_and_writes_index_prom(tmp_path: Path, json_log: io.StringIO) -> None:
    folder = tmp_path / "notes"
    shutil.copytree(ROOT / "samples" / "infra-notes", folder)
    (folder / "extra.md").write_text("# Extra\n\nThe walrus-service logged ERR-9931 after the marmot-migration.\n")
    settings = make_settings(tmp_path / "data")
    run = index_folder(folder, settings)
    assert set(run.stage_seconds) == set(STAGES) and all(s >= 0 for s in run.stage_seconds.values())
    stages = [x for x in lines(json_log) if x.get("event") == "index_stage"]
    assert sorted(x["stage"] for x in stages) == sorted(STAGES)
    assert all(x["outcome"] == "ok" and x["seconds"] >= 0 for x in stages)
    done = [x for x in lines(json_log) if x.get("event") == "index_run"]
    assert len(done) == 1 and done[0]["documents"]["new"] == 7 and done[0]["generation"] == 1
    assert "walrus" not in json_log.getvalue() and "marmot" not in json_log.getvalue()
    # the textfile: atomically replaced, parseable, and updated by the next run
    families = {f.name: f for f in read_index_metrics(settings.data_dir)}
    assert families["strata_index_run_generation"].samples[0].value == 1
    (folder / "extra.md").unlink()
    index_folder(folder, settings)
    families = {f.name: f for f in read_index_metrics(settings.data_dir)}
    deleted = [s.value for s in families["strata_index_run_documents"].samples if s.labels["change"] == "deleted"]
    assert deleted == [1] and families["strata_index_runs_recorded"].samples[0].value == 2
    assert [p.name for p in index_metrics_path(settings.data_dir).parent.iterdir()] == ["index.prom"]


# -- readiness ------------------------------------------------------------------------------------------------
def test_ready_fails_with_the_reason_until_a_generation_is_loaded(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "data", index={"reload_poll_s": 0.05})
    with TestClient(create_app(settings)) as c:
        r = c.get("/v1/ready")
        assert r.status_code == 503 and r.headers["retry-after"]
        (item,) = r.json()["detail"]
        assert item["type"] == "not_ready" and "no index" in item["msg"]
        assert c.get("/v1/health").status_code == 200  # liveness is not readiness
        assert scrape(c)[("strata_index_loaded", ())] == 0
        shutil.copytree(ROOT / "samples" / "infra-notes", tmp_path / "notes")
        index_folder(tmp_path / "notes", settings)
        time.sleep(0.1)
        r = c.get("/v1/ready")
        assert r.status_code == 200 and r.json() == {"status": "ready", "index_generation": 1}


# -- the cache of hot queries ---------------------------------------------------------------------------------
def wait_for_generation(c: TestClient, number: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while c.get("/v1/ready").json().get("index_generation") != number:
        assert time.monotonic() < deadline, f"generation {number} not served within {timeout} s"
        time.sleep(0.05)


def test_cache_serves_repeats_and_a_new_generation_invalidates(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    shutil.copytree(ROOT / "samples" / "infra-notes", folder)
    settings = make_settings(tmp_path / "data", index={"reload_poll_s": 0.05})
    index_folder(folder, settings)
    ask = {"question": "Why did the billing-service return HTTP 504?", "mode": "local"}
    with TestClient(create_app(settings)) as c:
        first = c.post("/v1/memory/query", json=QUERY)
        again = c.post("/v1/memory/query", json={**QUERY, "search_text": "  HTTP 504\n billing-service "})
        other_id = c.post("/v1/memory/query", json={**QUERY, "query_id": "q-2"})
        assert first.status_code == 200 and again.content == first.content
        assert (first.headers["x-cache"], again.headers["x-cache"]) == ("miss", "hit")
        assert other_id.json() == {**first.json(), "query_id": "q-2"}
        a1, a2 = c.post("/v1/ask", json=ask), c.post("/v1/ask", json=ask)
        assert a1.status_code == 200 and a2.content == a1.content
        stats = c.app.state.cache.stats()  # type: ignore[attr-defined]
        assert stats.hits == {"memory": 2, "ask": 1} and stats.misses == {"memory": 1, "ask": 1}

        # A reindex publishes generation 2, in which a new note is the best match for the same query.
        (folder / "incident-504.md").write_text(
            "# billing-service HTTP 504 incident\n\nThe billing-service returned HTTP 504 to every caller "
            "while HTTP 504 errors from billing-service filled the log.\n")
        index_folder(folder, settings)
        wait_for_generation(c, 2)
        fresh = c.post("/v1/memory/query", json=QUERY)
        assert fresh.status_code == 200 and fresh.content != first.content
        assert fresh.json()["index_generation"] == 2
        assert "incident-504.md" in {r["chunk_id"].split("#")[0] for r in fresh.json()["results"]}
        assert c.post("/v1/ask", json=ask).json()["index_generation"] == 2
        assert c.post("/v1/memory/query", json=QUERY).content == fresh.content  # cached again, on generation 2
        stats = c.app.state.cache.stats()  # type: ignore[attr-defined]
        assert stats.entries == 2  # generation 1's entries were dropped when generation 2's were stored


def test_cache_stays_within_its_bounds_through_the_api(data_dir: Path) -> None:
    settings = make_settings(data_dir, cache={"max_entries": 3, "max_bytes": 6000})
    with TestClient(create_app(settings)) as c:
        cache = c.app.state.cache  # type: ignore[attr-defined]
        for i in range(12):
            assert c.post("/v1/memory/query", json={**QUERY, "search_text": f"service {i}", "top_k": 1 + i % 4}).status_code == 200
            s = cache.stats()
            assert s.entries <= 3 and s.bytes <= 6000
        samples = scrape(c)
    assert samples[("strata_query_cache_entries", ())] <= 3
    assert samples[("strata_query_cache_bytes", ())] <= 6000
    assert samples[("strata_query_cache_evictions_total", ())] > 0


def test_query_cache_bounds_ttl_and_generations() -> None:
    now = [1000.0]
    cache = QueryCache(CacheSettings(max_entries=5, max_bytes=4096, ttl_s=10), clock=lambda: now[0])
    for i in range(50):
        assert cache.put(1, f"memory:{i}", bytes(37 * (i % 20)))
        s = cache.stats()
        assert s.entries <= 5 and s.bytes <= 4096
    assert cache.get(1, "memory:49") is not None and cache.get(1, "memory:0") is None  # least recently used out
    assert not cache.put(1, "memory:huge", bytes(5000))  # larger than the whole cache: not stored
    assert cache.get(2, "memory:49") is None  # another generation is another key
    now[0] += 11
    assert cache.get(1, "memory:49") is None  # expired
    cache.put(1, "memory:a", b"x")
    cache.put(2, "memory:b", b"y")
    assert cache.get(1, "memory:a") is None and cache.get(2, "memory:b") == b"y"
    assert not cache.put(1, "memory:late", b"z")  # computed on a replaced generation: never looked up again
    assert cache.stats().entries == 1


# -- SIGTERM --------------------------------------------------------------------------------------------------
SLOW_SERVER = """
import sys, time
from core.settings import StrataSettings
from strata.engine import Engine
from strata.serving import run_server

slow = Engine.query
def query(self, request):
    time.sleep(3.0)  # a slow request, to be in flight when SIGTERM comes
    return slow(self, request)
Engine.query = query
run_server(StrataSettings(), "127.0.0.1", int(sys.argv[1]))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_sigterm_lets_a_request_in_flight_finish(data_dir: Path) -> None:
    port = free_port()
    env = {**os.environ, "STRATA_DATA_DIR": str(data_dir), "STRATA_EXTRACTION__MODE": "offline",
           "STRATA_LOG__FORMAT": "json", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", SLOW_SERVER, str(port)], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/v1/ready", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "the server did not become ready"
            time.sleep(0.1)
        result: dict[str, httpx.Response] = {}
        slow = threading.Thread(target=lambda: result.update(
            r=httpx.post(f"{base}/v1/memory/query", json=QUERY, headers={"x-request-id": "slow-1"}, timeout=30)))
        slow.start()
        time.sleep(0.7)  # the request is in the server, sleeping
        proc.send_signal(signal.SIGTERM)
        refused = False
        for _ in range(15):  # while the slow request drains, no new connection is accepted
            try:
                httpx.get(f"{base}/v1/health", timeout=0.5)
            except httpx.TransportError:
                refused = True
                break
            time.sleep(0.1)
        assert refused and not result, "new connections were still accepted, or the slow request was not in flight"
        slow.join(timeout=30)
        # uvicorn re-raises the signal once it has shut down cleanly, so the exit status says "SIGTERM"
        assert proc.wait(timeout=30) in (0, -signal.SIGTERM)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    response = result["r"]
    assert response.status_code == 200 and response.json()["total_retrieved"] > 0
    assert response.headers["x-request-id"] == "slow-1"
    records = [json.loads(line) for line in proc.stderr.read().splitlines() if line.startswith("{")]  # type: ignore[union-attr]
    assert any(r.get("request_id") == "slow-1" and r.get("status") == 200 for r in records)
    finished = [i for i, r in enumerate(records) if r.get("request_id") == "slow-1"]
    shutdown = [i for i, r in enumerate(records) if r["msg"] == "Application shutdown complete."]
    assert finished and shutdown and finished[0] < shutdown[0]  # the engine closed after the request was answered


# -- several server processes ---------------------------------------------------------------------------------
def _worker_pids(supervisor: int) -> set[int]:
    pids: set[int] = set()
    for task in Path(f"/proc/{supervisor}/task").iterdir():
        pids |= {int(p) for p in (task / "children").read_text().split()}
    cmdlines = {p: Path(f"/proc/{p}/cmdline").read_bytes().decode(errors="replace") for p in pids}
    return {p for p, c in cmdlines.items() if "spawn_main" in c and "resource_tracker" not in c}


def _parse(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


@pytest.mark.slow
def test_two_worker_processes_serve_one_sum_of_metrics_and_both_reload(tmp_path: Path) -> None:
    """`strata serve --workers 2`: two processes answer, /metrics (reached by either) counts every request of
    both, and a newly published generation is served by both without a restart."""
    shutil.copytree(ROOT / "samples" / "infra-notes", tmp_path / "notes")
    data = tmp_path / "data"
    index_folder(tmp_path / "notes", make_settings(data))
    port = free_port()
    env = {**os.environ, "STRATA_EXTRACTION__MODE": "offline", "STRATA_INDEX__RELOAD_POLL_S": "0.2",
           "PYTHONPATH": str(ROOT)}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    env.pop("STRATA_WORKER_METRICS_DIR", None)
    log = (tmp_path / "serve.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "strata.cli", "serve", "--port", str(port), "--workers", "2",
                             "--data-dir", str(data)], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log)
    base = f"http://127.0.0.1:{port}"

    def generations(n: int) -> set[int]:  # n requests, each on a connection of its own
        return {httpx.get(f"{base}/v1/ready", timeout=5).json()["index_generation"] for _ in range(n)}

    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if all(httpx.get(f"{base}/v1/ready", timeout=1).status_code == 200 for _ in range(8)):
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "the server did not become ready"
            time.sleep(0.2)
        workers = _worker_pids(proc.pid)
        assert len(workers) == 2
        for i in range(30):
            r = httpx.post(f"{base}/v1/memory/query", json={**QUERY, "query_id": f"q{i}"}, timeout=10)
            assert r.status_code == 200 and r.json()["query_id"] == f"q{i}"
        key = ("strata_http_requests_total", (("method", "POST"), ("route", "/v1/memory/query"), ("status", "200")))
        def lookups(samples: dict) -> float:  # type: ignore[type-arg]
            return sum(v for (name, labels), v in samples.items() if dict(labels).get("kind") == "memory"
                       and name in ("strata_query_cache_hits_total", "strata_query_cache_misses_total"))

        deadline = time.monotonic() + 30
        while True:  # a request is counted just after its answer is sent, and another process's engine and cache
            # figures are those it published last (every second): wait for the last request's
            samples = _parse(httpx.get(f"{base}/metrics", timeout=5).text)
            if (samples[key] == 30 and lookups(samples) == 30) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        time.sleep(1.2)  # both processes have published since
        for _ in range(8):  # whichever process answers the scrape (each on a fresh connection) ...
            samples = _parse(httpx.get(f"{base}/metrics", timeout=5).text)
            assert samples[key] == 30  # ... counts both processes' requests
            # ... and shows each process's own engine and cache, labelled with its pid
            assert {int(dict(labels)["pid"]) for name, labels in samples if name == "strata_index_generation"} == workers
            assert lookups(samples) == 30

        (before,) = generations(1)
        (tmp_path / "notes" / "new-note.md").write_text("The ledger-sync job retries on error LSX-4417.\n")
        index_folder(tmp_path / "notes", make_settings(data))
        deadline = time.monotonic() + 30
        while generations(10) != {before + 1}:  # every one of ten fresh connections: both processes reloaded
            assert time.monotonic() < deadline, "a worker process still serves the old generation"
            time.sleep(0.2)
        while True:  # and the metrics say so for each process (published every second)
            samples = _parse(httpx.get(f"{base}/metrics", timeout=5).text)
            served = {dict(labels)["pid"]: v for (name, labels), v in samples.items() if name == "strata_index_generation"}
            if set(served.values()) == {before + 1}:
                break
            assert time.monotonic() < deadline, f"the metrics still show an old generation: {served}"
            time.sleep(0.2)
        assert _worker_pids(proc.pid) == workers  # reloaded in place, not restarted
        hit = httpx.post(f"{base}/v1/memory/query", json={**QUERY, "search_text": "LSX-4417"}, timeout=10).json()
        assert "LSX-4417" in hit["results"][0]["text"]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
    lines = (tmp_path / "serve.log").read_text().splitlines()
    # One line a request, from the API's telemetry, in the worker processes too (not uvicorn's access line).
    assert sum("strata.request: POST /v1/memory/query 200" in line for line in lines) == 31
    assert not any("uvicorn.access" in line for line in lines)


def test_figures_of_a_killed_or_hung_worker_leave_the_scrape(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker killed without closing leaves its files: the next scrape removes them (its in-flight gauge
    included); a worker that has not published for five intervals is left out until it does."""
    import strata.serving_metrics as serving_metrics

    shared = tmp_path / "metrics"
    shared.mkdir()
    gone = subprocess.Popen(["true"])
    gone.wait()
    hung = os.getpid() + 1_000_000  # any id: which processes count as siblings is decided below

    def published(pid: int) -> Path:
        path = shared / f"serving-{pid}.prom"
        path.write_text(f'# TYPE strata_index_generation gauge\nstrata_index_generation{{pid="{pid}"}} 1.0\n')
        return path

    published(gone.pid)
    (shared / f"gauge_livesum_{gone.pid}.db").write_bytes(b"")
    old = published(hung)
    os.utime(old, (time.time() - 60, time.time() - 60))
    fresh = published(hung + 1)
    monkeypatch.setattr(serving_metrics, "_sibling", lambda pid: pid != gone.pid)
    collector = serving_metrics.ServingCollector(lambda: None, None, tmp_path, str(shared), publish_s=1.0)
    pids = {s.labels.get("pid") for f in collector.collect() for s in f.samples if f.name == "strata_index_generation"}
    assert pids == {str(hung + 1)}
    assert not (shared / f"serving-{gone.pid}.prom").exists()
    assert not (shared / f"gauge_livesum_{gone.pid}.db").exists()
    assert old.exists() and fresh.exists()  # a hung worker may still come back
