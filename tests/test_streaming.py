"""Streamed LLM answers, against the suite's OpenAI-compatible server (which streams word by word): the client's
stream (cache, retries before the first piece, a stream that breaks), `POST /v1/ask` with `"stream": true` as
server-sent events over a real socket (pieces arrive while the answer is still being written), offline answers
sent at once, refusals before the stream as ordinary errors, and `strata ask --stream`."""

from __future__ import annotations

import json
import shutil
import socket
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import httpx
import openai
import pytest

from core.settings import LLMSettings, StrataSettings
from core.llm_client import LLMClient, LLMError, ResponseCache
from strata.pipeline import index_folder
from tests.conftest import ROOT
from tests.llm_server import FakeLLMServer, Fault

GLOBAL_Q = "What are the recurring problems across all services?"
REDUCE = "These points were gathered"


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLMServer]:
    s = FakeLLMServer().start()
    yield s
    s.stop()


@pytest.fixture(autouse=True)
def _fresh(server: FakeLLMServer) -> Iterator[None]:
    server.reset()
    server.state.stream_delay = 0.0
    yield


def _client(server: FakeLLMServer, tmp: Path, sleeps: list[float]) -> LLMClient:
    s = LLMSettings(base_url=server.base_url, model="test-model", request_timeout_s=2.0, max_retries=3)
    raw = openai.OpenAI(base_url=s.base_url, api_key="test", timeout=s.request_timeout_s, max_retries=0)
    return LLMClient(raw, s, ResponseCache(tmp / "cache.sqlite"), sleep=sleeps.append)


