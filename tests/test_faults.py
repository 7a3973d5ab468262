"""Faults a workspace meets: damaged generation files, a lost CURRENT, torn logs, stale drift files, damaged caches
and stores, a full disk. Each is detected, named in one line, and repaired by the next index run where it can be.
(``python -m bench.faults`` runs every such case through ask, serve and index.)"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from bench.faults import ByteBudget, cap_sqlite, cut_last_line, garble, garble_header, tear, truncate
from core.settings import StrataSettings
from strata.cli import main
from strata.engine import Engine
from strata.integrity import GenerationDamagedError, file_digest
from strata.jsonlog import append_jsonl, read_jsonl
from strata.pipeline import drift_report, index_folder
from strata.workspace import Workspace
from tests.conftest import ROOT


def _settings(ws: Path) -> StrataSettings:
    return StrataSettings(data_dir=ws, extraction={"mode": "offline"}, cache={"enabled": False})


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A workspace that indexed samples/infra-notes (generation 1), then an edit of it (generation 2)."""
    root = tmp_path_factory.mktemp("faults")
    folder = root / "notes"
    shutil.copytree(ROOT / "samples" / "infra-notes", folder)
    ws = root / "ws"
    index_folder(folder, _settings(ws))
    gen1 = root / "ws1"
    shutil.copytree(ws, gen1)
    target = folder / "search-cache.md"
    target.write_text(target.read_text() + "\nThe search-cache TTL was raised to 900 seconds after the sale.\n")
    index_folder(folder, _settings(ws))
    return folder, ws, gen1


@pytest.fixture
def ws(template, tmp_path: Path) -> Path:
    shutil.copytree(template[1], tmp_path / "ws")
    return tmp_path / "ws"


@pytest.fixture
def folder(template) -> Path:
    return template[0]


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    got = capsys.readouterr()
    return rc, got.out, got.err


def _digest(ws: Path) -> str:
    return Workspace(ws).current().manifest()["digest"]  # type: ignore[union-attr]


def _file(ws: Path, rel: str) -> Path:
    return Workspace(ws).current().root / rel  # type: ignore[union-attr]


# -- a generation verified before it is served and before it is trusted ---------------------------------------
def test_the_manifest_lists_every_file_with_its_size_and_digest(ws: Path) -> None:
    gen = Workspace(ws).current()
    files = gen.manifest()["files"]
    on_disk = {p.relative_to(gen.root).as_posix() for p in gen.root.rglob("*") if p.is_file()} - {"manifest.json"}
    assert set(files) == on_disk and "index/chunks.jsonl" in files
    for rel, meta in files.items():
        assert meta["size"] == (gen.root / rel).stat().st_size
        assert meta["blake2b-128"] == file_digest(gen.root / rel)


@pytest.mark.parametrize("rel,damage", [("index/chunks.jsonl", cut_last_line), ("index/bm25.npz", garble),
                                        ("reports.json", truncate), ("communities.json", garble)])
def test_a_damaged_generation_is_refused_naming_the_file(ws: Path, capsys, rel: str, damage) -> None:
    damage(_file(ws, rel))
    with pytest.raises(GenerationDamagedError, match=rel.rsplit("/", 1)[-1]):
        Engine(_settings(ws))
    rc, _, err = _cli(capsys, "--data-dir", str(ws), "ask", "Which service sets max_connections?")
    assert rc == 1 and "generation 2 is damaged" in err and rel in err and "internal error" not in err
    assert "strata index" in err  # the command that repairs it


def test_ready_is_never_200_for_a_generation_that_cannot_answer(ws: Path) -> None:
    cut_last_line(_file(ws, "index/chunks.jsonl"))  # still parses: the case that once served 500s
    with TestClient(__import__("strata.api", fromlist=["create_app"]).create_app(_settings(ws))) as client:
        ready = client.get("/v1/ready")
        assert ready.status_code == 503 and "chunks.jsonl" in ready.text
        q = client.post("/v1/memory/query", json={"query_id": "q", "search_text": "cache ttl"})
        assert q.status_code == 503 and "chunks.jsonl" in q.text


def test_a_server_keeps_the_previous_generation_when_the_next_is_damaged(ws: Path) -> None:
    w = Workspace(ws)
    w.point(1)
    engine = Engine(_settings(ws))
    try:
        garble(w.generation(2).root / "index" / "chunks.jsonl")
        w.point(2)
        assert engine.check_reload() is False
        assert engine.generation == 1 and "chunks.jsonl" in (engine.reload_error or "")
        assert engine.query(__import__("retrieval.contract", fromlist=["x"]).MemoryQueryRequest(
            query_id="q", search_text="cache ttl")).results
    finally:
        engine.close()


