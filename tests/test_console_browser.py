"""The web console, the drift page and the offline API docs, opened in a real browser (Playwright driving the
machine's Chromium; Playwright's own browser download is never used).

The server is the real app under uvicorn on 127.0.0.1, over a small index of samples/infra-notes that was
indexed, edited and indexed again (so the drift page has drifted reports and two history points), with an API
key set: the console must send it. Every request to another host is blocked and recorded, so a page that needs
the internet fails here. Screenshots go to tests/artifacts/ (git-ignored).

Without Chromium the test is skipped, unless STRATA_REQUIRE_BROWSER=1 (CI), which makes it fail.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from pathlib import Path
from typing import Iterator
from urllib.parse import urlparse

import pytest

from core.settings import StrataSettings
from tests.conftest import ROOT

ARTIFACTS = ROOT / "tests" / "artifacts"
API_KEY = "console-test-key"
CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")


def _chromium() -> str:
    for path in [*CHROMIUM_CANDIDATES, shutil.which("chromium") or ""]:
        if path and Path(path).is_file() and os.access(path, os.X_OK):
            return path
    message = "no Chromium found (apt-get install -y chromium)"
    if os.environ.get("STRATA_REQUIRE_BROWSER") == "1":
        pytest.fail(f"a browser is required (STRATA_REQUIRE_BROWSER=1): {message}")
    pytest.skip(message)


def _sync_playwright():  # type: ignore[no-untyped-def]
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        if os.environ.get("STRATA_REQUIRE_BROWSER") == "1":
            pytest.fail(f"a browser is required (STRATA_REQUIRE_BROWSER=1) but playwright is not installed: {exc}")
        pytest.skip(f"playwright is not installed: {exc}")
    return sync_playwright


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    import uvicorn

    from strata.api import create_app
    from strata.pipeline import index_folder

    tmp = tmp_path_factory.mktemp("console")
    folder = tmp / "notes"
    shutil.copytree(ROOT / "samples" / "infra-notes", folder)
    settings = StrataSettings(data_dir=tmp / "ws", extraction={"mode": "offline"}, retrieval={"embedder": "hashing"},
                              server={"api_keys": [API_KEY]})
    index_folder(folder, settings)
    # A second run with an edit and a deletion, reports kept as they were: the drift page has work to show.
    cache = folder / "search-cache.md"
    cache.write_text(cache.read_text().replace("TTL of 300 seconds", "TTL of 900 seconds, raised after the May sale,"))
    (folder / "kafka-consumers.md").unlink()
    index_folder(folder, settings, report_policy="missing")

    port = _free_port()
    config = uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="warning")
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not srv.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the API server did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        srv.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser_page(server: str) -> Iterator[tuple[object, list[str]]]:
    executable = _chromium()
    sync_playwright = _sync_playwright()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    outside: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, headless=True, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1360, "height": 900})
        page.set_default_timeout(20_000)

        def gate(route) -> None:  # type: ignore[no-untyped-def]
            url = route.request.url
            host = urlparse(url).hostname
            if url.startswith(("data:", "about:", "blob:")) or host == "127.0.0.1":
                route.continue_()
            else:
                outside.append(url)
                route.abort()

        page.route("**/*", gate)
        try:
            yield page, outside
        finally:
            browser.close()


def _await(page, selector: str, error_box: str) -> None:  # type: ignore[no-untyped-def]
    """Wait for ``selector``; if the view's error box shows instead, fail with what it says."""
    page.wait_for_selector(f"{selector}, {error_box}:not([hidden])")
    if page.is_visible(error_box):
        pytest.fail(f"the console showed an error instead of {selector}: {page.inner_text(error_box)}")


def _shot(page, name: str, full_page: bool = True) -> None:  # type: ignore[no-untyped-def]
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=full_page)


