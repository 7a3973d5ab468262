"""The indexing flow: index or incrementally re-index a folder on Prefect (embedded server by default).

The flow is wiring only: the task calls :func:`strata.pipeline.index_folder`, the same function the CLI runs,
which re-extracts only new and changed documents and keeps reports whose inputs did not change. The run
summary is returned and published as a markdown artifact.
"""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact

from strata.pipeline import index_folder
from strata.settings import StrataSettings


@task(name="index-folder", retries=1, retry_delay_seconds=10)
def index_task(folder: str, data_dir: str | None) -> dict[str, Any]:
    settings = StrataSettings(**({"data_dir": data_dir} if data_dir else {}))
    return index_folder(folder, settings).to_dict()


@flow(name="strata-index", log_prints=True)
def index_flow(folder: str, data_dir: str | None = None) -> dict[str, Any]:
    """Index ``folder`` into the workspace ``data_dir`` (default from settings)."""
    run = index_task(folder, data_dir)
    logger = get_run_logger()
    logger.info("indexed %s in %s mode: %s new, %s changed, %s deleted, %s reports written, %s kept",
                folder, run["mode"], run["new"], run["changed"], run["deleted"], run["reports_written"], run["reports_kept"])
    rows = "\n".join(f"| {k} | {run[k]} |" for k in ("mode", "store", "documents", "new", "changed", "deleted",
                                                      "unchanged", "chunks_extracted", "entities", "relations",
                                                      "communities", "reports_written", "reports_kept", "seconds"))
    create_markdown_artifact(key="strata-index-run", markdown=f"## Strata index run: {folder}\n\n| what | value |\n|---|---|\n{rows}\n")
    return run
