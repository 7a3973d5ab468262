"""``/docs`` (Swagger UI) and ``/redoc`` served with their scripts and styles from the app itself, so that they
work without internet access. The assets are the ones the ``fastapi-offline`` package ships."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles

ASSETS_URL = "/docs-assets"
REDOC_REMOTE_LOGO = b"https://cdn.redoc.ly/redoc/logo-mini.svg"


def assets_dir() -> Path:
    """The folder holding ``swagger-ui-bundle.js``, ``swagger-ui.css``, ``redoc.standalone.js`` and a favicon."""
    import fastapi_offline

    folder = Path(fastapi_offline.__file__).parent / "static"
    missing = [n for n in ("swagger-ui-bundle.js", "swagger-ui.css", "redoc.standalone.js") if not (folder / n).is_file()]
    if missing:
        raise RuntimeError(f"the fastapi-offline package has no {', '.join(missing)} in {folder}; reinstall it")
    return folder


@lru_cache(maxsize=1)
def _redoc_script(folder: Path) -> bytes:
    """ReDoc's bundle with its one remote asset (the vendor logo in the sidebar) pointed at the local favicon,
    so that the page makes no request to another host."""
    script = (folder / "redoc.standalone.js").read_bytes()
    return script.replace(REDOC_REMOTE_LOGO, f"{ASSETS_URL}/favicon.png".encode())


def mount_offline_docs(app: FastAPI, docs_url: str = "/docs", redoc_url: str = "/redoc") -> None:
    """Serve Swagger UI at ``docs_url`` and ReDoc at ``redoc_url`` from local assets. Create the app with
    ``docs_url=None, redoc_url=None`` so FastAPI's CDN-loading pages are not registered first."""
    folder = assets_dir()

    @app.get(f"{ASSETS_URL}/redoc.standalone.js", include_in_schema=False)
    def redoc_script() -> Response:
        return Response(_redoc_script(folder), media_type="text/javascript")

    app.mount(ASSETS_URL, StaticFiles(directory=folder), name="docs-assets")  # after the route above: it wins
    openapi_url = app.openapi_url or "/openapi.json"
    oauth2_url = app.swagger_ui_oauth2_redirect_url or f"{docs_url}/oauth2-redirect"

    @app.get(docs_url, include_in_schema=False)
    def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(
            openapi_url=f"{root}{openapi_url}", title=f"{app.title} - Swagger UI", oauth2_redirect_url=oauth2_url,
            swagger_js_url=f"{root}{ASSETS_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{ASSETS_URL}/swagger-ui.css",
            swagger_favicon_url=f"{root}{ASSETS_URL}/favicon.png", swagger_ui_parameters=app.swagger_ui_parameters)

    @app.get(oauth2_url, include_in_schema=False)
    def swagger_ui_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get(redoc_url, include_in_schema=False)
    def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_redoc_html(openapi_url=f"{root}{openapi_url}", title=f"{app.title} - ReDoc",
                              redoc_js_url=f"{root}{ASSETS_URL}/redoc.standalone.js",
                              redoc_favicon_url=f"{root}{ASSETS_URL}/favicon.png", with_google_fonts=False)
