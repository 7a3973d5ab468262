"""What ``strata serve`` tells its operators: Prometheus metrics and one structured log line per request.

:class:`TelemetryMiddleware` wraps the whole app. Each request gets an id (the caller's ``X-Request-ID`` when it
is a plain token, else a fresh one), echoed in the ``X-Request-ID`` response header and carried by every log
line written while the request runs (a cacheable request also gets ``X-Cache: hit`` or ``miss``); when it ends,
one line (``strata.request``: method, route, status, milliseconds, the client's address, cache, generation; never
the body) is logged and the metrics are updated. Metrics live in a registry of the app's own (two apps in one
process never share counters; the processes of one server share theirs, see :class:`ApiMetrics`):

* ``strata_http_requests_total{route,method,status}``, ``strata_http_request_duration_seconds{route}``
  (a histogram), ``strata_http_requests_in_flight``, ``strata_http_rejected_total{reason}`` (auth, body size,
  content type, configured limits, concurrency, timeout);
* at scrape time (:class:`strata.serving_metrics.ServingCollector`): the serving generation, its age and its chunks, entities,
  relations, communities and reports, the embedder and its state, the query cache's hits, misses, size and hit
  ratio, and the last index run's figures from ``<data-dir>/metrics/index.prom``.

Routes are labelled by their template (``/v1/chunks/{chunk_id:path}``), so the label set stays bounded.
"""

from __future__ import annotations

import logging
import os
import random
import re
import time
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from strata.logs import ACCESS_LOGGER, REQUEST_ID, log_event

access_log = logging.getLogger(ACCESS_LOGGER)
METRICS_CONTENT_TYPE = CONTENT_TYPE_LATEST
# The error types of the refusals counted as rejected, by the reason label they are counted under.
REJECTIONS = {"unauthorized": "auth", "body_too_large": "body_size", "unsupported_media_type": "content_type",
              "invalid_header": "bad_header", "string_too_long": "limits", "filter_too_large": "limits",
              "overloaded": "concurrency", "timeout": "timeout"}
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
_REQUEST_ID_OK = re.compile(r"[A-Za-z0-9._:\-]{1,128}")


@dataclass
class RequestNotes:
    """What the app notes about the request it is serving, read by the middleware when the request ends."""

    rejected: str | None = None
    cache: str | None = None
    generation: int | None = None


NOTES: ContextVar[RequestNotes | None] = ContextVar("strata_request_notes", default=None)


def note_rejection(error_type: str) -> None:
    """Called wherever a refusal is sent: counted as rejected when its type is one of :data:`REJECTIONS`."""
    notes = NOTES.get()
    if notes is not None and error_type in REJECTIONS:
        notes.rejected = REJECTIONS[error_type]


def note_cache(outcome: str, generation: int | None) -> None:
    notes = NOTES.get()
    if notes is not None:
        notes.cache, notes.generation = outcome, generation


# Set by ``strata serve --workers N`` for its worker processes, beside prometheus_client's own variable (which
# makes its metric values live in files there). A PROMETHEUS_MULTIPROC_DIR set for some other reason does not
# make a single server process sum files it never wrote.
SHARED_METRICS_ENV = "STRATA_WORKER_METRICS_DIR"
PROMETHEUS_ENV = "PROMETHEUS_MULTIPROC_DIR"


def shared_metrics_dir() -> str | None:
    """The folder where the server's worker processes keep their request metrics, when it has several."""
    shared = os.environ.get(SHARED_METRICS_ENV) or None
    return shared if shared and os.environ.get(PROMETHEUS_ENV) == shared else None


