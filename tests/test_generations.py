"""Index generations: runs killed (SIGKILL) at points spread over every stage, once, twice or three times before
a clean finish, end with exactly what one uninterrupted run leaves: entities, relations, communities and reports
compared field by field, and the top 10 of 20 searches, on the embedded store and on the real Neo4j. Also: the
store going away mid-run, documents indexed in another order, and what a published generation holds."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bench.kill import observable_state, state_differences
from core.settings import StrataSettings
from core.store import StoreError, open_store
from strata.engine import Engine
from strata.pipeline import index_folder
from strata.workspace import Workspace
from tests.conftest import ROOT

KILLER = textwrap.dedent("""
    import json, os, signal, sys
    from strata.pipeline import index_folder
    from core.settings import StrataSettings
    folder, settings_json, stage, after = sys.argv[1:5]
    seen = {"n": 0}
    def progress(name, advance, total):
        if name == stage:
            if seen["n"] >= int(after):
                os.kill(os.getpid(), signal.SIGKILL)
            seen["n"] += 1
    index_folder(folder, StrataSettings(**json.loads(settings_json)), progress)
    print("finished without being killed")
""")

QUERIES = ("billing-service HTTP 504", "Redis eviction policy", "PostgreSQL max_connections", "Kafka consumer lag",
           "ledger-service payments", "search-api cache", "api-gateway timeout", "connection pool", "incident review",
           "retry backoff", "disk usage", "replication", "rate limit", "deploy rollback", "TLS certificate",
           "on-call", "latency p99", "schema migration", "alert threshold", "capacity planning")

# (stage, how many of its progress calls pass before the kill): every stage of a run, several inside the long ones.
KILL_POINTS = [("load", 0), ("extract", 0), ("extract", 3), ("merge", 0), ("communities", 0), ("reports", 0),
               ("reports", 5), ("embed", 0), ("embed", 1), ("publish", 0), ("publish", 1), ("publish", 2),
               ("publish", 3)]
# Each scenario: the kills before the clean finish (1, 2 or 3 of them).
SCENARIOS = [[p] for p in KILL_POINTS] + [
    [("extract", 2), ("communities", 0)],
    [("merge", 0), ("reports", 2)],
    [("embed", 0), ("publish", 2)],
    [("extract", 1), ("reports", 1), ("publish", 1)],
    [("load", 0), ("merge", 0), ("publish", 3)],
]


def settings_dict(data_dir: Path, store: dict[str, Any] | None = None) -> dict[str, Any]:
    d: dict[str, Any] = {"data_dir": str(data_dir), "extraction": {"mode": "offline"}}
    if store:
        d["store"] = store
    return d


def run_killed(folder: Path, conf: dict[str, Any], stage: str, after: int) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", KILLER, str(folder), json.dumps(conf), stage, str(after)],
                          env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == -signal.SIGKILL, f"not killed at {stage}/{after}: {proc.stdout}{proc.stderr}"


def state(settings: StrataSettings) -> dict[str, Any]:
    """Everything a user can observe, field by field (report timestamps aside): bench.kill's comparison."""
    return observable_state(settings, QUERIES)


def assert_same(got: dict[str, Any], want: dict[str, Any]) -> None:
    differences = state_differences(got, want)
    assert not differences, "; ".join(differences)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    f = tmp_path / "notes"
    shutil.copytree(ROOT / "samples" / "infra-notes", f)
    return f


def edit_folder(folder: Path) -> None:
    """A reindex's worth of change: one document edited, one deleted, one added."""
    edited = folder / "postgres-operations.md"
    edited.write_text(edited.read_text().replace("max_connections", "max_connections (raised after INC-2207)", 1))
    (folder / "kafka-consumers.md").unlink()
    (folder / "cdn-notes.md").write_text(
        "# CDN notes\n\nThe edge-cache in front of the search-api returns HTTP 503 when the origin pool is drained. "
        "Mara Lindqvist moved the purge job to the ledger-service window after INC-2207.\n")