def test_reports_and_communities_are_read_on_first_use_and_checked_then(ws: Path, monkeypatch) -> None:
    """A server answering memory queries and local questions never holds the reports and communities; the first
    question that needs them reads them, checked again by size and time (hashed once in the process), and
    reports damaged after the generation loaded are refused with 503 naming the file (not read as if intact, not
    a 500)."""
    from retrieval.contract import MemoryQueryRequest
    from strata import integrity

    hashed: list[str] = []
    real = integrity.file_digest
    monkeypatch.setattr(integrity, "file_digest", lambda path: hashed.append(Path(path).name) or real(path))
    integrity._memo.clear()
    engine = Engine(_settings(ws))
    try:
        snap = engine.current
        engine.query(MemoryQueryRequest(query_id="q", search_text="cache ttl"))
        assert engine.ask("Which service sets max_connections?", mode="local").points
        assert engine.status()["reports"] == snap.manifest["reports"] > 0
        assert snap.has_reports and snap._reports is None and snap._communities is None
        answer = engine.ask("What are the main themes across these notes?", mode="global")
        assert answer.points and snap._reports is not None and snap._communities is None
        assert len(snap.reports) == snap.manifest["reports"]
        assert hashed.count("reports.json") == 1, hashed  # at the load, not again at the first use
    finally:
        engine.close()
    app = __import__("strata.api", fromlist=["create_app"]).create_app(_settings(ws))
    with TestClient(app) as client:
        assert client.post("/v1/memory/query", json={"query_id": "q", "search_text": "cache ttl"}).status_code == 200
        garble(_file(ws, "reports.json"))  # after the load: the check at load passed
        r = client.post("/v1/ask", json={"question": "What are the main themes across these notes?",
                                         "mode": "global"})
        assert r.status_code == 503 and "reports.json" in r.text and "strata index" in r.text
        r = client.get("/v1/communities")
        assert r.status_code == 503 and "reports.json" in r.text


@pytest.mark.parametrize("rel", ["index/chunks.jsonl", "reports.json", "entity_signatures.json", "index/vectors.npy"])
def test_an_index_run_rebuilds_a_damaged_generation(ws: Path, folder: Path, rel: str) -> None:
    before = _digest(ws)
    garble(_file(ws, rel))
    run = index_folder(folder, _settings(ws))
    assert run.published and run.generation == 3  # not "2 (unchanged)"
    assert _digest(ws) == before  # the same content as the uninterrupted run served
    engine = Engine(_settings(ws))
    engine.close()


def test_status_names_a_damaged_generation(ws: Path, capsys) -> None:
    truncate(_file(ws, "entities.json"))
    rc, out, _ = _cli(capsys, "--data-dir", str(ws), "status", "--json")
    assert rc == 0
    problem = json.loads(out)["generation_problem"]
    assert "generation 2 is damaged" in problem and "entities.json" in problem


@pytest.mark.parametrize("damage", [lambda p: p.unlink(), lambda p: p.write_text(""),
                                    lambda p: p.write_bytes(b"\x00\x9c2x\n"), lambda p: p.write_text("17\n")],
                         ids=["deleted", "empty", "garbled", "no-such-generation"])
def test_a_lost_current_falls_back_to_the_newest_intact_generation(ws: Path, folder: Path, capsys, damage) -> None:
    garble(Workspace(ws).generation(2).root / "reports.json")  # the newest is damaged: 1 is the newest intact
    damage(ws / "CURRENT")
    engine = Engine(_settings(ws))
    assert engine.generation == 1
    engine.close()
    rc, out, _ = _cli(capsys, "--data-dir", str(ws), "status", "--json")
    assert rc == 0 and "CURRENT" in json.loads(out)["generation_problem"]
    run = index_folder(folder, _settings(ws))
    assert run.published and Workspace(ws).current_number() == run.generation  # CURRENT names it again


# -- append-only logs that survive a torn write ---------------------------------------------------------------
def test_a_torn_line_is_skipped_and_cut_off_by_the_next_append(tmp_path: Path) -> None:
    log = tmp_path / "runs.jsonl"
    append_jsonl(log, {"n": 1})
    tear(log)
    assert read_jsonl(log) == [{"n": 1}]
    append_jsonl(log, {"n": 2})
    assert log.read_text().splitlines() == ['{"n": 1}', '{"n": 2}']


