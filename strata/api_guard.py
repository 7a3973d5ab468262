"""What stands in front of the API's routes: the guard (API keys, body size, content type, checked before the app
reads anything) and the memory query's fast path, which answers ``POST /v1/memory/query`` without FastAPI's
per-request machinery."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any, Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from core.settings import ServerSettings
from retrieval.contract import MemoryQueryRequest
from strata.api_errors import ApiError, error_response, route_path, send_error
from strata.telemetry import note_rejection

OPEN_PATHS = frozenset({"/v1/health", "/v1/ready", "/", "/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json"})
# The console page, its script and style, and the docs' assets hold no data: a browser must load them before
# the user can enter a key. Every data route still needs the key.
OPEN_PREFIXES = ("/console/", "/docs-assets/")


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
            await send_error(send, 401, ["header", "authorization"],
                              "a valid API key is required: send 'Authorization: Bearer KEY'", "unauthorized",
                              {"WWW-Authenticate": "Bearer"})
            return
        headers = dict(scope["headers"])
        length = headers.get(b"content-length")
        if length is not None:
            if not length.isdigit():
                await send_error(send, 400, ["header", "content-length"], "Content-Length must be a number",
                                  "invalid_header")
                return
            if int(length) > self.max_body:
                await self._too_large(send)
                return
        if scope["method"] in ("POST", "PUT", "PATCH"):
            ctype = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
            if ctype != b"application/json" and not ctype.endswith(b"+json"):
                await send_error(send, 415, ["header", "content-type"],
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
        await send_error(send, 413, ["body"], f"request body larger than {self.max_body} bytes "
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
