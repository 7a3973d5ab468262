"""What ``strata mcp`` offers an agent: its tools, their arguments, and the resources it reads, over one engine.

This is the MCP server's substance without the protocol: each tool is a typed argument model (its JSON schema is
what the agent sees), a description an agent can act on, and a plain function over the engine that ``strata
serve`` uses (:class:`strata.engine.Engine`, loaded and hot-reloaded by :class:`strata.workers.EngineHolder`). Every
refusal is a :class:`ToolFailure` with one line naming the problem; :mod:`strata.mcp_server` turns it into an MCP
tool error (``isError``) and keeps the session open. Nothing here imports the MCP SDK, so the tools can be read
and called without it.

The optional ``remember`` tool is the only writer: it adds a note as a Markdown file in the workspace's notes
folder (``<data-dir>/notes`` unless told otherwise), which the workspace records as one of its folders, and runs
an incremental index, as ``strata index --add`` would.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core.settings import StrataSettings
from retrieval.contract import MemoryQueryRequest, MemoryQueryResponse, QueryText
from retrieval.filters import MetadataFilter, limit_errors, tidy_filter_error

if TYPE_CHECKING:
    from strata.workers import EngineHolder
    from strata.engine import Engine

Progress = Callable[[str], None]  # one line of progress for the caller (an MCP progress notification)
NOTES_FOLDER = "notes"


class ToolFailure(Exception):
    """A tool call refused or failed: the message is one line naming the problem (and the fix, when there is one)."""


# -- arguments ------------------------------------------------------------------------------------------------
class AskArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: QueryText = Field(..., min_length=1, max_length=10_000, description="the question, in any words")
    mode: Literal["local", "global"] | None = Field(
        None, description="leave out to let the router decide; 'local' for a specific fact from a few passages, "
                          "'global' for themes across the whole corpus (community reports)")
    metadata_filter: MetadataFilter = Field(
        default_factory=dict, description="local answers only: restrict the passages by their metadata, "
                                          "e.g. {\"team\": \"payments\"} or {\"year\": {\"gte\": 2023}}")


class RouteArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: QueryText = Field(..., min_length=1, max_length=10_000)
    mode: Literal["local", "global"] | None = Field(None, description="force a route instead of asking the router")


class ChunkArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    chunk_id: str = Field(..., min_length=1, max_length=1024,
                          description="a chunk id from search_memory results or from an answer's citations")


class NoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RememberArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: QueryText = Field(..., min_length=1, max_length=100_000, description="the note, as Markdown or plain text")
    title: str | None = Field(None, min_length=1, max_length=200,
                              description="a heading for the note; its first line when left out")


# -- the catalogue ----------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool as an agent sees it, and whether it changes the corpus."""

    name: str
    title: str
    description: str
    args: type[BaseModel]
    output: type[BaseModel] | None = None  # the structured result's model, when it has a fixed shape
    writes: bool = False


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("search_memory", "Search the memory",
             "Find the passages (chunks) of the corpus that match a text: hybrid BM25 and dense search fused with "
             "weighted Reciprocal Rank Fusion, which keeps exact identifiers (error codes, config keys, service "
             "names) findable. Returns the memory-query contract's response: results ranked by rrf_score, each with "
             "its chunk_id, text and source. Use it to gather evidence; use `ask` for an answer with citations. "
             "Leave hybrid_params out to let the index choose the weights.",
             MemoryQueryRequest, MemoryQueryResponse),
    ToolSpec("ask", "Ask a question",
             "Answer a question from the corpus with citations. The router picks the route and says why: 'local' "
             "answers a specific question from a few passages, 'global' summarizes themes across the corpus from "
             "community reports. Returns the route with its reasons, the answer text, the cited chunks (read one "
             "with `get_chunk`) and the index generation that answered. An answer written by an LLM streams as "
             "progress notifications.", AskArgs),
    ToolSpec("route", "Route a question",
             "Say which route `ask` would take for a question (local or global), with the router's reasons and "
             "scores, without answering it.", RouteArgs),
    ToolSpec("get_chunk", "Read a chunk",
             "Read one chunk of the corpus by its id (from search_memory results or an answer's citations): its "
             "text, its document, its source and its metadata.", ChunkArgs),
    ToolSpec("status", "Memory status",
             "What the memory holds now: the index generation served and when it was published, counts of "
             "documents, chunks, entities, communities and reports, how retrieval runs, and the drift summary "
             "(how many community reports are fresh, drifting or stale against the graph).", NoArgs),
    ToolSpec("remember", "Remember a note",
             "Add a note to the memory: it is written as a document in the workspace's notes folder and indexed "
             "incrementally (only the new note is extracted), then served by the next search. Returns the note's "
             "document id and the index generation that holds it.", RememberArgs, writes=True),
)


