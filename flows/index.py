"""The indexing flow: the same stages as ``strata index``, each a Prefect task with its own state and retries.

Wiring only: every task calls a stage function of :mod:`strata.stages`. Extraction runs as one task per batch
of documents, so a long run shows its progress task by task and a failed batch is retried on its own (the LLM
response cache makes a retry free for the chunks that already succeeded; within a batch the LLM client keeps
its concurrency limit). The run summary is returned and published as a markdown artifact.

On Prefect's Dask task runner (``compute.workers`` > 1 or ``compute.dask_address``) extraction, LLM description
merges, embedding and report writing (level by level) are tasks mapped over fixed units of work; this process
stores their results in unit order, so the index is the same as a one-process run's.
"""

from __future__ import annotations

import os
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from communities.sentences import Idf
from core.records import Chunk, Document, Entity, Report
from core.settings import StrataSettings
from core.threads import configure
from extraction.loader import skipped_notes
from flows.params import checked_folder, other_folder_policy
from strata.folders import load_planned, plan_folders
from strata.workspace import Workspace
from strata.pipeline import record_drift
from strata.runmetrics import RunFigures
from extraction.types import ExtractionResult
from prefect.utilities.annotations import unmapped
from strata.stages import (Failures, IndexSession, MergeDispatch, ReportDispatch, ReportItems, batch_chunks,
                           chunks_to_embed, embed_unit, extract_unit, merge_unit, open_session, plan_batches,
                           report_passages, save_vectors, stage_communities, stage_extract, stage_extracted,
                           stage_index, stage_merge, stage_plan, stage_publish, stage_remove, stage_reports,
                           write_report_unit)

BATCH_CHUNKS = 256
REPORT_UNIT = 128  # communities per report-writing task
MERGE_UNIT = 32  # entities per description-merge task (LLM calls)


def batches(session: IndexSession, docs: Sequence[Document], size: int = BATCH_CHUNKS) -> list[list[Document]]:
    """The documents of each extraction batch (the same grouping as a one-process run's)."""
    return [[doc for doc, _ in batch] for batch in plan_batches(docs, session.settings, size)]


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


@task(name="extract-unit", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=5)
def extract_unit_task(chunks: list[Chunk], settings: StrataSettings, words: Any = None) -> ExtractionResult:
    return extract_unit(chunks, settings, words)


@task(name="merge-descriptions-unit", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=5)
def merge_unit_task(entities: list[Entity], settings: StrataSettings) -> list[Entity]:
    return merge_unit(entities, settings)


def merges_on_workers(settings: StrataSettings, unit: int = MERGE_UNIT) -> MergeDispatch:
    """LLM description merges by tasks mapped over units of ``unit`` entities, gathered in order."""

    def dispatch(entities: list[Entity]) -> list[Entity]:
        futures = merge_unit_task.map([entities[i:i + unit] for i in range(0, len(entities), unit)],
                                      unmapped(settings))
        return [e for future in futures for e in future.result()]

    return dispatch


@task(name="write-reports-unit", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=5)
def report_unit_task(items: ReportItems, chunks: list[Chunk], idf: Idf, settings: StrataSettings) -> Any:
    return write_report_unit(items, chunks, idf, settings)


def reports_on_workers(settings: StrataSettings, unit: int = REPORT_UNIT) -> ReportDispatch:
    """Each level's reports written by tasks mapped over units of ``unit`` communities (with the passages they
    quote and the corpus's document frequencies), gathered in community order."""

    def dispatch(items: ReportItems, chunks: Mapping[str, Chunk], idf: Idf) -> tuple[list[Report], Failures]:
        units = [list(items[i:i + unit]) for i in range(0, len(items), unit)]
        futures = report_unit_task.map(units, [report_passages(u, chunks) for u in units], unmapped(idf),
                                       unmapped(settings))
        reports: list[Report] = []
        failures: Failures = []
        for future in futures:
            written, failed = future.result()
            reports += written
            failures += failed
        return reports, failures

    return dispatch


@task(name="embed-unit", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=5)
def embed_unit_task(texts: list[str], settings: StrataSettings) -> Any:
    return embed_unit(texts, settings)


def embed_on_workers(session: IndexSession, settings: StrataSettings,
                     chunks: list[Chunk] | None) -> tuple[str | None, list[list[Chunk]], list[Any]]:
    """Embedding tasks submitted for ``chunks`` (None: every stored chunk) that have no cached vector."""
    name, units = chunks_to_embed(session, chunks)
    futures = list(embed_unit_task.map([[c.text for c in u] for u in units], unmapped(settings))) if units else []
    return name, units, futures


