"""The HTTP API (FastAPI): ``POST /v1/memory/query`` speaks the memory-query contract; ``POST /v1/ask``
answers with citations; ``GET /v1/drift`` serves the drift report; ``GET /v1/health`` says whether an index is
loaded.

Every request either succeeds or gets a 4xx (or a 503 when the server is saturated, timed out or has no index)
whose body has one shape, ``{"detail": [{"loc": [...], "msg": "...", "type": "..."}]}``; a 500 is a bug.
Limits come from ``settings.server``: body size (413), content type (415), question length and filter size
(422), concurrent requests (503 with ``Retry-After``) and a request timeout (503). With API keys configured,
every route but ``/v1/health`` needs ``Authorization: Bearer KEY`` (401 otherwise).

The query engine is loaded once, at start-up (:func:`load_engine`, from the app's lifespan), never per request.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Literal, TypeVar

from fastapi import FastAPI, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, StrictBool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from core.settings import ServerSettings, StrataSettings
from retrieval.contract import MemoryQueryRequest, MemoryQueryResponse, QueryText
from retrieval.filters import MetadataFilter, limit_errors, tidy_filter_error
from strata import sse
from strata.qcache import QueryCache, ask_key, memory_body_tail, memory_query_key, with_query_id
from strata.telemetry import (METRICS_CONTENT_TYPE, ApiMetrics, ServingCollector, TelemetryMiddleware, note_cache,
                              note_rejection, shared_metrics_dir)

if TYPE_CHECKING:
    from strata.engine import Engine

T = TypeVar("T")
OPEN_PATHS = frozenset({"/v1/health", "/v1/ready", "/", "/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json"})
# The console page, its script and style, and the docs' assets hold no data: a browser must load them before
# the user can enter a key. Every data route still needs the key.
OPEN_PREFIXES = ("/console/", "/docs-assets/")


class ErrorItem(BaseModel):
    loc: list[str | int] = Field(description="where the problem is: ['body', field, ...], ['header', name], ...")
    msg: str
    type: str


class ErrorResponse(BaseModel):
    """The body of every 4xx and 503."""

    detail: list[ErrorItem]


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


class ApiError(Exception):
    """A refusal with the documented error shape."""

    def __init__(self, status: int, loc: list[str | int], msg: str, type_: str,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(msg)
        self.status, self.loc, self.msg, self.type, self.headers = status, loc, msg, type_, headers or {}


def route_path(scope: Scope) -> str:
    """The request's path inside the app, as Starlette's routing reads it: without the root path a proxy mounts
    the app under."""
    path, root = scope["path"], scope.get("root_path", "")
    if not root or not path.startswith(root):
        return path
    return "" if path == root else path[len(root):] if path[len(root)] == "/" else path


def _clean(value: Any) -> Any:
    """Text safe to encode as UTF-8 JSON (a lone surrogate from the request becomes an escape)."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value if isinstance(value, int) and not isinstance(value, bool) else str(value)


def error_body(items: list[tuple[list[Any], str, str]]) -> bytes:
    detail = [{"loc": [_clean(p) for p in loc], "msg": _clean(msg), "type": _clean(type_)} for loc, msg, type_ in items]
    return json.dumps({"detail": detail}, ensure_ascii=False).encode("utf-8")


def error_response(status: int, items: list[tuple[list[Any], str, str]], headers: dict[str, str] | None = None) -> Response:
    return Response(error_body(items), status_code=status, media_type="application/json", headers=headers)


async def _send_error(send: Send, status: int, loc: list[Any], msg: str, type_: str,
                      headers: dict[str, str] | None = None) -> None:
    note_rejection(type_)
    body = error_body([(loc, msg, type_)])
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


