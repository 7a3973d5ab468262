"""The ``strata index`` and ``strata reindex`` commands: the run with a progress bar (an ETA for every stage that
has a count), then its summary, what it skipped and why, and the exit code.

A run on several processes or machines (``--workers N``, ``compute.workers``, ``compute.dask_address``) is done by
a distributed runner, which lives above this package (the Prefect flow on Dask). It is injected: given to
:func:`strata.cli.main`, or else found by the ``strata.index_runners`` entry point that the project declares, so
nothing here imports the flows.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Protocol

from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)
from rich.table import Table

from strata.cli_common import EXIT_BAD_INPUT, EXIT_OK, EXIT_PARTIAL, CliError, err, load_settings, out

RUNNER_GROUP = "strata.index_runners"
RUNNER_NAME = "distributed"


class DistributedRunner(Protocol):
    """Runs an index on worker processes and returns the run's summary (``IndexRun.to_dict()``)."""

    def __call__(self, folder: str | None, data_dir: str | None, report_policy: str, prune: bool,
                 workers: int | None, full: bool = False, other_folder: str = "refuse") -> dict[str, Any]: ...


def installed_runner() -> DistributedRunner:
    """The distributed runner the installed project declares (entry point ``strata.index_runners``)."""
    from importlib.metadata import entry_points

    for ep in entry_points(group=RUNNER_GROUP):
        if ep.name == RUNNER_NAME:
            return ep.load()  # type: ignore[no-any-return]
    raise CliError(f"indexing on workers needs the distributed runner (entry point {RUNNER_GROUP}:{RUNNER_NAME}), "
                   "which this installation does not declare; reinstall Strata (make install) or drop --workers")


def progress_bar() -> Progress:
    """The run's bar: one line per stage, and for a stage with a count done/total, elapsed time and an ETA
    (rich estimates the speed from the updates of the last minute, so a stage must report often: the embed
    stage reports as each batch of the embedder finishes)."""
    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(), console=err,
                    transient=not err.is_terminal, speed_estimate_period=60.0)


def cmd_index(args: argparse.Namespace) -> int:
    from extraction.loader import EmptyCorpusError
    from strata.folders import FolderError, plan_folders
    from strata.pipeline import index_folder
    from strata.stages import IndexRun
    from strata.workspace import Workspace

    settings = load_settings(args)
    folder = getattr(args, "folder", None)
    other = "add" if getattr(args, "add", False) else "replace" if getattr(args, "replace", False) else "refuse"
    try:  # a folder the workspace does not index is refused before anything is touched (checked again under the lock)
        plan_folders(Workspace(Path(settings.data_dir)), folder, other)
    except FolderError as exc:
        raise CliError(str(exc), EXIT_BAD_INPUT) from exc
    if getattr(args, "replace_store", False):  # a damaged graph.sqlite: set it aside, rebuild from the folder
        from strata.repair import set_aside_store

        try:
            aside = set_aside_store(settings)
        except ValueError as exc:
            raise CliError(str(exc), EXIT_BAD_INPUT) from exc
        if aside is not None:
            err.print(f"the graph store was set aside as {aside}; rebuilding it from the folder", markup=False,
                      highlight=False)
    with progress_bar() as bar:
        tasks: dict[str, Any] = {}

        def finish_open_stages() -> None:
            # A stage with no count (load, merge, communities) is done when the next one starts: show it done.
            for task in bar.tasks:
                if task.total is None:
                    bar.update(task.id, total=max(1, int(task.completed)), completed=max(1, int(task.completed)))

        def progress(stage: str, advance: int, total: int | None) -> None:
            if stage not in tasks:
                finish_open_stages()
                tasks[stage] = bar.add_task(stage, total=total)
            elif total is not None:
                bar.update(tasks[stage], total=max(total, bar.tasks[tasks[stage]].completed + advance))
            bar.advance(tasks[stage], advance)

        try:
            policy = "missing" if args.defer_reports else "changed"
            workers = getattr(args, "workers", None)
            # A rebuilt store is rebuilt whole: it ends as a first index of the folder does.
            full = getattr(args, "full", False) or getattr(args, "replace_store", False)
            if (workers or 0) > 1 or settings.compute.dask_address or settings.compute.workers > 1:
                # Extraction and embedding on Dask workers (its task states show progress).
                runner = getattr(args, "distributed_runner", None) or installed_runner()
                bar.stop()
                run = IndexRun(**runner(folder, str(settings.data_dir), policy, not args.no_prune, workers, full,
                                        other))
            else:
                run = index_folder(folder, settings, progress, prune=not args.no_prune, report_policy=policy,
                                   full=full, other_folder=other)
                finish_open_stages()
        except (FileNotFoundError, EmptyCorpusError, FolderError) as exc:
            raise CliError(str(exc), EXIT_BAD_INPUT) from exc
    if args.json:
        print(json.dumps(run.to_dict(), indent=2))
    else:
        print_summary(run)
    return report_leftovers(run)


