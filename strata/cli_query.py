"""The ``strata`` commands that read the published index: ask (with --stream), search (the memory-query
contract, JSON in and out) and route."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from strata.cli_common import EXIT_BAD_INPUT, EXIT_OK, CliError, err, load_settings, out, say


def _engine(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from retrieval.index_files import IndexMismatchError
    from strata.engine import Engine
    from strata.integrity import GenerationDamagedError

    settings = load_settings(args)
    try:
        return Engine(settings)
    except IndexMismatchError as exc:
        raise CliError(f"{exc}; run `strata reindex FOLDER --full` to rebuild it with the current settings, or "
                       "set the settings it was built with (e.g. STRATA_RETRIEVAL__EMBEDDER)") from exc
    except GenerationDamagedError as exc:  # names the file and the command that rebuilds it
        raise CliError(str(exc)) from exc
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
    from strata.engine import FilterNotApplicable

    metadata_filter = _parse_filter_arg(args.filter)
    engine = _engine(args)
    try:
        streamed: list[str] = []

        def on_delta(text: str) -> None:  # --stream: each piece of an LLM answer as it is written
            streamed.append(text)
            _emit_delta(text, args.json)

        answer = engine.ask(args.question, mode=args.mode, metadata_filter=metadata_filter,
                            **({"on_delta": on_delta} if getattr(args, "stream", False) else {}))
    except FilterNotApplicable as exc:
        raise CliError("--filter applies to local answers only (a global answer summarizes the whole corpus): "
                       "drop --filter or add --mode local", EXIT_BAD_INPUT) from exc
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
        _print_citations(out, answer)
        return EXIT_OK
    out.print(f"[bold]route:[/bold] {answer.route.route} — " + "; ".join(answer.route.reasons))
    out.print(f"[bold]mode:[/bold] {answer.mode}; [bold]retrieval:[/bold] {engine.index.describe()}; "
              f"[bold]index generation:[/bold] {answer.index_generation}")
    out.print()
    out.print(answer.text, markup=False, highlight=False)
    _print_citations(out, answer)
    return EXIT_OK


def _print_citations(out: Any, answer: Any) -> None:
    """The answer's citations under a heading; a declined answer, which cites nothing, prints no empty heading."""
    if not answer.citations:
        return
    out.print()
    out.print("[bold]citations:[/bold]")
    for c in answer.citations:
        out.print(f"  {c.chunk_id}  ({c.source})", markup=False, highlight=False)


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
        say("invalid memory-query request", "; ".join(problems))
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
