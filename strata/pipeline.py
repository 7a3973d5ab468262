"""Application services: index a folder, and keep the community reports honest (drift report, refresh).

These functions are what the CLI, the HTTP API and the Prefect flows call. The stages themselves live in
:mod:`strata.stages`; this module runs them in a row and handles the drift report's files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from core.records import Chunk, Community, GraphSnapshot, LoadProblem, Report
from core.settings import StrataSettings
from core.store import GraphStore, open_store
from extraction.chunking import chunk_document
from strata.folders import load_planned, plan_folders
from strata.generations import republish_reports, reports_to_json
from strata.stages import (IndexRun, Progress, make_report_writer, no_progress, open_llm, open_session, stage_communities,
                           stage_extract, stage_index, stage_merge, stage_plan, stage_publish, stage_remove,
                           stage_reports)
from strata.workspace import UnfinishedRunError, Workspace
from strata.workspace import iter_runs as _iter_runs

if TYPE_CHECKING:
    from communities.drift import DriftReport


def index_folder(folder: Path | str | None, settings: StrataSettings, progress: Progress = no_progress,
                 prune: bool = True, store: GraphStore | None = None, report_policy: str = "changed",
                 full: bool = False, other_folder: str = "refuse") -> IndexRun:
    """Index (or incrementally re-index) a folder into the workspace: only new and changed documents are
    chunked and extracted; deleted ones are removed; communities are recomputed and reports refreshed where
    their inputs changed (``report_policy="missing"`` defers that to ``strata drift --refresh``); the result is
    published as a new index generation. ``full`` rebuilds everything from the folder: every document is
    extracted again (LLM calls come from the response cache), the chunk index is rebuilt, communities are
    detected afresh and every report is written again.

    ``folder`` must be one the workspace indexes (None: all of them), unless ``other_folder`` is ``add`` (index
    it beside them) or ``replace`` (index only it); see :mod:`strata.folders`."""
    progress("load", 0, None)
    plan = plan_folders(Workspace(Path(settings.data_dir)), folder, other_folder)
    loaded = load_planned(plan)
    session = open_session(plan.source, settings, loaded, progress, store, full, plan)
    try:
        changes = stage_plan(session, loaded, prune)
        stage_remove(session, list(changes.deleted) + [d.id for d in changes.changed])
        todo = list(changes.new) + list(changes.changed)
        if todo:  # the extractor first: offline, it reads the corpus's word model (a progress line of its own)
            _ = session.extractor
        progress("extract", 0, sum(len(chunk_document(d, settings.chunking)) for d in todo) or None)
        stage_extract(session, todo)
        snapshot = stage_merge(session)
        communities = stage_communities(session, snapshot, bool(todo or changes.deleted))
        stage_reports(session, snapshot, communities, report_policy)
        stage_index(session)
        run = stage_publish(session, snapshot, communities)
        # Under the run lock: the drift files (and history) of the published generation, written again whenever
        # they describe another one (this run's publish, or one a killed run published).
        record_drift(settings, known=session.drift_of)
    finally:
        session.close()
    return run


def iter_runs(settings: StrataSettings) -> Iterator[dict[str, Any]]:
    return _iter_runs(Path(settings.data_dir))


__all__ = ["index_folder", "IndexRun", "Workspace", "LoadProblem", "open_llm", "iter_runs", "drift_report",
           "write_drift_files", "refresh_reports", "record_drift"]


@dataclass(frozen=True, slots=True)
class ReportInputs:
    """What reports are judged against: the store's chunks, graph, communities and reports, read once."""

    chunks: list[Chunk]
    snapshot: GraphSnapshot
    communities: list[Community]
    reports: list[Report]

    @property
    def chunk_hashes(self) -> dict[str, str]:
        return {c.id: c.content_hash for c in self.chunks}

    @classmethod
    def read(cls, store: GraphStore) -> "ReportInputs":
        return cls(store.all_chunks(), store.read_graph(), store.communities(), store.reports())


def _drift(settings: StrataSettings, inputs: ReportInputs) -> "DriftReport":
    from communities.drift import compute_drift

    llm = settings.llm if settings.llm_mode == "llm" else None
    return compute_drift(inputs.reports, inputs.communities, inputs.snapshot, inputs.chunk_hashes,
                         settings.communities, llm)


def drift_report(settings: StrataSettings, store: GraphStore | None = None) -> "DriftReport":
    """The drift report of the published generation: its reports against its graph and communities (never a
    store an index run is half-way through). With ``store``: of what that store holds now."""
    if store is None:
        from strata.drift_files import generation_drift

        return generation_drift(settings, Workspace(Path(settings.data_dir)).current())
    return _drift(settings, ReportInputs.read(store))


def drift_dir(settings: StrataSettings) -> Path:
    """Where index runs, `strata drift` and the API keep the last drift report (drift.md, .json, .html)."""
    from strata.drift_files import drift_dir as folder

    return folder(settings)