# -- the embedded store --------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("kills", SCENARIOS, ids=lambda k: "+".join(f"{s}{n}" for s, n in k))
def test_killed_first_run_ends_as_an_uninterrupted_one(folder: Path, tmp_path: Path, kills: list) -> None:
    clean = StrataSettings(**settings_dict(tmp_path / "clean"))
    index_folder(folder, clean)
    conf = settings_dict(tmp_path / "killed")
    for stage, after in kills:
        run_killed(folder, conf, stage, after)
    index_folder(folder, StrataSettings(**conf))
    assert_same(state(StrataSettings(**conf)), state(clean))


@pytest.mark.slow
@pytest.mark.parametrize("kills", [[("remove", 0)], [("extract", 0), ("embed", 0)], [("merge", 0), ("publish", 2)],
                                   [("communities", 0), ("reports", 1), ("publish", 1)]],
                         ids=lambda k: "+".join(f"{s}{n}" for s, n in k))
def test_killed_reindex_ends_as_an_uninterrupted_one(folder: Path, tmp_path: Path, kills: list) -> None:
    clean = StrataSettings(**settings_dict(tmp_path / "clean"))
    conf = settings_dict(tmp_path / "killed")
    index_folder(folder, clean)
    index_folder(folder, StrataSettings(**conf))
    edit_folder(folder)
    index_folder(folder, clean)
    for stage, after in kills:
        run_killed(folder, conf, stage, after)
    index_folder(folder, StrataSettings(**conf))
    assert_same(state(StrataSettings(**conf)), state(clean))


def test_order_of_arrival_does_not_change_the_graph(folder: Path, tmp_path: Path) -> None:
    """Documents indexed one at a time in two different orders end with the same merged fields (communities are
    path-dependent by design: an incremental run keeps the communities a change did not reach)."""
    names = sorted(p.name for p in folder.iterdir())
    results = []
    for order in (names, names[::-1]):
        conf = settings_dict(tmp_path / f"ws-{order[0]}")
        staging = tmp_path / f"in-{order[0]}"
        staging.mkdir()
        for name in order:
            shutil.copy(folder / name, staging / name)
            index_folder(staging, StrataSettings(**conf))
        results.append(state(StrataSettings(**conf)))
    assert results[1]["entities"] == results[0]["entities"]
    assert results[1]["relations"] == results[0]["relations"]


def test_generation_is_published_only_when_something_changed(folder: Path, settings: StrataSettings) -> None:
    first = index_folder(folder, settings)
    again = index_folder(folder, settings)
    assert first.published and first.generation == 1
    assert not again.published and again.generation == 1
    (folder / "api-gateway.md").write_text("# Gateway\n\nThe api-gateway now retries HTTP 502 twice.\n")
    third = index_folder(folder, settings)
    assert third.published and third.generation == 2
    ws = Workspace(settings.data_dir)
    assert ws.current_number() == 2 and ws.numbers() == [1, 2]
    manifest = ws.current().manifest()
    assert manifest["generation"] == 2 and manifest["chunks"] == third.chunks_total


def test_old_generations_are_pruned_unless_a_reader_holds_them(folder: Path, tmp_path: Path) -> None:
    settings = StrataSettings(data_dir=tmp_path / "ws", extraction={"mode": "offline"}, index={"keep_generations": 1})
    index_folder(folder, settings)
    reader = Engine(settings)  # holds generation 1
    try:
        for i in range(3):
            (folder / f"extra-{i}.md").write_text(f"# Extra {i}\n\nThe worker-{i} pool drains at 02:00 UTC.\n")
            index_folder(folder, settings)
        ws = Workspace(settings.data_dir)
        assert ws.current_number() == 4
        assert ws.numbers() == [1, 4]  # 2 and 3 pruned; 1 held by the reader
        assert reader.generation == 1 and reader.index.search("worker-0 pool", 3)  # still answers from 1
        assert reader.check_reload() and reader.generation == 4
    finally:
        reader.close()
    (folder / "extra-9.md").write_text("# Extra 9\n\nThe worker-9 pool drains at 03:00 UTC.\n")
    index_folder(folder, settings)
    assert Workspace(settings.data_dir).numbers() == [5]