def test_console_pages_in_a_browser(server: str, browser_page) -> None:  # type: ignore[no-untyped-def]
    page, outside = browser_page

    # Without the key the console says so instead of showing nothing.
    page.goto(f"{server}/#ask")
    page.fill("#ask-question", "Which service sets max_connections?")
    page.click("#ask-form button[type=submit]")
    page.wait_for_selector("#ask-error:not([hidden])")
    assert "API key" in page.inner_text("#ask-error")

    # With the key: a local answer, its route, confidence and reasons, and citations that open chunk and document.
    page.fill("#api-key", API_KEY)
    page.click("#key-form button[type=submit]")
    assert page.inner_text("#key-state") == "key set for this tab"
    page.click("#ask-form button[type=submit]")
    _await(page, "#ask-result:not([hidden])", "#ask-error")
    assert page.inner_text("#route-name") == "local"
    assert page.inner_text("#route-confidence").endswith("%")
    assert page.locator("#route-reasons li").count() >= 1
    assert "max_connections" in page.inner_text("#answer-text")
    assert page.locator("#answer-text a.chunk-link").count() >= 1
    citations = page.locator("#answer-citations a.chunk-link")
    assert citations.count() >= 1
    cited = citations.first.inner_text()
    _shot(page, "console-ask")
    citations.first.click()
    page.wait_for_selector("#chunk-text")
    assert page.inner_text("#drawer-title") == f"Chunk {cited}"
    assert len(page.inner_text("#chunk-text")) > 50
    _shot(page, "console-chunk")
    page.click("#open-document")
    page.wait_for_selector(".doc-chunk.focus")
    assert page.inner_text("#drawer-title").startswith("Document ")
    _shot(page, "console-document")
    page.click("#drawer-close")

    # A global question: routed to the community reports, which link to the community view.
    page.fill("#ask-question", "What are the main themes across the corpus?")
    page.click("#ask-form button[type=submit]")
    page.wait_for_function("document.querySelector('#route-name').textContent === 'global'")
    page.wait_for_selector("#answer-reports-wrap:not([hidden])")
    assert page.locator("#answer-reports a.community-link").count() >= 1
    _shot(page, "console-ask-global")

    # Memory query with explicit weights and a metadata filter.
    page.goto(f"{server}/#query")
    page.fill("#q-text", "HTTP 504 billing-service")
    page.fill("#q-topk", "4")
    page.fill("#q-dense", "0.3")
    page.fill("#q-sparse", "1.0")
    page.fill("#q-k", "60")
    page.click("#query-form button[type=submit]")
    _await(page, "#query-result:not([hidden])", "#query-error")
    rows = page.locator("#q-rows tr")
    assert 1 <= rows.count() <= 4
    assert page.inner_text("#q-total") == f"{rows.count()} result(s)"
    page.fill("#q-filter", '{"source": "api-gateway.md"}')
    page.click("#query-form button[type=submit]")
    page.wait_for_function("document.querySelectorAll('#q-rows tr').length === 1")
    assert page.inner_text("#q-rows tr td:nth-child(4)") == "api-gateway.md"
    assert '"dense_weight": 0.3' in (page.text_content("#q-request") or "")
    _shot(page, "console-query")
    page.fill("#q-filter", '{"source": {"near": 3}}')
    page.click("#query-form button[type=submit]")
    page.wait_for_selector("#query-error:not([hidden])")
    assert "422" in page.inner_text("#query-error")

    # Community hierarchy: the tree, a community's report and member graph, an entity's neighbourhood.
    page.goto(f"{server}/#communities")
    _await(page, "#community-title", "#comm-error")
    assert page.locator(".tree-item").count() >= 2
    assert "level(s)" in page.inner_text("#comm-count")
    assert page.locator("#comm-detail .findings li").count() >= 1
    nodes = page.locator("#comm-detail svg.graph g.node")
    assert nodes.count() >= 2
    assert page.locator("#comm-detail svg.graph line.edge").count() >= 1
    nodes.first.click()
    page.wait_for_selector("#neighbourhood h3")
    assert page.inner_text("#neighbourhood h3").startswith("Neighbourhood of ")
    assert page.locator("#neighbourhood svg.graph g.node.focus").count() == 1
    _shot(page, "console-communities")

    # The drift page, inside the console (fetched with the key).
    page.goto(f"{server}/#drift")
    frame = page.frame_locator("#drift-frame")
    frame.locator("h2", has_text="Drift by community").wait_for()
    text = frame.locator("body").inner_text()
    assert "What to do" in text and "strata drift --refresh" in text
    assert frame.locator("svg[aria-label='drift score by community'] rect").count() >= 1
    assert frame.locator("svg[aria-label='report status across runs'] rect").count() >= 1
    _shot(page, "console-drift")

    # /docs and /redoc render from the app's own assets.
    page.goto(f"{server}/docs")
    page.wait_for_selector(".swagger-ui .opblock-summary-path")
    paths = page.locator(".opblock-summary-path").all_inner_texts()
    assert any("/v1/memory/query" in p for p in paths) and any("/v1/communities" in p for p in paths)
    _shot(page, "docs")
    page.goto(f"{server}/redoc")
    page.wait_for_selector("redoc h1, [role=main] h1, .api-content h1")
    assert "Strata" in page.inner_text("body") and "/v1/memory/query" in page.inner_text("body")
    _shot(page, "redoc", full_page=False)  # the whole reference is several screens long

    assert not outside, f"pages tried to reach other hosts: {outside[:5]}"
