"""Routes of the web console: the page and its assets, and the read-only endpoints it browses with
(chunks, documents, the community hierarchy, entity neighbourhoods, the drift page)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, TypeVar

from fastapi import APIRouter, FastAPI, HTTPException
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.staticfiles import StaticFiles

from core.settings import StrataSettings
from strata.web.view import (ChunkView, CommunityDetail, CommunityTree, ConsoleView, DocumentView, NeighbourhoodView,
                             NotFound, QueryEngine, ViewCache)

STATIC_DIR = Path(__file__).parent / "static"
T = TypeVar("T")


def console_router(views: ViewCache, settings: StrataSettings) -> APIRouter:
    router = APIRouter(prefix="/v1", tags=["console"])

    def view() -> ConsoleView:
        return views.get()

    def found(lookup: Callable[[str], T], key: str) -> T:
        try:
            return lookup(key)
        except NotFound as exc:
            raise HTTPException(status_code=404, detail=str(exc)) from exc

    @router.get("/chunks/{chunk_id:path}", response_model=ChunkView, summary="One indexed chunk")
    def chunk(chunk_id: str) -> ChunkView:
        return found(view().chunk, chunk_id)

    @router.get("/documents/{document_id:path}", response_model=DocumentView,
                summary="A document as its indexed chunks, in order")
    def document(document_id: str) -> DocumentView:
        return found(view().document, document_id)

    @router.get("/communities", response_model=CommunityTree, summary="The community hierarchy, level by level")
    def communities() -> CommunityTree:
        return view().tree()

    @router.get("/communities/{community_id}", response_model=CommunityDetail,
                summary="A community: members, report and the relations among its members")
    def community(community_id: str) -> CommunityDetail:
        return found(view().community, community_id)

    @router.get("/entities/{entity_id}/neighbourhood", response_model=NeighbourhoodView,
                summary="An entity, its direct neighbours and the relations among them")
    def neighbourhood(entity_id: str) -> NeighbourhoodView:
        return found(view().neighbourhood, entity_id)

    @router.get("/drift/page", response_class=HTMLResponse, summary="The drift report as an HTML page")
    def drift_page() -> HTMLResponse:
        # The page written with the last report (by an index run, `strata drift` or GET /v1/drift?refresh=true),
        # like /v1/drift: computing drift reads the whole store, which is no work for a GET.
        from strata.pipeline import drift_dir

        path = drift_dir(settings) / "drift.html"
        if not path.exists():
            raise HTTPException(status_code=404, detail="no drift report yet: run `strata drift`, or GET "
                                                        "/v1/drift?refresh=true")
        return HTMLResponse(path.read_text(encoding="utf-8"))

    return router


def mount_console(app: FastAPI, engine_provider: Callable[[], QueryEngine], settings: StrataSettings) -> None:
    """Serve the console at ``/`` (assets under ``/console/``) and its read-only API under ``/v1``. The API
    routes need the API key like every data route; the page and its assets hold no data and are open, so that
    a browser can load them before the user enters a key."""
    app.include_router(console_router(ViewCache(engine_provider), settings))
    app.mount("/console", StaticFiles(directory=STATIC_DIR), name="console")

    @app.get("/", include_in_schema=False)
    def console() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html", media_type="text/html")
