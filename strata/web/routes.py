"""Routes of the web console: the page and its assets, and the read-only endpoints it browses with
(chunks, documents, the community hierarchy, entity neighbourhoods, the drift page), Markdown rendering for
answers, and the memory query with the score each result was ranked by."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Awaitable, Callable, TypeVar

from fastapi import APIRouter, FastAPI, HTTPException, Query
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field

from core.settings import StrataSettings
from retrieval.contract import MemoryQueryRequest, UnicodeText
from retrieval.hits import SearchOutcome
from strata.web.markdown import render_answer, render_markdown
from strata.web.query import ExplainedQuery, explain
from strata.web.view import (MAX_PAGE, ChunkView, CommunityDetail, CommunityTree, ConsoleView, DocumentView,
                             NeighbourhoodView, NotFound, QueryEngine, ViewCache)

STATIC_DIR = Path(__file__).parent / "static"
T = TypeVar("T")
MARK = re.compile(r"^(\d{1,9})-(\d{1,9})$")
# Runs a memory query for the console the way the API runs its own (limits checked, on the search threads).
SearchRunner = Callable[[MemoryQueryRequest], Awaitable[tuple[SearchOutcome, int]]]


class RenderRequest(BaseModel):
    text: UnicodeText = Field(..., max_length=200_000)
    answer: bool = Field(False, description="an answer's text: each cited point a block of its own")


class RenderedHtml(BaseModel):
    html: str


def _marks(values: list[str]) -> list[tuple[int, int]]:
    if len(values) > 64:
        raise HTTPException(status_code=422, detail=f"at most 64 mark ranges, got {len(values)}")
    marks = []
    for v in values:
        m = MARK.match(v)
        if m is None:
            raise HTTPException(status_code=422, detail=f"mark must be START-END (character offsets), got {v!r}")
        marks.append((int(m.group(1)), int(m.group(2))))
    return marks


def console_router(views: ViewCache, settings: StrataSettings, run_search: SearchRunner | None = None) -> APIRouter:
    router = APIRouter(prefix="/v1", tags=["console"])

    def view() -> ConsoleView:
        return views.get()

    def found(lookup: Callable[[str], T], key: str) -> T:
        try:
            return lookup(key)
        except NotFound as exc:
            raise HTTPException(status_code=404, detail=str(exc)) from exc

    @router.get("/chunks/{chunk_id:path}", response_model=ChunkView, summary="One indexed chunk")
    def chunk(chunk_id: str, mark: list[str] = Query(default=[], description=(
            "START-END character ranges of the text to mark (the sentences an answer quoted)"))) -> ChunkView:
        marks = _marks(mark)
        return found(lambda key: view().chunk(key, marks), chunk_id)

    @router.get("/documents/{document_id:path}", response_model=DocumentView,
                summary="A document as its indexed chunks, in order")
    def document(document_id: str) -> DocumentView:
        return found(view().document, document_id)

    @router.get("/communities", response_model=CommunityTree,
                summary="One page of the communities, coarsest level first; searchable by title or member")
    def communities(q: str = Query("", max_length=200, description="text in the title, id or a member's name"),
                    level: int | None = Query(None, ge=0, le=1000), offset: int = Query(0, ge=0),
                    limit: int = Query(50, ge=0, le=MAX_PAGE),
                    ids: str = Query("", max_length=20_000, description="comma-separated ids: only these")
                    ) -> CommunityTree:
        wanted = [i for i in ids.split(",") if i] if ids else None
        return view().tree(q, level, offset, limit, wanted)

    @router.get("/communities/{community_id}", response_model=CommunityDetail,
                summary="A community: one page of its members, its report and the relations among its members")
    def community(community_id: str, members_offset: int = Query(0, ge=0),
                  members_limit: int = Query(25, ge=0, le=MAX_PAGE)) -> CommunityDetail:
        return found(lambda key: view().community(key, members_offset, members_limit), community_id)

    @router.post("/console/render", response_model=RenderedHtml,
                 summary="Markdown as the console shows it (raw HTML shown as text, no remote images)")
    def render(request: RenderRequest) -> RenderedHtml:
        return RenderedHtml(html=render_answer(request.text) if request.answer else render_markdown(request.text))

    if run_search is not None:
        @router.post("/console/query", response_model=ExplainedQuery,
                     summary="A memory query with the score each result was ranked by, beside its rrf_score")
        async def console_query(request: MemoryQueryRequest) -> ExplainedQuery:
            outcome, generation = await run_search(request)
            return explain(request, outcome, generation)

    @router.get("/entities/{entity_id}/neighbourhood", response_model=NeighbourhoodView,
                summary="An entity, its direct neighbours and the relations among them")
    def neighbourhood(entity_id: str) -> NeighbourhoodView:
        return found(view().neighbourhood, entity_id)

    _drift_page(router, settings)
    return router


def mount_console(app: FastAPI, engine_provider: Callable[[], QueryEngine], settings: StrataSettings,
                  run_search: SearchRunner | None = None) -> None:
    """Serve the console at ``/`` (assets under ``/console/``) and its read-only API under ``/v1``. The API
    routes need the API key like every data route; the page and its assets hold no data and are open, so that
    a browser can load them before the user enters a key."""
    app.include_router(console_router(ViewCache(engine_provider), settings, run_search))
    app.mount("/console", StaticFiles(directory=STATIC_DIR), name="console")

    @app.get("/", include_in_schema=False)
    def console() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html", media_type="text/html")


def _drift_page(router: APIRouter, settings: StrataSettings) -> None:
    """``GET /v1/drift/page``: the drift report's HTML page."""

    @router.get("/drift/page", response_class=HTMLResponse, summary="The drift report as an HTML page")
    def drift_page() -> HTMLResponse:
        # The page written with the last report (by an index run, `strata drift` or GET /v1/drift?refresh=true),
        # like /v1/drift: recomputed (from the published generation, not the store) only when it is out of date.
        from strata.drift_files import drift_dir, sync

        try:
            sync(settings)  # written again first when it describes another generation than the published one
        except (ValueError, OSError):
            pass  # a damaged generation or a full disk: the last page written is shown
        path = drift_dir(settings) / "drift.html"
        if not path.exists():
            raise HTTPException(status_code=404, detail="no drift report yet: run `strata drift`, or GET "
                                                        "/v1/drift?refresh=true")
        return HTMLResponse(path.read_text(encoding="utf-8"))
