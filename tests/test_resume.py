"""A run killed with SIGKILL at any point, then started again, ends with the same graph, reports and index as an
uninterrupted run, and repeats no finished LLM call."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from strata.engine import Engine
from strata.pipeline import index_folder
from core.settings import StrataSettings
from core.store import open_store
from tests.conftest import ROOT
from tests.llm_server import FakeLLMServer

KILLER = textwrap.dedent("""
    import os, signal, sys
    from strata.pipeline import index_folder
    from core.settings import StrataSettings
    folder, data_dir, stage, after, llm_url = sys.argv[1:6]
    seen = {"n": 0}
    def progress(name, advance, total):
        if name == stage:
            seen["n"] += 1
            if seen["n"] > int(after):
                os.kill(os.getpid(), signal.SIGKILL)
    kwargs = {"data_dir": data_dir, "extraction": {"mode": "llm" if llm_url != "-" else "offline"}}
    if llm_url != "-":
        kwargs["llm"] = {"base_url": llm_url, "model": "test-model", "max_concurrency": 2}
    index_folder(folder, StrataSettings(**kwargs), progress)
    print("finished without being killed")
""")


def run_killed(folder: Path, data_dir: Path, stage: str, after: int, llm_url: str = "-") -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", KILLER, str(folder), str(data_dir), stage, str(after), llm_url],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stdout + proc.stderr


def state(settings: StrataSettings) -> dict:
    store = open_store(settings)
    try:
        reports = [(r.community_id, r.level, r.title, r.summary, r.findings, r.fingerprint, r.stale) for r in store.reports()]
        snap = store.read_graph()
        comms = store.communities()
        hashes = store.document_hashes()
    finally:
        store.close()
    engine = Engine(settings)
    hits = {q: [(h.chunk_id, round(h.rrf_score, 12)) for h in engine.index.search(q, 5)]
            for q in ("billing-service HTTP 504", "Redis eviction", "PostgreSQL max_connections", "Kafka lag")}
    engine.close()
    return {"graph": snap, "communities": comms, "reports": reports, "hashes": hashes, "hits": hits}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    f = tmp_path / "notes"
    shutil.copytree(ROOT / "samples" / "infra-notes", f)
    return f


@pytest.mark.parametrize("stage,after", [("extract", 2), ("extract", 5), ("communities", 0), ("reports", 3)])
def test_killed_run_resumes_to_the_same_state(folder: Path, tmp_path: Path, stage: str, after: int) -> None:
    clean = StrataSettings(data_dir=tmp_path / "clean", extraction={"mode": "offline"})
    index_folder(folder, clean)
    resumed = StrataSettings(data_dir=tmp_path / "resumed", extraction={"mode": "offline"})
    run_killed(folder, resumed.data_dir, stage, after)
    index_folder(folder, resumed)
    assert state(resumed) == state(clean)


def test_killed_reindex_after_an_edit_resumes(folder: Path, tmp_path: Path) -> None:
    clean = StrataSettings(data_dir=tmp_path / "clean", extraction={"mode": "offline"})
    resumed = StrataSettings(data_dir=tmp_path / "resumed", extraction={"mode": "offline"})
    index_folder(folder, clean)
    index_folder(folder, resumed)
    edited = folder / "postgres-operations.md"
    edited.write_text(edited.read_text().replace("max_connections is 200", "max_connections is 300"))
    index_folder(folder, clean)
    run_killed(folder, resumed.data_dir, "reports", 1)  # the store has the edit, the chunk index does not yet
    index_folder(folder, resumed)
    assert state(resumed) == state(clean)


def test_resumed_llm_run_repeats_no_finished_call(folder: Path, tmp_path: Path) -> None:
    server = FakeLLMServer().start()
    try:
        llm = {"base_url": server.base_url, "model": "test-model", "max_concurrency": 2}
        clean = StrataSettings(data_dir=tmp_path / "clean", extraction={"mode": "llm"}, llm=llm)
        index_folder(folder, clean)
        clean_calls = len(server.chat_requests)
        server.reset()
        resumed = StrataSettings(data_dir=tmp_path / "resumed", extraction={"mode": "llm"}, llm=llm)
        run_killed(folder, resumed.data_dir, "reports", 2, server.base_url)
        index_folder(folder, resumed)
        assert len(server.chat_requests) == clean_calls
        assert state(resumed)["graph"] == state(clean)["graph"]
    finally:
        server.stop()