def test_a_second_index_run_on_the_same_workspace_is_refused(folder: Path, settings: StrataSettings) -> None:
    from strata.workspace import IndexLockedError

    with Workspace(settings.data_dir).lock():
        with pytest.raises(IndexLockedError, match="another index run"):
            index_folder(folder, settings)


def test_jsonl_source_names_the_row_by_id_and_follows_its_line(tmp_path: Path, settings: StrataSettings) -> None:
    data = tmp_path / "rows"
    data.mkdir()
    rows = [{"id": f"row-{i}", "text": f"Ticket {i}: the billing-service returned HTTP 50{i % 10} on node-{i}."}
            for i in range(12)]
    path = data / "tickets.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    index_folder(data, settings)
    path.write_text("\n".join(json.dumps(r) for r in rows[10:] + rows[2:10]) + "\n")  # rows 0-1 gone, 10-11 first
    index_folder(data, settings)
    engine = Engine(settings)
    try:
        hit = next(h for h in engine.index.search("node-5", 10) if h.document_id == "row-5")
        row = engine.index.rows[engine.index.by_id[hit.chunk_id]]
    finally:
        engine.close()
    assert hit.source == "tickets.jsonl#row-5"
    assert row.fields["line"] == 6  # was line 6 of 12, now: rows 10, 11, then 2..9 -> row-5 is line 6 again
    assert "row-0" not in {r.document_id for r in engine.index.rows}


# -- the store going away mid-run ---------------------------------------------------------------------------

class FlakyStore:
    """Wraps a store; every call fails with StoreError once ``fail_after`` writes have gone through."""

    WRITES = {"upsert_documents", "upsert_chunks", "upsert_entities", "upsert_relations", "save_extractions",
              "set_attributes", "delete_document", "replace_communities", "save_reports", "delete_reports"}

    def __init__(self, inner: Any, fail_after: int) -> None:
        self.inner, self.left, self.backend = inner, fail_after, inner.backend

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not callable(attr) or name == "close":
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            if self.left <= 0:
                raise StoreError("the store went away (connection refused)")
            if name in self.WRITES:
                self.left -= 1
            return attr(*args, **kwargs)
        return call


@pytest.mark.parametrize("fail_after", [3, 9, 14, 17])
def test_store_failing_mid_run_then_rerun_equals_a_clean_run(folder: Path, tmp_path: Path, fail_after: int) -> None:
    clean = StrataSettings(**settings_dict(tmp_path / "clean"))
    index_folder(folder, clean)
    flaky_settings = StrataSettings(**settings_dict(tmp_path / "flaky"))
    inner = open_store(flaky_settings)
    try:
        with pytest.raises(StoreError):
            index_folder(folder, flaky_settings, store=FlakyStore(inner, fail_after))  # type: ignore[arg-type]
    finally:
        inner.close()
    index_folder(folder, flaky_settings)
    assert_same(state(flaky_settings), state(clean))


# -- the real Neo4j -----------------------------------------------------------------------------------------