def test_client_stream_pieces_cache_and_retries(server: FakeLLMServer, tmp_path: Path) -> None:
    sleeps: list[float] = []
    client = _client(server, tmp_path, sleeps)
    messages = [{"role": "user", "content": f"{REDUCE} for a test"}]
    server.enqueue(Fault(status=500, match=REDUCE))
    pieces = list(client.stream("global_reduce", messages))
    assert len(pieces) >= 5 and "".join(pieces) == "The corpus keeps returning to one theme [report]."
    assert len(sleeps) == 1 and server.chat_requests[-1]["stream"] is True
    usage = client.usage.stage("global_reduce")
    assert (usage.calls, usage.retries, usage.cache_hits) == (1, 1, 0)
    # The whole answer was cached: the same call comes back as one piece, with no request.
    before = len(server.chat_requests)
    assert list(client.stream("global_reduce", messages)) == ["".join(pieces)]
    assert len(server.chat_requests) == before and client.usage.stage("global_reduce").cache_hits == 1
    # complete() and stream() share the cache entry for the same messages.
    assert client.complete("global_reduce", messages) == "".join(pieces)
    # A stream that breaks after text was sent is an LLMError (and nothing is cached).
    other = [{"role": "user", "content": f"{REDUCE} again"}]
    server.enqueue(Fault(match=REDUCE, break_after=3))
    got: list[str] = []
    with pytest.raises(LLMError, match="the stream broke"):
        for piece in client.stream("global_reduce", other):
            got.append(piece)
    assert got and client.cache is not None and client.cache.get(client.key(other, False)) is None
    client.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Serving:
    """`create_app(settings)` under uvicorn on a free port, in a thread."""

    def __init__(self, settings: StrataSettings) -> None:
        import uvicorn

        from strata.api import create_app

        self.port = _free_port()
        self.server = uvicorn.Server(uvicorn.Config(create_app(settings), host="127.0.0.1", port=self.port,
                                                    log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "the API did not start"
            time.sleep(0.05)
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc: Any) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def _events(base: str, body: dict[str, Any]) -> list[tuple[float, str, dict[str, Any]]]:
    """(arrival time, event name, payload) of each server-sent event of POST /v1/ask."""
    out: list[tuple[float, str, dict[str, Any]]] = []
    with httpx.stream("POST", base + "/v1/ask", json=body, timeout=60) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        name = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                assert name is not None
                out.append((time.monotonic(), name, json.loads(line[6:])))
                name = None
    return out


@pytest.fixture(scope="module")
def llm_workspace(server: FakeLLMServer, tmp_path_factory: pytest.TempPathFactory) -> StrataSettings:
    tmp = tmp_path_factory.mktemp("stream")
    folder = tmp / "notes"
    shutil.copytree(ROOT / "samples" / "infra-notes", folder)
    settings = StrataSettings(data_dir=tmp / "ws", extraction={"mode": "llm"},
                              llm={"base_url": server.base_url, "model": "test-model", "request_timeout_s": 5.0,
                                   "max_retries": 2, "max_concurrency": 2})
    index_folder(folder, settings)
    return settings


def test_api_streams_the_reduce_step_as_it_is_written(server: FakeLLMServer, llm_workspace: StrataSettings) -> None:
    server.state.stream_delay = 0.15
    with _Serving(llm_workspace) as base:
        started = time.monotonic()
        events = _events(base, {"question": GLOBAL_Q, "stream": True})
        names = [e[1] for e in events]
        assert names[-1] == "answer" and set(names[:-1]) == {"delta"} and len(names) >= 6
        answer = events[-1][2]
        assert "".join(e[2]["text"] for e in events[:-1]) == answer["answer"]
        assert answer["answer"].startswith("The corpus keeps returning") and answer["mode"] == "llm"
        assert answer["citations"] and answer["route"]["route"] == "global"
        assert isinstance(answer["index_generation"], int)
        # The pieces arrived as they were written, not all at the end.
        assert events[-1][0] - events[0][0] >= 0.15 * 4, [round(e[0] - started, 2) for e in events]
        # The same question again comes from the answer cache, at once, with the same answer.
        again = _events(base, {"question": GLOBAL_Q, "stream": True})
        assert [e[1] for e in again] == ["delta", "answer"] and again[-1][2]["answer"] == answer["answer"]
        # Without "stream" the response is the usual JSON.
        plain = httpx.post(base + "/v1/ask", json={"question": GLOBAL_Q}, timeout=60)
        assert plain.headers["content-type"].startswith("application/json") and plain.json()["answer"] == answer["answer"]


def test_api_stream_refusals_and_a_broken_stream(server: FakeLLMServer, llm_workspace: StrataSettings) -> None:
    with _Serving(llm_workspace) as base:
        refused = httpx.post(base + "/v1/ask", timeout=60, json={
            "question": GLOBAL_Q, "mode": "global", "stream": True, "metadata_filter": {"team": "payments"}})
        assert refused.status_code == 422 and refused.headers["content-type"].startswith("application/json")
        assert refused.json()["detail"][0]["type"] == "filter_not_applicable"
        assert httpx.post(base + "/v1/ask", json={"question": GLOBAL_Q, "stream": "yes"}, timeout=10).status_code == 422
        # The reduce stream breaks after two words: what was sent stays, the failure is said, the answer ends it.
        server.enqueue(Fault(match=REDUCE, break_after=3))
        events = _events(base, {"question": GLOBAL_Q + " Again?", "stream": True})
        assert events[-1][1] == "answer" and "The reduce step failed" in events[-1][2]["answer"]
        text = "".join(e[2]["text"] for e in events if e[1] == "delta")
        assert text.startswith("The corpus") and "The reduce step failed" in text


def test_offline_answers_stream_at_once(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    shutil.copytree(ROOT / "samples" / "infra-notes", folder)
    settings = StrataSettings(data_dir=tmp_path / "ws", extraction={"mode": "offline"}, cache={"enabled": False})
    index_folder(folder, settings)
    with _Serving(settings) as base:
        events = _events(base, {"question": "Which service sets max_connections?", "stream": True})
        assert [e[1] for e in events] == ["delta", "answer"]
        assert events[0][2]["text"] == events[1][2]["answer"] and events[1][2]["mode"] == "offline"
        assert events[1][2]["citations"] and isinstance(events[1][2]["index_generation"], int)


def test_cli_ask_stream(server: FakeLLMServer, llm_workspace: StrataSettings, monkeypatch: pytest.MonkeyPatch,
                        capsys: pytest.CaptureFixture[str]) -> None:
    from strata.cli import main

    monkeypatch.setenv("STRATA_LLM__BASE_URL", server.base_url)
    monkeypatch.setenv("STRATA_LLM__MODEL", "test-model")
    monkeypatch.setenv("STRATA_EXTRACTION__MODE", "llm")
    ws = str(llm_workspace.data_dir)
    question = GLOBAL_Q + " (cli)"
    assert main(["ask", question, "--stream", "--json", "--data-dir", ws]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [ln["event"] for ln in lines[:-1]] == ["delta"] * (len(lines) - 1) and len(lines) >= 6
    assert lines[-1]["event"] == "answer" and "".join(ln["text"] for ln in lines[:-1]) == lines[-1]["answer"]
    assert main(["ask", question + "?", "--stream", "--data-dir", ws]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("The corpus keeps returning to one theme") and "citations:" in printed
