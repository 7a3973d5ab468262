"""The web console, the drift page and the offline API docs, opened in a real browser (Playwright driving the
machine's Chromium; Playwright's own browser download is never used).

The server is the real app under uvicorn on 127.0.0.1, over a small index of samples/infra-notes (plus a
Markdown runbook with a code block, a list, inline code and hostile HTML) that was indexed, edited and indexed
again (so the drift page has drifted reports and two history points), with an API key set: the console must
send it. A second server mounts the console over a synthetic generation with a 676-member community and 300
more, for the communities page at scale. Every request to another host is blocked and recorded, so a page that
needs the internet fails here. Screenshots go to tests/artifacts/ (git-ignored).

Without Chromium the test is skipped, unless STRATA_REQUIRE_BROWSER=1 (CI), which makes it fail.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import quote, urlparse

import pytest

from core.records import Community, Entity, Finding, GraphSnapshot, Relation, Report
from core.settings import StrataSettings
from retrieval.hits import IndexedChunk
from tests.conftest import ROOT

ARTIFACTS = ROOT / "tests" / "artifacts"
API_KEY = "console-test-key"
CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
VIEWPORT = {"width": 1360, "height": 900}
# A runbook in Markdown, with HTML that must stay inert: shown as text, never run or fetched.
RUNBOOK = """---
service: deploy-tool
team: platform
---
# Deploy runbook

Roll out with `deployctl apply --canary 10` before the full rollout.

Steps for a rollback:

- pause the rollout with `deployctl pause`
- restore the previous release
- page the platform team

```bash
deployctl rollback --to previous
deployctl status
```