def test_a_torn_run_log_breaks_neither_status_nor_the_next_run(ws: Path, folder: Path, capsys) -> None:
    tear(ws / "runs.jsonl")
    rc, out, err = _cli(capsys, "--data-dir", str(ws), "status", "--json")
    assert rc == 0, err
    assert json.loads(out)["last_run"]["generation"] == 2
    assert _cli(capsys, "--data-dir", str(ws), "index", str(folder))[0] == 0
    assert all(json.loads(line) for line in (ws / "runs.jsonl").read_text().splitlines())


def test_a_torn_drift_history_breaks_neither_drift_nor_the_next_run(ws: Path, folder: Path, capsys) -> None:
    tear(ws / "drift_history.jsonl")
    assert _cli(capsys, "--data-dir", str(ws), "drift", "--json")[0] == 0
    (folder / "extra.md").write_text("# Extra\n\nThe audit-log service keeps 30 days of events.\n")
    try:
        rc, out, err = _cli(capsys, "--data-dir", str(ws), "index", str(folder), "--json")
    finally:
        (folder / "extra.md").unlink()
    assert rc == 0 and json.loads(out)["published"], err
    points = [json.loads(line) for line in (ws / "drift_history.jsonl").read_text().splitlines()]
    assert [p["generation"] for p in points] == [1, 2, 3]


# -- drift files that never describe an older generation than the served one ------------------------------------
def _old_drift(ws: Path, gen1: Path) -> None:
    shutil.rmtree(ws / "drift")
    shutil.copytree(gen1 / "drift", ws / "drift")
    shutil.copy2(gen1 / "drift_history.jsonl", ws / "drift_history.jsonl")


def test_a_run_after_a_kill_right_after_publish_rewrites_the_drift_files(ws: Path, folder: Path, template) -> None:
    _old_drift(ws, template[2])  # what a kill between the publish and the drift files left
    run = index_folder(folder, _settings(ws))
    assert not run.published
    assert json.loads((ws / "drift" / "drift.json").read_text())["index_generation"] == 2
    assert [p["generation"] for p in read_jsonl(ws / "drift_history.jsonl")] == [1, 2]


def test_get_drift_never_serves_an_older_generation_than_health(ws: Path, template) -> None:
    _old_drift(ws, template[2])
    from strata.api import create_app

    with TestClient(create_app(_settings(ws))) as client:
        assert client.get("/v1/health").json()["index_generation"] == 2
        assert client.get("/v1/drift").json()["index_generation"] == 2


def test_strata_drift_reads_the_published_generation_not_the_store(ws: Path, capsys) -> None:
    published = drift_report(_settings(ws)).totals
    from core.store import open_store

    store = open_store(_settings(ws))  # a run half-way: the store's graph and reports already rewritten
    store.delete_reports([r.community_id for r in store.reports()][:3])
    store.close()
    rc, out, _ = _cli(capsys, "--data-dir", str(ws), "drift", "--json")
    assert rc == 0 and json.loads(out)["totals"] == published and json.loads(out)["index_generation"] == 2


def test_drift_files_are_written_atomically(ws: Path, monkeypatch) -> None:
    from strata import drift_files

    before = (ws / "drift" / "drift.html").read_bytes()
    real = drift_files._atomic

    def failing(path: Path, text: str) -> None:
        if path.name == "drift.html":
            raise OSError(28, "No space left on device", str(path))
        real(path, text)

    monkeypatch.setattr(drift_files, "_atomic", failing)
    with pytest.raises(OSError, match="disk full"):
        drift_files.write_files(drift_report(_settings(ws)), 2, _settings(ws))
    assert (ws / "drift" / "drift.html").read_bytes() == before  # never cut off
    assert not list((ws / "drift").glob(".*.tmp"))