def collect_vectors(session: IndexSession, name: str | None, units: list[list[Chunk]], futures: list[Any],
                    finished_only: bool = False) -> None:
    """Store the vectors of the embedding tasks, in unit order; ``finished_only``: those of the tasks that have
    already completed (what a failed run keeps, so the next run does not embed them again)."""
    for unit, future in zip(units, futures):
        if finished_only:
            try:
                vectors = future.result(timeout=0.01)
            except Exception:  # not finished, or failed
                continue
        else:
            vectors = future.result()
        save_vectors(session, name, unit, vectors)  # type: ignore[arg-type]


def run_index(folder: str | None, data_dir: str | None, report_policy: str, prune: bool = True,
              distributed: bool = False, settings: StrataSettings | None = None, full: bool = False,
              other_folder: str = "refuse") -> dict[str, Any]:
    """The body shared by the index and reindex flows. ``distributed``: extraction and embedding run as tasks
    mapped over batches on the flow's task runner (Dask workers), and their results are stored here in batch
    order, so the result is the same as a one-process run's whatever the number of workers. ``folder`` None:
    the folders the workspace records; ``other_folder``: see :mod:`strata.folders`."""
    settings = settings or StrataSettings(**({"data_dir": data_dir} if data_dir else {}))
    configure(settings.compute)
    plan = plan_folders(Workspace(Path(settings.data_dir)), folder, other_folder)
    loaded = load_planned(plan)
    folder = plan.source
    session = open_session(folder, settings, loaded, full=full, folders=plan)
    settings = session.settings  # the run's: chunks fitted to the model's context, the embedder settled for the corpus
    try:
        changes = stage_plan(session, loaded, prune)
        # Counts are small integers, which Prefect cannot trace through values: the order of the stages is made
        # visible in the run graph with wait_for on the states of the tasks before.
        removed = remove_task(session, list(changes.deleted) + [d.id for d in changes.changed], return_state=True)
        todo = list(changes.new) + list(changes.changed)
        embedding = None
        try:
            if distributed:
                planned = plan_batches(todo, settings)
                results = extract_unit_task.map([batch_chunks(b) for b in planned], unmapped(settings),
                                                unmapped(session.words if planned else None), wait_for=[removed])
                # Embedding needs only the chunks' texts: the workers embed while this process stores the
                # extractions, merges and writes the reports; the vectors are stored before the chunk index is built.
                embedding = embed_on_workers(session, settings, [c for b in planned for c in batch_chunks(b)])
                upstream: list[Any] = list(results)
                extracted = [stage_extracted(session, b, r.result()) for b, r in zip(planned, results)]
            else:
                if todo:  # the extractor first, so the word model is timed as its own stage, not inside a batch's
                    _ = session.extractor
                states = [extract_task(session, batch, wait_for=[removed], return_state=True)
                          for batch in batches(session, todo)]
                extracted = [s.result() for s in states]
                upstream = states
            # Each task takes its predecessor's result, so the run graph shows the stages in order.
            if distributed:  # LLM description merges (none offline) are mapped over the workers
                snapshot = stage_merge(session, dispatch=merges_on_workers(settings))
            else:
                snapshot = merge_task(session, extracted, wait_for=upstream or [removed])
            communities = communities_task(session, snapshot, bool(changes.new or changes.changed or changes.deleted))
            if distributed:  # the reports of each level are written by tasks mapped over the workers
                stage_reports(session, snapshot, communities, report_policy, dispatch=reports_on_workers(settings))
                written, after = session.run.reports_written, []
            else:
                state = reports_task(session, snapshot, communities, report_policy, return_state=True)
                written, after = state.result(), [state]
            if embedding is not None:
                collect_vectors(session, *embedding)
                # Older chunks whose vectors are not cached (a vector cache removed, say): usually none.
                collect_vectors(session, *embed_on_workers(session, settings, None))
        except BaseException:
            if embedding is not None:  # keep what the workers finished: a rerun embeds only the rest
                with suppress(Exception):
                    collect_vectors(session, *embedding, finished_only=True)
            raise
        chunks = index_task(session, written, wait_for=after, return_state=True)
        run = publish_task(session, snapshot, communities, chunks.result(), wait_for=[chunks])
    finally:
        session.close()
    # written again whenever the drift files describe another generation than the published one
    record_drift(settings, known=session.drift_of)
    logger = get_run_logger()
    figures = RunFigures.of(run, settings.llm)
    logger.info("indexed %s in %s mode: %s new, %s changed, %s deleted; %s chunks extracted, %s failed; "
                "%s reports written, %s kept; %s in the ledger; %s LLM calls, %.4f USD", folder, run["mode"],
                run["new"], run["changed"], run["deleted"], run["chunks_extracted"], run["failed_chunks"],
                run["reports_written"], run["reports_kept"], figures.ledger_failures, sum(figures.llm_calls.values()),
                figures.llm_cost_usd)
    if run.get("embedder_choice"):
        logger.info("%s", run["embedder_choice"])
    if run["extractor_change"]:  # every document extracted by another extractor was extracted again
        logger.warning("%s", run["extractor_change"])
    for stage, seconds in figures.stage_seconds.items():
        logger.info("stage %s: %.3f s", stage, seconds)
    for note in skipped_notes(run["empty"], run["unsupported"]):  # not failures: the run still completes
        logger.info("%s", note)
    rows = "\n".join(f"| {k} | {run[k]} |" for k in (
        "mode", "store", "documents", "entities", "relations", "communities", "reports_kept"))
    rows += "\n" + "\n".join(f"| {what} | {value} |" for what, value in figures.rows())
    create_markdown_artifact(key="strata-index-run", markdown=f"## Strata index run: {folder}\n\n| what | value |\n|---|---|\n{rows}\n")
    return run


