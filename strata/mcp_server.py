"""``strata mcp``: Strata as an agent's memory over the Model Context Protocol, on stdio or streamable HTTP.

A thin layer of the official MCP SDK's low-level server over the tools of :mod:`strata.mcp_tools`, which use the
engine ``strata serve`` uses: loaded once by :class:`strata.workers.EngineHolder` (watching ``CURRENT``, so a reindex
is served without a restart, and a first index published after start-up is picked up), with the API's limits
(:class:`strata.workers.WorkLimiter`: concurrent calls, search threads, timeouts). The low-level server is used
rather than the decorator one so that each tool's schema is its Strata model's (``search_memory`` takes the
memory-query contract's request as it is) and each refusal is one line naming the argument, as an MCP tool error
(``isError``) that leaves the session open.

``ask`` streams: an LLM-written answer's text arrives as progress notifications (the reduce step of a global
answer included); every answer sends one at its start and one at its end. ``remember`` (only with
``--allow-write``; otherwise not listed at all) reports each indexing stage the same way.

Resources: ``strata://communities`` (every community with its report's title), ``strata://communities/{id}``
(one community's report as Markdown) and ``strata://drift`` (the drift report as ``strata drift --json`` has it).

Over HTTP the endpoint is ``/mcp``, behind the API's guard: the same API keys as ``strata serve``
(``Authorization: Bearer KEY``) and the same body limit. The SDK's DNS-rebinding protection is on for a
loopback bind.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, Awaitable, Callable, TypeVar
from urllib.parse import unquote

import anyio
import mcp.types as types
import pydantic_core
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp import MCPError
from pydantic import BaseModel

from core.settings import StrataSettings
from retrieval.contract import MemoryQueryRequest
from strata.api_errors import ApiError
from strata.integrity import GenerationDamagedError
from strata.api_guard import GuardMiddleware
from strata.workers import EngineHolder, WorkLimiter
from strata.mcp_tools import (AskArgs, ChunkArgs, MemoryTools, RememberArgs, RouteArgs, ToolFailure, ToolSpec,
                              input_schema, output_schema, parse_args, tool_specs)

T = TypeVar("T")
log = logging.getLogger("strata.mcp")
MCP_PATH = "/mcp"
COMMUNITIES_URI = "strata://communities"
COMMUNITY_TEMPLATE = "strata://communities/{community_id}"
DRIFT_URI = "strata://drift"
INSTRUCTIONS = (
    "Strata is a memory over a corpus of documents. search_memory finds the passages that match a text (exact "
    "identifiers included); ask answers a question with citations, locally from passages or globally from "
    "community reports; get_chunk reads a cited chunk; status says which index generation is served. The "
    "community reports are resources (strata://communities lists them), and so is the drift report "
    "(strata://drift: which reports no longer match the graph).")


class StrataMCP:
    """One workspace served as an MCP server. :meth:`open` before serving, :meth:`close` after."""

    def __init__(self, settings: StrataSettings, allow_write: bool = False, notes_dir: Any = None) -> None:
        self.settings = settings
        self.holder = EngineHolder(settings)
        self.limiter = WorkLimiter(settings.server, settings.answer_timeout_s)
        self.tools = MemoryTools(settings, self.holder, notes_dir)
        self.specs = {s.name: s for s in tool_specs(allow_write)}
        self.listed = [_tool(s) for s in self.specs.values()]  # built once
        # The 2026 HTTP transport checks a call's Mcp-Param-* headers against the x-mcp-header annotations of its
        # tool's input schema, walking the schema on every call (and listing every tool to find it, unless told).
        # A schema without annotations has nothing to check: None says so, and spares the walk.
        annotated = {t.name: t.input_schema for t in self.listed if "x-mcp-header" in json.dumps(t.input_schema)}
        self.server: Server[Any] = Server(
            "strata", version=_version(), title="Strata memory", instructions=INSTRUCTIONS,
            get_tool_input_schema=annotated.get, on_list_tools=self._list_tools, on_call_tool=self._call_tool,
            on_list_resources=self._list_resources, on_list_resource_templates=self._list_templates,
            on_read_resource=self._read_resource)

    def open(self) -> None:
        """Load the engine (or note why it cannot be loaded: every call then says so, until an index appears)."""
        from core.threads import configure
        from strata.logs import configure_logging

        configure_logging(self.settings.log, background=True)  # on stderr: stdout is the stdio transport's
        configure(self.settings.compute)  # one BLAS thread per product, as `strata serve` runs
        self.limiter.open()
        self.holder.load()
        if self.holder.engine is None:
            log.warning("no index loaded yet (%s); tools answer with this error until one is published",
                        self.holder.error)

    def close(self) -> None:
        self.limiter.close()
        self.holder.close()

    # -- tools --------------------------------------------------------------------------------------------------
    async def _list_tools(self, _ctx: ServerRequestContext[Any], _params: types.PaginatedRequestParams | None
                          ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.listed)

    async def _call_tool(self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
                         ) -> types.CallToolResult:
        spec = self.specs.get(params.name)
        if spec is None:
            return _error(f"unknown tool {params.name!r}; the tools are: {', '.join(self.specs)}")
        try:
            data = await self._run(parse_args(spec, params.arguments), ctx)
        except (ToolFailure, GenerationDamagedError) as exc:  # (the latter names the file and how to rebuild it)
            return _error(str(exc))
        except ApiError as exc:  # busy (server.max_concurrent_requests) or timed out (server.request_timeout_s)
            return _error(exc.msg)
        except Exception as exc:  # noqa: BLE001 - a bug is reported as one, and the session goes on
            log.exception("tool %s failed", spec.name)
            return _error(f"internal error in {spec.name} ({type(exc).__name__}); this is a bug")
        # The same data as text too, for clients that read only text (serialized in Rust: a search's passages are long).
        text = pydantic_core.to_json(data).decode("utf-8")
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=data)

    async def _run(self, args: BaseModel, ctx: ServerRequestContext[Any]) -> dict[str, Any]:
        """The tool whose arguments these are, on the limiter's threads (searches on the search threads)."""
        t = self.tools
        if isinstance(args, MemoryQueryRequest):
            response = await self.limiter.run(lambda: t.search_memory(args), search=True)
            return response.model_dump(mode="json")
        if isinstance(args, AskArgs):
            return await _with_progress(
                ctx, lambda emit: self.limiter.run(lambda: t.ask(args, on_delta=emit), answer=True),
                start=f"answering: {args.question[:200]}",
                end=lambda a: f"answered by the {a['route']['route']} route (index generation {a['index_generation']})")
        if isinstance(args, RememberArgs):
            # Not under the request timeout: once started, the index run finishes and publishes.
            return await _with_progress(ctx, lambda emit: anyio.to_thread.run_sync(t.remember, args, emit),
                                        start="writing the note",
                                        end=lambda r: f"indexed in generation {r['index_generation']}")
        if isinstance(args, RouteArgs):
            return await self.limiter.run(lambda: t.route(args))
        if isinstance(args, ChunkArgs):
            return await self.limiter.run(lambda: t.get_chunk(args))
        return await self.limiter.run(t.status)

    # -- resources ----------------------------------------------------------------------------------------------
    async def _list_resources(self, _ctx: ServerRequestContext[Any], _params: types.PaginatedRequestParams | None
                              ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[
            types.Resource(uri=COMMUNITIES_URI, name="communities", title="Communities", mime_type="application/json",
                           description="every community of the entity graph, coarsest level first, with its "
                                       "level, parent, size and report title; read one report at its uri"),
            types.Resource(uri=DRIFT_URI, name="drift", title="Drift report", mime_type="application/json",
                           description="which community reports no longer match the graph, and by how much "
                                       "(as `strata drift --json`)")])

    async def _list_templates(self, _ctx: ServerRequestContext[Any], _params: types.PaginatedRequestParams | None
                              ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[
            types.ResourceTemplate(uri_template=COMMUNITY_TEMPLATE, name="community_report", title="Community report",
                                   mime_type="text/markdown",
                                   description="a community's report: its summary and findings, each finding with "
                                               "the chunk ids it cites (read them with get_chunk)")])

    async def _read_resource(self, _ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
                             ) -> types.ReadResourceResult:
        uri = str(params.uri)
        t = self.tools
        try:
            if uri == COMMUNITIES_URI:
                text, mime = json.dumps(await self.limiter.run(t.communities), ensure_ascii=False), "application/json"
            elif uri == DRIFT_URI:
                report = await self.limiter.run(t.drift_report)
                if report is None:
                    raise ToolFailure("no drift report yet: nothing is published in this workspace")
                text, mime = json.dumps(report, ensure_ascii=False), "application/json"
            elif uri.startswith(COMMUNITIES_URI + "/"):
                cid = unquote(uri[len(COMMUNITIES_URI) + 1:])
                text, mime = await self.limiter.run(lambda: t.community_report(cid)), "text/markdown"
            else:
                raise ToolFailure(f"unknown resource {uri!r}; the resources are {COMMUNITIES_URI}, "
                                  f"{COMMUNITY_TEMPLATE} and {DRIFT_URI}")
        except (ToolFailure, KeyError, ApiError, GenerationDamagedError) as exc:
            # (a generation's reports or graph, read on first use, damaged after it loaded: the message names the
            # file and the command that rebuilds it)
            message = (exc.msg if isinstance(exc, ApiError) else str(exc) if isinstance(exc, GenerationDamagedError)
                       else exc.args[0] if exc.args else str(exc))
            raise MCPError(code=types.INVALID_PARAMS, message=message, data={"uri": uri}) from None
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, text=text, mime_type=mime)])

    # -- transports ---------------------------------------------------------------------------------------------
    def run_stdio(self) -> None:
        """Serve one client on stdin/stdout until it closes them."""
        async def serve() -> None:
            async with stdio_server() as (read, write):
                await self.server.run(read, write, self.server.create_initialization_options())

        self.open()
        try:
            anyio.run(serve)
        finally:
            self.close()

    def http_app(self, keys: list[str], host: str = "127.0.0.1") -> Any:
        """The streamable-HTTP app at ``/mcp``, behind the API's guard (keys, body size, content type)."""
        app = self.server.streamable_http_app(streamable_http_path=MCP_PATH, host=host,
                                              max_request_body_size=self.settings.server.max_body_bytes)
        return GuardMiddleware(app, self.settings.server, keys)

    def run_http(self, host: str, port: int, keys: list[str]) -> None:
        """Serve streamable HTTP at ``http://HOST:PORT/mcp`` until SIGTERM or SIGINT."""
        import uvicorn

        from strata.serving import uvicorn_options

        self.open()
        try:
            uvicorn.run(self.http_app(keys, host), **uvicorn_options(self.settings, host, port))
        finally:
            self.close()