def tool_specs(allow_write: bool) -> tuple[ToolSpec, ...]:
    """The tools a server offers: the writing ones only when writing is allowed."""
    return tuple(t for t in TOOLS if allow_write or not t.writes)


def input_schema(spec: ToolSpec) -> dict[str, Any]:
    return spec.args.model_json_schema()


def output_schema(spec: ToolSpec) -> dict[str, Any] | None:
    return spec.output.model_json_schema() if spec.output is not None else None


def parse_args(spec: ToolSpec, arguments: dict[str, Any] | None) -> BaseModel:
    """The tool's arguments validated; a :class:`ToolFailure` names each problem by its argument."""
    try:
        return spec.args.model_validate(arguments or {})
    except ValidationError as exc:
        raise ToolFailure(f"invalid arguments for {spec.name}: {problems(exc, spec.args)}") from None


def problems(exc: ValidationError, model: type[BaseModel]) -> str:
    """A validation error as one line: ``where: what`` for each problem, filter errors in the grammar's words."""
    out = []
    for e in exc.errors(include_url=False, include_input=False):
        loc, msg, kind = tuple(e["loc"]), e["msg"].removeprefix("Value error, "), e["type"]
        if "metadata_filter" in loc:
            at = loc.index("metadata_filter") + 1
            inner, msg = tidy_filter_error(loc[at:], kind, msg)
            loc = (*loc[:at], *inner)
        elif kind == "extra_forbidden" and len(loc) == 1:
            known = ", ".join(model.model_fields) or "none"
            msg = f"unknown argument (the arguments are: {known})"
        where = ".".join(str(p).encode("utf-8", "backslashreplace").decode() for p in loc) or "arguments"
        out.append(f"{where}: {msg}")
    return "; ".join(out)