def dask_runner(settings: StrataSettings) -> Any:
    """Prefect's Dask task runner for ``compute.dask_address`` (an existing cluster) or ``compute.workers`` > 1 (a
    local cluster of worker processes, one thread and one BLAS thread each); None for a one-process run."""
    c = settings.compute
    if not c.dask_address and c.workers <= 1:
        return None
    from prefect_dask import DaskTaskRunner

    if c.dask_address:
        return DaskTaskRunner(address=c.dask_address)
    return DaskTaskRunner(cluster_class="distributed.LocalCluster",
                          cluster_kwargs={"n_workers": c.workers, "threads_per_worker": 1, "processes": True,
                                          "dashboard_address": None})


@contextmanager
def worker_environment() -> Iterator[None]:
    """Dask's nanny sets ``MALLOC_TRIM_THRESHOLD_`` in every worker it starts, which turns glibc's adaptive mmap
    threshold off: each of the embedder's large temporaries is then mapped and unmapped anew, and a worker
    embeds about 25% slower than this process does with one BLAS thread (10.2 against 13.8 SciFact texts/s). A
    context in which the workers of a local cluster start without it (also when an earlier cluster of this
    process left it in the environment, where the nanny puts it)."""
    import dask

    key = "MALLOC_TRIM_THRESHOLD_"
    before = os.environ.pop(key, None)
    try:
        with dask.config.set({f"distributed.nanny.pre-spawn-environ.{key}": None}):
            yield
    finally:
        os.environ.pop(key, None)
        if before is not None:
            os.environ[key] = before


def with_workers(settings: StrataSettings, workers: int | None) -> StrataSettings:
    if workers is None:
        return settings
    # Each worker process embeds with one thread: the parallelism is the workers'.
    compute = settings.compute.model_copy(update={"workers": workers, "threads": 1 if workers > 1 else settings.compute.threads})
    return settings.model_copy(update={"compute": compute})


@flow(name="strata-index-distributed", log_prints=True)
def distributed_index_flow(folder: str | None, settings: StrataSettings, report_policy: str = "changed",
                           prune: bool = True, full: bool = False, other_folder: str = "refuse") -> dict[str, Any]:
    """The index run with extraction and embedding mapped over the Dask workers (the task runner is set by
    :func:`run_flow`)."""
    return run_index(folder, str(settings.data_dir), report_policy, prune, distributed=True, settings=settings,
                     full=full, other_folder=other_folder)


def run_flow(folder: str | None, data_dir: str | None, report_policy: str, prune: bool, workers: int | None,
             full: bool = False, other_folder: str = "refuse") -> dict[str, Any]:
    """An index run through Prefect, on Dask workers when the settings (or ``workers``) ask for them: the runner
    ``strata index --workers N`` is given (registered as the ``strata.index_runners`` entry point)."""
    settings = with_workers(StrataSettings(**({"data_dir": data_dir} if data_dir else {})), workers)
    runner = dask_runner(settings)
    if runner is None:
        return run_index(folder, data_dir, report_policy, prune, settings=settings, full=full,
                         other_folder=other_folder)
    with worker_environment():
        return distributed_index_flow.with_options(task_runner=runner)(folder, settings, report_policy, prune, full,
                                                                       other_folder)


@flow(name="strata-index", log_prints=True)
def index_flow(folder: str | None = None, data_dir: str | None = None, workers: int | None = None,
               other_folder: str = "refuse") -> dict[str, Any]:
    """Index ``folder`` into the workspace ``data_dir`` (default from settings); incremental when re-run. No
    ``folder``: the folders the workspace records. A folder the workspace does not index is refused unless
    ``other_folder`` is ``add`` (index both) or ``replace`` (index only it). With ``workers`` > 1 (or
    ``STRATA_COMPUTE__WORKERS``, or ``STRATA_COMPUTE__DASK_ADDRESS``) extraction and embedding run on Dask workers."""
    policy = other_folder_policy("other_folder", other_folder)
    return run_flow(checked_folder("folder", folder, data_dir, policy), data_dir, "changed", True, workers,
                    other_folder=policy)
