"""The API's time limit for answers follows the LLM settings: an LLM-written answer slower than
``server.request_timeout_s`` is waited for (within ``server.llm_request_timeout_s`` or its derived default) while
memory queries and offline answers keep the short limit; every answer call asks for a bounded number of tokens.
Against the scripted OpenAI-compatible server (tests/llm_server.py)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from core.settings import StrataSettings
from answers.llm_local import ANSWER_MAX_TOKENS
from strata.api import create_app
from strata.pipeline import index_folder
from tests.conftest import ROOT
from tests.llm_server import FakeLLMServer, Fault, server  # noqa: F401 (fixtures)

ANSWER_PROMPT = "Answer the question from the passages"


@pytest.fixture(scope="module")
def workspace(server: FakeLLMServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("serve-timeout")
    shutil.copytree(ROOT / "samples" / "infra-notes", tmp / "notes")
    index_folder(tmp / "notes", settings_for(server, tmp / "ws"))
    return tmp / "ws"


def settings_for(server: FakeLLMServer, data_dir: Path, **srv: object) -> StrataSettings:
    return StrataSettings(data_dir=data_dir, extraction={"mode": "llm"}, server=srv, cache={"enabled": False},
                          llm={"base_url": server.base_url, "model": "test-model", "request_timeout_s": 3.0,
                               "max_retries": 0, "max_concurrency": 2})


def test_an_llm_answer_slower_than_the_request_timeout_is_waited_for(server: FakeLLMServer, workspace: Path) -> None:
    settings = settings_for(server, workspace, request_timeout_s=0.5)
    assert settings.answer_timeout_s == 3.0 * (1 + 4 + 1)  # classifier, 8 reports over 2 at once, the answer
    with TestClient(create_app(settings), raise_server_exceptions=False) as c:
        server.reset()
        server.enqueue(Fault(delay=1.2, match=ANSWER_PROMPT))  # slower than request_timeout_s, within the LLM's
        r = c.post("/v1/ask", json={"question": "Why did the billing-service return HTTP 504?", "mode": "local"})
        assert r.status_code == 200, r.text
        assert r.json()["mode"] == "llm" and r.json()["citations"]
        asked = [q for q in server.chat_requests if q["messages"][0]["content"].startswith(ANSWER_PROMPT)]
        assert asked and all(q["max_tokens"] == ANSWER_MAX_TOKENS for q in asked)  # a runaway answer is cut
        # Memory queries keep the short limit (they never call the LLM).
        engine = c.app.state.holder.engine  # type: ignore[attr-defined]
        real = engine.query
        engine.query = lambda request: (time.sleep(1.0), real(request))[1]
        slow = c.post("/v1/memory/query", json={"query_id": "q", "search_text": "billing"})
        assert slow.status_code == 503 and "server.request_timeout_s" in slow.json()["detail"][0]["msg"]


def test_a_set_llm_request_timeout_still_cuts_a_slow_answer(server: FakeLLMServer, workspace: Path) -> None:
    settings = settings_for(server, workspace, request_timeout_s=0.3, llm_request_timeout_s=0.6)
    with TestClient(create_app(settings), raise_server_exceptions=False) as c:
        server.reset()
        server.enqueue(Fault(delay=2.0, match=ANSWER_PROMPT))
        # (a question the reader finds answered: a declined one is answered offline, without a call)
        r = c.post("/v1/ask", json={"question": "What did the on-call engineer raise db.pool.size to?", "mode": "local"})
        assert r.status_code == 503 and r.headers["Retry-After"]
        assert "server.llm_request_timeout_s" in r.json()["detail"][0]["msg"]


def test_the_answer_timeout_is_the_request_timeout_offline_and_never_below_it(tmp_path: Path) -> None:
    offline = StrataSettings(data_dir=tmp_path, extraction={"mode": "offline"}, server={"request_timeout_s": 7})
    assert offline.answer_timeout_s == 7
    local = StrataSettings(data_dir=tmp_path, llm={"base_url": "http://127.0.0.1:8080/v1", "max_concurrency": 1})
    assert local.answer_timeout_s == 600 * (1 + 8 + 1)  # a local model: 600 s a call
    quick = StrataSettings(data_dir=tmp_path, llm={"base_url": "http://127.0.0.1:8080/v1", "request_timeout_s": 1},
                           server={"request_timeout_s": 30})
    assert quick.answer_timeout_s == 30