class GuardMiddleware:
    """Authentication, body size and content type, checked before the app reads anything."""

    def __init__(self, app: ASGIApp, server: ServerSettings, keys: list[str]) -> None:
        self.app = app
        self.max_body = server.max_body_bytes
        self.open_paths = OPEN_PATHS | ({"/metrics"} if server.metrics_open else set())
        # Keys are compared as digests, in constant time, all of them every time.
        self.key_digests = [hashlib.sha256(k.encode("utf-8")).digest() for k in keys]

    def _authorized(self, scope: Scope) -> bool:
        header = next((v for k, v in scope["headers"] if k == b"authorization"), b"")
        scheme, _, token = header.partition(b" ")
        if scheme.lower() != b"bearer" or not token.strip():
            return False
        digest = hashlib.sha256(token.strip()).digest()
        ok = False
        for known in self.key_digests:
            ok |= hmac.compare_digest(digest, known)
        return ok

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = route_path(scope)  # without the root path a proxy mounts the app under
        open_path = path in self.open_paths or path.startswith(OPEN_PREFIXES)
        if self.key_digests and not open_path and not self._authorized(scope):
            await _send_error(send, 401, ["header", "authorization"],
                              "a valid API key is required: send 'Authorization: Bearer KEY'", "unauthorized",
                              {"WWW-Authenticate": "Bearer"})
            return
        headers = dict(scope["headers"])
        length = headers.get(b"content-length")
        if length is not None:
            if not length.isdigit():
                await _send_error(send, 400, ["header", "content-length"], "Content-Length must be a number",
                                  "invalid_header")
                return
            if int(length) > self.max_body:
                await self._too_large(send)
                return
        if scope["method"] in ("POST", "PUT", "PATCH"):
            ctype = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
            if ctype != b"application/json" and not ctype.endswith(b"+json"):
                await _send_error(send, 415, ["header", "content-type"],
                                  "send the request body as JSON with 'Content-Type: application/json'",
                                  "unsupported_media_type")
                return
        if length is None and scope["method"] in ("POST", "PUT", "PATCH"):
            # A body without Content-Length (chunked) is read here, up to the limit, then handed on whole.
            chunks, seen = [], 0
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    return
                chunks.append(message.get("body", b""))
                seen += len(chunks[-1])
                if seen > self.max_body:
                    await self._too_large(send)
                    return
                if not message.get("more_body", False):
                    break
            await self.app(scope, _replay([{"type": "http.request", "body": b"".join(chunks), "more_body": False}],
                                          receive), send)
            return
        await self.app(scope, receive, send)

    async def _too_large(self, send: Send) -> None:
        await _send_error(send, 413, ["body"], f"request body larger than {self.max_body} bytes "
                                               "(server.max_body_bytes)", "body_too_large")


MEMORY_QUERY_PATH = "/v1/memory/query"


class MemoryQueryFastPath:
    """``POST /v1/memory/query`` answered without FastAPI's per-request machinery (route matching, dependency
    solving, the request object): on a BM25 query that machinery cost about as much as the search itself. It takes
    only what the route would read the same way: a JSON content type FastAPI parses (``application/json`` or
    ``application/*+json``, the first Content-Type header), a body that ``json.loads`` reads and the contract model
    accepts. Anything else (another content type, a body that does not parse or validate, a client gone before
    its body arrived) goes on to the route as it came, so every refusal is the route's own, in its shape. The
    answer is the route's too: both call ``answer``."""

    def __init__(self, app: ASGIApp, answer: Callable[[MemoryQueryRequest], Any], route: Any) -> None:
        self.app, self.answer, self.route = app, answer, route

    @staticmethod
    def _takes(scope: Scope) -> bool:
        if scope["type"] != "http" or scope["method"] != "POST" or route_path(scope) != MEMORY_QUERY_PATH:
            return False
        ctype = next((v for k, v in scope["headers"] if k == b"content-type"), b"").split(b";")[0].strip().lower()
        return ctype == b"application/json" or (ctype.startswith(b"application/") and ctype.endswith(b"+json"))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._takes(scope):
            await self.app(scope, receive, send)
            return
        messages = []
        while True:  # the guard has already refused a body over the size limit
            messages.append(await receive())
            if messages[-1]["type"] != "http.request" or not messages[-1].get("more_body", False):
                break
        body = b"".join(m.get("body", b"") for m in messages)
        try:
            if messages[-1]["type"] != "http.request":
                raise ConnectionError("the client went away")
            request = MemoryQueryRequest.model_validate(json.loads(body))
        except Exception:  # noqa: BLE001  (whatever it is, the route says what it says about it)
            await self.app(scope, _replay(messages, receive), send)
            return
        scope["route"] = self.route  # what the telemetry labels the request with
        try:
            response = await self.answer(request)
        except ApiError as exc:
            note_rejection(exc.type)
            response = error_response(exc.status, [(exc.loc, exc.msg, exc.type)], exc.headers)
        await response(scope, receive, send)


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """``receive`` with the messages already read handed back first."""
    pending = list(messages)

    async def replay() -> Message:
        return pending.pop(0) if pending else await receive()

    return replay