class TcpProxy:
    """A TCP relay in front of Neo4j's Bolt port that the test can cut (the server seems to vanish) and restore."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.open = True
        self.conns: list[socket.socket] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            if not self.open:
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def cut(self) -> None:
        self.open = False
        with self.lock:
            for c in self.conns:
                try:
                    c.shutdown(socket.SHUT_RDWR)
                    c.close()
                except OSError:
                    pass
            self.conns = []

    def restore(self) -> None:
        self.open = True

    def close(self) -> None:
        self.cut()
        self.sock.close()


def _neo4j_conf(data_dir: Path, store_settings: Any, uri: str | None = None) -> dict[str, Any]:
    store = {"backend": "neo4j", "neo4j_uri": uri or store_settings.neo4j_uri,
             "neo4j_password": store_settings.neo4j_password.get_secret_value(), "batch_size": 500}
    return settings_dict(data_dir, store)


def _clear_neo4j(conf: dict[str, Any]) -> None:
    store = open_store(StrataSettings(**conf))
    try:
        store.clear()
    finally:
        store.close()


NEO4J_SCENARIOS = [[("extract", 3)], [("merge", 0)], [("communities", 0)], [("reports", 5)], [("embed", 1)],
                   [("publish", 2)], [("load", 0), ("reports", 0)], [("extract", 0), ("merge", 0), ("publish", 3)]]


@pytest.mark.neo4j
@pytest.mark.slow
def test_neo4j_killed_runs_end_as_an_uninterrupted_embedded_run(folder: Path, tmp_path: Path,
                                                                 neo4j_store_settings: Any) -> None:
    """The uninterrupted reference is the embedded store's run: both backends must end identical too."""
    want = state(_run_clean(folder, tmp_path / "clean"))
    for i, kills in enumerate(NEO4J_SCENARIOS):
        conf = _neo4j_conf(tmp_path / f"neo4j-{i}", neo4j_store_settings)
        _clear_neo4j(conf)
        for stage, after in kills:
            run_killed(folder, conf, stage, after)
        index_folder(folder, StrataSettings(**conf))
        assert_same(state(StrataSettings(**conf)), want)


def _run_clean(folder: Path, data_dir: Path) -> StrataSettings:
    settings = StrataSettings(**settings_dict(data_dir))
    index_folder(folder, settings)
    return settings


@pytest.mark.neo4j
@pytest.mark.slow
def test_neo4j_killed_reindex_ends_as_an_uninterrupted_one(folder: Path, tmp_path: Path,
                                                           neo4j_store_settings: Any) -> None:
    clean = _run_clean(folder, tmp_path / "clean")
    conf = _neo4j_conf(tmp_path / "neo4j", neo4j_store_settings)
    _clear_neo4j(conf)
    index_folder(folder, StrataSettings(**conf))
    edit_folder(folder)
    index_folder(folder, clean)
    for stage, after in [("remove", 0), ("extract", 0), ("publish", 1)]:
        run_killed(folder, conf, stage, after)
    index_folder(folder, StrataSettings(**conf))
    assert_same(state(StrataSettings(**conf)), state(clean))


@pytest.mark.neo4j
@pytest.mark.slow
def test_neo4j_gone_mid_run_then_back_equals_a_clean_run(folder: Path, tmp_path: Path,
                                                         neo4j_store_settings: Any) -> None:
    """The Bolt connection is cut mid-run (every open socket reset, new ones refused); the run fails with a store
    error; the server comes back and a rerun ends as a clean run."""
    want = state(_run_clean(folder, tmp_path / "clean"))
    host, port = neo4j_store_settings.neo4j_uri.rsplit("//", 1)[1].rsplit(":", 1)
    proxy = TcpProxy((host, int(port)))
    try:
        conf = _neo4j_conf(tmp_path / "neo4j", neo4j_store_settings, f"bolt://127.0.0.1:{proxy.port}")
        conf["store"].update(connection_timeout_s=2, retry_time_s=2)
        _clear_neo4j(conf)

        def progress(stage: str, advance: int, total: int | None) -> None:
            if stage == "reports":
                proxy.cut()

        with pytest.raises(StoreError):
            index_folder(folder, StrataSettings(**conf), progress)
        proxy.restore()
        index_folder(folder, StrataSettings(**conf))
        assert_same(state(StrataSettings(**conf)), want)
    finally:
        proxy.close()


def test_a_served_generation_keeps_the_walk_not_the_graph(folder: Path, settings: StrataSettings) -> None:
    """Loading a generation builds the graph walk's arrays from graph.json and lets the parsed graph go (every
    entity's and relation's description, most of a large generation's memory); the console reads it on first
    use."""
    index_folder(folder, settings)
    engine = Engine(settings)
    try:
        snap = engine.current
        assert snap.index.graph_walk is not None and snap.index.graph_walk.n_entities > 0
        assert snap._graph is None
        graph = snap.graph()
        assert len(graph.entities) >= snap.index.graph_walk.n_entities and snap._graph is graph
    finally:
        engine.close()