<script>window.__injected = "script";</script>
<img src="x" onerror="window.__injected = 'onerror'">
A [link](javascript:window.__injected='link') and an ![image](https://example.com/tracker.png) stay inert.
"""


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
    from strata.api import create_app
    from strata.pipeline import index_folder

    tmp = tmp_path_factory.mktemp("console")
    folder = tmp / "notes"
    shutil.copytree(ROOT / "samples" / "infra-notes", folder)
    (folder / "deploy-runbook.md").write_text(RUNBOOK, encoding="utf-8")
    # The hashing embedder given a dense weight: the default ranking is then the adaptive (convex) one.
    settings = StrataSettings(data_dir=tmp / "ws", extraction={"mode": "offline"},
                              retrieval={"embedder": "hashing", "dense_weight": 1.0}, server={"api_keys": [API_KEY]})
    index_folder(folder, settings)
    # A second run with an edit and a deletion, reports kept as they were: the drift page has work to show.
    cache = folder / "search-cache.md"
    cache.write_text(cache.read_text().replace("TTL of 300 seconds", "TTL of 900 seconds, raised after the May sale,"))
    (folder / "kafka-consumers.md").unlink()
    index_folder(folder, settings, report_policy="missing")

    yield from _serve(create_app(settings))


def _serve(app: Any) -> Iterator[str]:
    import uvicorn

    port = _free_port()
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
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


# -- a synthetic generation: one community of 676 members (and its sub-community with the same title), 300 small
# ones, entities with long unbroken names and long descriptions ------------------------------------------------
BIG, SUB, BIG_SIZE, SMALL = "c0_big", "c1_big", 676, 300
BIG_TITLE = "Payments platform: ledger, billing and gateway"


class _Rows:
    def __init__(self, rows: list[IndexedChunk]) -> None:
        self.rows = rows


class _Generation:
    def __init__(self) -> None:
        text = "The ledger-service records payments. The billing-service reads the ledger."
        self.index = _Rows([IndexedChunk("pay.md#0000", "pay.md", text, "pay.md", {})])
        names = [f"service-{i:03d}" for i in range(BIG_SIZE + 4 * SMALL)]
        names[5] = "averyveryverylongunbrokenidentifier_" * 4  # wider than any column if the table let it be
        names[BIG_SIZE + 4 * 137 + 3] = "zephyr-gateway"  # in one small community (on the third page), not its title
        self.entities = tuple(Entity(f"e{i}", n, "service", ("a description that goes on " * 12) + n, ("pay.md#0000",))
                              for i, n in enumerate(names))
        hub = [Relation(f"r0-{i}", "e0", f"e{i}", "calls", ("pay.md#0000",)) for i in range(1, BIG_SIZE)]
        ring = [Relation(f"r{i}-{i + 1}", f"e{i}", f"e{i + 1}", "next to", ("pay.md#0000",)) for i in range(1, BIG_SIZE - 1)]
        self.relations = tuple(hub + ring)
        big = tuple(f"e{i}" for i in range(BIG_SIZE))
        self.communities = [Community(BIG, 0, None, big), Community(SUB, 1, BIG, big[:200])] + [
            Community(f"c0_s{j:03d}", 0, None, tuple(f"e{BIG_SIZE + 4 * j + k}" for k in range(4))) for j in range(SMALL)]
        finding = Finding("The ledger-service records payments.", ("pay.md#0000",), 0, 36)
        self.reports = [Report(cid, lvl, BIG_TITLE, "The **payments** platform: `ledger-service` and more.", (finding,),
                               7.5, "fp", "offline", "", "2024-06-01T00:00:00Z") for cid, lvl in ((BIG, 0), (SUB, 1))]

    def graph(self) -> GraphSnapshot:
        return GraphSnapshot(self.entities, self.relations)


class _Engine:
    def __init__(self) -> None:
        self.generation = _Generation()

    def acquire(self) -> _Generation:
        return self.generation

    def release(self, snap: _Generation) -> None:
        pass


@pytest.fixture(scope="module")
def synthetic_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from fastapi import FastAPI

    from strata.web import mount_console

    engine = _Engine()
    app = FastAPI()
    mount_console(app, lambda: engine, StrataSettings(data_dir=tmp_path_factory.mktemp("synthetic")))
    yield from _serve(app)


@pytest.fixture(scope="module")
def browser_page(server: str) -> Iterator[tuple[object, list[str]]]:
    executable = _chromium()
    sync_playwright = _sync_playwright()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    outside: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, headless=True, args=["--no-sandbox"])
        page = browser.new_page(viewport=VIEWPORT)
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
    assert page.inner_text("#q-total") == f"{rows.count()} result{'' if rows.count() == 1 else 's'}"
    page.fill("#q-filter", '{"source": "api-gateway.md"}')
    page.click("#query-form button[type=submit]")
    page.wait_for_function("document.querySelectorAll('#q-rows tr').length === 1")
    assert page.inner_text("#q-rows tr td:nth-child(6)") == "api-gateway.md"
    assert '"dense_weight": 0.3' in (page.text_content("#q-request") or "")
    assert "graph_weight" not in (page.text_content("#q-request") or "")  # empty: the index's default
    assert "graph walk" in page.inner_text("#view-query p.muted")
    _shot(page, "console-query")
    # graph_weight 0 turns the graph walk's list off: the heading's weights say so
    page.fill("#q-filter", "")
    page.fill("#q-graph", "0")
    page.click("#query-form button[type=submit]")
    page.wait_for_function("document.querySelector('#q-request').textContent.includes('\"graph_weight\": 0')")
    _await(page, "#query-result:not([hidden])", "#query-error")
    assert "graph walk" not in page.inner_text("#q-rrf-weights")
    page.fill("#q-graph", "")
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
    # On its own, in a new tab: with the key (a plain link could not send it).
    with page.expect_popup() as popup_info:
        page.click("#drift-open")
    popup = popup_info.value
    popup.wait_for_selector("h2:has-text('Drift by community')")
    assert "What to do" in popup.inner_text("body")
    popup.set_viewport_size(VIEWPORT)
    _shot(popup, "drift-page")
    popup.close()

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


def _with_key(page, server: str) -> None:  # type: ignore[no-untyped-def]
    page.goto(f"{server}/#ask")
    page.fill("#api-key", API_KEY)
    page.click("#key-form button[type=submit]")


def _chunk(server: str, chunk_id: str) -> dict[str, Any]:
    req = urllib.request.Request(f"{server}/v1/chunks/{quote(chunk_id, safe='')}",
                                 headers={"Authorization": f"Bearer {API_KEY}"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def test_markdown_is_rendered_safely_and_the_quoted_sentence_is_marked(server: str, browser_page) -> None:  # type: ignore[no-untyped-def]
    page, outside = browser_page
    _with_key(page, server)
    page.fill("#ask-question", "How do I roll back a deploy with deployctl?")
    page.select_option("#ask-mode", "local")
    page.click("#ask-form button[type=submit]")
    _await(page, "#ask-result:not([hidden])", "#ask-error")
    page.wait_for_selector("#answer-text .md")
    answer = page.inner_text("#answer-text")
    # Markdown rendered, not shown: inline code as code, no backticks, fences or "- " bullets left as text.
    assert page.locator("#answer-text code").count() >= 1
    assert "`" not in answer and not any(line.lstrip().startswith("- ") for line in answer.splitlines())
    for block in page.locator("#answer-text pre").all_inner_texts():  # a quoted code block keeps its lines
        assert "\n" in block.strip()
    _shot(page, "console-answer-markdown")

    # An answer's citation opens its chunk with the quoted sentence marked inside the rendered text.
    cited = page.locator("#answer-text a.chunk-link[data-marks]").first
    chunk_id, marks = cited.get_attribute("data-chunk"), cited.get_attribute("data-marks")
    start, end = (int(x) for x in marks.split(",")[0].split("-"))
    cited.click()
    page.wait_for_selector("#chunk-text mark")
    raw = _chunk(server, chunk_id)["text"]
    marked = page.locator("#chunk-text mark").all_inner_texts()
    assert marked and all(piece.strip() in raw[start:end] for piece in marked)
    assert page.is_visible("#quoted-note")
    _shot(page, "console-chunk-marked")

    # The runbook's chunk: a list, a code block and inline code as such; its HTML shown as text, never run.
    runbook = "deploy-runbook.md#0000"
    page.evaluate("window.__injected = undefined")
    page.click("#drawer-close")
    page.evaluate(f"openChunk({json.dumps(runbook)}, [])")
    page.wait_for_selector("#chunk-text ul li")
    assert page.locator("#chunk-text ul li").count() == 3
    assert "deployctl rollback --to previous\ndeployctl status" in page.inner_text("#chunk-text pre code")
    assert page.locator("#chunk-text p code", has_text="deployctl apply --canary 10").count() == 1
    text = page.inner_text("#chunk-text")
    raw = _chunk(server, runbook)["text"]
    # The page's raw HTML is markup, not prose: the loader drops it, so neither the chunk nor the page shows it.
    assert "<script>" not in raw and "onerror" not in raw and "<script>" not in text and "onerror" not in text
    assert page.locator("#chunk-text script, #chunk-text img, #chunk-text [onerror]").count() == 0
    assert page.locator("#chunk-text a[href^='javascript']").count() == 0
    assert page.evaluate("window.__injected") is None
    _shot(page, "console-chunk-markdown")
    page.click("#drawer-close")
    assert not outside, f"pages tried to reach other hosts: {outside[:5]}"


def test_memory_query_shows_the_ranking_score_in_order_and_a_heading_in_step(server: str, browser_page) -> None:  # type: ignore[no-untyped-def]
    page, _ = browser_page
    _with_key(page, server)
    page.goto(f"{server}/#query")
    page.uncheck("#q-custom")  # the index's query-adaptive default: not ranked by rrf_score
    page.fill("#q-text", "HTTP 504 billing-service")
    page.fill("#q-topk", "6")
    page.fill("#q-id", "probe-7")
    page.click("#query-form button[type=submit]")
    _await(page, "#query-result:not([hidden])", "#query-error")
    ranking = page.inner_text("#q-ranking")
    assert ranking.startswith("convex") and ranking in page.get_attribute("#q-score-head", "title")
    # The weights shown are those of the rrf_score column, not of the convex ranking beside them.
    assert "rrf_score weights: BM25" in page.inner_text("#q-echo") and page.inner_text("#q-rrf-weights").startswith("BM25 ")
    scores = [float(x) for x in page.locator("#q-rows td.score").all_inner_texts()]
    rrf = [float(x) for x in page.locator("#q-rows td.rrf").all_inner_texts()]
    assert len(scores) == len(rrf) == page.locator("#q-rows tr").count() >= 2
    assert scores == sorted(scores, reverse=True), f"the ranking's score is shown out of order: {scores}"
    # The heading names the query the results are for, as the boxes still read.
    assert page.input_value("#q-id") == page.inner_text("#q-echo-id") == "probe-7"
    assert page.inner_text("#q-echo-text") == page.input_value("#q-text")
    assert page.inner_text("#q-total") == f"{len(scores)} results"
    assert not page.is_visible("#q-stale")
    _shot(page, "console-query-scores")
    page.fill("#q-text", "PostgreSQL max_connections")
    assert page.is_visible("#q-stale")  # edited since: the heading says so until the next search
    page.fill("#q-id", "")
    page.click("#query-form button[type=submit]")
    page.wait_for_function("document.querySelector('#q-echo-text').textContent === 'PostgreSQL max_connections'")
    assert page.inner_text("#q-echo-id").startswith("console-") and not page.is_visible("#q-stale")


def test_communities_page_scales_to_a_676_member_community(synthetic_server: str, browser_page) -> None:  # type: ignore[no-untyped-def]
    page, outside = browser_page
    page.goto(f"{synthetic_server}/#communities/{BIG}")
    page.wait_for_selector("#community-title")
    page.wait_for_selector("#members tbody tr")
    # The drawing: the best-connected members, the rest counted.
    nodes = page.locator("#comm-detail svg.graph g.node")
    assert 2 <= nodes.count() <= 40
    assert f"and {BIG_SIZE - nodes.count()} more" in page.inner_text("#graph-note")
    assert page.locator("#comm-detail svg.graph g.node[data-entity='e0']").count() == 1  # the hub, by degree
    # Members paged; the page stays about a screen wide and a few screens tall.
    _shot(page, "console-communities-large")
    assert page.locator("#members tbody tr").count() == 25
    assert f"1–25 of {BIG_SIZE} members" in page.inner_text("#members-pager")
    width, height = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
    assert width <= VIEWPORT["width"], f"the page is {width} px wide"
    assert height <= 4 * VIEWPORT["height"], f"the page is {height} px tall"
    assert page.locator("#comm-detail .summary strong").count() == 1  # the report's Markdown rendered
    first = page.inner_text("#members tbody tr:first-child td:first-child")
    page.click("#members-pager button.next")
    page.wait_for_function("document.querySelector('#members-pager .range').textContent.startsWith('26–50')")
    assert page.inner_text("#members tbody tr:first-child td:first-child") != first

    # The list: paged, searchable by title and by member, with levels telling apart communities of one title.
    assert page.locator(".tree-item").count() == 50
    assert f"of {SMALL + 2}" in page.inner_text("#comm-pager")
    page.click("#comm-pager button.next")
    page.wait_for_function("document.querySelector('#comm-pager .range').textContent.startsWith('51–100')")
    page.fill("#comm-search", "zephyr")
    page.wait_for_function("document.querySelectorAll('.tree-item').length === 1")
    assert "member: zephyr-gateway" in page.inner_text(".tree-item")
    page.fill("#comm-search", "payments platform")
    page.wait_for_function("document.querySelectorAll('.tree-item').length === 2")
    items = page.locator(".tree-item")
    assert [items.nth(i).locator(".lvl").inner_text() for i in range(2)] == ["L0", "L1"]
    assert "same title as its parent" in items.nth(1).inner_text()
    assert "2 of 302 communities match" in page.inner_text("#comm-count")
    _shot(page, "console-communities-search")
    items.nth(1).click()
    page.wait_for_function(f"document.querySelector('#community-title').textContent.startsWith('L1')")
    assert page.locator("#members tbody tr").count() == 25
    assert not outside, f"pages tried to reach other hosts: {outside[:5]}"