# -- the tools ----------------------------------------------------------------------------------------------------
class MemoryTools:
    """The tools' work over the served engine. Each method runs on a worker thread and returns JSON-ready data."""

    def __init__(self, settings: StrataSettings, holder: "EngineHolder", notes_dir: Path | None = None) -> None:
        self.settings = settings
        self.holder = holder
        self.notes_dir = Path(notes_dir) if notes_dir else Path(settings.data_dir) / NOTES_FOLDER
        self._write_lock = threading.Lock()  # one note indexed at a time from this server

    def engine(self) -> "Engine":
        from strata.api_errors import ApiError

        try:
            return self.holder.get()
        except ApiError as exc:  # none published yet (tried again at most once per poll interval); says the fix
            raise ToolFailure(exc.msg) from None

    # limits of the HTTP API, read from the same settings
    def check_text(self, where: str, text: str) -> None:
        most = self.settings.server.max_question_chars
        if len(text) > most:
            raise ToolFailure(f"{where}: at most {most} characters (server.max_question_chars), got {len(text)}")

    def check_filter(self, spec: dict[str, Any]) -> None:
        server = self.settings.server
        found = limit_errors(spec, server.max_filter_fields, server.max_filter_values)
        if found:
            loc, msg = found[0]
            raise ToolFailure(f"{'.'.join(('metadata_filter', *loc))}: {msg}")

    def search_memory(self, request: MemoryQueryRequest) -> MemoryQueryResponse:
        self.check_text("search_text", request.search_text)
        self.check_filter(request.metadata_filter)
        return self.engine().query(request)

    def ask(self, args: AskArgs, on_delta: Callable[[str], None] | None = None) -> dict[str, Any]:
        from core.store import StoreError
        from strata.engine import FilterNotApplicable

        self.check_text("question", args.question)
        self.check_filter(args.metadata_filter)
        engine = self.engine()
        try:
            answer = engine.ask(args.question, args.mode, args.metadata_filter or None, on_delta=on_delta)
        except FilterNotApplicable as exc:
            raise ToolFailure("metadata_filter applies to local answers only (a global answer summarizes the whole "
                              "corpus): drop the filter or ask with mode 'local'") from exc
        except StoreError as exc:
            raise ToolFailure(f"the graph store is unavailable: {exc}") from exc
        except ValueError as exc:
            raise ToolFailure(str(exc)) from exc
        return answer.to_dict()

    def route(self, args: RouteArgs) -> dict[str, Any]:
        self.check_text("question", args.question)
        engine = self.engine()
        return {**engine.route(args.question, args.mode).to_dict(), "index_generation": engine.generation}

    def get_chunk(self, args: ChunkArgs) -> dict[str, Any]:
        engine = self.engine()
        snap = engine.acquire()
        try:
            index = snap.index
            row = index.by_id.get(args.chunk_id)
            if row is None or not _alive(index, row):
                raise ToolFailure(f"no chunk {args.chunk_id!r} in index generation {snap.number}; chunk ids come "
                                  "from search_memory results or an answer's citations")
            c = index.rows[row]
            meta = {k: v for k, v in c.fields.items() if k not in ("document_id", "source")}
            return {"chunk_id": c.chunk_id, "document_id": c.document_id, "source": c.source, "text": c.text,
                    "metadata": meta, "index_generation": snap.number}
        finally:
            engine.release(snap)

    def status(self, _args: NoArgs | None = None) -> dict[str, Any]:
        engine = self.engine()
        snap = engine.acquire()
        try:
            index = snap.index
            documents = len({r.document_id for i, r in enumerate(index.rows) if _alive(index, i)})
        finally:
            engine.release(snap)
        return {**engine.status(), "documents": documents, "mode": engine.mode, "drift": self.drift_summary()}

    def drift_summary(self) -> dict[str, Any] | None:
        """The drift report's totals and next steps, as ``strata drift`` and ``GET /v1/drift`` have them (the
        report is written again first when it describes another generation than the one served)."""
        report = self.drift_report()
        if report is None:
            return None
        return {k: report.get(k) for k in ("index_generation", "generated_at", "totals", "next_steps")}

    def drift_report(self) -> dict[str, Any] | None:
        from strata.drift_files import served_json

        try:
            body = served_json(self.settings, self.engine().generation)
        except (ValueError, OSError) as exc:  # a damaged generation or a full disk: the message names the file
            raise ToolFailure(f"the drift report is unavailable: {exc}") from exc
        return json.loads(body) if body is not None else None

    # -- resources ------------------------------------------------------------------------------------------------
    def communities(self) -> dict[str, Any]:
        """Every community of the served generation, coarsest level first, with its report's title."""
        engine = self.engine()
        snap = engine.acquire()
        try:
            reports = {r.community_id: r for r in snap.reports}
            rows = []
            for c in sorted(snap.communities, key=lambda c: (c.level, -len(c.entity_ids), c.id)):
                r = reports.get(c.id)
                rows.append({"id": c.id, "uri": f"strata://communities/{c.id}", "level": c.level,
                             "parent_id": c.parent_id, "size": len(c.entity_ids),
                             "title": r.title if r is not None else None, "stale": bool(r and r.stale)})
            return {"index_generation": snap.number, "communities": rows}
        finally:
            engine.release(snap)

    def community_report(self, community_id: str) -> str:
        """A community's report as Markdown: title, where it sits, its members, summary and findings with the
        chunks each cites. Raises KeyError for a community the served generation does not have."""
        engine = self.engine()
        snap = engine.acquire()
        try:
            c = next((c for c in snap.communities if c.id == community_id), None)
            if c is None:
                raise KeyError(f"no community {community_id!r} in index generation {snap.number}; "
                               "strata://communities lists them")
            report = next((r for r in snap.reports if r.community_id == community_id), None)
            try:
                names = {e.id: e.name for e in snap.graph().entities}
            except FileNotFoundError:  # a generation published before graph.json: ids stand for names
                names = {}
            members = sorted((names.get(e, e) for e in c.entity_ids), key=str.casefold)
            title = report.title if report is not None else ", ".join(members[:3]) or c.id
            lines = [f"# {title}", "",
                     f"Community `{c.id}` at level {c.level}" + (f", inside `{c.parent_id}`" if c.parent_id else "")
                     + f"; {len(members)} members; index generation {snap.number}.", "",
                     "Members: " + ", ".join(members[:50]) + (f" and {len(members) - 50} more" if len(members) > 50
                                                              else ""), ""]
            if report is None:
                lines.append("No report has been written for this community yet.")
                return "\n".join(lines) + "\n"
            lines += [f"Report: {report.mode} ({report.model}), written {report.created_at}, rating "
                      f"{report.rating:g}" + ("; **stale**: its inputs changed since" if report.stale else "") + ".",
                      "", "## Summary", "", report.summary, "", "## Findings", ""]
            lines += [f"- {f.text}" + (f" [{', '.join(f.chunk_ids)}]" if f.chunk_ids else "")
                      for f in report.findings]
            return "\n".join(lines) + "\n"
        finally:
            engine.release(snap)

    # -- writing ---------------------------------------------------------------------------------------------------
    def remember(self, args: RememberArgs, progress: Progress | None = None) -> dict[str, Any]:
        """Write the note into the notes folder and index it incrementally (the notes folder is added to the
        workspace's folders the first time)."""
        from extraction.loader import EmptyCorpusError
        from strata.folders import FolderError, recorded_folders
        from strata.pipeline import index_folder
        from strata.workspace import IndexLockedError, Workspace

        ws = Workspace(Path(self.settings.data_dir))
        with self._write_lock:
            try:
                if not recorded_folders(ws):
                    raise ToolFailure(f"the workspace {ws.root} indexes no folder yet; run `strata index FOLDER` "
                                      "before adding notes")
                path = self._write_note(args)
                stages: set[str] = set()

                def on_stage(stage: str, _advance: int, _total: int | None) -> None:
                    if progress is not None and stage not in stages:
                        stages.add(stage)
                        progress(f"indexing: {stage}")

                try:
                    run = index_folder(self.notes_dir, self.settings, on_stage, other_folder="add")
                except BaseException:
                    path.unlink(missing_ok=True)  # not indexed: a retry must not find the note twice
                    raise
            except (FolderError, FileNotFoundError, EmptyCorpusError) as exc:
                raise ToolFailure(str(exc)) from exc
            except IndexLockedError as exc:  # another index run is busy in the workspace
                raise ToolFailure(f"{exc}; try again when it has finished") from exc
            except OSError as exc:
                raise ToolFailure(f"could not write or index the note: {exc}") from exc
            prefix = next((f.prefix for f in recorded_folders(ws) if Path(f.path) == self.notes_dir.resolve()), "")
        holder_engine = self.holder.engine
        if holder_engine is not None:
            holder_engine.check_reload()  # served at once, not at the next poll
        return {"document_id": prefix + path.name, "path": str(path), "index_generation": run.generation,
                "published": run.published, "new": run.new, "changed": run.changed,
                "failed_chunks": run.failed_chunks, "mode": run.mode}

    def _write_note(self, args: RememberArgs) -> Path:
        text = args.text.strip()
        title = (args.title or text.splitlines()[0].lstrip("# ")).strip()[:200] or "note"
        now = datetime.now(timezone.utc)
        slug = re.sub(r"[^a-z0-9]+", "-", title.casefold()).strip("-")[:60] or "note"
        self.notes_dir.mkdir(parents=True, exist_ok=True)
        stamp = now.strftime("%Y%m%dT%H%M%S%fZ")
        path = self.notes_dir / f"{stamp}-{slug}.md"
        body = f"# {args.title.strip()}\n\n{text}" if args.title else text
        # The note's metadata as YAML front matter, filterable like any document's (metadata_filter {"kind": "note"}).
        front = yaml.safe_dump({"kind": "note", "remembered_at": now.isoformat(timespec="seconds")}, sort_keys=False)
        tmp = path.with_name(f".{path.name}.tmp")  # written aside (the loader skips hidden files), then renamed
        tmp.write_text(f"---\n{front}---\n{body}\n", encoding="utf-8")
        tmp.replace(path)
        return path


def _alive(index: Any, row: int) -> bool:
    alive = getattr(getattr(index, "bm25", None), "alive", None)
    return alive is None or (row < len(alive) and bool(alive[row]))
