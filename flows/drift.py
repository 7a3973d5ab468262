"""The drift report flow: which community reports no longer match the graph; published as a Prefect markdown
artifact and written to drift.md, drift.json and drift.html; optionally refreshes reports above a threshold."""

from __future__ import annotations

from typing import Any

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from communities.drift_render import to_markdown
from flows.params import published_workspace
from strata.pipeline import drift_report, refresh_reports, write_drift_files
from core.settings import StrataSettings


@task(name="refresh-reports", cache_policy=NO_CACHE, retries=1)
def refresh_task(settings: StrataSettings, threshold: float) -> dict[str, int]:
    return refresh_reports(settings, threshold)


@task(name="drift-report", cache_policy=NO_CACHE)
def drift_task(settings: StrataSettings, out_dir: str | None) -> dict[str, Any]:
    report = drift_report(settings)
    paths = write_drift_files(report, settings, out_dir)  # type: ignore[arg-type]
    create_markdown_artifact(key="strata-drift-report", markdown=to_markdown(report))
    return {"totals": report.totals, "refresh_estimate": report.refresh_estimate,
            "files": {k: str(v) for k, v in paths.items()}}


@flow(name="strata-drift-report", log_prints=True)
def drift_report_flow(data_dir: str | None = None, out_dir: str | None = None,
                      refresh_threshold: float | None = None) -> dict[str, Any]:
    settings = StrataSettings(**({"data_dir": data_dir} if data_dir else {}))
    published_workspace("data_dir", settings.data_dir)
    refreshed = (refresh_task(settings, refresh_threshold, return_state=True)
                 if refresh_threshold is not None else None)
    # The report is made after the refresh: wait_for shows that order in the run graph.
    result = drift_task(settings, out_dir, wait_for=[refreshed] if refreshed is not None else None)
    result["refreshed"] = refreshed.result() if refreshed is not None else None
    print(f"drift: {result['totals']}")
    return result
