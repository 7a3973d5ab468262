"""The Prefect flow runs on Prefect's test harness, and every entrypoint in prefect.yaml loads."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT


@pytest.fixture(scope="module")
def harness():
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness():
        yield


def test_prefect_yaml_entrypoints_load() -> None:
    from prefect.flows import load_flow_from_entrypoint

    spec = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    assert spec["deployments"]
    assert {d["name"] for d in spec["deployments"] if d.get("schedules")} == {"nightly-reindex", "weekly-drift-report"}
    for dep in spec["deployments"]:
        path, name = dep["entrypoint"].split(":")
        flow = load_flow_from_entrypoint(str(ROOT / path) + ":" + name, use_placeholder_flow=False)
        assert flow.name.startswith("strata-")


def test_index_flow_runs_incrementally(harness, tmp_path: Path) -> None:
    from flows.index import index_flow

    folder = tmp_path / "notes"
    shutil.copytree(ROOT / "samples" / "infra-notes", folder)
    first = index_flow(str(folder), str(tmp_path / "ws"))
    assert first["new"] == 6 and first["mode"] == "offline" and first["reports_written"] > 0
    second = index_flow(str(folder), str(tmp_path / "ws"))
    assert second["unchanged"] == 6 and second["chunks_extracted"] == 0 and second["reports_written"] == 0


def test_reindex_and_drift_flows(harness, tmp_path: Path) -> None:
    from flows.drift import drift_report_flow
    from flows.reindex import reindex_flow

    folder = tmp_path / "notes"
    shutil.copytree(ROOT / "samples" / "infra-notes", folder)
    ws = str(tmp_path / "ws")
    reindex_flow(str(folder), ws)
    target = folder / "ledger-service.md"
    # The edit ties a new service to entities of existing communities (a version and a month alone are not
    # entities, so an edit of only those would change no community's members or relations).
    target.write_text(target.read_text() + "\nThe fraud-service reads the ledger.events topic in Kafka and checks every "
                      "payment against PostgreSQL before the billing-service invoices it.\n")
    run = reindex_flow(str(folder), ws, report_policy="missing")
    assert run["changed"] == 1 and run["reports_kept"] > 0
    result = drift_report_flow(ws, str(tmp_path / "drift"))
    assert result["totals"]["drifting"] + result["totals"]["stale"] >= 1
    assert Path(result["files"]["html"]).exists()
    refreshed = drift_report_flow(ws, str(tmp_path / "drift"), refresh_threshold=0.0)
    assert refreshed["totals"]["fresh"] == refreshed["totals"]["reports"]


def test_reindex_flow_without_folder_uses_the_workspace_folder(harness, tmp_path: Path) -> None:
    """What the nightly deployment runs: no `folder`; the workspace's recorded folder is reindexed, and a folder
    of other documents is refused, naming the parameter, before anything is touched."""
    from flows.index import index_flow
    from flows.params import FlowParameterError
    from flows.reindex import reindex_flow

    folder = tmp_path / "notes"
    shutil.copytree(ROOT / "samples" / "infra-notes", folder)
    ws = str(tmp_path / "ws")
    index_flow(str(folder), ws)
    again = reindex_flow(data_dir=ws)
    assert again["unchanged"] == 6 and again["deleted"] == 0 and again["source"] == str(folder.resolve())
    with pytest.raises(FlowParameterError, match="parameter 'folder'.*other_folder='add'"):
        index_flow(str(ROOT / "samples"), ws)
