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
    for dep in spec["deployments"]:
        assert dep["schedules"][0]["cron"]
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
