"""The HTTP API under hostile input: schemathesis over the OpenAPI schema (no 5xx, responses as documented),
hand-written NaN/Infinity, huge integers and lone surrogates, limits (413, 415, 422, 503 with Retry-After),
API keys, the engine loaded once at start-up, and a read-only /v1/drift."""

from __future__ import annotations

import json
import shutil
import threading
import time
from pathlib import Path

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (content_type_conformance, response_schema_conformance,
                                               status_code_conformance)

import strata.workers as workers
from strata.api_guard import MemoryQueryFastPath
from core.settings import StrataSettings
from strata.api import create_app
from strata.pipeline import index_folder

ROOT = Path(__file__).resolve().parents[1]
JSON = {"content-type": "application/json"}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("api")
    shutil.copytree(ROOT / "samples" / "infra-notes", root / "notes")
    index_folder(root / "notes", StrataSettings(data_dir=root / "data", extraction={"mode": "offline"}))
    return root / "data"


def make_settings(data_dir: Path, **server: object) -> StrataSettings:
    return StrataSettings(data_dir=data_dir, extraction={"mode": "offline"}, server=server)


@pytest.fixture(scope="module")
def client(data_dir: Path):  # type: ignore[no-untyped-def]
    with TestClient(create_app(make_settings(data_dir)), raise_server_exceptions=False) as c:
        yield c


def assert_error_shape(response, status: int) -> list[dict]:  # type: ignore[no-untyped-def]
    assert response.status_code == status, response.text
    detail = response.json()["detail"]
    assert isinstance(detail, list) and detail
    for item in detail:
        assert set(item) == {"loc", "msg", "type"} and isinstance(item["loc"], list) and item["msg"]
    return detail


# -- schemathesis -----------------------------------------------------------------------------------------
FUZZ_CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


def test_fuzzed_requests_never_fail_the_server(data_dir: Path) -> None:
    """Every /v1 operation, with examples generated from the OpenAPI schema (bounded per operation)."""
    app = create_app(make_settings(data_dir))
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    operations = [r.ok() for r in schema.get_all_operations()]
    ours = {"/v1/memory/query", "/v1/ask", "/v1/drift", "/v1/health"}
    operations = [op for op in operations if op.path in ours]
    assert {op.path for op in operations} == ours
    with TestClient(app):  # start-up runs once; the cases below are sent to the running app
        for op in operations:
            @given(case=op.as_strategy())
            @settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True,
                      database=None)
            def fuzz(case) -> None:  # type: ignore[no-untyped-def]
                case.call_and_validate(checks=FUZZ_CHECKS)

            fuzz()


