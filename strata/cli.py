"""The ``strata`` command line: init, config, index, reindex, ask, search, route, status, drift, estimate, export,
serve.

Exit codes: 0 success; 1 an operational error (store unreachable or refusing the password, no index, an index
built with other settings, the LLM endpoint failing); 2 bad input (no such folder, empty folder, invalid request
or filter, invalid settings, an unsafe ``serve`` bind); 3 indexed, but some files could not be read, a chunk's
extraction failed or a report fell back to extractive (each is named; the next run retries them). Every failure prints one line naming the problem and the fix; ``--debug`` adds the traceback.
``--data-dir``, ``--config`` and ``--debug`` may stand anywhere on the line.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Sequence

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)
from rich.table import Table

EXIT_OK, EXIT_ERROR, EXIT_BAD_INPUT, EXIT_PARTIAL = 0, 1, 2, 3

err = Console(stderr=True, soft_wrap=True)
out = Console(soft_wrap=True)


class CliError(Exception):
    """A failure the CLI reports as one line (the problem and the fix) with an exit code."""

    def __init__(self, message: str, code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.code = code


def _say(kind: str, message: str) -> None:
    err.print(f"[red]{kind}:[/red] ", end="")
    err.print(message, markup=False, highlight=False)


def settings_problem(exc: Exception) -> str:
    """A settings error in one line naming the environment variable to fix."""
    import os

    from pydantic import ValidationError

    from core.settings import env_name

    if not isinstance(exc, ValidationError):
        return str(exc)
    parts = []
    for e in exc.errors(include_url=False, include_input=False):
        loc = tuple(e["loc"])
        # A value from the environment is named by its variable; the whole section's variable if that is set.
        name = next((env_name(loc[:i]) for i in range(len(loc), 0, -1) if env_name(loc[:i]) in os.environ),
                    env_name(loc))
        value = os.environ.get(name)
        shown = f"={value!r}" if value is not None and "KEY" not in name and "PASSWORD" not in name else ""
        parts.append(f"{name}{shown}: {e['msg'].removeprefix('Value error, ')}")
    return "; ".join(parts)


def _flags(args: argparse.Namespace) -> dict[str, Any]:
    """The settings given as flags; ``--config FILE`` names the project file (passed on as STRATA_CONFIG, so that
    server workers and flow runs started from here read it too)."""
    import os

    from core.project_file import CONFIG_ENV

    if getattr(args, "config", None):
        if not Path(args.config).is_file():
            raise CliError(f"--config {args.config}: no such project file; write one with `strata init`", EXIT_BAD_INPUT)
        os.environ[CONFIG_ENV] = str(args.config)
    overrides: dict[str, Any] = {}
    if getattr(args, "data_dir", None):
        overrides["data_dir"] = Path(args.data_dir)
    return overrides


def _settings(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from pydantic import ValidationError

    from core.settings import StrataSettings, unknown_env_vars

    for name, close in unknown_env_vars():
        err.print(f"[yellow]warning:[/yellow] {name} is not a Strata setting and is ignored"
                  + (f" (did you mean {close}?)" if close else ""), markup=True, highlight=False)
    try:
        settings = StrataSettings(**_flags(args))
        settings.llm_mode  # validates the llm section against the mode
        if settings.log.format == "json":  # machine-read logs: index stages and runs as JSON lines on stderr
            from strata.logs import configure_logging

            configure_logging(settings.log)
        from core.threads import configure

        configure(settings.compute)  # BLAS and worker threads for the CPU-bound stages
        return settings
    except (ValidationError, ValueError) as exc:
        raise CliError(f"invalid settings: {settings_problem(exc)}", EXIT_BAD_INPUT) from exc


def cmd_index(args: argparse.Namespace) -> int:
    from extraction.loader import EmptyCorpusError
    from strata.pipeline import index_folder

    settings = _settings(args)
    folder = Path(args.folder)
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(), console=err,
                  transient=not err.is_terminal) as bar:
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
            if (workers or 0) > 1 or settings.compute.dask_address or settings.compute.workers > 1:
                # Extraction and embedding on Dask workers, through the Prefect flow (its task states show progress).
                from flows.index import run_flow
                from strata.stages import IndexRun

                bar.stop()
                run = IndexRun(**run_flow(str(folder), str(settings.data_dir), policy, not args.no_prune, workers,
                                          full=getattr(args, "full", False)))
            else:
                run = index_folder(folder, settings, progress, prune=not args.no_prune, report_policy=policy,
                                   full=getattr(args, "full", False))
                finish_open_stages()
        except FileNotFoundError as exc:
            err.print(f"[red]error:[/red] {exc}")
            return EXIT_BAD_INPUT
        except EmptyCorpusError as exc:
            err.print(f"[red]error:[/red] {exc}")
            return EXIT_BAD_INPUT
    if args.json:
        print(json.dumps(run.to_dict(), indent=2))
    else:
        table = Table(title=f"strata index {folder} — mode: {run.mode}, store: {run.store}, retrieval: {run.embedder}")
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
    for f in run.failures:
        if f.get("stage") == "report":
            err.print(f"[yellow]report fell back to extractive[/yellow] {str(f['chunk_id']).removeprefix('report:')} "
                      f"(attempt {f['attempts']}): {f['reason']}; the next LLM run writes it again")
        else:
            err.print(f"[yellow]extraction failed[/yellow] {f['chunk_id']} (attempt {f['attempts']}): {f['reason']}; "
                      "it will be retried on the next run")
    for p in run.problems:
        err.print(f"[yellow]skipped[/yellow] {p['path']}: {p['reason']}")
    if run.problems or run.failed_chunks or run.report_fallbacks:
        if run.problems:
            err.print(f"[yellow]{len(run.problems)} file(s) could not be indexed; the rest were.[/yellow]")
        return EXIT_PARTIAL
    return EXIT_OK


def cmd_reindex(args: argparse.Namespace) -> int:
    """Incremental reindex of a folder (as ``index``), or with ``--full`` a rebuild of everything from it."""
    return cmd_index(args)


def cmd_drift(args: argparse.Namespace) -> int:
    from strata.pipeline import drift_report, refresh_reports, write_drift_files

    settings = _settings(args)
    if args.refresh:
        threshold = settings.communities.drift_drifting if args.threshold is None else args.threshold
        if not 0 <= threshold <= 1:
            raise CliError(f"--threshold must be between 0 and 1, got {threshold}", EXIT_BAD_INPUT)
        done = refresh_reports(settings, threshold)
        err.print(f"refreshed {done['refreshed']} report(s) at drift >= {threshold}; removed {done['removed']} "
                  f"of dissolved communities (mode: {settings.llm_mode})")
    report = drift_report(settings)
    paths = write_drift_files(report, settings, Path(args.out) if args.out else None)
    if args.json:
        from communities.drift_render import to_json

        print(to_json(report))
        return EXIT_OK
    t = report.totals
    table = Table(title=f"drift: {t['stale']} stale, {t['drifting']} drifting, {t['fresh']} fresh of {t['reports']} reports")
    for col in ("community", "level", "status", "drift", "existence", "age (days)", "title"):
        table.add_column(col)
    for e in report.entries[:30]:
        table.add_row(e.community_id, str(e.level), e.status, f"{e.score:.3f}", e.existence, str(e.age_days), e.title[:50])
    out.print(table)
    from communities.drift_render import next_steps

    for step in next_steps(report):  # the refresh commands with their cost, or that nothing is to be done
        out.print(step, markup=False, highlight=False)
    out.print("written: " + ", ".join(str(p) for p in paths.values()), markup=False, highlight=False)
    return EXIT_OK


def cmd_estimate(args: argparse.Namespace) -> int:
    from extraction.estimate import estimate_documents
    from extraction.loader import EmptyCorpusError, load_folder

    settings = _settings(args)
    try:
        loaded = load_folder(args.folder)
    except (FileNotFoundError, EmptyCorpusError) as exc:
        err.print(f"[red]error:[/red] {exc}")
        return EXIT_BAD_INPUT
    est = estimate_documents(loaded.documents, settings)
    if args.json:
        print(json.dumps(est.to_dict(), indent=2))
    else:
        out.print(f"{est.documents} documents, {est.chunks} chunks with model {settings.llm.model}: about {est.calls} calls, "
                  f"{est.input_tokens:,} input and {est.output_tokens:,} output tokens, ${est.cost_usd:.4f} "
                  f"(prices from llm.price_input_per_1k / llm.price_output_per_1k)")
    return EXIT_OK


def _engine(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from retrieval.index import IndexMismatchError
    from strata.engine import Engine

    settings = _settings(args)
    try:
        return Engine(settings)
    except IndexMismatchError as exc:
        raise CliError(f"{exc}; run `strata reindex FOLDER --full` to rebuild it with the current settings, or "
                       "set the settings it was built with (e.g. STRATA_RETRIEVAL__EMBEDDER)") from exc
    except FileNotFoundError as exc:
        raise CliError(str(exc)) from exc


def _parse_filter_arg(raw: str | None) -> dict[str, Any] | None:
    from retrieval.filters import parse_filter

    if not raw:
        return None
    try:
        spec = json.loads(raw)
    except ValueError as exc:
        raise CliError(f"--filter is not valid JSON ({exc}); e.g. --filter '{{\"team\": \"payments\"}}'",
                       EXIT_BAD_INPUT) from exc
    try:
        parse_filter(spec)
    except ValueError as exc:
        raise CliError(f"invalid --filter: {exc}", EXIT_BAD_INPUT) from exc
    return spec


def _emit_delta(text: str, as_json: bool) -> None:
    """One piece of a streamed answer on stdout, flushed: raw text, or a JSON line with --json."""
    if as_json:
        print(json.dumps({"event": "delta", "text": text}, ensure_ascii=False), flush=True)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()


def cmd_ask(args: argparse.Namespace) -> int:
    metadata_filter = _parse_filter_arg(args.filter)
    engine = _engine(args)
    try:
        if metadata_filter and engine.route(args.question, args.mode).route == "global":
            raise CliError("--filter applies to local answers only (a global answer summarizes the whole corpus): "
                           "drop --filter or add --mode local", EXIT_BAD_INPUT)
        streamed: list[str] = []

        def on_delta(text: str) -> None:  # --stream: each piece of an LLM answer as it is written
            streamed.append(text)
            _emit_delta(text, args.json)

        answer = engine.ask(args.question, mode=args.mode, metadata_filter=metadata_filter,
                            **({"on_delta": on_delta} if getattr(args, "stream", False) else {}))
    except ValueError as exc:
        raise CliError(str(exc), EXIT_BAD_INPUT) from exc
    finally:
        engine.close()
    if getattr(args, "stream", False):
        if not streamed:  # an answer written at once (offline, or from both sides) is sent at once
            _emit_delta(answer.text, args.json)
        if args.json:
            print(json.dumps({"event": "answer", **answer.to_dict()}, ensure_ascii=False), flush=True)
            return EXIT_OK
        sys.stdout.write("\n\n")
    if args.json:
        print(json.dumps(answer.to_dict(), indent=2, ensure_ascii=False))
        return EXIT_OK
    if getattr(args, "stream", False):
        out.print(f"[bold]route:[/bold] {answer.route.route} — " + "; ".join(answer.route.reasons))
        out.print(f"[bold]mode:[/bold] {answer.mode}; [bold]index generation:[/bold] {answer.index_generation}")
        out.print("[bold]citations:[/bold]")
        for c in answer.citations:
            out.print(f"  {c.chunk_id}  ({c.source})", markup=False, highlight=False)
        return EXIT_OK
    out.print(f"[bold]route:[/bold] {answer.route.route} — " + "; ".join(answer.route.reasons))
    out.print(f"[bold]mode:[/bold] {answer.mode}; [bold]retrieval:[/bold] {engine.index.describe()}; "
              f"[bold]index generation:[/bold] {answer.index_generation}")
    out.print()
    out.print(answer.text, markup=False, highlight=False)
    out.print()
    out.print("[bold]citations:[/bold]")
    for c in answer.citations:
        out.print(f"  {c.chunk_id}  ({c.source})", markup=False, highlight=False)
    return EXIT_OK


def cmd_search(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from retrieval.contract import MemoryQueryRequest

    if args.request in (None, "-"):
        raw = sys.stdin.read()
    else:
        try:
            raw = Path(args.request).read_text(encoding="utf-8")
        except OSError as exc:
            err.print(f"[red]error:[/red] cannot read request file {args.request}: {exc.strerror}")
            return EXIT_BAD_INPUT
    try:
        request = MemoryQueryRequest.model_validate_json(raw)
    except ValidationError as exc:
        from retrieval.filters import tidy_filter_error

        problems = []
        for e in exc.errors(include_url=False, include_input=False):
            loc, msg = tuple(e["loc"]), e["msg"].removeprefix("Value error, ")
            if loc[:1] == ("metadata_filter",):
                inner, msg = tidy_filter_error(loc[1:], e["type"], msg)
                loc = ("metadata_filter", *inner)
            where = ".".join(str(p).encode("utf-8", "backslashreplace").decode() for p in loc) or "request"
            problems.append(f"{where}: {msg}")
        _say("invalid memory-query request", "; ".join(problems))
        return EXIT_BAD_INPUT
    engine = _engine(args)
    try:
        response = engine.query(request)
    finally:
        engine.close()
    print(response.model_dump_json(indent=2 if not args.compact else None))
    return EXIT_OK


def cmd_route(args: argparse.Namespace) -> int:
    engine = _engine(args)
    decision = engine.route(args.question, args.mode)
    engine.close()
    if args.json:
        print(json.dumps(decision.to_dict(), indent=2, ensure_ascii=False))
    else:
        out.print(f"[bold]{decision.route}[/bold]: " + "; ".join(decision.reasons))
    return EXIT_OK


def cmd_status(args: argparse.Namespace) -> int:
    from strata.pipeline import iter_runs
    from core.store import open_store

    settings = _settings(args)
    store = open_store(settings)  # a store that is down or refuses the password is reported by main()
    try:
        counts = store.counts()
    finally:
        store.close()
    from strata.workspace import Workspace

    runs = list(iter_runs(settings))
    ws = Workspace(Path(settings.data_dir))
    current = ws.current()
    manifest = current.manifest() if current is not None and current.manifest_path.exists() else {}
    info = {"data_dir": str(settings.data_dir), "store": settings.store.backend, "mode": settings.llm_mode,
            "index_generation": current.number if current else None,
            "generation_created_at": manifest.get("created_at"), "generations_kept": ws.numbers(),
            "interrupted_run": ws.pending_path.exists(), "retrieval": manifest.get("retrieval"),
            "counts": counts, "last_run": runs[-1] if runs else None}
    if args.json:
        print(json.dumps(info, indent=2))
        return EXIT_OK
    table = Table(title=f"strata status — {info['data_dir']}", show_header=False)
    table.add_column("what")
    table.add_column("value")
    for key in ("store", "mode"):
        table.add_row(key, str(info[key]))
    table.add_row("index generation", f"{info['index_generation']} (published {info['generation_created_at']})"
                  if info["index_generation"] else "none published yet: run `strata index FOLDER`")
    if info["retrieval"]:
        table.add_row("retrieval", str(info["retrieval"]))  # engines, corpus languages, what the embedder reads
    if info["interrupted_run"]:
        table.add_row("interrupted run", "the last index run did not finish; the next `strata index` completes it")
    for key, value in counts.items():
        table.add_row(key, str(value))
    last = info["last_run"]
    if last:
        table.add_row("last run", f"{last.get('started_at', '')} {last.get('source', '')}: {last.get('documents', 0)} "
                                  f"documents, {len(last.get('problems', []))} problem(s), {last.get('seconds', 0)} s")
    else:
        table.add_row("last run", "none yet: run `strata index FOLDER`")
    out.print(table)
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    from strata.export import export_store

    settings = _settings(args)
    try:
        paths = export_store(settings, args.format, Path(args.output))
    except ValueError as exc:
        raise CliError(str(exc), EXIT_BAD_INPUT) from exc
    except RuntimeError as exc:  # parquet without pyarrow
        raise CliError(str(exc), EXIT_ERROR) from exc
    for path in paths:
        out.print(str(path))
    return EXIT_OK


def cmd_init(args: argparse.Namespace) -> int:
    from core.project_file import write_project_file

    try:
        path = write_project_file(Path(args.dir), force=args.force)
    except FileExistsError as exc:
        raise CliError(str(exc), EXIT_BAD_INPUT) from exc
    out.print(f"wrote {path}: every setting with its default; `strata config` shows the effective ones")
    return EXIT_OK


def cmd_config(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from pydantic import ValidationError

    from core.project_file import effective_settings, project_file_path

    flags = _flags(args)
    try:
        _, values = effective_settings(flags)
        project = project_file_path()
    except (ValidationError, ValueError) as exc:
        raise CliError(f"invalid settings: {settings_problem(exc)}", EXIT_BAD_INPUT) from exc
    if args.json:
        print(json.dumps({"project_file": str(project) if project else None,
                          "settings": [asdict(v) for v in values]}, indent=2, default=str))
        return EXIT_OK
    table = Table(title=f"strata config (project file: {project or 'none'}; secrets masked)")
    table.add_column("setting", no_wrap=True)
    table.add_column("value")
    table.add_column("from", no_wrap=True)
    for v in values:
        table.add_row(v.key, "none" if v.value is None else json.dumps(v.value, default=str)
                      if not isinstance(v.value, str) else v.value, v.origin)
    out.print(table)
    return EXIT_OK


def _loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def cmd_serve(args: argparse.Namespace) -> int:
    import os

    from strata.serving import run_server

    settings = _settings(args)
    server = settings.server
    try:
        keys = server.keys()
    except ValueError as exc:
        raise CliError(f"{exc}; fix STRATA_SERVER__API_KEYS_FILE") from exc
    if not keys and not _loopback(args.host) and not args.insecure:
        raise CliError(f"refusing to serve on {args.host} without an API key: set STRATA_SERVER__API_KEYS='[\"KEY\"]' "
                       "(or STRATA_SERVER__API_KEYS_FILE), bind 127.0.0.1, or pass --insecure", EXIT_BAD_INPUT)
    if not keys and not _loopback(args.host):
        err.print(f"[yellow]warning:[/yellow] serving on {args.host} without authentication (--insecure)")
    workers = args.workers or server.workers
    if workers > 1:
        # Each worker process builds its own app (and loads the index once) from the same settings.
        os.environ["STRATA_DATA_DIR"] = str(settings.data_dir)
    # Structured logs (log.format), one line per request; SIGTERM lets requests in flight finish.
    run_server(settings, args.host, args.port, workers)
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    # SUPPRESS: an option given before the subcommand is not reset by the subcommand's default.
    common.add_argument("--data-dir", default=argparse.SUPPRESS,
                        help="workspace folder (default .strata, or STRATA_DATA_DIR)")
    common.add_argument("--config", default=argparse.SUPPRESS, metavar="FILE",
                        help="project file (default ./strata.toml when present, or STRATA_CONFIG)")
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="print the traceback of an error")
    p = argparse.ArgumentParser(prog="strata", parents=[common],
                                description="GraphRAG memory for a corpus: index a folder, then ask.",
                                epilog="exit codes: 0 ok, 1 operational error, 2 bad input, 3 some files not indexed")
    p.add_argument("--version", action="version", version=f"strata {_version()}")
    sub = p.add_subparsers(dest="command", required=True)
    _add_parser = sub.add_parser

    def add_parser(name: str, **kw: Any) -> argparse.ArgumentParser:
        return _add_parser(name, parents=[common], **kw)

    sub.add_parser = add_parser  # type: ignore[method-assign]

    s = sub.add_parser("index", help="index (or incrementally re-index) a folder of .txt/.md/.jsonl files")
    s.add_argument("folder")
    s.add_argument("--json", action="store_true", help="print the run summary as JSON")
    s.add_argument("--no-prune", action="store_true", help="keep stored documents that are no longer in the folder")
    s.add_argument("--defer-reports", action="store_true",
                   help="keep existing community reports as they are (see `strata drift`); write only missing ones")
    s.add_argument("--workers", type=int, metavar="N",
                   help="extract and embed on N Dask worker processes through Prefect (or STRATA_COMPUTE__WORKERS)")
    s.set_defaults(func=cmd_index)

    s = sub.add_parser("reindex", help="re-index a folder incrementally, or rebuild everything with --full")
    s.add_argument("folder")
    s.add_argument("--full", action="store_true",
                   help="rebuild from scratch: every document re-chunked, re-extracted and re-embedded")
    s.add_argument("--json", action="store_true", help="print the run summary as JSON")
    s.add_argument("--no-prune", action="store_true", help="keep stored documents that are no longer in the folder")
    s.add_argument("--defer-reports", action="store_true", help="as for `strata index`")
    s.add_argument("--workers", type=int, metavar="N", help="as for `strata index`")
    s.set_defaults(func=cmd_reindex)

    s = sub.add_parser("drift", help="which community reports no longer match the graph, and by how much")
    s.add_argument("--json", action="store_true", help="print the report as JSON")
    s.add_argument("--out", help="folder for drift.md, drift.json and drift.html (default <data-dir>/drift)")
    s.add_argument("--refresh", action="store_true", help="re-summarize every report at or above --threshold")
    s.add_argument("--threshold", type=float, help="drift score for --refresh (default communities.drift_drifting)")
    s.set_defaults(func=cmd_drift)

    s = sub.add_parser("estimate", help="predict LLM calls, tokens and cost of indexing a folder, spending nothing")
    s.add_argument("folder")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_estimate)

    s = sub.add_parser("ask", help="answer a question with citations (the router picks local or global)")
    s.add_argument("question")
    s.add_argument("--mode", choices=["local", "global"], help="override the router")
    s.add_argument("--filter", help="metadata filter as JSON, for local answers")
    s.add_argument("--json", action="store_true")
    s.add_argument("--stream", action="store_true",
                   help="print an LLM answer as it is written (with --json: one JSON line per piece, then the answer)")
    s.set_defaults(func=cmd_ask)

    s = sub.add_parser("search", help="run a memory-query request (JSON file or stdin) and print the response")
    s.add_argument("request", nargs="?", help="request file; '-' or absent reads stdin")
    s.add_argument("--json", action="store_true", help="accepted for clarity; input and output are always JSON")
    s.add_argument("--compact", action="store_true", help="one-line JSON output")
    s.set_defaults(func=cmd_search)

    s = sub.add_parser("route", help="show the router's decision and reasons without answering")
    s.add_argument("question")
    s.add_argument("--mode", choices=["local", "global"])
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_route)

    s = sub.add_parser("status", help="counts in the store and the last run")
    s.add_argument("--json", action="store_true", help="print the status as JSON")
    s.set_defaults(func=cmd_status)

    s = sub.add_parser("export", help="write entities, relations, communities and reports as graphml, csv or parquet")
    s.add_argument("--format", required=True, choices=["graphml", "csv", "parquet"],
                   help="graphml: one file (Gephi, networkx); csv, parquet: a folder of GraphRAG-shaped tables")
    s.add_argument("--output", required=True, help="the .graphml file, or the folder for csv and parquet")
    s.set_defaults(func=cmd_export)

    s = sub.add_parser("init", help="write a commented project file (strata.toml) with every setting and its default")
    s.add_argument("dir", nargs="?", default=".", help="the project folder (default: the current one)")
    s.add_argument("--force", action="store_true", help="replace an existing strata.toml")
    s.set_defaults(func=cmd_init)

    s = sub.add_parser("config", help="print the effective settings and where each came from (secrets masked)")
    s.add_argument("--json", action="store_true", help="print them as JSON")
    s.set_defaults(func=cmd_config)

    s = sub.add_parser("serve", help="serve the HTTP API (POST /v1/memory/query, POST /v1/ask)")
    s.add_argument("--host", default="127.0.0.1", help="bind address; a non-loopback one needs an API key or --insecure")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument("--workers", type=int, help="server processes (default server.workers)")
    s.add_argument("--insecure", action="store_true", help="allow a non-loopback bind without an API key")
    s.set_defaults(func=cmd_serve)
    return p


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("strata")
    except PackageNotFoundError:
        return "unknown"


def explain(exc: BaseException) -> tuple[str, str, int]:
    """(kind, one-line message with the fix, exit code) for an error that reached the top."""
    from pydantic import ValidationError

    from core.store import StoreError, StoreUnavailableError

    if isinstance(exc, CliError):
        return "error", str(exc), exc.code
    if isinstance(exc, StoreUnavailableError):
        return "store unavailable", (f"{exc}; start Neo4j (scripts/neo4j start) or check STRATA_STORE__NEO4J_URI, "
                                     "STRATA_STORE__NEO4J_USER and STRATA_STORE__NEO4J_PASSWORD"), EXIT_ERROR
    if isinstance(exc, StoreError):
        return "store error", f"{exc}; run the command again (nothing of the failed batch was written)", EXIT_ERROR
    if isinstance(exc, ValidationError):
        return "invalid input", settings_problem(exc), EXIT_BAD_INPUT
    kind = type(exc).__name__
    if kind in ("IndexLockedError",):
        return "busy", f"{exc}; wait for the other index run to finish", EXIT_ERROR
    if kind == "UnfinishedRunError":
        return "error", str(exc), EXIT_ERROR
    if kind in ("LLMError", "ModelUnavailableError"):
        return "error", f"{exc}; check STRATA_LLM__BASE_URL / STRATA_LLM__API_KEY or the embedder setting", EXIT_ERROR
    if isinstance(exc, OSError):
        return "error", f"{exc}", EXIT_ERROR
    return "internal error", f"{kind}: {exc} (run again with --debug for the traceback)", EXIT_ERROR


def main(argv: Sequence[str] | None = None) -> int:
    debug = False
    try:
        args = build_parser().parse_args(argv)
        debug = bool(getattr(args, "debug", False))
        return int(args.func(args))
    except SystemExit as exc:  # argparse and the helpers above exit with a code; return it instead
        return exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT
    except KeyboardInterrupt:
        err.print("interrupted")
        return 130
    except BrokenPipeError:  # the reader went away (`strata status --json | head`): nothing left to say
        return EXIT_OK
    except Exception as exc:  # every failure is one line naming the problem and the fix, unless --debug
        if debug:
            err.print_exception(show_locals=False)
        kind, message, code = explain(exc)
        _say(kind, message.replace("\n", " "))
        return code


if __name__ == "__main__":
    raise SystemExit(main())
