"""The API's one error shape, ``{"detail": [{"loc": [...], "msg": "...", "type": "..."}]}``: its models, the
refusal every route and middleware raises (:class:`ApiError`), and the handlers that give FastAPI's own errors
(validation, 404, 405, a bug) the same shape."""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import Scope, Send

from retrieval.filters import tidy_filter_error
from strata.telemetry import note_rejection


class ErrorItem(BaseModel):
    loc: list[str | int] = Field(description="where the problem is: ['body', field, ...], ['header', name], ...")
    msg: str
    type: str


class ErrorResponse(BaseModel):
    """The body of every 4xx and 503."""

    detail: list[ErrorItem]


ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorResponse, "description": text} for code, text in (
        (400, "malformed request"), (401, "missing or invalid API key"), (413, "body too large"),
        (415, "body not sent as JSON"), (422, "invalid request: each problem names its field"),
        (503, "busy, timed out, or no index loaded (see Retry-After)"))}


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


async def send_error(send: Send, status: int, loc: list[Any], msg: str, type_: str,
                     headers: dict[str, str] | None = None) -> None:
    note_rejection(type_)
    body = error_body([(loc, msg, type_)])
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def install_error_handlers(app: FastAPI) -> None:
    """FastAPI's errors in the API's shape: a refusal, a request that does not validate, a 404 or 405, a bug."""

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

    from strata.integrity import GenerationDamagedError

    @app.exception_handler(GenerationDamagedError)
    async def _damaged(_request: Request, exc: GenerationDamagedError) -> Response:
        # A part of the served generation read on first use (its reports, its graph: the console) was damaged
        # after the generation loaded; the message names the file and the command that rebuilds it.
        return error_response(503, [([], str(exc), "generation_damaged")])

    @app.exception_handler(Exception)
    async def _bug(_request: Request, exc: Exception) -> Response:
        return error_response(500, [([], f"internal error ({type(exc).__name__}); this is a bug", "internal")])
