"""The scheduled incremental reindex: new, changed and deleted documents by content hash against the store.

Only new and changed chunks are extracted; communities are recomputed and matched to the previous ones; with
``report_policy="changed"`` only communities whose input fingerprint changed are re-summarized, with
``"missing"`` none are (the weekly drift report then says what to refresh). The run records what it did.
"""

from __future__ import annotations

from typing import Any

from prefect import flow

from flows.index import run_flow
from flows.params import FlowParameterError, checked_folder, other_folder_policy


@flow(name="strata-reindex", log_prints=True)
def reindex_flow(folder: str | None = None, data_dir: str | None = None, report_policy: str = "changed",
                 prune: bool = True, workers: int | None = None, other_folder: str = "refuse") -> dict[str, Any]:
    """Reindex ``folder``, or without one the folders the workspace records (what the nightly deployment does,
    so it can never point a real workspace at another folder)."""
    if report_policy not in ("changed", "missing"):
        raise FlowParameterError(f"parameter 'report_policy': must be 'changed' or 'missing', got {report_policy!r}")
    policy = other_folder_policy("other_folder", other_folder)
    return run_flow(checked_folder("folder", folder, data_dir, policy), data_dir, report_policy, prune, workers,
                    other_folder=policy)