# -- hand-written hostile requests -------------------------------------------------------------------------
HUGE = "1" + "0" * 400
HOSTILE = [
    ("/v1/memory/query", '{"query_id": "q", "search_text": "billing", "hybrid_params": {"dense_weight": NaN}}', 422),
    ("/v1/memory/query", '{"query_id": "q", "search_text": "billing", "hybrid_params": {"sparse_weight": Infinity}}', 422),
    ("/v1/memory/query", '{"query_id": "q", "search_text": "billing", "hybrid_params": {"rrf_k_constant": -Infinity}}', 422),
    ("/v1/memory/query", '{"query_id": "q", "search_text": "billing", "hybrid_params": {"dense_weight": true}}', 422),
    ("/v1/memory/query", '{"query_id": "q", "search_text": "billing", "top_k": true}', 422),
    ("/v1/memory/query", '{"query_id": "q", "search_text": "billing", "top_k": 1.5}', 422),
    ("/v1/memory/query", '{"query_id": "q", "search_text": "billing", "top_k": ' + HUGE + "}", 422),
    ("/v1/memory/query", '{"query_id": "q", "search_text": "billing", "metadata_filter": {"year": ' + HUGE + "}}", 422),
    ("/v1/memory/query", '{"query_id": "q", "search_text": "billing", "metadata_filter": {"year": {"gt": ' + HUGE + "}}}", 422),
    ("/v1/memory/query", '{"query_id": "q", "search_text": "billing", "metadata_filter": {"year": {"in": [1, ' + HUGE + "]}}}", 422),
    ("/v1/memory/query", '{"query_id": "q", "search_text": "billing", "metadata_filter": {"year": {"ne": ' + HUGE + "}}}", 422),
    ("/v1/memory/query", '{"query_id": "q", "search_text": "billing", "metadata_filter": {"year": 1' + "0" * 5000 + "}}", 400),
    ("/v1/memory/query", '{"query_id": "q", "search_text": "\\ud800"}', 422),
    ("/v1/memory/query", '{"query_id": "\\udfff", "search_text": "billing"}', 422),
    ("/v1/memory/query", '{"query_id": "q", "search_text": "billing", "metadata_filter": {"\\ud800": 1}}', 422),
    ("/v1/memory/query", '{"query_id": "q", "search_text": "billing", "metadata_filter": {"t": "\\ud800"}}', 422),
    ("/v1/memory/query", '{"query_id": "q", "search_text": "billing", "metadata_filter": {"d": {"after": 1}}}', 422),
    ("/v1/memory/query", "[1, 2", 422),
    ("/v1/ask", '{"question": "Which service returns HTTP 504?", "metadata_filter": {"year": ' + HUGE + "}}", 422),
    ("/v1/ask", '{"question": "\\ud800"}', 422),
    ("/v1/ask", '{"question": "What recurs across the whole corpus?", "mode": "global", "metadata_filter": {"x": {"bad": 1}}}', 422),
]


@pytest.mark.parametrize(("path", "body", "status"), HOSTILE)
def test_hostile_bodies_get_a_4xx_with_one_shape(client: TestClient, path: str, body: str, status: int) -> None:
    assert_error_shape(client.post(path, content=body.encode(), headers=JSON), status)
    # The connection stays usable: the next request is answered normally.
    ok = client.post("/v1/memory/query", json={"query_id": "q", "search_text": "billing", "top_k": 2})
    assert ok.status_code == 200 and ok.json()["total_retrieved"] == 2


def test_global_answer_refuses_a_filter_like_local_validation(client: TestClient) -> None:
    body = {"question": "What are the main themes across the whole corpus?", "mode": "global",
            "metadata_filter": {"team": "payments"}}
    detail = assert_error_shape(client.post("/v1/ask", json=body), 422)
    assert detail[0]["loc"] == ["body", "metadata_filter"]


