"""The drift report marks exactly the communities whose inputs changed, and a refresh makes them fresh."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from communities.drift import compute_drift
from strata.cli import main
from strata.pipeline import drift_report, index_folder, refresh_reports
from core.settings import StrataSettings
from core.store import open_store
from tests.conftest import ROOT


@pytest.fixture
def indexed(tmp_path: Path) -> tuple[Path, StrataSettings]:
    folder = tmp_path / "notes"
    shutil.copytree(ROOT / "samples" / "infra-notes", folder)
    settings = StrataSettings(data_dir=tmp_path / "ws", extraction={"mode": "offline"})
    index_folder(folder, settings)
    return folder, settings


def test_fresh_after_indexing(indexed) -> None:
    _, settings = indexed
    report = drift_report(settings)
    assert report.totals["reports"] > 0 and report.totals["fresh"] == report.totals["reports"]


def test_edit_marks_exactly_the_communities_of_its_entities(indexed) -> None:
    folder, settings = indexed
    target = folder / "search-cache.md"
    store = open_store(settings)
    before = {e.id for e in store.read_graph().entities if any(c.startswith("search-cache.md#") for c in e.chunk_ids)}
    old_communities = {c.id: set(c.entity_ids) for c in store.communities()}
    store.close()
    target.write_text(target.read_text().replace("TTL of 300 seconds", "TTL of 900 seconds, raised after the May sale,"))
    run = index_folder(folder, settings, report_policy="missing")
    store = open_store(settings)
    after = {e.id for e in store.read_graph().entities if any(c.startswith("search-cache.md#") for c in e.chunk_ids)}
    communities = {c.id: set(c.entity_ids) for c in store.communities()}
    store.close()
    new_ids = set(communities) - set(old_communities)
    assert run.changed == 1 and run.reports_written == len(new_ids)  # only communities without a report get one
    touched = before | after
    expected = {cid for cid, members in communities.items() if members & touched and cid not in new_ids}
    expected |= {cid for cid, members in old_communities.items() if members & touched and cid not in communities}
    report = drift_report(settings)
    flagged = {e.community_id for e in report.entries if e.status != "fresh"}
    assert flagged and flagged == expected
    assert all(e.score > 0 for e in report.entries if e.community_id in flagged)
    refresh = refresh_reports(settings, threshold=settings.communities.drift_drifting)
    assert refresh["refreshed"] >= 1
    assert all(e.status == "fresh" for e in drift_report(settings).entries)


def test_deleting_a_document_makes_its_communities_stale(indexed) -> None:
    folder, settings = indexed
    (folder / "kafka-consumers.md").unlink()
    index_folder(folder, settings, report_policy="missing")
    report = drift_report(settings)
    assert report.totals["stale"] + report.totals["drifting"] >= 1
    assert any(e.sources_deleted > 0 for e in report.entries)


@pytest.mark.parametrize("policy", ["missing", "changed"])
def test_the_drift_files_an_index_run_writes_are_those_of_its_generation_read_from_its_files(
        indexed, monkeypatch, policy: str) -> None:
    """The run writes the drift files from what it holds in memory; they must say what the published
    generation's own files say."""
    from communities.drift_render import to_json
    from strata import drift_files

    folder, settings = indexed
    if policy == "changed":  # keep reports that drifted a little, so some are kept with inputs that changed
        settings = settings.model_copy(update={"communities": settings.communities.model_copy(
            update={"resummarize_min_drift": 0.5})})
    target = folder / "search-cache.md"
    target.write_text(target.read_text().replace("TTL of 300 seconds", "TTL of 900 seconds, raised after the May sale,"))
    (folder / "kafka-consumers.md").unlink()
    from_files_calls: list[object] = []
    real = drift_files.generation_drift
    monkeypatch.setattr(drift_files, "generation_drift", lambda *a: from_files_calls.append(a) or real(*a))
    index_folder(folder, settings, report_policy=policy)
    assert not from_files_calls  # the run's own report was written, not one read back from the files
    monkeypatch.setattr(drift_files, "generation_drift", real)
    written = json.loads((Path(settings.data_dir) / "drift" / "drift.json").read_text(encoding="utf-8"))
    from_files = json.loads(to_json(drift_report(settings)))
    for data in (written, from_files):
        data.pop("generated_at", None)
        data.pop("index_generation", None)
    assert written["totals"]["stale"] + written["totals"]["drifting"] >= 1  # there is drift to get right
    assert written == from_files


def test_drift_cli_writes_markdown_json_and_html(indexed, tmp_path: Path, capsys) -> None:
    folder, settings = indexed
    (folder / "api-gateway.md").write_text((folder / "api-gateway.md").read_text() + "\nThe api-gateway now retries once.\n")
    index_folder(folder, settings, report_policy="missing")
    out = tmp_path / "out"
    assert main(["--data-dir", str(settings.data_dir), "drift", "--json", "--out", str(out)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["totals"]["reports"] == len(data["entries"])
    scores = [e["score"] for e in data["entries"]]
    assert scores == sorted(scores, reverse=True)
    html = (out / "drift.html").read_text()
    assert "<svg" in html and "Drift by community" in html and "across runs" in html
    assert (out / "drift.md").read_text().startswith("# Strata drift report")
    assert main(["--data-dir", str(settings.data_dir), "drift", "--refresh", "--threshold", "0"]) == 0


def test_dissolved_community_scores_one() -> None:
    from core.records import Finding, GraphSnapshot, Report

    r = Report("gone", 0, "t", "s", (Finding("f", ()),), 1.0, "fp", "offline", "x", "2026-01-01T00:00:00+00:00",
               inputs=json.dumps({"entities": {"e1": "a", "e2": "b"}, "relations": {}, "chunks": {}}))
    from core.settings import CommunitySettings

    report = compute_drift([r], [], GraphSnapshot((), ()), {}, CommunitySettings())
    assert report.entries[0].score == 1.0 and report.entries[0].existence == "dissolved"
