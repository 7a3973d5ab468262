"""A damaged LLM response cache (``llm_cache.sqlite``) never stops a run: whether the file is found damaged when it
is opened or by a read or write later in the run (damaged while the run holds it), it is set aside under a name
with the time, one warning names it, a new cache is started and the run goes on (asking again what it held)."""

from __future__ import annotations

import logging
import os
import re
import shutil
from pathlib import Path

import openai
import pytest

from core.settings import LLMSettings, StrataSettings
from core.llm_client import LLMClient, ResponseCache
from strata.pipeline import index_folder
from tests.conftest import ROOT
from tests.llm_server import FakeLLMServer, server, fresh_server  # noqa: F401 (fixtures)

HELLO = [{"role": "user", "content": "hello"}]


@pytest.fixture(autouse=True)
def _fresh(fresh_server: FakeLLMServer) -> None:
    """Each test starts from a reset server (tests/llm_server.py)."""


def garbage(path: Path) -> None:
    """Every byte of the file replaced by noise (in place: a process holding it open reads the noise)."""
    size = path.stat().st_size
    with open(path, "r+b") as fh:
        fh.write(os.urandom(size))


def truncated(path: Path) -> None:
    os.truncate(path, path.stat().st_size // 2)


def question(i: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"question {i}"}]


def filled(path: Path, keys: list[str] | None = None, n: int = 300) -> None:
    """A real cache of ``n`` answers (under ``keys`` when given), closed, so that all of it is in the main file
    and none in the WAL."""
    cache = ResponseCache(path)
    for i in range(n):
        cache.put(keys[i] if keys else f"key-{i}", "test-model", "answer " * 60, 10, 20)
    cache.close()


def client(server: FakeLLMServer, cache: Path) -> LLMClient:
    s = LLMSettings(base_url=server.base_url, model="test-model", request_timeout_s=2.0, max_retries=1)
    raw = openai.OpenAI(base_url=s.base_url, api_key="test", timeout=s.request_timeout_s, max_retries=0)
    return LLMClient(raw, s, ResponseCache(cache), sleep=lambda _: None)


def set_aside_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("llm_cache.sqlite.damaged-*") if not p.name.endswith(("-wal", "-shm")))


def warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "strata.cache" and r.levelno == logging.WARNING]


@pytest.mark.parametrize("damage", [garbage, truncated], ids=["garbage", "truncated"])
def test_a_cache_damaged_while_the_run_holds_it_is_set_aside_and_the_run_goes_on(
        server: FakeLLMServer, tmp_path: Path, caplog, damage) -> None:
    path = tmp_path / "llm_cache.sqlite"
    keying = client(server, tmp_path / "keys.sqlite")
    keys = [keying.key(question(i), False) for i in range(300)]
    keying.close()
    filled(path, keys)
    llm = client(server, path)  # opened intact: the run has started
    assert llm.complete("t", HELLO) == "ok"  # asked, and committed to the cache
    assert llm.complete("t", question(7)) == "answer " * 60 and llm.usage.stage("t").cache_hits == 1
    before = len(server.chat_requests)
    damage(path)
    with caplog.at_level(logging.WARNING, logger="strata.cache"):
        # A cached answer not read yet this run: SQLite reads its page from the damaged file.
        assert llm.complete("t", question(280)) == "ok"  # the cache is set aside, the question asked
        assert llm.complete("t", HELLO) == "ok"  # what the lost cache held is asked again, then cached anew
        assert llm.complete("t", HELLO) == "ok"
    assert len(server.chat_requests) == before + 2
    aside = set_aside_files(tmp_path)
    assert len(aside) == 1 and re.fullmatch(r"llm_cache\.sqlite\.damaged-\d{8}T\d{6}-\d+", aside[0].name)
    assert aside[0].stat().st_size > 0  # kept for inspection, not emptied
    said = warnings(caplog)
    assert len(said) == 1 and "\n" not in said[0]
    assert str(path) in said[0] and aside[0].name in said[0] and "damaged" in said[0]
    llm.close()
    fresh = ResponseCache(path)  # the new cache is a sound file holding what was asked since
    assert fresh.get(llm.key(HELLO, False)) is not None
    fresh.close()


@pytest.mark.parametrize("damage", [garbage, truncated], ids=["garbage", "truncated"])
def test_a_write_that_meets_the_damage_goes_to_a_new_cache(tmp_path: Path, caplog, damage) -> None:
    path = tmp_path / "llm_cache.sqlite"
    filled(path)
    cache = ResponseCache(path)
    damage(path)
    with caplog.at_level(logging.WARNING, logger="strata.cache"):
        cache.put("key-new", "test-model", "fresh", 1, 2)
        cache.delete("key-3")
    assert cache.get("key-new") == ("fresh", 1, 2) and cache.get("key-5") is None
    cache.close()
    assert len(set_aside_files(tmp_path)) == 1 and len(warnings(caplog)) == 1


def test_a_file_of_garbage_bytes_is_set_aside_when_opened(server: FakeLLMServer, tmp_path: Path, caplog) -> None:
    path = tmp_path / "llm_cache.sqlite"
    path.write_bytes(os.urandom(64 * 1024))  # "file is not a database"
    with caplog.at_level(logging.WARNING, logger="strata.cache"):
        llm = client(server, path)
        assert llm.complete("t", HELLO) == "ok"
    llm.close()
    aside = set_aside_files(tmp_path)
    assert len(aside) == 1 and aside[0].stat().st_size == 64 * 1024
    assert len(warnings(caplog)) == 1 and str(path) in warnings(caplog)[0]


def test_a_second_connection_opens_the_new_cache_instead_of_setting_it_aside(tmp_path: Path, caplog) -> None:
    """Two clients of one run (one per batch) hold the same file: the first to meet the damage sets it aside; the
    other then reads the new cache, and sets nothing else aside (the new cache keeps what the first wrote)."""
    path = tmp_path / "llm_cache.sqlite"
    filled(path)
    first, second = ResponseCache(path), ResponseCache(path)
    garbage(path)
    with caplog.at_level(logging.WARNING, logger="strata.cache"):
        assert first.get("key-1") is None
        first.put("key-a", "test-model", "from the first", 1, 1)
        assert second.get("key-a") == ("from the first", 1, 1)
    first.close()
    second.close()
    assert len(set_aside_files(tmp_path)) == 1 and len(warnings(caplog)) == 1


def test_an_llm_index_run_goes_on_over_a_damaged_cache(server: FakeLLMServer, tmp_path: Path, caplog) -> None:
    folder = tmp_path / "notes"
    shutil.copytree(ROOT / "samples" / "infra-notes", folder)
    settings = StrataSettings(data_dir=tmp_path / "ws", extraction={"mode": "llm"},
                              llm={"base_url": server.base_url, "model": "test-model", "request_timeout_s": 2.0,
                                   "max_retries": 1, "max_concurrency": 2})
    first = index_folder(folder, settings)
    cache = tmp_path / "ws" / "llm_cache.sqlite"
    truncated(cache)
    with caplog.at_level(logging.WARNING, logger="strata.cache"):
        again = index_folder(folder, settings, full=True)
    assert again.failed_chunks == 0 and again.entities == first.entities
    assert len(set_aside_files(tmp_path / "ws")) == 1
    assert any(str(cache) in m for m in warnings(caplog))