async def _with_progress(ctx: ServerRequestContext[Any], work: Callable[[Callable[[str], None]], Awaitable[T]],
                         start: str, end: Callable[[T], str]) -> T:
    """Run ``work(emit)``, sending a progress notification at its start, one for each ``emit(text)`` (called from
    the work's thread; in order) and one at its end. Without a progress token from the client, none is sent."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[str | None] = asyncio.Queue()
    sent = 0

    async def send(message: str, total: float | None = None) -> None:
        nonlocal sent
        await ctx.session.report_progress(sent, total, message)
        sent += 1

    async def pump() -> None:
        while (text := await queue.get()) is not None:
            await send(text)

    await send(start)
    pumping = asyncio.ensure_future(pump())
    try:
        # Each emit is queued on the loop before the work's result is, so every piece is queued by the time it ends.
        result = await work(lambda text: loop.call_soon_threadsafe(queue.put_nowait, text))
    finally:
        queue.put_nowait(None)
        await pumping
    await send(end(result), total=sent)  # the last one: progress == total
    return result


def _tool(spec: ToolSpec) -> types.Tool:
    return types.Tool(name=spec.name, title=spec.title, description=spec.description, input_schema=input_schema(spec),
                      output_schema=output_schema(spec),
                      annotations=types.ToolAnnotations(title=spec.title, read_only_hint=not spec.writes,
                                                        destructive_hint=False, idempotent_hint=not spec.writes,
                                                        open_world_hint=False))


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("strata")
    except PackageNotFoundError:
        return "0+unknown"
