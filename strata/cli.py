"""The ``strata`` command line: init, config, index, reindex, ask, search, route, status, drift, estimate, export,
serve, mcp.

Exit codes: 0 success; 1 an operational error (store unreachable or refusing the password, no index, an index
built with other settings, the LLM endpoint failing); 2 bad input (no such folder, empty folder, invalid request
or filter, invalid settings, an unsafe ``serve`` bind); 3 indexed, but some files could not be read, a chunk's
extraction failed or a report fell back to extractive (each is named; the next run retries them). Every failure prints one line naming the problem and the fix; ``--debug`` adds the traceback.
``--data-dir``, ``--config`` and ``--debug`` may stand anywhere on the line.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from rich.table import Table

from strata.cli_common import (EXIT_BAD_INPUT, EXIT_ERROR, EXIT_OK, CliError, err, flags_of, load_settings, out,
                               say, settings_problem)
from strata.cli_index import DistributedRunner, cmd_index, cmd_reindex
from strata.cli_query import cmd_ask, cmd_route, cmd_search

if TYPE_CHECKING:
    from core.settings import StrataSettings


def cmd_drift(args: argparse.Namespace) -> int:
    from strata.pipeline import refresh_reports, write_drift_files

    settings = load_settings(args)
    if args.refresh:
        threshold = settings.communities.drift_drifting if args.threshold is None else args.threshold
        if not 0 <= threshold <= 1:
            raise CliError(f"--threshold must be between 0 and 1, got {threshold}", EXIT_BAD_INPUT)
        done = refresh_reports(settings, threshold)
        err.print(f"refreshed {done['refreshed']} report(s) at drift >= {threshold}; removed {done['removed']} "
                  f"of dissolved communities (mode: {settings.llm_mode})")
    from strata.drift_files import generation_drift, stamped_json
    from strata.workspace import Workspace

    # The published generation's report (never a store an index run is half-way through), named by its number.
    published = Workspace(Path(settings.data_dir)).current()
    generation = published.number if published is not None else None
    report = generation_drift(settings, published)
    paths = write_drift_files(report, settings, Path(args.out) if args.out else None, generation=generation)
    if args.json:
        print(stamped_json(report, generation))
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

    settings = load_settings(args)
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


def cmd_status(args: argparse.Namespace) -> int:
    from strata.pipeline import iter_runs
    from core.store import open_store

    settings = load_settings(args)
    store = open_store(settings)  # a store that is down or refuses the password is reported by main()
    try:
        counts = store.counts()
    finally:
        store.close()
    from strata.workspace import Workspace

    from strata.integrity import damage

    runs = list(iter_runs(settings))
    ws = Workspace(Path(settings.data_dir))
    current = ws.current()
    problem = damage(current) if current is not None else None  # a damaged generation is named, file and all
    manifest = current.manifest() if current is not None and problem is None else {}
    if current is not None and not ws.current_is_pointed(current):
        problem = (f"CURRENT is lost or unreadable; generation {current.number} (the newest intact one) is served "
                   "until the next `strata index` names it again")
    elif current is None and ws.numbers():
        problem = "CURRENT names no generation and no generation is intact; run `strata index FOLDER` to rebuild one"
    from extraction.fingerprint import fingerprint_of
    from strata.extractor_record import extractor_status

    info = {"data_dir": str(settings.data_dir), "store": settings.store.backend, "mode": settings.llm_mode,
            "extractor": extractor_status(ws, fingerprint_of(settings)),
            "index_generation": current.number if current else None,
            "generation_created_at": manifest.get("created_at"), "generations_kept": ws.numbers(),
            "generation_problem": problem,
            "interrupted_run": ws.pending_path.exists(), "retrieval": manifest.get("retrieval"),
            "counts": counts, "last_run": runs[-1] if runs else None}
    if args.json:
        print(json.dumps(info, indent=2))
        return EXIT_OK
    table = Table(title=f"strata status — {info['data_dir']}", show_header=False)
    table.add_column("what")
    table.add_column("value")
    for key in ("store", "mode", "extractor"):
        table.add_row(key, str(info[key]))
    table.add_row("index generation", f"{info['index_generation']} (published {info['generation_created_at']})"
                  if info["index_generation"] else "none published yet: run `strata index FOLDER`")
    if info["retrieval"]:
        table.add_row("retrieval", str(info["retrieval"]))  # engines, corpus languages, what the embedder reads
    if info["generation_problem"]:
        table.add_row("damaged generation" if "damaged" in info["generation_problem"] else "generation problem",
                      info["generation_problem"])
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

    settings = load_settings(args)
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

    from core.project_file import effective_settings
    from core.project_source import project_file_path

    flags = flags_of(args)
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


def _served_keys(settings: "StrataSettings", host: str, insecure: bool) -> list[str]:
    """The API keys a server on ``host`` accepts; a non-loopback bind without any is refused unless ``insecure``."""
    try:
        keys = settings.server.keys()
    except ValueError as exc:
        raise CliError(f"{exc}; fix STRATA_SERVER__API_KEYS_FILE") from exc
    if not keys and not _loopback(host) and not insecure:
        raise CliError(f"refusing to serve on {host} without an API key: set STRATA_SERVER__API_KEYS='[\"KEY\"]' "
                       "(or STRATA_SERVER__API_KEYS_FILE), bind 127.0.0.1, or pass --insecure", EXIT_BAD_INPUT)
    if not keys and not _loopback(host):
        err.print(f"[yellow]warning:[/yellow] serving on {host} without authentication (--insecure)")
    return keys


def cmd_serve(args: argparse.Namespace) -> int:
    import os

    from strata.serving import run_server

    settings = load_settings(args)
    server = settings.server
    _served_keys(settings, args.host, args.insecure)
    workers = args.workers or server.workers
    if workers > 1:
        # Each worker process builds its own app (and loads the index once) from the same settings.
        os.environ["STRATA_DATA_DIR"] = str(settings.data_dir)
    # Structured logs (log.format), one line per request; SIGTERM lets requests in flight finish.
    run_server(settings, args.host, args.port, workers)
    return EXIT_OK


def cmd_mcp(args: argparse.Namespace) -> int:
    from strata.mcp_server import StrataMCP

    settings = load_settings(args)
    if not args.http and (args.host or args.port or args.insecure):
        raise CliError("--host, --port and --insecure apply to --http only (stdio is the default transport)",
                       EXIT_BAD_INPUT)
    host = args.host or "127.0.0.1"
    keys = _served_keys(settings, host, args.insecure) if args.http else []
    server = StrataMCP(settings, allow_write=args.allow_write, notes_dir=args.notes_dir)
    if args.http:
        server.run_http(host, args.port or 8765, keys)
    else:
        server.run_stdio()  # stdout carries the protocol: every message of Strata's own goes to stderr
    return EXIT_OK


def _folder_policy(s: argparse.ArgumentParser) -> None:
    group = s.add_mutually_exclusive_group()
    group.add_argument("--add", action="store_true",
                       help="a workspace of another folder: index this one beside it (the documents of both kept)")
    group.add_argument("--replace", action="store_true",
                       help="a workspace of another folder: index only this one (the other's documents are deleted)")


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
    _folder_policy(s)
    s.add_argument("--json", action="store_true", help="print the run summary as JSON")
    s.add_argument("--no-prune", action="store_true", help="keep stored documents that are no longer in the folder")
    s.add_argument("--defer-reports", action="store_true",
                   help="keep existing community reports as they are (see `strata drift`); write only missing ones")
    s.add_argument("--workers", type=int, metavar="N",
                   help="extract and embed on N Dask worker processes through Prefect (or STRATA_COMPUTE__WORKERS)")
    s.add_argument("--replace-store", action="store_true",
                   help="set a damaged graph.sqlite aside (renamed, not deleted) and rebuild the store from the folder")
    s.set_defaults(func=cmd_index)

    s = sub.add_parser("reindex", help="re-index a folder incrementally, or rebuild everything with --full")
    s.add_argument("folder", nargs="?", help="default: the folder(s) the workspace indexes")
    _folder_policy(s)
    s.add_argument("--full", action="store_true",
                   help="rebuild from scratch: every document re-chunked, re-extracted and re-embedded")
    s.add_argument("--json", action="store_true", help="print the run summary as JSON")
    s.add_argument("--no-prune", action="store_true", help="keep stored documents that are no longer in the folder")
    s.add_argument("--defer-reports", action="store_true", help="as for `strata index`")
    s.add_argument("--workers", type=int, metavar="N", help="as for `strata index`")
    s.add_argument("--replace-store", action="store_true", help="as for `strata index`")
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

    s = sub.add_parser("mcp", help="serve the workspace to agents over the Model Context Protocol (stdio, or --http)")
    s.add_argument("--http", action="store_true", help="streamable HTTP at http://HOST:PORT/mcp instead of stdio")
    s.add_argument("--host", help="with --http: bind address (default 127.0.0.1; another needs an API key or "
                                  "--insecure)")
    s.add_argument("--port", type=int, help="with --http: the port (default 8765)")
    s.add_argument("--insecure", action="store_true", help="with --http: allow a non-loopback bind without an API key")
    s.add_argument("--allow-write", action="store_true",
                   help="offer the `remember` tool, which adds notes to the corpus (off: the corpus cannot change)")
    s.add_argument("--notes-dir", type=Path, help="where `remember` writes notes (default <data-dir>/notes)")
    s.set_defaults(func=cmd_mcp)
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

    from core.disk import disk_full, is_corrupt, is_disk_full
    from core.store import StoreError, StoreUnavailableError
    from core.store.port import StoreDamagedError
    from strata.integrity import GenerationDamagedError

    if isinstance(exc, CliError):
        return "error", str(exc), exc.code
    if isinstance(exc, StoreUnavailableError):
        return "store unavailable", (f"{exc}; start Neo4j (scripts/neo4j start) or check STRATA_STORE__NEO4J_URI, "
                                     "STRATA_STORE__NEO4J_USER and STRATA_STORE__NEO4J_PASSWORD"), EXIT_ERROR
    if is_disk_full(exc):  # the same line whichever stage (store, cache, generation, log) met it
        return "disk full", str(disk_full(exc)).removeprefix("disk full: "), EXIT_ERROR
    if isinstance(exc, StoreDamagedError) or is_corrupt(exc):
        return "damaged file", str(exc), EXIT_ERROR
    if isinstance(exc, GenerationDamagedError):
        return "damaged generation", str(exc), EXIT_ERROR
    if isinstance(exc, StoreError):
        return "store error", f"{exc}; run the command again (nothing of the failed batch was written)", EXIT_ERROR
    if isinstance(exc, ValidationError):
        return "invalid input", settings_problem(exc), EXIT_BAD_INPUT
    kind = type(exc).__name__
    if kind in ("IndexLockedError",):
        return "busy", str(exc), EXIT_ERROR
    if kind in ("UnfinishedRunError", "BgeUnavailableError", "E5UnavailableError"):  # these name their fix
        return "error", str(exc), EXIT_ERROR
    if kind in ("LLMError", "ModelUnavailableError"):
        return "error", f"{exc}; check STRATA_LLM__BASE_URL / STRATA_LLM__API_KEY or the embedder setting", EXIT_ERROR
    if isinstance(exc, OSError):
        return "error", f"{exc}", EXIT_ERROR
    return "internal error", f"{kind}: {exc} (run again with --debug for the traceback)", EXIT_ERROR


def main(argv: Sequence[str] | None = None, distributed_runner: "DistributedRunner | None" = None) -> int:
    """Run one command. ``distributed_runner``: what indexes on workers (``--workers N``); by default the one the
    installed project declares (see :mod:`strata.cli_index`)."""
    debug = False
    try:
        args = build_parser().parse_args(argv)
        args.distributed_runner = distributed_runner
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
        say(kind, message.replace("\n", " "))
        return code


if __name__ == "__main__":
    raise SystemExit(main())