class ApiMetrics:
    """The request metrics of one app, in their own registry.

    With several server processes (``strata serve --workers N``) a scrape reaches one of them, so each
    process keeps its request metrics in files under :func:`shared_metrics_dir` (prometheus_client's
    multiprocess mode) and ``/metrics`` renders the sum over all of them: counters and histograms add up,
    the in-flight gauge sums the live processes."""

    def __init__(self) -> None:
        own = CollectorRegistry(auto_describe=True)
        self.shared = shared_metrics_dir() is not None
        if self.shared:
            from prometheus_client.multiprocess import MultiProcessCollector

            self.registry = CollectorRegistry()
            MultiProcessCollector(self.registry)
        else:
            self.registry = own
        r = own
        self.requests = Counter("strata_http_requests", "HTTP requests by route template, method and status",
                                ["route", "method", "status"], registry=r)
        self.latency = Histogram("strata_http_request_duration_seconds", "time to answer a request, by route",
                                 ["route"], buckets=LATENCY_BUCKETS, registry=r)
        self.in_flight = Gauge("strata_http_requests_in_flight", "requests being served now", registry=r,
                               multiprocess_mode="livesum")
        self.rejected = Counter("strata_http_rejected", "requests refused by a guard, by reason", ["reason"],
                                registry=r)
        for reason in sorted(set(REJECTIONS.values())):
            self.rejected.labels(reason)  # every reason shows, at 0, before its first rejection

    def render(self) -> bytes:
        return generate_latest(self.registry)

    def close(self) -> None:
        """This process stops serving: its in-flight gauge leaves the sum (its counters stay in the totals)."""
        if self.shared:
            from prometheus_client.multiprocess import mark_process_dead

            mark_process_dead(os.getpid())


_IDS = random.Random()  # seeded from the OS once; request ids need to be unique, not secret
os.register_at_fork(after_in_child=_IDS.seed)  # a forked server worker gets ids of its own


def _new_request_id() -> str:
    """32 hex digits like a uuid4's, without a getrandom call per request (which, made from the event loop
    while search threads hold the GIL, cost about 0.2 ms a request under load)."""
    return f"{_IDS.getrandbits(128):032x}"


class TelemetryMiddleware:
    """Request id, metrics and one log line per request (the outermost of the app's middleware)."""

    def __init__(self, app: ASGIApp, metrics: ApiMetrics, routes: Callable[[], Iterable[BaseRoute]]) -> None:
        self.app, self.metrics, self.routes = app, metrics, routes

    def _route(self, scope: Scope, received: Scope) -> str:
        """The template of the route that served the request. ``received``: the scope as it came in (routing
        into a mount, the static assets', rewrites the root path in ``scope`` itself)."""
        route = scope.get("route")
        if route is None:  # refused before routing (a missing key): find the route it was meant for
            partial = None
            for candidate in self.routes():
                match, _ = candidate.matches(received)
                if match == Match.FULL:
                    route = candidate
                    break
                if match == Match.PARTIAL and partial is None:
                    partial = candidate
            route = route or partial
        return str(getattr(route, "path", None) or "unmatched")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = next((v for k, v in scope["headers"] if k == b"x-request-id"), b"").decode("latin-1")
        rid = given if _REQUEST_ID_OK.fullmatch(given) else _new_request_id()
        rid_token, notes = REQUEST_ID.set(rid), RequestNotes()
        notes_token = NOTES.set(notes)
        status = 500  # unless a response starts: an exception escaped to the server's error handler

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                extra = [(b"x-request-id", rid.encode())]
                if notes.cache:
                    extra.append((b"x-cache", notes.cache.encode()))
                message = {**message, "headers": [*message.get("headers", ()), *extra]}
            await send(message)

        m = self.metrics
        m.in_flight.inc()
        received = dict(scope)
        start = time.perf_counter()
        try:
            await self.app(scope, receive, send_with_id)
        finally:
            seconds = time.perf_counter() - start
            m.in_flight.dec()
            route = self._route(scope, received)
            m.requests.labels(route, scope["method"], str(status)).inc()
            m.latency.labels(route).observe(seconds)
            if notes.rejected:
                m.rejected.labels(notes.rejected).inc()
            fields: dict[str, Any] = {"event": "request", "method": scope["method"], "route": route,
                                      "path": scope["path"][:256], "status": status, "ms": round(seconds * 1000, 2)}
            if scope.get("client"):  # the peer's address, as uvicorn's access line had it
                fields["client"] = str(scope["client"][0])
            if notes.cache:
                fields["cache"] = notes.cache
            if notes.generation is not None:
                fields["generation"] = notes.generation
            if notes.rejected:
                fields["rejected"] = notes.rejected
            log_event(access_log, f"{scope['method']} {route} {status}",
                      logging.WARNING if status >= 500 else logging.INFO, **fields)
            NOTES.reset(notes_token)
            REQUEST_ID.reset(rid_token)
