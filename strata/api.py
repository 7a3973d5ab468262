"""The HTTP API (FastAPI): ``POST /v1/memory/query`` speaks the memory-query contract; ``POST /v1/ask``
answers with citations; ``GET /v1/drift`` serves the drift report; ``GET /v1/health`` says whether an index is
loaded.

Every request either succeeds or gets a 4xx (or a 503 when the server is saturated, timed out or has no index)
whose body has one shape, ``{"detail": [{"loc": [...], "msg": "...", "type": "..."}]}``; a 500 is a bug.
Limits come from ``settings.server``: body size (413), content type (415), question length and filter size
(422), concurrent requests (503 with ``Retry-After``) and a request timeout (503). With API keys configured,
every route but ``/v1/health`` needs ``Authorization: Bearer KEY`` (401 otherwise).

The query engine is loaded once, at start-up (:func:`strata.workers.load_engine`, from the app's lifespan), never
per request. The error shape is :mod:`strata.api_errors`'s; the guard and the memory query's fast path stand in
front of the routes (:mod:`strata.api_guard`).
"""

from __future__ import annotations

import asyncio
import json
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Literal

from fastapi import FastAPI, Query
from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from core.settings import StrataSettings
from retrieval.contract import MemoryQueryRequest, MemoryQueryResponse, QueryText
from retrieval.filters import MetadataFilter, limit_errors
from strata import sse
from strata.api_errors import ERRORS, ApiError, ErrorResponse, install_error_handlers
from strata.api_guard import MEMORY_QUERY_PATH, GuardMiddleware, MemoryQueryFastPath
from strata.workers import EngineHolder, WorkLimiter
from strata.qcache import QueryCache, ask_key, memory_body_tail, memory_query_key, with_query_id
from strata.serving_metrics import ServingCollector
from strata.telemetry import METRICS_CONTENT_TYPE, ApiMetrics, TelemetryMiddleware, note_cache, shared_metrics_dir

if TYPE_CHECKING:
    from strata.engine import Engine


class AskRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: QueryText = Field(..., min_length=1, max_length=10_000)
    mode: Literal["local", "global"] | None = None
    metadata_filter: MetadataFilter = Field(
        default_factory=dict, description="local answers only; a filter on a global answer is refused (422)")
    stream: StrictBool = Field(False, description="answer as server-sent events (text/event-stream): 'delta' events with "
                                            "the text as the LLM writes it (an offline answer comes at once), then "
                                            "one 'answer' event with the whole answer (citations, route, "
                                            "index_generation); see strata/sse.py")


def _json(model: BaseModel) -> Response:
    # Serialized straight from the typed model: FastAPI would validate a returned model a second time.
    return Response(model.model_dump_json().encode("utf-8"), media_type="application/json")


@dataclass(frozen=True, slots=True)
class _Serving:
    """What the routes of one app share: its settings, the engine holder, the work limiter, the query cache and
    the metrics."""

    settings: StrataSettings
    holder: EngineHolder
    limiter: WorkLimiter
    cache: QueryCache | None
    metrics: ApiMetrics

    def check_text(self, loc: list[str | int], text: str) -> None:
        limit = self.settings.server.max_question_chars
        if len(text) > limit:
            raise ApiError(422, loc, f"at most {limit} characters (server.max_question_chars), got {len(text)}",
                           "string_too_long")

    def check_filter(self, spec: dict[str, Any]) -> None:
        server = self.settings.server
        problems = limit_errors(spec, server.max_filter_fields, server.max_filter_values)
        if problems:
            raise ApiError(422, ["body", "metadata_filter", *problems[0][0]], problems[0][1], "filter_too_large")

    def check_query(self, request: MemoryQueryRequest) -> None:
        """A memory query's text and filter within the server's limits (422 otherwise)."""
        self.check_text(["body", "search_text"], request.search_text)
        self.check_filter(request.metadata_filter)

    async def memory_query(self, request: MemoryQueryRequest) -> Response:
        """The memory-query contract's answer, from the cache when it holds it (looked up before taking a worker
        slot: a hit costs no thread hop and no search)."""
        self.check_query(request)
        engine, cache = self.holder.get(), self.cache
        if cache is None:
            return _json(await self.limiter.run(lambda: engine.query(request), search=True))
        key, normalized = memory_query_key(request)
        generation = engine.generation
        tail = cache.get(generation, key)
        note_cache("hit" if tail is not None else "miss", generation)
        if tail is None:
            response = await self.limiter.run(lambda: engine.query(normalized), search=True)
            tail = memory_body_tail(response)
            if tail is None:
                return _json(response.model_copy(update={"query_id": request.query_id}))
            if response.index_generation is not None:
                cache.put(response.index_generation, key, tail)
        return Response(with_query_id(tail, request.query_id), media_type="application/json")

    async def console_search(self, request: MemoryQueryRequest) -> Any:
        """The console's memory query, checked and limited alike."""
        self.check_query(request)
        engine = self.holder.get()
        return await self.limiter.run(lambda: engine.search(request), search=True)