def print_summary(run: Any) -> None:
    table = Table(title=f"strata index {run.source} — mode: {run.mode}, store: {run.store}, retrieval: {run.embedder}")
    table.add_column("what")
    table.add_column("count", justify="right")
    for key in ("documents", "new", "changed", "deleted", "unchanged", "chunks_extracted", "chunks_total",
                "entities", "relations", "communities", "levels", "reports_written", "reports_kept"):
        table.add_row(key, str(getattr(run, key)))
    table.add_row("failed_chunks", str(run.failed_chunks))
    table.add_row("report_fallbacks", str(run.report_fallbacks))
    table.add_row("index generation", f"{run.generation} ({'published' if run.published else 'unchanged'})")
    table.add_row("seconds", f"{run.seconds:.2f}")
    out.print(table)
    if getattr(run, "embedder_choice", ""):
        out.print(run.embedder_choice, markup=False, highlight=False)
    if run.llm_usage:
        usage = Table(title="LLM usage (predicted beside actual)")
        for col in ("stage", "calls", "cache hits", "retries", "input tokens", "output tokens"):
            usage.add_column(col, justify="right" if col != "stage" else "left")
        for stage, u in run.llm_usage.items():
            usage.add_row(stage, str(u["calls"]), str(u["cache_hits"]), str(u["retries"]), str(u["input_tokens"]),
                          str(u["output_tokens"]))
        total = {k: sum(u[k] for u in run.llm_usage.values()) for k in ("calls", "input_tokens", "output_tokens")}
        usage.add_row("actual", str(total["calls"]), "", "", str(total["input_tokens"]), str(total["output_tokens"]))
        if run.predicted:
            usage.add_row("predicted", str(run.predicted["calls"]), "", "", str(run.predicted["input_tokens"]),
                          str(run.predicted["output_tokens"]))
        out.print(usage)


def report_leftovers(run: Any) -> int:
    """Name what the run could not do (failures, unreadable files) and what it left out on purpose (empty
    documents, unsupported types); the exit code: 3 only for the former."""
    for f in run.failures:
        if f.get("stage") == "report":
            err.print(f"[yellow]report fell back to extractive[/yellow] {str(f['chunk_id']).removeprefix('report:')} "
                      f"(attempt {f['attempts']}): {f['reason']}; the next LLM run writes it again")
        else:
            err.print(f"[yellow]extraction failed[/yellow] {f['chunk_id']} (attempt {f['attempts']}): {f['reason']}; "
                      "it will be retried on the next run")
    for p in run.problems:
        err.print(f"[yellow]skipped[/yellow] {p['path']}: {p['reason']}")
    from extraction.loader import skipped_notes

    for line in skipped_notes(run.empty, run.unsupported):  # empty files, unsupported types: not failures
        err.print(f"note: {line}", markup=False, highlight=False)
    if run.problems or run.failed_chunks or run.report_fallbacks:
        if run.problems:
            err.print(f"[yellow]{len(run.problems)} file(s) could not be indexed; the rest were.[/yellow]")
        return EXIT_PARTIAL
    return EXIT_OK


def cmd_reindex(args: argparse.Namespace) -> int:
    """Incremental reindex of a folder (as ``index``; without one, of the folders the workspace records), or
    with ``--full`` a rebuild of everything from it."""
    return cmd_index(args)