def test_filter_grammar_is_in_the_schema(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    text = json.dumps(spec)
    assert "FilterOperators" in text and '"maxProperties": 64' in text
    query = spec["components"]["schemas"]["MemoryQueryRequest"]["properties"]
    assert query["top_k"]["type"] == "integer" and query["top_k"]["maximum"] == 1000


def test_limits(data_dir: Path) -> None:
    app = create_app(make_settings(data_dir, max_body_bytes=2048, max_filter_fields=2, max_question_chars=50))
    with TestClient(app, raise_server_exceptions=False) as c:
        assert_error_shape(c.post("/v1/memory/query", content=b"{" + b" " * 5000 + b"}", headers=JSON), 413)

        def chunks():  # no Content-Length: counted as it arrives
            yield b'{"query_id": "q", "search_text": "'
            for _ in range(10):
                yield b"a" * 1000
            yield b'"}'
        assert_error_shape(c.post("/v1/memory/query", content=chunks(), headers=JSON), 413)
        assert_error_shape(c.post("/v1/memory/query", content=b'{"query_id": "q", "search_text": "x"}'), 415)
        assert_error_shape(c.post("/v1/memory/query", content=b'{"query_id": "q", "search_text": "x"}',
                                  headers={"content-type": "text/plain"}), 415)
        many = {"query_id": "q", "search_text": "billing", "metadata_filter": {"a": 1, "b": 2, "c": 3}}
        assert_error_shape(c.post("/v1/memory/query", json=many), 422)
        assert_error_shape(c.post("/v1/ask", json={"question": "x" * 51}), 422)
        assert_error_shape(c.get("/v1/nowhere"), 404)


def test_unknown_fields_filter_is_fast(client: TestClient) -> None:
    body = {"query_id": "q", "search_text": "billing", "metadata_filter": {f"f{i}": {"ne": i} for i in range(32)}}
    start = time.perf_counter()
    for _ in range(5):
        assert client.post("/v1/memory/query", json=body).status_code == 200
    assert time.perf_counter() - start < 2.0


def test_saturation_and_timeout_get_503_with_retry_after(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    app = create_app(make_settings(data_dir, max_concurrent_requests=1, request_timeout_s=0.5))
    with TestClient(app, raise_server_exceptions=False) as c:
        engine = app.state.holder.engine
        real = engine.query
        monkeypatch.setattr(engine, "query", lambda request: (release.wait(5), real(request))[1])
        body = {"query_id": "q", "search_text": "billing"}
        slow = c.post("/v1/memory/query", json=body)  # times out; its slot stays taken until the work ends
        assert_error_shape(slow, 503)
        assert slow.headers["Retry-After"] == "1"
        busy = c.post("/v1/memory/query", json=body)
        assert_error_shape(busy, 503)
        assert "busy" in busy.json()["detail"][0]["msg"] and busy.headers["Retry-After"]
        release.set()
        time.sleep(0.2)
        assert c.post("/v1/memory/query", json=body).status_code == 200


def test_queries_wait_in_line_for_the_search_threads_and_a_timed_out_one_never_runs(
        data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    app = create_app(make_settings(data_dir, max_concurrent_requests=4, search_threads=1, request_timeout_s=0.5))
    with TestClient(app, raise_server_exceptions=False) as c:
        engine = app.state.holder.engine
        real = engine.query
        ran: list[str] = []
        monkeypatch.setattr(engine, "query", lambda request: (ran.append(request.query_id), release.wait(5),
                                                              real(request))[2])
        statuses: dict[str, int] = {}

        def send(qid: str) -> None:
            statuses[qid] = c.post("/v1/memory/query", json={"query_id": qid, "search_text": "billing"}).status_code

        first = threading.Thread(target=send, args=("first",))
        first.start()
        time.sleep(0.1)
        send("queued")  # the one search thread is taken: it waits in line, then times out there
        assert statuses["queued"] == 503
        release.set()
        first.join()
        time.sleep(0.2)
        assert c.post("/v1/memory/query", json={"query_id": "after", "search_text": "billing"}).status_code == 200
    assert ran == ["first", "after"]  # the timed-out query was never searched, and its slot was freed


def test_engine_loaded_once_at_start_up(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loads = []
    real = workers.load_engine
    monkeypatch.setattr(workers, "load_engine", lambda s: (loads.append(1), real(s))[1])
    with TestClient(create_app(make_settings(data_dir))) as c:
        assert len(loads) == 1  # before any request
        results = []
        threads = [threading.Thread(target=lambda: results.append(
            c.post("/v1/memory/query", json={"query_id": "q", "search_text": "billing"}).status_code)) for _ in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert results == [200] * 20 and len(loads) == 1


def test_api_keys(data_dir: Path, tmp_path: Path) -> None:
    keys_file = tmp_path / "keys"
    keys_file.write_text("# operators\nfile-key\n")
    app = create_app(make_settings(data_dir, api_keys=["list-key"], api_keys_file=keys_file))
    body = {"query_id": "q", "search_text": "billing"}
    with TestClient(app, raise_server_exceptions=False) as c:
        assert c.get("/v1/health").status_code == 200
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic list-key"}, {"Authorization": "Bearer"}):
            r = c.post("/v1/memory/query", json=body, headers=headers)
            assert_error_shape(r, 401)
            assert r.headers["WWW-Authenticate"] == "Bearer"
        assert_error_shape(c.get("/v1/drift"), 401)
        for key in ("list-key", "file-key"):
            assert c.post("/v1/memory/query", json=body, headers={"Authorization": f"Bearer {key}"}).status_code == 200


def test_drift_is_read_only_and_served_from_the_last_report(data_dir: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with TestClient(create_app(make_settings(empty)), raise_server_exceptions=False) as c:
        assert_error_shape(c.get("/v1/drift"), 404)
        assert_error_shape(c.get("/v1/drift", params={"refresh": "true"}), 404)
        assert_error_shape(c.post("/v1/memory/query", json={"query_id": "q", "search_text": "x"}), 503)
        assert c.get("/v1/health").json()["status"] == "no_index"
    assert list(empty.iterdir()) == []  # nothing created
    report = data_dir / "drift" / "drift.json"
    with TestClient(create_app(make_settings(data_dir))) as c:
        if report.exists():
            report.unlink()
        # A report missing (or of an older generation than the served one) is written again from the published
        # generation before it is served: never an older generation's report than /v1/health's.
        again = c.get("/v1/drift")
        assert again.status_code == 200 and again.json()["index_generation"] == c.get("/v1/health").json()["index_generation"]
        fresh = c.get("/v1/drift", params={"refresh": "true"})
        assert fresh.status_code == 200 and "totals" in fresh.json()
        before = report.stat().st_mtime_ns
        assert c.get("/v1/drift").json() == fresh.json()
        assert report.stat().st_mtime_ns == before  # served, not recomputed


def test_search_threads_zero_runs_queries_on_the_event_loop(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """search_threads = 0: a memory query runs in the event loop's own thread (no hand-over to a search thread),
    answers as usual, and gives its admission slot back, so one slot serves request after request."""
    app = create_app(make_settings(data_dir, max_concurrent_requests=1, search_threads=0))
    with TestClient(app, raise_server_exceptions=False) as c:
        engine = app.state.holder.engine
        real = engine.query
        threads: list[str] = []
        monkeypatch.setattr(engine, "query", lambda request: (threads.append(threading.current_thread().name),
                                                              real(request))[1])
        loop_thread: list[str] = []

        @app.get("/test-loop-thread")
        async def where() -> dict[str, str]:
            loop_thread.append(threading.current_thread().name)
            return {}

        assert c.get("/test-loop-thread").status_code == 200
        for i in range(3):
            r = c.post("/v1/memory/query", json={"query_id": f"q{i}", "search_text": ("billing", "pool", "deploy")[i]})
            assert r.status_code == 200 and r.json()["query_id"] == f"q{i}"
        assert threads == loop_thread * 3


# -- the memory-query fast path ----------------------------------------------------------------------------
def _route_only(app):  # type: ignore[no-untyped-def]
    """The same app with every memory query going through the FastAPI route (the fast path removed)."""
    app.user_middleware = [m for m in app.user_middleware if m.cls is not MemoryQueryFastPath]
    return app


FAST_PATH_BODIES = [body for path, body, _ in HOSTILE if path == "/v1/memory/query"] + [
    '{"query_id": "q", "search_text": "billing"}',
    '{"query_id": "q", "search_text": "connection pool exhausted", "top_k": 3, '
    '"hybrid_params": {"dense_weight": 0.2, "sparse_weight": 1.5, "rrf_k_constant": 10}}',
    '{"query_id": "q", "search_text": "deploy", "metadata_filter": {"source": {"in": ["a.md", "b.md"]}}}',
    '{"query_id": "q", "search_text": "' + "x " * 3000 + '"}',  # longer than max_question_chars: ApiError
    '{"query_id": "q", "search_text": "deploy", "metadata_filter": {' + ", ".join(f'"f{i}": 1' for i in range(70)) + "}}",
    '{"query_id": "q", "search_text": "billing", "unknown": 1}',
    '{"query_id": "q"}', "", "null", '"text"', '{"query_id": "q", "search_text": ""}',
    "[" * 100_000,  # deeper than json.loads can go: RecursionError, not ValueError
]
VALID = '{"query_id": "q", "search_text": "billing"}'
FAST_PATH_HEADERS = [  # content types the route reads differently from the guard, or not as JSON at all
    [("content-type", "text/plain+json")], [("content-type", "multipart/x+json")],
    [("content-type", "application/problem+json")], [("content-type", "Application/JSON; charset=utf-8")],
    [("content-type", "text/plain"), ("content-type", "application/json")],
    [("content-type", "application/json"), ("content-type", "text/plain")],
]


@pytest.mark.parametrize(("body", "headers"), [(b, [("content-type", "application/json")]) for b in FAST_PATH_BODIES]
                         + [(VALID, h) for h in FAST_PATH_HEADERS])
def test_fast_path_answers_exactly_as_the_route(data_dir: Path, body: str, headers: list[tuple[str, str]]) -> None:
    """Valid or not, a memory query gets the same status, headers and body with the fast path as through the
    FastAPI route alone."""
    import httpx

    fast = create_app(make_settings(data_dir, max_question_chars=2000))
    slow = _route_only(create_app(make_settings(data_dir, max_question_chars=2000)))
    with TestClient(fast, raise_server_exceptions=False) as f, TestClient(slow, raise_server_exceptions=False) as s:
        a = f.post("/v1/memory/query", content=body.encode(), headers=httpx.Headers(headers))
        b = s.post("/v1/memory/query", content=body.encode(), headers=httpx.Headers(headers))
    assert (a.status_code, a.content) == (b.status_code, b.content)
    drop = {"x-request-id"}
    assert {k: v for k, v in a.headers.items() if k not in drop} == {k: v for k, v in b.headers.items() if k not in drop}


def test_a_valid_memory_query_skips_the_route_and_is_labelled_as_it(data_dir: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import fastapi.routing

    solved: list[str] = []
    real = fastapi.routing.solve_dependencies

    async def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        solved.append(kwargs["request"].url.path)
        return await real(*args, **kwargs)

    monkeypatch.setattr(fastapi.routing, "solve_dependencies", counting)
    with TestClient(create_app(make_settings(data_dir)), raise_server_exceptions=False) as c:
        assert c.post("/v1/memory/query", json={"query_id": "q", "search_text": "billing"}).status_code == 200
        assert solved == []
        assert c.post("/v1/memory/query", json={"query_id": "q", "search_text": "billing", "top_k": 0}).status_code == 422
        assert solved == ["/v1/memory/query"]  # an invalid body is the route's to refuse
        metrics = c.get("/metrics").text
    assert 'strata_http_requests_total{method="POST",route="/v1/memory/query",status="200"} 1.0' in metrics


def test_fast_path_hands_a_client_gone_before_its_body_to_the_route(data_dir: Path) -> None:
    import asyncio

    def sent(app) -> list[dict]:  # type: ignore[no-untyped-def]
        out: list[dict] = []
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
                 "scheme": "http", "path": "/v1/memory/query", "raw_path": b"/v1/memory/query", "query_string": b"",
                 "root_path": "", "headers": [(b"content-type", b"application/json"), (b"content-length", b"40")],
                 "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80)}

        async def receive() -> dict:
            return {"type": "http.disconnect"}

        async def send(message: dict) -> None:
            out.append({k: v for k, v in message.items() if k != "headers"})

        asyncio.run(app(scope, receive, send))
        return out

    settings = make_settings(data_dir)
    assert sent(create_app(settings)) == sent(_route_only(create_app(settings)))