def create_app(settings: StrataSettings | None = None) -> FastAPI:
    """The HTTP app: the routes, the error handlers, the guard and fast path, telemetry, the console and the docs."""
    settings = settings or StrataSettings()
    from core.threads import configure

    configure(settings.compute)  # one BLAS thread per product: requests run beside each other
    holder = EngineHolder(settings)
    api = _Serving(settings, holder, WorkLimiter(settings.server, settings.answer_timeout_s),
                   QueryCache(settings.cache) if settings.cache.enabled else None, ApiMetrics())
    serving = ServingCollector(lambda: holder.engine, api.cache, Path(settings.data_dir), shared_metrics_dir())
    api.metrics.registry.register(serving)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        api.limiter.open()
        serving.open()
        await asyncio.get_running_loop().run_in_executor(None, holder.load)
        try:
            yield
        finally:
            api.limiter.close()
            holder.close()
            serving.close()
            api.metrics.close()

    app = FastAPI(title="Strata", version=_version(), lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="GraphRAG memory over a corpus. Errors: `{detail: [{loc, msg, type}]}`.")
    app.state.holder, app.state.cache, app.state.metrics = holder, api.cache, api.metrics
    install_error_handlers(app)
    _status_routes(app, api)

    @app.post(MEMORY_QUERY_PATH, response_model=MemoryQueryResponse, responses=ERRORS)
    async def memory_query(request: MemoryQueryRequest) -> Response:
        return await api.memory_query(request)

    # Each middleware added wraps those added before it. The fast path is innermost, behind the guard (keys,
    # size, content type) like the route it stands in for; the telemetry is outermost and sees every request,
    # the guard's refusals included.
    app.add_middleware(MemoryQueryFastPath, answer=api.memory_query,
                       route=next(r for r in app.router.routes if getattr(r, "path", None) == MEMORY_QUERY_PATH))
    app.add_middleware(GuardMiddleware, server=settings.server, keys=settings.server.keys())
    app.add_middleware(TelemetryMiddleware, metrics=api.metrics, routes=lambda: app.router.routes)
    _ask_route(app, api)
    _drift_route(app, api)
    from strata.web import mount_console, mount_offline_docs

    mount_offline_docs(app)  # /docs and /redoc with their assets served here (no CDN)
    mount_console(app, holder.get, settings, api.console_search)  # the web console at / and its read-only routes
    return app


def _status_routes(app: FastAPI, api: _Serving) -> None:
    """``/v1/health`` (liveness), ``/v1/ready`` (readiness) and ``/metrics``."""
    holder = api.holder

    @app.get("/v1/health")
    def health() -> dict[str, Any]:
        engine = holder.engine
        return {"status": "ok" if engine is not None else "no_index", "index_loaded": engine is not None,
                "index_generation": engine.generation if engine is not None else None}

    @app.get("/v1/ready", responses={503: {"model": ErrorResponse, "description": "no index generation loaded yet"}})
    def ready() -> dict[str, Any]:
        """Readiness: 200 once an index generation is loaded, 503 saying why until then (``/v1/health`` is
        liveness and answers 200 whenever the process serves)."""
        engine = holder.engine
        if engine is None:
            holder.load()  # a generation published since start-up is picked up (at most once per poll interval)
            engine = holder.engine
        if engine is None:
            raise ApiError(503, [], f"not ready: no index generation loaded ({holder.error or 'loading'})",
                           "not_ready", {"Retry-After": str(api.settings.server.retry_after_s)})
        return {"status": "ready", "index_generation": engine.generation}

    @app.get("/metrics", include_in_schema=False)
    def prometheus_metrics() -> Response:
        return Response(api.metrics.render(), media_type=METRICS_CONTENT_TYPE)


