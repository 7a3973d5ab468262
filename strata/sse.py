"""Answers as server-sent events (``POST /v1/ask`` with ``"stream": true``).

Events: ``delta`` (``{"text": ...}``, a piece of the answer's text as the LLM writes it; an answer that is complete
at once, offline or from the cache, comes as one delta), then one ``answer`` event holding the whole answer as
the non-streaming response has it (text, citations, route, index_generation, ...). A failure after the stream
started ends it with an ``error`` event in the API's error shape (``{"detail": [{loc, msg, type}]}``); one before
it started is an ordinary error response with its status code.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, AsyncIterator, Awaitable, Callable

from fastapi.responses import StreamingResponse

MEDIA_TYPE = "text/event-stream"
HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}

Answer = dict[str, Any]

# One event as OpenAPI describes it: its name, and its data (a JSON document).
EVENT_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["event", "data"],
    "properties": {"event": {"type": "string", "enum": ["delta", "answer", "error"]},
                   "data": {"type": "string", "contentMediaType": "application/json",
                            "description": 'delta: {"text"}; answer: the answer as without "stream"; '
                                           'error: {"detail": [{"loc", "msg", "type"}]}'}}}


def event(name: str, data: Any) -> bytes:
    """One server-sent event with a JSON payload (JSON keeps newlines in the text out of the framing)."""
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def _error(exc: BaseException) -> dict[str, Any]:
    if hasattr(exc, "loc") and hasattr(exc, "msg") and hasattr(exc, "type"):
        return {"detail": [{"loc": exc.loc, "msg": exc.msg, "type": exc.type}]}
    return {"detail": [{"loc": [], "msg": f"the answer failed: {type(exc).__name__}", "type": "internal_error"}]}


def at_once(answer: Answer) -> StreamingResponse:
    """A complete answer as a stream: its text as one delta, then the answer."""
    async def events() -> AsyncIterator[bytes]:
        yield event("delta", {"text": answer.get("answer", "")})
        yield event("answer", answer)

    return StreamingResponse(events(), media_type=MEDIA_TYPE, headers=HEADERS)


async def stream_answer(start: Callable[[Callable[[str], None]], Awaitable[Answer]],
                        done: Callable[[Answer], Any] | None = None) -> StreamingResponse:
    """Run ``start(on_delta)`` (the answer's work, which calls ``on_delta`` from its thread for each piece of
    text) and stream the pieces as they come. Until the first piece the response has not started, so a refusal
    raised before it becomes the usual error response. ``done`` gets the complete answer (for a cache)."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[str] = asyncio.Queue()

    def on_delta(text: str) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, text)

    task = asyncio.ensure_future(start(on_delta))
    getter = asyncio.ensure_future(queue.get())
    await asyncio.wait({task, getter}, return_when=asyncio.FIRST_COMPLETED)
    if not getter.done():
        getter.cancel()
        answer = task.result()  # raises the refusal: an ordinary error response
        if done is not None:
            done(answer)
        return at_once(answer)
    first = getter.result()

    async def events() -> AsyncIterator[bytes]:
        yield event("delta", {"text": first})
        while True:
            nxt = asyncio.ensure_future(queue.get())
            await asyncio.wait({task, nxt}, return_when=asyncio.FIRST_COMPLETED)
            if nxt.done():
                yield event("delta", {"text": nxt.result()})
                continue
            nxt.cancel()
            break
        while not queue.empty():
            yield event("delta", {"text": queue.get_nowait()})
        try:
            answer = task.result()
        except Exception as exc:  # noqa: BLE001 - the client already has part of the answer: say why it ends
            yield event("error", _error(exc))
            return
        if done is not None:
            done(answer)
        yield event("answer", answer)

    return StreamingResponse(events(), media_type=MEDIA_TYPE, headers=HEADERS)
