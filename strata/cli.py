"""The ``strata`` command line: index, ask, search, route, status, serve.

Exit codes: 0 success; 1 an operational error (store unreachable, no index); 2 bad input (no such folder,
empty folder, invalid request); 3 indexed, but some files could not be read (each is named).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Sequence

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

EXIT_OK, EXIT_ERROR, EXIT_BAD_INPUT, EXIT_PARTIAL = 0, 1, 2, 3

err = Console(stderr=True, soft_wrap=True)
out = Console(soft_wrap=True)


def _settings(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from pydantic import ValidationError

    from core.settings import StrataSettings

    overrides: dict[str, Any] = {}
    if getattr(args, "data_dir", None):
        overrides["data_dir"] = Path(args.data_dir)
    try:
        settings = StrataSettings(**overrides)
        settings.llm_mode  # validates the llm section against the mode
        return settings
    except (ValidationError, ValueError) as exc:
        err.print(f"[red]invalid settings:[/red] {exc}")
        raise SystemExit(EXIT_BAD_INPUT)


def cmd_index(args: argparse.Namespace) -> int:
    from extraction.loader import EmptyCorpusError
    from strata.pipeline import index_folder
    from core.store import StoreError

    settings = _settings(args)
    folder = Path(args.folder)
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err, transient=not err.is_terminal) as bar:
        tasks: dict[str, Any] = {}

        def progress(stage: str, advance: int, total: int | None) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage, total=total)
            elif total is not None:
                bar.update(tasks[stage], total=max(total, bar.tasks[tasks[stage]].completed + advance))
            bar.advance(tasks[stage], advance)

        try:
            run = index_folder(folder, settings, progress, prune=not args.no_prune,
                               report_policy="missing" if args.defer_reports else "changed")
        except FileNotFoundError as exc:
            err.print(f"[red]error:[/red] {exc}")
            return EXIT_BAD_INPUT
        except EmptyCorpusError as exc:
            err.print(f"[red]error:[/red] {exc}")
            return EXIT_BAD_INPUT
        except StoreError as exc:
            err.print(f"[red]store error:[/red] {exc}")
            return EXIT_ERROR
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
        err.print(f"[yellow]extraction failed[/yellow] {f['chunk_id']} (attempt {f['attempts']}): {f['reason']}; "
                  "it will be retried on the next run")
    for p in run.problems:
        err.print(f"[yellow]skipped[/yellow] {p['path']}: {p['reason']}")
    if run.problems or run.failed_chunks:
        if run.problems:
            err.print(f"[yellow]{len(run.problems)} file(s) could not be indexed; the rest were.[/yellow]")
        return EXIT_PARTIAL
    return EXIT_OK


def cmd_drift(args: argparse.Namespace) -> int:
    from strata.pipeline import drift_report, refresh_reports, write_drift_files
    from core.store import StoreError

    settings = _settings(args)
    try:
        if args.refresh:
            threshold = settings.communities.drift_drifting if args.threshold is None else args.threshold
            if not 0 <= threshold <= 1:
                err.print(f"[red]error:[/red] --threshold must be between 0 and 1, got {threshold}")
                return EXIT_BAD_INPUT
            done = refresh_reports(settings, threshold)
            err.print(f"refreshed {done['refreshed']} report(s) at drift >= {threshold}; removed {done['removed']} "
                      f"of dissolved communities (mode: {settings.llm_mode})")
        report = drift_report(settings)
    except StoreError as exc:
        err.print(f"[red]store error:[/red] {exc}")
        return EXIT_ERROR
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
    est = report.refresh_estimate
    out.print(f"re-summarizing the stale reports: {int(est['reports'])} calls, ${est['cost_usd']:.4f}")
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
    from strata.engine import Engine

    settings = _settings(args)
    try:
        return Engine(settings)
    except FileNotFoundError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise SystemExit(EXIT_ERROR)


def cmd_ask(args: argparse.Namespace) -> int:
    engine = _engine(args)
    try:
        answer = engine.ask(args.question, mode=args.mode, metadata_filter=json.loads(args.filter) if args.filter else None)
    except ValueError as exc:
        err.print(f"[red]error:[/red] {exc}")
        return EXIT_BAD_INPUT
    finally:
        engine.close()
    if args.json:
        print(json.dumps(answer.to_dict(), indent=2, ensure_ascii=False))
        return EXIT_OK
    out.print(f"[bold]route:[/bold] {answer.route.route} — " + "; ".join(answer.route.reasons))
    out.print(f"[bold]mode:[/bold] {answer.mode}; [bold]retrieval:[/bold] {engine.index.describe()}")
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
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'request'}: {e['msg']}" for e in exc.errors())
        err.print(f"[red]invalid memory-query request:[/red] {problems}")
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
    from core.store import StoreError, open_store

    settings = _settings(args)
    try:
        store = open_store(settings)
        counts = store.counts()
        store.close()
    except StoreError as exc:
        err.print(f"[red]store error:[/red] {exc}")
        return EXIT_ERROR
    runs = list(iter_runs(settings))
    info = {"data_dir": str(settings.data_dir), "store": settings.store.backend, "mode": settings.llm_mode,
            "counts": counts, "last_run": runs[-1] if runs else None}
    print(json.dumps(info, indent=2))
    return EXIT_OK


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from strata.api import create_app

    uvicorn.run(create_app(_settings(args)), host=args.host, port=args.port, log_level="info")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="strata", description="GraphRAG memory for a corpus: index a folder, then ask.")
    p.add_argument("--data-dir", help="workspace folder (default .strata, or STRATA_DATA_DIR)")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("index", help="index (or incrementally re-index) a folder of .txt/.md/.jsonl files")
    s.add_argument("folder")
    s.add_argument("--json", action="store_true", help="print the run summary as JSON")
    s.add_argument("--no-prune", action="store_true", help="keep stored documents that are no longer in the folder")
    s.add_argument("--defer-reports", action="store_true",
                   help="keep existing community reports as they are (see `strata drift`); write only missing ones")
    s.set_defaults(func=cmd_index)

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
    s.set_defaults(func=cmd_status)

    s = sub.add_parser("serve", help="serve the HTTP API (POST /v1/memory/query, POST /v1/ask)")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8000)
    s.set_defaults(func=cmd_serve)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return int(args.func(args))
    except SystemExit as exc:  # argparse and the helpers above exit with a code; return it instead
        return exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT
    except KeyboardInterrupt:
        err.print("interrupted")
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