def drift_history_path(settings: StrataSettings) -> Path:
    from strata.drift_files import history_path

    return history_path(settings)


def read_drift_history(settings: StrataSettings) -> list[dict[str, Any]]:
    from strata.drift_files import read_history

    return read_history(settings)


def write_drift_files(report: "DriftReport", settings: StrataSettings, out_dir: Path | None = None,
                      history_point: dict[str, Any] | None = None, generation: int | None = None) -> dict[str, Path]:
    """Write drift.md, drift.html and drift.json (each atomically; drift.json names the generation described,
    by default the published one). ``history_point`` is appended to the workspace's drift history first."""
    from strata.drift_files import history_path, write_files
    from strata.jsonlog import append_jsonl

    if history_point is not None:
        append_jsonl(history_path(settings), history_point)
    if generation is None:
        generation = Workspace(Path(settings.data_dir)).current_number()
    return write_files(report, generation, settings, out_dir)


def record_drift(settings: StrataSettings, store: GraphStore | None = None,
                 known: "Callable[[int], DriftReport | None] | None" = None) -> dict[str, Path]:
    """After an index run: the published generation's drift files, written again when they describe another
    generation, and its history point when the history has none. ``known``: the run's own report of the
    generation it published (:meth:`strata.stages.IndexSession.drift_of`). ``store`` is not read (kept for
    callers)."""
    from strata.drift_files import sync

    sync(settings, history=True, known=known)
    out = drift_dir(settings)
    return {"markdown": out / "drift.md", "json": out / "drift.json", "html": out / "drift.html"}


def refresh_reports(settings: StrataSettings, threshold: float, progress: Progress = no_progress,
                    store: GraphStore | None = None) -> dict[str, int]:
    """Re-summarize every report whose drift is at or above ``threshold`` (and, in LLM mode, every report the
    fallback wrote); delete reports of dissolved communities; publish the result as a new generation. Returns
    how many were refreshed and removed, and the generation now serving.

    It holds the workspace's run lock (an index run changing the store meanwhile would be mixed into the
    published reports) and refuses a store a killed index run left half-written (its communities and graph are
    not those of the published generation)."""
    ws = Workspace(Path(settings.data_dir))
    with ws.lock():
        if ws.pending_path.exists():
            raise UnfinishedRunError(f"the last index run in {ws.root} did not finish; run `strata index FOLDER` "
                                     "again before refreshing reports")
        return _refresh_reports(ws, settings, threshold, progress, store)


def _refresh_reports(ws: Workspace, settings: StrataSettings, threshold: float, progress: Progress,
                     store: GraphStore | None) -> dict[str, int]:
    own = store is None
    store = store or open_store(settings)
    client = open_llm(settings)
    try:
        inputs = ReportInputs.read(store)
        report = _drift(settings, inputs)
        communities = inputs.communities
        alive = {c.id for c in communities}
        reported = {e.community_id for e in report.entries}
        force = [e.community_id for e in report.entries if e.community_id in alive and (
            e.score >= threshold or (e.status == "fallback" and client is not None))]
        gone = [e.community_id for e in report.entries if e.community_id not in alive and e.score >= threshold]
        missing = [c.id for c in communities if c.id not in reported]
        writer = make_report_writer(settings, client, inputs.chunks)
        reports, written = write_reports_for(settings, inputs, writer, force, progress)
        refreshed = set(force) | set(missing)
        store.save_reports([r for r in reports if r.community_id in refreshed])
        store.delete_reports(gone)
        generation = None
        stored = store.reports()
        if refreshed or gone or not _serves(ws, stored):  # or a refresh killed before its publish left them
            generation = republish_reports(ws, stored, settings.index.keep_generations, {"refreshed": len(refreshed)})
        return {"refreshed": written, "removed": len(gone), "generation": generation or 0}
    finally:
        if client is not None:
            client.close()
        if own:
            store.close()


def _serves(ws: Workspace, reports: list[Report]) -> bool:
    """Whether the published generation (if any) serves exactly these reports."""
    current = ws.current()
    if current is None or not current.reports_path.exists():
        return True  # nothing published to bring in line
    try:
        return json.loads(current.reports_path.read_text(encoding="utf-8")) == json.loads(reports_to_json(reports))
    except (OSError, ValueError):  # damaged: publishing refuses it with a message naming the file
        return False


def write_reports_for(settings: StrataSettings, inputs: ReportInputs, writer: Any, force: list[str],
                      progress: Progress) -> tuple[list[Report], int]:
    from communities.reports import write_reports

    n = len(inputs.communities)
    return write_reports(inputs.communities, inputs.snapshot, writer, settings.communities, inputs.reports,
                         chunk_hashes=inputs.chunk_hashes, policy="missing", force=force,
                         on_progress=lambda k: progress("reports", k, n))
