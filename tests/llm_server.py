"""An OpenAI-compatible HTTP server for the tests, on 127.0.0.1, with scripted answers and injected faults.

The real ``openai`` client talks to it, so retries, timeouts and JSON handling are exercised for real.
Default answers are deterministic and depend only on the prompt:
- extraction: capitalized words and identifiers of the passage as entities (the first three only; a gleaning
  round returns the rest), consecutive entities related;
- community report, description merge, global map and reduce: small valid answers.
``enqueue`` adds faults for the next matching requests: an HTTP status (429 with Retry-After, 500), a delay
(past the client's timeout), or a replacement body (malformed, truncated or schema-ignoring JSON).
``response_format`` is accepted in the forms OpenAI and llama.cpp's servers take (``json_schema``, ``json_object``
with or without a ``schema``, ``text``); ``ServerState.accepted_formats`` narrows them to emulate an endpoint that
rejects a form (with ``reject_status``: 422 by default; llama-cpp-python's server answers ``json_schema`` with a
500 naming ``response_format``), and a malformed one is a 400. The
schema is not enforced: scripted answers show what an endpoint that ignores it returns.
A request with ``"stream": true`` gets server-sent events as OpenAI sends them: ``chat.completion.chunk`` objects,
one per word of the answer (``stream_delay`` seconds apart), then ``data: [DONE]``; a fault's ``break_after``
ends such a stream with an error event after that many chunks.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

import pytest

_IDENT = re.compile(r"\b(?:[A-Z][A-Za-z0-9]+(?:[ -][A-Z][A-Za-z0-9]+)*|[a-z]+(?:[_-][a-z0-9]+)+|HTTP \d{3})\b")
_STOP = {"The", "A", "An", "It", "When", "If", "On", "In", "Follow", "Most", "Both", "Each", "This", "These", "Long", "Invoices"}


@dataclass
class Fault:
    status: int | None = None
    retry_after: float | None = None
    delay: float = 0.0
    content: str | None = None
    match: str | None = None  # applies to the next request whose prompt contains this text
    times: int = 1
    break_after: int | None = None  # a streamed answer ends with an error event after this many chunks


@dataclass
class ServerState:
    faults: list[Fault] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    stream_delay: float = 0.0  # seconds between the chunks of a streamed answer
    accepted_formats: frozenset[str] = frozenset({"json_schema", "json_object_schema", "json_object", "text"})
    reject_status: int = 422
    lock: threading.Lock = field(default_factory=threading.Lock)


def _tokens(text: str) -> int:
    return max(1, (len(text) + 3) // 4)


def passage_entities(passage: str) -> list[str]:
    seen: dict[str, None] = {}
    for m in _IDENT.finditer(passage):
        name = m.group(0)
        if name not in _STOP and len(name) > 2:
            seen.setdefault(name, None)
    return list(seen)


def format_kind(fmt: Any) -> str | None:
    """The form of a ``response_format`` field (``json_object_schema`` for a json_object with a schema), or None
    when it is malformed."""
    if not isinstance(fmt, dict):
        return None
    kind = fmt.get("type")
    if kind == "json_schema":
        spec = fmt.get("json_schema")
        ok = isinstance(spec, dict) and isinstance(spec.get("name"), str) and isinstance(spec.get("schema"), dict)
        return "json_schema" if ok else None
    if kind == "json_object":
        if "schema" in fmt:
            return "json_object_schema" if isinstance(fmt["schema"], dict) else None
        return "json_object"
    return "text" if kind == "text" else None


def default_answer(messages: list[dict[str, str]]) -> str:
    first = messages[0]["content"]
    last = messages[-1]["content"]
    # An extraction: the instructions, a worked example as an earlier turn, then the passage (the last user
    # message holding one).
    passages = [m["content"] for m in messages if m["role"] == "user" and "Passage:\n<<<" in m["content"]]
    if passages:
        passage = passages[-1].split("<<<", 1)[1].rsplit(">>>", 1)[0]
        names = passage_entities(passage)
        glean_rounds = sum(1 for m in messages if m["role"] == "user" and "may have been missed" in m["content"])
        if "may have been missed" in last and glean_rounds == 1:
            chosen = names[3:]
        elif glean_rounds:
            chosen = []
        else:
            chosen = names[:3]
        # Descriptions name the passage's other entities, so an entity seen in several passages collects
        # several distinct descriptions (which LLM mode then merges).
        ents = [{"name": n, "type": "concept", "description": f"{n} as mentioned in the passage"
                 + (" beside " + ", ".join(m for m in chosen if m != n) if len(chosen) > 1 else "")} for n in chosen]
        rels = [{"source": a["name"], "target": b["name"], "description": "appear together", "strength": 5}
                for a, b in zip(ents, ents[1:])]
        return json.dumps({"entities": ents, "relationships": rels})
    if "Write a report on one community" in first:
        ids = re.findall(r"Cite only these passage ids: (.*)", first)
        cited = [i.strip() for i in ids[0].split(",")] if ids else []
        names = re.findall(r"^(.+?) \| ", first, re.MULTILINE)
        title = " and ".join(n for n in names[1:3] if n != "name") or "Community"
        return json.dumps({"title": title, "summary": f"A community about {title}.", "rating": 6.5,
                           "findings": [{"summary": f"{title} appear together", "explanation": "They share passages.",
                                         "chunk_ids": cited[:2]}]})
    if first.startswith("Merge these descriptions"):
        return "A merged description."
    if first.startswith("Answer the question from the passages"):
        ids = re.findall(r"^\[([^\]\s]+)\]", first, re.MULTILINE)
        return json.dumps({"claims": [{"text": "The passages answer it.", "chunk_id": i} for i in ids[:2]]})
    if "List the points of the report" in first:
        return json.dumps({"points": [{"description": "A point from the report.", "score": 70}]})
    if "These points were gathered" in first:
        return "The corpus keeps returning to one theme [report]."
    return "ok"


class _Handler(BaseHTTPRequestHandler):
    state: ServerState

    def log_message(self, *args: Any) -> None:  # keep test output quiet
        return

    def _send(self, status: int, body: dict[str, Any] | str, headers: dict[str, str] | None = None) -> None:
        raw = body if isinstance(body, str) else json.dumps(body)
        data = raw.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _stream(self, body: dict[str, Any], content: str, break_after: int | None) -> None:
        """The answer as OpenAI streams it: a role chunk, one chunk per word, a finish chunk, [DONE]."""
        def chunk(delta: dict[str, str], finish: str | None = None) -> bytes:
            data = {"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": int(time.time()),
                    "model": body.get("model"), "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            return f"data: {json.dumps(data)}\n\n".encode()

        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        pieces = [chunk({"role": "assistant", "content": ""})]
        pieces += [chunk({"content": w}) for w in re.findall(r"\S+\s*|\s+", content)]
        pieces += [chunk({}, "stop"), b"data: [DONE]\n\n"]
        try:
            for i, piece in enumerate(pieces):
                if break_after is not None and i >= break_after:
                    self.wfile.write(b'data: {"error": {"message": "injected stream failure", "type": "test"}}\n\n')
                    return
                self.wfile.write(piece)
                self.wfile.flush()
                if self.state.stream_delay and 0 < i < len(pieces) - 2:
                    time.sleep(self.state.stream_delay)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _take_fault(self, prompt: str) -> Fault | None:
        with self.state.lock:
            for f in self.state.faults:
                if f.match is None or f.match in prompt:
                    f.times -= 1
                    if f.times <= 0:
                        self.state.faults.remove(f)
                    return f
        return None

    def do_POST(self) -> None:  # noqa: N802 - the http.server API
        length = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(length) or b"{}")
        with self.state.lock:
            self.state.in_flight += 1
            self.state.max_in_flight = max(self.state.max_in_flight, self.state.in_flight)
            self.state.history.append({"path": self.path, "body": body})
        try:
            if self.path.endswith("/embeddings"):
                inputs = body.get("input") or []
                inputs = [inputs] if isinstance(inputs, str) else inputs
                data = [{"object": "embedding", "index": i, "embedding": [float(len(t) % 7), 1.0, 0.5]} for i, t in enumerate(inputs)]
                self._send(200, {"object": "list", "data": data, "model": body.get("model"),
                                 "usage": {"prompt_tokens": 1, "total_tokens": 1}})
                return
            messages = body.get("messages", [])
            prompt = "\n".join(m.get("content", "") for m in messages)
            fmt = body.get("response_format")
            if fmt is not None:
                kind = format_kind(fmt)
                if kind is None:
                    self._send(400, {"error": {"message": f"malformed response_format: {fmt!r}", "type": "test"}})
                    return
                if kind not in self.state.accepted_formats:
                    self._send(self.state.reject_status,
                               {"error": {"message": f"response_format {kind} is not supported", "type": "test"}})
                    return
            fault = self._take_fault(prompt)
            if fault and fault.delay:
                time.sleep(fault.delay)
            if fault and fault.status:
                headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else {}
                self._send(fault.status, {"error": {"message": f"injected {fault.status}", "type": "test"}}, headers)
                return
            content = fault.content if fault and fault.content is not None else default_answer(messages)
            if (fmt is not None and messages and messages[0].get("content", "").startswith("Merge these descriptions")
                    and not content.lstrip().startswith("{")):  # asked for JSON, a merge answers in its schema
                content = json.dumps({"description": content})
            if body.get("stream"):
                self._stream(body, content, fault.break_after if fault else None)
                return
            time.sleep(0.01)
            self._send(200, {
                "id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()), "model": body.get("model"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": _tokens(prompt), "completion_tokens": _tokens(content),
                          "total_tokens": _tokens(prompt) + _tokens(content)},
            })
        finally:
            with self.state.lock:
                self.state.in_flight -= 1


class FakeLLMServer:
    def __init__(self) -> None:
        self.state = ServerState()
        handler = type("Handler", (_Handler,), {"state": self.state})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def start(self) -> "FakeLLMServer":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def enqueue(self, *faults: Fault) -> None:
        with self.state.lock:
            self.state.faults.extend(faults)

    def reset(self) -> None:
        with self.state.lock:
            self.state.faults.clear()
            self.state.history.clear()
            self.state.max_in_flight = 0
            self.state.accepted_formats = ServerState.accepted_formats
            self.state.reject_status = ServerState.reject_status

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        return [h["body"] for h in self.state.history if h["path"].endswith("/chat/completions")]


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLMServer]:
    """One scripted server for a test module (import this fixture, and ``fresh_server`` to reset it per test)."""
    s = FakeLLMServer().start()
    yield s
    s.stop()


@pytest.fixture()
def fresh_server(server: FakeLLMServer) -> Iterator[FakeLLMServer]:
    """The module's server with its script, faults and records reset, and the client's per-process memory of
    which response formats endpoints accept cleared, so each test starts from the same state."""
    from core import llm_client

    server.reset()
    llm_client._KNOWN_FORMS.clear()
    yield server