def _ask_route(app: FastAPI, api: _Serving) -> None:
    """``POST /v1/ask``: an answer with citations, at once or as server-sent events, cached by generation."""

    @app.post("/v1/ask", responses={**ERRORS, 200: {"description": "the answer; with \"stream\": true, server-sent "
                                                   "events (delta ..., answer)", "content": {
                                         "text/event-stream": {"schema": sse.EVENT_SCHEMA}}}})
    async def ask(request: AskRequest) -> dict[str, Any]:  # the body: Answer.to_dict(), serialized once
        api.check_text(["body", "question"], request.question)
        api.check_filter(request.metadata_filter)
        engine, cache = api.holder.get(), api.cache
        key, question = ask_key(request.question, request.mode, request.metadata_filter)
        generation = engine.generation
        if cache is not None:
            body = cache.get(generation, key)
            note_cache("hit" if body is not None else "miss", generation)
            if body is not None:
                return sse.at_once(json.loads(body)) if request.stream else Response(body, media_type="application/json")

        def work(on_delta: Callable[[str], None] | None = None) -> dict[str, Any]:
            return _answer(engine, request, question, on_delta)

        def keep(answer: dict[str, Any]) -> bytes:
            body = JSONResponse(jsonable_encoder(answer)).body  # what FastAPI would send for the dict
            if cache is not None and isinstance(answer.get("index_generation"), int):
                cache.put(answer["index_generation"], key, bytes(body))
            return bytes(body)

        if request.stream:
            return await sse.stream_answer(lambda on_delta: api.limiter.run(lambda: work(on_delta), answer=True),
                                           keep)
        answer = await api.limiter.run(work, answer=True)
        if cache is None:
            return answer
        return Response(keep(answer), media_type="application/json")


def _answer(engine: "Engine", request: AskRequest, question: str,
            on_delta: Callable[[str], None] | None) -> dict[str, Any]:
    """The engine's answer as the API returns it, with its refusals in the API's error shape."""
    from core.store import StoreError
    from strata.engine import FilterNotApplicable
    from strata.integrity import GenerationDamagedError

    try:
        return engine.ask(question, request.mode, request.metadata_filter or None,
                          **({"on_delta": on_delta} if on_delta else {})).to_dict()
    except FilterNotApplicable as exc:
        raise ApiError(422, ["body", "metadata_filter"],
                       "a metadata filter applies to local answers only (a global answer summarizes the "
                       "whole corpus): drop the filter or ask with mode 'local'", "filter_not_applicable") from exc
    except StoreError as exc:
        raise ApiError(503, [], f"the graph store is unavailable: {exc}", "store_unavailable",
                       {"Retry-After": "30"}) from exc
    except GenerationDamagedError as exc:  # its reports, read on first use, were damaged after it loaded
        raise ApiError(503, [], str(exc), "generation_damaged") from exc
    except ValueError as exc:
        raise ApiError(422, ["body"], str(exc), "value_error") from exc


def _drift_route(app: FastAPI, api: _Serving) -> None:
    """``GET /v1/drift``: the last drift report written, or with ``refresh`` one computed now."""
    settings = api.settings

    @app.get("/v1/drift", responses={**ERRORS, 404: {"model": ErrorResponse, "description": "no drift report yet"}})
    async def drift(refresh: bool = Query(False, description="recompute the report now (and write it) instead of "
                                                              "serving the last one written")) -> Any:
        if refresh:
            if not _has_index(settings):
                raise ApiError(404, ["query", "refresh"], f"no index in {settings.data_dir}: run `strata index FOLDER` "
                                                          "first", "no_index")
            await api.limiter.run(lambda: _refresh_drift(settings))
        from strata.drift_files import served_json

        engine = api.holder.engine  # never a report of an older generation than the one served (written again if so)
        try:
            body = await api.limiter.run(lambda: served_json(settings, engine.generation if engine is not None else 0))
        except (ValueError, OSError) as exc:  # a damaged generation or a full disk: the message names the file
            raise ApiError(503, [], str(exc), "drift_unavailable", {"Retry-After": "30"}) from exc
        if body is None:
            raise ApiError(404, [], "no drift report yet: run `strata drift`, or GET /v1/drift?refresh=true",
                           "no_report")
        return Response(body, media_type="application/json")


def _has_index(settings: StrataSettings) -> bool:
    if settings.store.backend != "embedded":
        return True
    return (Path(settings.data_dir) / "graph.sqlite").exists()


def _refresh_drift(settings: StrataSettings) -> None:
    from strata.pipeline import drift_report, write_drift_files

    write_drift_files(drift_report(settings), settings)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("strata")
    except PackageNotFoundError:
        return "0+unknown"
