"""The scheduled incremental reindex: new, changed and deleted documents by content hash against the store.

Only new and changed chunks are extracted; communities are recomputed and matched to the previous ones; with
``report_policy="changed"`` only communities whose input fingerprint changed are re-summarized, with
``"missing"`` none are (the weekly drift report then says what to refresh). The run records what it did.
"""

from __future__ import annotations

from typing import Any

from prefect import flow

from flows.index import run_flow
from flows.params import FlowParameterError, existing_folder


@flow(name="strata-reindex", log_prints=True)
def reindex_flow(folder: str, data_dir: str | None = None, report_policy: str = "changed", prune: bool = True,
                 workers: int | None = None) -> dict[str, Any]:
    if report_policy not in ("changed", "missing"):
        raise FlowParameterError(f"parameter 'report_policy': must be 'changed' or 'missing', got {report_policy!r}")
    return run_flow(existing_folder("folder", folder), data_dir, report_policy, prune, workers)
