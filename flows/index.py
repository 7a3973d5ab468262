"""The indexing flow: the same stages as ``strata index``, each a Prefect task with its own state and retries.

Wiring only: every task calls a stage function of :mod:`strata.stages`. Extraction runs as one task per batch
of documents, so a long run shows its progress task by task and a failed batch is retried on its own (the LLM
response cache makes a retry free for the chunks that already succeeded; within a batch the LLM client keeps
its concurrency limit). The run summary is returned and published as a markdown artifact.
"""

from __future__ import annotations

from typing import Any, Sequence

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from core.records import Document
from core.settings import StrataSettings
from extraction.chunking import chunk_document
from extraction.loader import load_folder
from strata.pipeline import record_drift
from strata.stages import (IndexSession, open_session, stage_communities, stage_extract, stage_index, stage_merge,
                           stage_plan, stage_publish, stage_remove, stage_reports)

BATCH_CHUNKS = 256


def batches(session: IndexSession, docs: Sequence[Document], size: int = BATCH_CHUNKS) -> list[list[Document]]:
    out: list[list[Document]] = []
    current: list[Document] = []
    weight = 0
    for d in docs:
        current.append(d)
        weight += len(chunk_document(d, session.settings.chunking))
        if weight >= size:
            out.append(current)
            current, weight = [], 0
    if current:
        out.append(current)
    return out


@task(name="remove-changed-and-deleted", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=5)
def remove_task(session: IndexSession, document_ids: list[str]) -> int:
    stage_remove(session, document_ids)
    return len(document_ids)


@task(name="extract-batch", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=10)
def extract_task(session: IndexSession, docs: list[Document]) -> int:
    return stage_extract(session, docs)


@task(name="merge", cache_policy=NO_CACHE, retries=1)
def merge_task(session: IndexSession, extracted: list[int]):  # type: ignore[no-untyped-def]
    return stage_merge(session)


@task(name="communities", cache_policy=NO_CACHE, retries=1)
def communities_task(session: IndexSession, snapshot, graph_changed: bool):  # type: ignore[no-untyped-def]
    return stage_communities(session, snapshot, graph_changed)


@task(name="reports", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=10)
def reports_task(session: IndexSession, snapshot, communities, policy: str) -> int:  # type: ignore[no-untyped-def]
    stage_reports(session, snapshot, communities, policy)
    return session.run.reports_written


@task(name="chunk-index", cache_policy=NO_CACHE, retries=1)
def index_task(session: IndexSession, reports_written: int) -> int:
    return len(stage_index(session))


@task(name="publish-generation", cache_policy=NO_CACHE, retries=1)
def publish_task(session: IndexSession, snapshot, communities, chunks: int) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    return stage_publish(session, snapshot, communities).to_dict()


def run_index(folder: str, data_dir: str | None, report_policy: str, prune: bool = True) -> dict[str, Any]:
    """The body shared by the index and reindex flows."""
    settings = StrataSettings(**({"data_dir": data_dir} if data_dir else {}))
    loaded = load_folder(folder)
    session = open_session(folder, settings, loaded)
    try:
        changes = stage_plan(session, loaded, prune)
        remove_task(session, list(changes.deleted) + [d.id for d in changes.changed])
        extracted = [extract_task(session, batch) for batch in batches(session, list(changes.new) + list(changes.changed))]
        # Each task takes its predecessor's result, so the run graph shows the stages in order.
        snapshot = merge_task(session, extracted)
        communities = communities_task(session, snapshot, bool(changes.new or changes.changed or changes.deleted))
        written = reports_task(session, snapshot, communities, report_policy)
        chunks = index_task(session, written)
        run = publish_task(session, snapshot, communities, chunks)
    finally:
        session.close()
    if run["published"]:
        record_drift(settings)
    logger = get_run_logger()
    logger.info("indexed %s in %s mode: %s new, %s changed, %s deleted; %s chunks extracted, %s failed; "
                "%s reports written, %s kept", folder, run["mode"], run["new"], run["changed"], run["deleted"],
                run["chunks_extracted"], run["failed_chunks"], run["reports_written"], run["reports_kept"])
    rows = "\n".join(f"| {k} | {run[k]} |" for k in (
        "mode", "store", "documents", "new", "changed", "deleted", "unchanged", "chunks_extracted", "failed_chunks",
        "entities", "relations", "communities", "reports_written", "reports_kept", "report_fallbacks", "generation",
        "published", "seconds"))
    create_markdown_artifact(key="strata-index-run", markdown=f"## Strata index run: {folder}\n\n| what | value |\n|---|---|\n{rows}\n")
    return run


@flow(name="strata-index", log_prints=True)
def index_flow(folder: str, data_dir: str | None = None) -> dict[str, Any]:
    """Index ``folder`` into the workspace ``data_dir`` (default from settings); incremental when re-run."""
    return run_index(folder, data_dir, "changed")