# -- caches are caches; a damaged store names its file and the command ------------------------------------------
@pytest.mark.parametrize("damage", [truncate, garble_header], ids=["truncated", "garbled"])
def test_a_damaged_vector_cache_is_set_aside_and_rebuilt(ws: Path, folder: Path, caplog, damage) -> None:
    damage(ws / "vectors.sqlite")
    with caplog.at_level(logging.WARNING, logger="strata.cache"):
        run = index_folder(folder, _settings(ws), full=True)
    assert run.chunks_total > 0 and list(ws.glob("vectors.sqlite.damaged-*"))
    import sqlite3

    db = sqlite3.connect(ws / "vectors.sqlite")
    assert db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0] > 0  # the cache was rebuilt
    db.close()
    assert any("vectors.sqlite" in r.getMessage() and "set aside" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("damage", [truncate, garble_header], ids=["truncated", "garbled"])
def test_a_damaged_word_counts_cache_is_set_aside_and_rebuilt(ws: Path, folder: Path, caplog, damage) -> None:
    from core.store import open_store

    intact = ws.parent / "intact"
    shutil.copytree(ws, intact)
    damage(ws / "words.sqlite")
    with caplog.at_level(logging.WARNING, logger="strata.cache"):
        index_folder(folder, _settings(ws), full=True)
    assert list(ws.glob("words.sqlite.damaged-*"))
    assert any("words.sqlite" in r.getMessage() and "set aside" in r.getMessage() for r in caplog.records)
    index_folder(folder, _settings(intact), full=True)

    def graph(data_dir: Path) -> tuple[list[tuple[str, str]], list[str]]:
        store = open_store(_settings(data_dir))
        try:
            snapshot = store.read_graph()
            return sorted((e.id, e.name) for e in snapshot.entities), sorted(r.id for r in snapshot.relations)
        finally:
            store.close()

    assert graph(ws) == graph(intact)  # the counts computed again make the same graph


def test_a_damaged_llm_cache_is_set_aside(tmp_path: Path, caplog) -> None:
    from core.llm_client import ResponseCache

    path = tmp_path / "llm_cache.sqlite"
    cache = ResponseCache(path)
    for i in range(200):
        cache.put(f"k{i}", "m", "x" * 400, 1, 1)
    cache.close()
    truncate(path)
    with caplog.at_level(logging.WARNING, logger="strata.cache"):
        cache = ResponseCache(path)
    cache.put("k", "m", "answer", 3, 4)
    assert cache.get("k") == ("answer", 3, 4)
    cache.close()
    assert list(tmp_path.glob("llm_cache.sqlite.damaged-*")) and "llm_cache.sqlite" in caplog.text


@pytest.mark.parametrize("damage", [truncate, garble_header], ids=["truncated", "garbled"])
def test_a_damaged_graph_store_names_its_file_and_the_command(ws: Path, folder: Path, tmp_path: Path, capsys,
                                                              damage) -> None:
    damage(ws / "graph.sqlite")
    for argv in (["status"], ["index", str(folder)], ["export", "--format", "csv", "--output", str(ws / "x")]):
        rc, _, err = _cli(capsys, "--data-dir", str(ws), *argv)
        assert rc == 1 and "graph.sqlite is damaged" in err and "--replace-store" in err, (argv, err)
        assert "internal error" not in err
    assert _cli(capsys, "--data-dir", str(ws), "ask", "Which service sets max_connections?")[0] == 0  # still served
    rc, _, err = _cli(capsys, "--data-dir", str(ws), "index", str(folder), "--replace-store")
    assert rc == 0, err
    assert list(ws.glob("graph.sqlite.damaged-*")) and Workspace(ws).current_number() == 3
    index_folder(folder, _settings(tmp_path / "fresh"))
    assert _digest(ws) == _digest(tmp_path / "fresh")  # the store rebuilt from the folder: as a first index of it


# -- one error per cause: a full disk ------------------------------------------------------------------------
def _one_disk_full_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.split(":", 1)[0] in
             ("error", "disk full", "store error", "internal error", "damaged file")]
    assert len(lines) == 1 and lines[0].startswith("disk full: no space left on the device for "), err
    return lines[0]


def test_a_full_disk_in_the_store_is_one_line_naming_it(template, tmp_path: Path, capsys) -> None:
    folder, _, gen1 = template
    ws = tmp_path / "ws"
    shutil.copytree(gen1, ws)
    (folder / "grow.md").write_text("# Grow\n\n" + "The checkout-service calls the pricing-service. " * 200)
    try:
        with cap_sqlite(ws / "graph.sqlite", 0):
            rc, _, err = _cli(capsys, "--data-dir", str(ws), "index", str(folder))
    finally:
        (folder / "grow.md").unlink()
    assert rc == 1 and "graph.sqlite" in _one_disk_full_line(err)
    assert not list((ws / "generations").glob("*.tmp")) and Workspace(ws).current_number() == 1


def test_a_full_disk_while_staging_leaves_no_staging_folder(template, tmp_path: Path, capsys) -> None:
    folder, ref, gen1 = template
    ws = tmp_path / "ws"
    shutil.copytree(gen1, ws)
    with ByteBudget(ws, 20_000).active():
        rc, _, err = _cli(capsys, "--data-dir", str(ws), "index", str(folder))
    assert rc == 1 and "generations" in _one_disk_full_line(err)
    assert not list((ws / "generations").glob("*.tmp")) and Workspace(ws).current_number() == 1
    assert _cli(capsys, "--data-dir", str(ws), "index", str(folder))[0] == 0  # space freed: the rerun finishes
    assert _digest(ws) == _digest(ref)
