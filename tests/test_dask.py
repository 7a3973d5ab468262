"""Indexing on Prefect's Dask task runner (a LocalCluster of worker processes): the graph, communities, reports and
searches equal a one-process run's, and a worker killed mid-run is survived (its work is redone elsewhere)."""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest

from core.settings import StrataSettings
from strata.pipeline import index_folder
from tests.conftest import ROOT
from tests.test_generations import assert_same, state


@pytest.fixture(scope="module")
def harness():
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness():
        yield


@pytest.fixture(scope="module")
def cluster():
    from distributed import Client, LocalCluster

    from flows.index import worker_environment

    with worker_environment(), LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                            dashboard_address=None) as c:
        with Client(c) as client:
            yield c, client


def corpus(tmp_path: Path, extra: int = 0) -> Path:
    folder = tmp_path / "notes"
    shutil.copytree(ROOT / "samples" / "infra-notes", folder)
    for i in range(extra):
        (folder / f"extra-{i:03d}.md").write_text(
            f"# Extra {i}\n\nThe worker-{i % 7} pool of the billing-service hit ERR-{4000 + i} after deploy "
            f"v2.{i}. Dana Whitfield drained node-{i} and raised pool.max_size to {8 + i % 5}.\n\n" * 3)
    return folder


def one_process_and_on_cluster(folder: Path, tmp_path: Path, address: str, monkeypatch: pytest.MonkeyPatch,
                               during: threading.Thread | None = None) -> tuple[StrataSettings, StrataSettings, dict]:
    """The same folder indexed in this process and through the flow on the cluster at ``address``."""
    from flows.index import run_flow

    single = StrataSettings(data_dir=tmp_path / "single", extraction={"mode": "offline"})
    index_folder(folder, single)
    monkeypatch.setenv("STRATA_COMPUTE__DASK_ADDRESS", address)
    if during is not None:
        during.start()
    run = run_flow(str(folder), str(tmp_path / "dask"), "changed", True, None)
    monkeypatch.delenv("STRATA_COMPUTE__DASK_ADDRESS")
    return single, StrataSettings(data_dir=tmp_path / "dask", extraction={"mode": "offline"}), run


@pytest.mark.slow
def test_two_dask_workers_index_what_one_process_does(harness, cluster, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    c, client = cluster
    single, distributed, run = one_process_and_on_cluster(corpus(tmp_path, extra=40), tmp_path, c.scheduler_address,
                                                          monkeypatch)
    assert run["published"] and run["chunks_extracted"] == run["chunks_total"] > 0
    # The work ran on the cluster's workers, not in this process.
    prefixes = client.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.task_prefixes))
    assert {"extract_unit_task", "embed_unit_task", "report_unit_task"} <= set(prefixes), prefixes
    assert_same(state(distributed), state(single))


@pytest.mark.slow
def test_llm_mode_on_two_workers_merges_and_reports_as_one_process_does(harness, cluster, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """With an LLM (the suite's OpenAI-compatible server), extraction, description merges and reports run as
    tasks on the workers, and the graph, its merged descriptions and the reports equal a one-process run's."""
    from flows.index import run_flow
    from tests.llm_server import FakeLLMServer

    c, client = cluster
    server = FakeLLMServer().start()
    try:
        llm = {"base_url": server.base_url, "model": "test-model", "request_timeout_s": 5.0, "max_retries": 3,
               "max_concurrency": 2}
        folder = corpus(tmp_path, extra=12)
        single = StrataSettings(data_dir=tmp_path / "single", extraction={"mode": "llm"}, llm=llm)
        index_folder(folder, single)
        merges = sum(1 for b in server.chat_requests if b["messages"][0]["content"].startswith("Merge these"))
        assert merges > 0  # the corpus has entities with several descriptions
        for key, value in (("LLM__BASE_URL", server.base_url), ("LLM__MODEL", "test-model"),
                           ("LLM__REQUEST_TIMEOUT_S", "5.0"), ("LLM__MAX_CONCURRENCY", "2"),
                           ("EXTRACTION__MODE", "llm"), ("COMPUTE__DASK_ADDRESS", c.scheduler_address)):
            monkeypatch.setenv(f"STRATA_{key}", value)
        run = run_flow(str(folder), str(tmp_path / "dask"), "changed", True, None)
        assert run["published"] and run["mode"] == "llm"
        prefixes = client.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.task_prefixes))
        assert {"extract_unit_task", "merge_unit_task", "report_unit_task"} <= set(prefixes), prefixes
        distributed = StrataSettings(data_dir=tmp_path / "dask", extraction={"mode": "llm"}, llm=llm)
        merged = [e for e in state(distributed)["entities"] if "A merged description." in str(e)]
        assert merged
        assert_same(state(distributed), state(single))
    finally:
        server.stop()


@pytest.mark.slow
def test_a_worker_killed_mid_run_is_survived(harness, cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    c, client = cluster
    killed: list[int] = []

    def killer() -> None:
        # Kill the first worker process seen working on a task (the nanny starts a new one).
        deadline = time.time() + 120
        while time.time() < deadline and not killed:
            busy = [w for w, tasks in client.processing().items() if tasks]
            if busy:
                pids = client.run(os.getpid, workers=[busy[0]])
                pid = next(iter(pids.values()))
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                return
            time.sleep(0.005)

    t = threading.Thread(target=killer, daemon=True)
    single, distributed, run = one_process_and_on_cluster(corpus(tmp_path, extra=120), tmp_path, c.scheduler_address,
                                                          monkeypatch, during=t)
    t.join(timeout=5)
    assert killed, "no worker was seen working, so none was killed"
    assert run["published"]
    assert_same(state(distributed), state(single))
    client.wait_for_workers(2, timeout=60)


@pytest.mark.slow
def test_a_run_that_fails_while_workers_embed_keeps_the_vectors_they_finished(
        harness, cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import flows.index
    from core.store import open_store
    from flows.index import run_flow
    from retrieval.embed import make_embedder
    from retrieval.vector_cache import VectorCache

    c, client = cluster

    def embedding_done_then_fail(*args: object, **kwargs: object) -> None:
        deadline = time.time() + 60
        while time.time() < deadline and client.run_on_scheduler(
                lambda dask_scheduler: sum(ts.state != "memory" for ts in dask_scheduler.tasks.values())):
            time.sleep(0.05)
        raise RuntimeError("the merge failed")

    monkeypatch.setattr(flows.index, "stage_merge", embedding_done_then_fail)
    monkeypatch.setenv("STRATA_COMPUTE__DASK_ADDRESS", c.scheduler_address)
    with pytest.raises(RuntimeError, match="merge failed"):
        run_flow(str(corpus(tmp_path, extra=40)), str(tmp_path / "dask"), "changed", True, None)
    settings = StrataSettings(data_dir=tmp_path / "dask", extraction={"mode": "offline"})
    store = open_store(settings)
    try:
        hashes = {chunk.content_hash for chunk in store.all_chunks()}
    finally:
        store.close()
    r = settings.retrieval
    embedder = make_embedder(r.embedder, r.hashing_dim, settings.llm, r.embedding_model, r.embedding_dim)
    cache = VectorCache(tmp_path / "dask" / "vectors.sqlite")
    try:
        assert hashes and set(cache.get_many(embedder.name, sorted(hashes), embedder.dim)) == hashes
    finally:
        cache.close()