class WorkLimiter:
    """Admits at most ``max_concurrent_requests`` requests at once: one that finds every slot taken gets 503
    with Retry-After at once. Memory queries (CPU-bound) run on ``search_threads`` threads in arrival order (0:
    on the event loop): more threads would only take turns at the GIL, and every query in flight would finish
    late. Answers and
    drift refreshes (which wait on an LLM or the store) run on a pool with a thread per slot. A request not
    done after the timeout gets 503; if it had not started it never will, else its slot stays taken until the
    work really ends."""

    def __init__(self, server: ServerSettings, answer_timeout_s: float | None = None) -> None:
        self.slots = server.max_concurrent_requests
        self.search_threads = min(server.search_threads, self.slots)
        self.timeout = server.request_timeout_s
        self.answer_timeout = answer_timeout_s or server.request_timeout_s  # answers that call an LLM wait longer
        self.retry_after = str(server.retry_after_s)
        self.busy = 0
        self.lock = threading.Lock()
        self.pool, self.search_pool = self._new_pools()

    def _new_pools(self) -> tuple[ThreadPoolExecutor, ThreadPoolExecutor | None]:
        return (ThreadPoolExecutor(max_workers=self.slots, thread_name_prefix="strata-api"),
                ThreadPoolExecutor(max_workers=self.search_threads, thread_name_prefix="strata-search")
                if self.search_threads else None)

    def open(self) -> None:
        """Ready for work again after :meth:`close` (a server may run the app's lifespan more than once)."""
        if self.pool._shutdown:
            self.pool, self.search_pool = self._new_pools()

    def _release(self, _future: Any) -> None:
        with self.lock:
            self.busy -= 1

    async def run(self, fn: Callable[[], T], search: bool = False, answer: bool = False) -> T:
        """``fn`` on a worker thread, cut after the request timeout (``answer``: the answer timeout)."""
        timeout = self.answer_timeout if answer else self.timeout
        with self.lock:
            if self.busy >= self.slots:
                raise ApiError(503, [], f"the server is busy ({self.slots} requests running; "
                                        "server.max_concurrent_requests); retry later", "overloaded",
                               {"Retry-After": self.retry_after})
            self.busy += 1
        if search and self.search_pool is None:  # search_threads = 0: on the event loop, start to end
            try:
                return fn()
            finally:
                self._release(None)
        future = (self.search_pool if search else self.pool).submit(fn)
        future.add_done_callback(self._release)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), timeout)
        except asyncio.TimeoutError:
            # wait_for cancelled the wrapper, which cancels ``future``: one still waiting for a thread never runs
            # (and its slot is freed now).
            setting = "server.llm_request_timeout_s" if answer and timeout != self.timeout else "server.request_timeout_s"
            raise ApiError(503, [], f"the request took longer than {timeout:g} s ({setting})",
                           "timeout", {"Retry-After": self.retry_after}) from None

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
        if self.search_pool is not None:
            self.search_pool.shutdown(wait=False, cancel_futures=True)


def load_engine(settings: StrataSettings) -> "Engine":
    """The query engine over the workspace's index; the one place the API loads it."""
    from strata.engine import Engine

    # Watching: a newer published generation is loaded in the background and swapped in (hot reload).
    return Engine(settings, watch=True)


class EngineHolder:
    """The engine loaded at start-up, or why it could not be (then query routes answer 503 with the reason)."""

    def __init__(self, settings: StrataSettings) -> None:
        self.settings = settings
        self.engine: "Engine | None" = None
        self.error: str | None = None
        self._lock = threading.Lock()
        self._tried = False
        self._tried_at = 0.0

    def load(self) -> None:
        from core.store import StoreError

        with self._lock:
            if self.engine is not None or (self._tried and time.monotonic() - self._tried_at < self.settings.index.reload_poll_s):
                return
            self._tried, self._tried_at = True, time.monotonic()
            try:
                self.engine = load_engine(self.settings)
                self.error = None
            except (FileNotFoundError, ValueError, StoreError, OSError) as exc:
                self.error = str(exc)

    def get(self) -> "Engine":
        if self.engine is None:
            # Not loaded at start-up (no generation published yet, or an app run without its lifespan): try again,
            # at most once per poll interval, so the first published generation is served without a restart.
            self.load()
        if self.engine is None:
            raise ApiError(503, [], f"no index loaded: {self.error}", "no_index", {"Retry-After": "30"})
        return self.engine

    def close(self) -> None:
        with self._lock:
            if self.engine is not None:
                self.engine.close()
            self.engine, self.error, self._tried = None, None, False


ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorResponse, "description": text} for code, text in (
        (400, "malformed request"), (401, "missing or invalid API key"), (413, "body too large"),
        (415, "body not sent as JSON"), (422, "invalid request: each problem names its field"),
        (503, "busy, timed out, or no index loaded (see Retry-After)"))}


