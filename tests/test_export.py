"""`strata export`: graphml, csv and parquet hold every entity, relation, community and report of the store."""

from __future__ import annotations

import csv
import json
import shutil
import sys
from pathlib import Path

import pytest

from core.settings import StrataSettings
from core.store import open_store
from strata.cli import main
from strata.export import build_tables, export
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> StrataSettings:
    from strata.pipeline import index_folder

    tmp = tmp_path_factory.mktemp("export")
    shutil.copytree(ROOT / "samples" / "infra-notes", tmp / "notes")
    settings = StrataSettings(data_dir=tmp / "ws", extraction={"mode": "offline"}, retrieval={"embedder": "hashing"})
    index_folder(tmp / "notes", settings)
    return settings


@pytest.fixture(scope="module")
def stored(indexed: StrataSettings):  # type: ignore[no-untyped-def]
    store = open_store(indexed)
    try:
        return store.read_graph(), store.communities(), store.reports()
    finally:
        store.close()


def test_graphml_has_every_entity_relation_and_membership(indexed, stored, tmp_path: Path) -> None:
    import networkx as nx

    snapshot, communities, reports = stored
    path = tmp_path / "graph.graphml"
    assert main(["--data-dir", str(indexed.data_dir), "export", "--format", "graphml", "--output", str(path)]) == 0
    g = nx.read_graphml(path)
    assert g.number_of_nodes() == len(snapshot.entities) and g.number_of_edges() == len(snapshot.relations)
    titles = {r.community_id: r.title for r in reports}
    for c in communities:
        for e in c.entity_ids:
            assert g.nodes[e][f"community_L{c.level}"] == c.id and g.nodes[e][f"report_L{c.level}"] == titles.get(c.id, "")
    rel = snapshot.relations[0]
    assert g.edges[rel.source_id, rel.target_id]["weight"] == rel.weight


def test_csv_tables_match_the_store(indexed, stored, tmp_path: Path) -> None:
    snapshot, communities, reports = stored
    out = tmp_path / "csv"
    assert main(["--data-dir", str(indexed.data_dir), "export", "--format", "csv", "--output", str(out)]) == 0
    tables = {p.stem: list(csv.DictReader(p.open(encoding="utf-8"))) for p in out.glob("*.csv")}
    assert set(tables) == {"entities", "relationships", "communities", "community_reports"}
    assert len(tables["entities"]) == len(snapshot.entities)
    assert len(tables["relationships"]) == len(snapshot.relations)
    assert len(tables["communities"]) == len(communities) and len(tables["community_reports"]) == len(reports)
    by_id = {c.id: c for c in communities}
    for row in tables["communities"]:
        assert tuple(json.loads(row["entity_ids"])) == by_id[row["id"]].entity_ids
    names = {e.id: e.name for e in snapshot.entities}
    for row in tables["relationships"]:
        assert names[row["source_id"]] == row["source"] and names[row["target_id"]] == row["target"]
    report = next(r for r in reports if r.findings)
    row = next(r for r in tables["community_reports"] if r["id"] == report.community_id)
    assert [f["text"] for f in json.loads(row["findings"])] == [f.text for f in report.findings]
    assert row["full_content"].startswith(f"# {report.title}")


def test_parquet_round_trips_the_tables(stored, tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    snapshot, communities, reports = stored
    files = export(snapshot, communities, reports, "parquet", tmp_path / "pq")
    tables = build_tables(snapshot, communities, reports)
    assert len(files) == 4
    entities = pq.read_table(tmp_path / "pq" / "entities.parquet").to_pylist()
    assert [e["title"] for e in entities] == [e.title for e in tables.entities]
    assert entities[0]["text_unit_ids"] == tables.entities[0].text_unit_ids
    found = pq.read_table(tmp_path / "pq" / "community_reports.parquet").to_pylist()
    assert found[0]["findings"] == tables.community_reports[0].findings


def test_parquet_without_pyarrow_says_what_to_install(stored, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(RuntimeError, match=r"pip install 'strata\[parquet\]'"):
        export(*stored, "parquet", tmp_path / "pq")


def test_bad_output_or_format_is_refused(indexed, stored, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="must be one of graphml, csv, parquet"):
        export(*stored, "xlsx", tmp_path / "x")
    (tmp_path / "file.txt").write_text("x")
    argv = ["--data-dir", str(indexed.data_dir), "export"]
    assert main([*argv, "--format", "csv", "--output", str(tmp_path / "file.txt")]) == 2
    assert main([*argv, "--format", "graphml", "--output", str(tmp_path)]) == 2