def _json(model: BaseModel) -> Response:
    # Serialized straight from the typed model: FastAPI would validate a returned model a second time.
    return Response(model.model_dump_json().encode("utf-8"), media_type="application/json")


def create_app(settings: StrataSettings | None = None) -> FastAPI:
    settings = settings or StrataSettings()
    from core.threads import configure

    configure(settings.compute)  # one BLAS thread per product: requests run beside each other
    server = settings.server
    holder = EngineHolder(settings)
    limiter = WorkLimiter(server, settings.answer_timeout_s)
    cache = QueryCache(settings.cache) if settings.cache.enabled else None
    metrics = ApiMetrics()
    serving = ServingCollector(lambda: holder.engine, cache, Path(settings.data_dir), shared_metrics_dir())
    metrics.registry.register(serving)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        limiter.open()
        serving.open()
        await asyncio.get_running_loop().run_in_executor(None, holder.load)
        try:
            yield
        finally:
            limiter.close()
            holder.close()
            serving.close()
            metrics.close()

    app = FastAPI(title="Strata", version=_version(), lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="GraphRAG memory over a corpus. Errors: `{detail: [{loc, msg, type}]}`.")
    app.state.holder, app.state.cache, app.state.metrics = holder, cache, metrics

    @app.exception_handler(ApiError)
    async def _api_error(_request: Request, exc: ApiError) -> Response:
        note_rejection(exc.type)
        return error_response(exc.status, [(exc.loc, exc.msg, exc.type)], exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> Response:
        items = []
        for e in exc.errors():
            loc, msg, kind = tuple(e.get("loc", ())), str(e.get("msg", "")), str(e.get("type", "value_error"))
            if "metadata_filter" in loc:
                at = loc.index("metadata_filter") + 1
                inner, msg = tidy_filter_error(loc[at:], kind, msg)
                loc = (*loc[:at], *inner)
            items.append((list(loc), msg.removeprefix("Value error, "), kind))
        return error_response(422, items)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_request: Request, exc: StarletteHTTPException) -> Response:
        kind = {404: "not_found", 405: "method_not_allowed", 400: "invalid_body"}.get(exc.status_code, "http_error")
        return error_response(exc.status_code, [([], str(exc.detail), kind)], dict(exc.headers or {}))

    @app.exception_handler(Exception)
    async def _bug(_request: Request, exc: Exception) -> Response:
        return error_response(500, [([], f"internal error ({type(exc).__name__}); this is a bug", "internal")])

    def check_text(loc: list[str | int], text: str) -> None:
        if len(text) > server.max_question_chars:
            raise ApiError(422, loc, f"at most {server.max_question_chars} characters (server.max_question_chars), "
                                     f"got {len(text)}", "string_too_long")

    def check_filter(spec: dict[str, Any]) -> None:
        problems = limit_errors(spec, server.max_filter_fields, server.max_filter_values)
        if problems:
            raise ApiError(422, ["body", "metadata_filter", *problems[0][0]], problems[0][1], "filter_too_large")

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
                           "not_ready", {"Retry-After": str(server.retry_after_s)})
        return {"status": "ready", "index_generation": engine.generation}

    @app.get("/metrics", include_in_schema=False)
    def prometheus_metrics() -> Response:
        return Response(metrics.render(), media_type=METRICS_CONTENT_TYPE)

    async def answer_memory_query(request: MemoryQueryRequest) -> Response:
        check_text(["body", "search_text"], request.search_text)
        check_filter(request.metadata_filter)
        engine = holder.get()
        if cache is None:
            return _json(await limiter.run(lambda: engine.query(request), search=True))
        # Looked up before taking a worker slot: a hit costs no thread hop and no search.
        key, normalized = memory_query_key(request)
        generation = engine.generation
        tail = cache.get(generation, key)
        note_cache("hit" if tail is not None else "miss", generation)
        if tail is None:
            response = await limiter.run(lambda: engine.query(normalized), search=True)
            tail = memory_body_tail(response)
            if tail is None:
                return _json(response.model_copy(update={"query_id": request.query_id}))
            if response.index_generation is not None:
                cache.put(response.index_generation, key, tail)
        return Response(with_query_id(tail, request.query_id), media_type="application/json")

    @app.post(MEMORY_QUERY_PATH, response_model=MemoryQueryResponse, responses=ERRORS)
    async def memory_query(request: MemoryQueryRequest) -> Response:
        return await answer_memory_query(request)

    # Each middleware added wraps those added before it. The fast path is innermost, behind the guard (keys,
    # size, content type) like the route it stands in for; the telemetry is outermost and sees every request,
    # the guard's refusals included.
    app.add_middleware(MemoryQueryFastPath, answer=answer_memory_query,
                       route=next(r for r in app.router.routes if getattr(r, "path", None) == MEMORY_QUERY_PATH))
    app.add_middleware(GuardMiddleware, server=server, keys=server.keys())
    app.add_middleware(TelemetryMiddleware, metrics=metrics, routes=lambda: app.router.routes)

    @app.post("/v1/ask", responses={**ERRORS, 200: {"description": "the answer; with \"stream\": true, server-sent "
                                                   "events (delta ..., answer)", "content": {
                                         "text/event-stream": {"schema": sse.EVENT_SCHEMA}}}})
    async def ask(request: AskRequest) -> dict[str, Any]:  # the body: Answer.to_dict(), serialized once
        from core.store import StoreError

        check_text(["body", "question"], request.question)
        check_filter(request.metadata_filter)
        engine = holder.get()
        key, question = ask_key(request.question, request.mode, request.metadata_filter)
        generation = engine.generation
        if cache is not None:
            body = cache.get(generation, key)
            note_cache("hit" if body is not None else "miss", generation)
            if body is not None:
                return sse.at_once(json.loads(body)) if request.stream else Response(body, media_type="application/json")

        def work(on_delta: Callable[[str], None] | None = None) -> dict[str, Any]:
            if request.metadata_filter and engine.route(question, request.mode).route == "global":
                raise ApiError(422, ["body", "metadata_filter"],
                               "a metadata filter applies to local answers only (a global answer summarizes the "
                               "whole corpus): drop the filter or ask with mode 'local'", "filter_not_applicable")
            try:
                return engine.ask(question, request.mode, request.metadata_filter or None,
                                  **({"on_delta": on_delta} if on_delta else {})).to_dict()
            except StoreError as exc:
                raise ApiError(503, [], f"the graph store is unavailable: {exc}", "store_unavailable",
                               {"Retry-After": "30"}) from exc
            except ValueError as exc:
                raise ApiError(422, ["body"], str(exc), "value_error") from exc

        def keep(answer: dict[str, Any]) -> bytes:
            body = JSONResponse(jsonable_encoder(answer)).body  # what FastAPI would send for the dict
            if cache is not None and isinstance(answer.get("index_generation"), int):
                cache.put(answer["index_generation"], key, bytes(body))
            return bytes(body)

        if request.stream:
            return await sse.stream_answer(lambda on_delta: limiter.run(lambda: work(on_delta), answer=True), keep)
        answer = await limiter.run(work, answer=True)
        if cache is None:
            return answer
        return Response(keep(answer), media_type="application/json")

    @app.get("/v1/drift", responses={**ERRORS, 404: {"model": ErrorResponse, "description": "no drift report yet"}})
    async def drift(refresh: bool = Query(False, description="recompute the report now (and write it) instead of "
                                                              "serving the last one written")) -> Any:
        if refresh:
            if not _has_index(settings):
                raise ApiError(404, ["query", "refresh"], f"no index in {settings.data_dir}: run `strata index FOLDER` "
                                                          "first", "no_index")
            await limiter.run(lambda: _refresh_drift(settings))
        from strata.drift_files import served_json

        engine = holder.engine  # never a report of an older generation than the one served (written again if so)
        try:
            body = await limiter.run(lambda: served_json(settings, engine.generation if engine is not None else 0))
        except (ValueError, OSError) as exc:  # a damaged generation or a full disk: the message names the file
            raise ApiError(503, [], str(exc), "drift_unavailable", {"Retry-After": "30"}) from exc
        if body is None:
            raise ApiError(404, [], "no drift report yet: run `strata drift`, or GET /v1/drift?refresh=true",
                           "no_report")
        return Response(body, media_type="application/json")

    async def console_search(request: MemoryQueryRequest) -> Any:  # the console's memory query, limited alike
        check_text(["body", "search_text"], request.search_text)
        check_filter(request.metadata_filter)
        engine = holder.get()
        return await limiter.run(lambda: engine.search(request), search=True)

    from strata.web import mount_console, mount_offline_docs

    mount_offline_docs(app)  # /docs and /redoc with their assets served here (no CDN)
    mount_console(app, holder.get, settings, console_search)  # the web console at / and its read-only routes
    return app


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
