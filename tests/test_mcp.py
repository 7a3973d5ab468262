"""``strata mcp`` tested with real MCP clients: the official Python SDK's client over stdio and over streamable
HTTP, each against a real ``strata mcp`` subprocess, and the MCP Inspector's CLI (Node, installed by ``make
install-test`` into tests/mcp_inspector). Every tool and resource, arguments an agent gets wrong (tool errors that
name the problem, the session going on), the API keys of ``strata serve``, a reindex picked up while a session
stays open, ``remember`` only with ``--allow-write``, an LLM answer streamed as progress notifications (against the
suite's OpenAI-compatible server), and ``search_memory`` giving exactly what ``POST /v1/memory/query`` gives."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, AsyncIterator, Iterator

import anyio
import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp import MCPError

from core.settings import StrataSettings
from retrieval.contract import MemoryQueryResponse
from strata.pipeline import index_folder
from tests.conftest import ROOT
from tests.llm_server import FakeLLMServer

READ_TOOLS = {"search_memory", "ask", "route", "get_chunk", "status"}
TEAMS = ("payments", "search", "platform")
INSPECTOR_DIR = ROOT / "tests" / "mcp_inspector"
INSPECTOR_CLI = Path(os.environ.get("STRATA_MCP_INSPECTOR", INSPECTOR_DIR / "node_modules" / "@modelcontextprotocol"
                                    / "inspector-cli" / "build" / "cli.js"))
API_KEY = "mcp-test-key"


def write_corpus(folder: Path, n: int = 8) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    topics = ["billing", "ledger", "search", "gateway", "kafka", "postgres", "redis", "auth"]
    for i in range(n):
        t = topics[i % len(topics)]
        (folder / f"note-{i:02d}.md").write_text(
            f"---\nteam: {TEAMS[i % len(TEAMS)]}\n---\n# {t}-service note {i}\n\n"
            f"The {t}-service on node-{i} logged ERR-{1000 + i} after deploy v{i}.2. Operator Kim Ortega restarted "
            f"the {t}-worker pool and raised {t}.max_connections to {100 + i}.\n\nMarker token zq{i:02d}x appears "
            f"only in note {i}.\n", encoding="utf-8")


def make_workspace(tmp: Path, n: int = 8) -> StrataSettings:
    write_corpus(tmp / "corpus", n)
    settings = StrataSettings(data_dir=tmp / "ws", extraction={"mode": "offline"}, index={"reload_poll_s": 0.2})
    index_folder(tmp / "corpus", settings)
    return settings


def server_env(settings: StrataSettings, **extra: str) -> dict[str, str]:
    """The environment of a `strata mcp` subprocess: this checkout's modules, the workspace, the test settings."""
    return {**os.environ, "PYTHONPATH": str(ROOT), "STRATA_DATA_DIR": str(settings.data_dir),
            "STRATA_EXTRACTION__MODE": "offline", "STRATA_RETRIEVAL__EMBEDDER": "hashing",
            "STRATA_INDEX__RELOAD_POLL_S": "0.2", **extra}


def stdio(settings: StrataSettings, *flags: str, **env: str) -> Client:
    params = StdioServerParameters(command=sys.executable, args=["-m", "strata.cli", "mcp", *flags],
                                   env=server_env(settings, **env), cwd=str(ROOT))
    return Client(params, read_timeout_seconds=60)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def http_server(settings: StrataSettings, *flags: str, **env: str) -> Iterator[str]:
    """`strata mcp --http` on a free port, with the test API key; yields the /mcp URL once it answers."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "strata.cli", "mcp", "--http", "--port", str(port), *flags],
                            env=server_env(settings, STRATA_SERVER__API_KEYS=json.dumps([API_KEY]), **env),
                            cwd=str(ROOT), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                pytest.fail(f"strata mcp --http exited: {proc.stderr.read()[-2000:]}")  # type: ignore[union-attr]
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "strata mcp --http did not answer within 30 s"
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@asynccontextmanager
async def http_client(url: str, key: str = API_KEY, mode: str = "auto") -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode,  # type: ignore[arg-type]
                          read_timeout_seconds=60) as client:
            yield client


def data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    assert json.loads(result.content[0].text) == result.structured_content  # the same data as text, for old clients
    return result.structured_content  # type: ignore[no-any-return]


def error_text(result: Any) -> str:
    assert result.is_error, f"expected a tool error, got {result.structured_content}"
    assert result.structured_content is None and len(result.content) == 1
    text = result.content[0].text
    assert "\n" not in text and "Traceback" not in text
    return text  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> StrataSettings:
    return make_workspace(tmp_path_factory.mktemp("mcp"))


# -- the SDK's client over stdio ----------------------------------------------------------------------------------
def test_stdio_every_tool_and_resource(workspace: StrataSettings) -> None:
    async def body() -> None:
        async with stdio(workspace) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            assert set(tools) == READ_TOOLS  # read-only by default: no remember
            for t in tools.values():
                assert len(t.description or "") > 80 and t.input_schema["type"] == "object"
                assert t.annotations is not None and t.annotations.read_only_hint is True
            search_schema = tools["search_memory"].input_schema
            assert set(search_schema["properties"]) == {"query_id", "search_text", "top_k", "hybrid_params",
                                                         "metadata_filter"}
            assert search_schema["required"] == ["query_id", "search_text"]
            assert tools["search_memory"].output_schema == MemoryQueryResponse.model_json_schema()

            found = data(await c.call_tool("search_memory", {
                "query_id": "m1", "search_text": "zq03x", "top_k": 3,
                "hybrid_params": {"dense_weight": 0.5, "sparse_weight": 1.0, "rrf_k_constant": 60}}))
            response = MemoryQueryResponse.model_validate(found)
            assert response.query_id == "m1" and response.index_generation == 1
            assert response.results[0].chunk_id.startswith("note-03.md#") and "zq03x" in response.results[0].text
            filtered = data(await c.call_tool("search_memory", {"query_id": "m2", "search_text": "service restarted",
                                                                "top_k": 8, "metadata_filter": {"team": "search"}}))
            assert filtered["results"] and {r["source"] for r in filtered["results"]} <= {
                f"note-{i:02d}.md" for i in range(8) if TEAMS[i % 3] == "search"}

            steps: list[tuple[float, float | None, str | None]] = []

            async def progress(p: float, total: float | None, message: str | None) -> None:
                steps.append((p, total, message))

            answer = data(await c.call_tool("ask", {"question": "Which node logged ERR-1005?"},
                                            progress_callback=progress))
            assert answer["route"]["route"] == "local" and answer["route"]["reasons"]
            assert answer["answer"] and answer["index_generation"] == 1 and answer["mode"] == "offline"
            cited = answer["citations"][0]["chunk_id"]
            assert cited.startswith("note-05.md#")
            # Offline: one notification as the answer starts and one as it ends, rising to the total.
            assert len(steps) == 2 and steps[0][0] < steps[1][0] == steps[1][1]
            assert "Which node logged ERR-1005?" in (steps[0][2] or "") and "local" in (steps[1][2] or "")
            chunk = data(await c.call_tool("get_chunk", {"chunk_id": cited}))
            assert chunk["chunk_id"] == cited and "ERR-1005" in chunk["text"] and chunk["source"] == "note-05.md"
            assert chunk["metadata"]["team"] == TEAMS[5 % 3] and chunk["index_generation"] == 1

            themes = data(await c.call_tool("ask", {"question": "What are the main themes?", "mode": "global"}))
            assert themes["route"]["route"] == "global" and themes["route"]["overridden"] is True
            decision = data(await c.call_tool("route", {"question": "What problems recur across all services?"}))
            assert decision["route"] == "global" and decision["reasons"] and decision["index_generation"] == 1

            status = data(await c.call_tool("status", {}))
            assert status["index_generation"] == 1 and status["documents"] == 8 and status["chunks"] >= 8
            assert status["drift"]["index_generation"] == 1
            assert status["drift"]["totals"]["reports"] == status["reports"]

            resources = {str(r.uri): r for r in (await c.list_resources()).resources}
            assert set(resources) == {"strata://communities", "strata://drift"}
            templates = (await c.list_resource_templates()).resource_templates
            assert [t.uri_template for t in templates] == ["strata://communities/{community_id}"]
            listing = json.loads((await c.read_resource("strata://communities")).contents[0].text)
            assert listing["index_generation"] == 1 and len(listing["communities"]) == status["communities"]
            first = listing["communities"][0]
            report = (await c.read_resource(first["uri"])).contents[0]
            assert report.mime_type == "text/markdown" and report.text.startswith(f"# {first['title']}\n")
            assert f"Community `{first['id']}`" in report.text and "## Findings" in report.text
            drift = json.loads((await c.read_resource("strata://drift")).contents[0].text)
            assert drift["index_generation"] == 1 and drift["totals"] == status["drift"]["totals"]

    anyio.run(body)


BAD_CALLS = [
    ("search_memory", {"query_id": "b", "search_text": "x", "top_k": 0},
     "top_k: Input should be greater than or equal to 1"),
    ("search_memory", {"query_id": "b", "search_text": "x", "top_k": True}, "top_k: Input should be a valid integer"),
    ("search_memory", {"query_id": "b"}, "search_text: Field required"),
    ("search_memory", {"query_id": "b", "search_text": "   "}, "search_text: must contain non-whitespace text"),
    ("search_memory", {"query_id": "b", "search_text": "x", "limit": 3}, "limit: unknown argument (the arguments are"),
    ("search_memory", {"query_id": "b", "search_text": "x", "metadata_filter": {"team": {"like": "p"}}},
     "metadata_filter.team: unknown operator 'like'"),
    ("search_memory", {"query_id": "b", "search_text": "x",
                       "hybrid_params": {"dense_weight": 0, "sparse_weight": 0, "rrf_k_constant": 60}},
     "dense_weight and sparse_weight cannot both be 0"),
    ("search_memory", {"query_id": "b", "search_text": "x" * 4001}, "search_text: at most 4000 characters"),
    ("ask", {"question": "What are the main themes?", "mode": "global", "metadata_filter": {"team": "search"}},
     "metadata_filter applies to local answers only"),
    ("ask", {"question": "x", "mode": "sideways"}, "mode: Input should be 'local' or 'global'"),
    ("route", {}, "question: Field required"),
    ("get_chunk", {"chunk_id": "no-such.md#0000"}, "no chunk 'no-such.md#0000' in index generation 1"),
    ("status", {"verbose": True}, "verbose: unknown argument"),
    ("remember", {"text": "a note"}, "unknown tool 'remember'"),
]


def test_bad_arguments_are_tool_errors_and_the_session_goes_on(workspace: StrataSettings) -> None:
    async def body() -> None:
        async with stdio(workspace) as c:
            for name, arguments, expected in BAD_CALLS:
                text = error_text(await c.call_tool(name, arguments))
                assert expected in text, (name, arguments, text)
            with pytest.raises(MCPError, match="no community 'c9_nope' in index generation 1"):
                await c.read_resource("strata://communities/c9_nope")
            with pytest.raises(MCPError, match="unknown resource 'strata://elsewhere'"):
                await c.read_resource("strata://elsewhere")
            # Still serving after every refusal.
            assert data(await c.call_tool("search_memory", {"query_id": "ok", "search_text": "zq01x"}))["results"]

    anyio.run(body)


def test_reports_damaged_after_the_load_are_refused_naming_the_file(tmp_path: Path) -> None:
    """Reports are read on first use (strata.generations.QuerySnapshot): damaged after the generation loaded, a
    resource or tool that needs them says which file and how to rebuild it, and search goes on."""
    from bench.faults import garble
    from strata.workspace import Workspace

    settings = make_workspace(tmp_path)

    async def body() -> None:
        async with stdio(settings) as c:
            assert data(await c.call_tool("search_memory", {"query_id": "a", "search_text": "zq01x"}))["results"]
            garble(Workspace(settings.data_dir).current().root / "reports.json")
            with pytest.raises(MCPError, match=r"generation 1 is damaged: reports.json .*strata index"):
                await c.read_resource("strata://communities")
            text = error_text(await c.call_tool("ask", {"question": "What are the main themes?", "mode": "global"}))
            assert "reports.json" in text and "strata index" in text and "this is a bug" not in text
            assert data(await c.call_tool("search_memory", {"query_id": "b", "search_text": "zq01x"}))["results"]

    anyio.run(body)


# -- over streamable HTTP -----------------------------------------------------------------------------------------
def test_http_keys_and_a_reindex_picked_up_in_an_open_session(tmp_path: Path) -> None:
    settings = make_workspace(tmp_path)
    with http_server(settings) as url:
        init = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        assert httpx.post(url, json=init, timeout=10).status_code == 401
        wrong = httpx.post(url, json=init, timeout=10, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401 and "API key" in wrong.json()["detail"][0]["msg"]

        async def body() -> None:
            async with http_client(url) as c:
                assert {t.name for t in (await c.list_tools()).tools} == READ_TOOLS
                before = data(await c.call_tool("search_memory", {"query_id": "h1", "search_text": "zq11x"}))
                assert before["index_generation"] == 1
                assert not any(r["chunk_id"].startswith("note-11.md#") for r in before["results"])
                # A reindex in another process, while the session stays open: note 11 is new, note 0 is gone.
                write_corpus(tmp_path / "corpus", 12)
                (tmp_path / "corpus" / "note-00.md").unlink()
                run = await anyio.to_thread.run_sync(lambda: subprocess.run(
                    [sys.executable, "-m", "strata.cli", "index", str(tmp_path / "corpus")], env=server_env(settings),
                    cwd=str(ROOT), capture_output=True, text=True, timeout=120))
                assert run.returncode == 0, run.stderr[-2000:]
                deadline = time.monotonic() + 5
                while True:
                    after = data(await c.call_tool("search_memory", {"query_id": "h2", "search_text": "zq11x"}))
                    if after["index_generation"] == 2:
                        break
                    assert time.monotonic() < deadline, "the new generation was not served within 5 s"
                    await anyio.sleep(0.1)
                assert after["results"][0]["chunk_id"].startswith("note-11.md#")
                gone = data(await c.call_tool("search_memory", {"query_id": "h3", "search_text": "zq00x"}))
                assert not any(r["source"] == "note-00.md" for r in gone["results"])
                status = data(await c.call_tool("status", {}))
                assert status["index_generation"] == 2 and status["documents"] == 11
                steps: list[str | None] = []

                async def progress(_p: float, _total: float | None, message: str | None) -> None:
                    steps.append(message)

                answer = data(await c.call_tool("ask", {"question": "Which node logged ERR-1011?"},
                                                progress_callback=progress))
                assert answer["citations"][0]["chunk_id"].startswith("note-11.md#") and answer["index_generation"] == 2
                assert len(steps) == 2 and "index generation 2" in (steps[-1] or "")  # progress over HTTP too
            # A client speaking the handshake-era protocol (as most agent hosts do today) is served too.
            async with http_client(url, mode="legacy") as old:
                decision = data(await old.call_tool("route", {"question": "Which node logged ERR-1011?"}))
                assert decision["route"] == "local" and decision["index_generation"] == 2

        anyio.run(body)


def test_remember_only_with_allow_write(tmp_path: Path) -> None:
    settings = make_workspace(tmp_path)

    async def body() -> None:
        async with stdio(settings, "--allow-write") as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            assert set(tools) == READ_TOOLS | {"remember"}
            assert tools["remember"].annotations is not None and tools["remember"].annotations.read_only_hint is False
            assert "text: Field required" in error_text(await c.call_tool("remember", {"title": "no text"}))
            steps: list[str | None] = []

            async def progress(_p: float, _total: float | None, message: str | None) -> None:
                steps.append(message)

            note = data(await c.call_tool("remember", {
                "title": "Port registry", "text": "The qx7vault-service listens on port 7431 since the May move."},
                progress_callback=progress))
            assert note["index_generation"] == 2 and note["published"] and note["new"] == 1
            assert note["document_id"].startswith("notes/") and note["document_id"].endswith("-port-registry.md")
            assert "indexing: extract" in steps and steps[-1] == "indexed in generation 2"
            path = Path(note["path"])
            assert path.parent == settings.data_dir / "notes" and path.read_text().count("# Port registry") == 1
            # Served at once, by the same session, and filterable as a note.
            found = data(await c.call_tool("search_memory", {"query_id": "r1", "search_text": "qx7vault-service",
                                                              "metadata_filter": {"kind": "note"}}))
            assert found["index_generation"] == 2 and [r["source"] for r in found["results"]] == [note["document_id"]]
            # The workspace's own folder is still indexed beside the notes.
            assert data(await c.call_tool("status", {}))["documents"] == 9

    anyio.run(body)
    folders = json.loads((settings.data_dir / "folders.json").read_text())["folders"]
    assert [Path(f["path"]).name for f in folders] == ["corpus", "notes"]


def test_an_llm_answer_streams_as_progress_notifications(tmp_path: Path) -> None:
    llm = FakeLLMServer().start()
    try:
        llm.state.stream_delay = 0.02
        folder = tmp_path / "notes"
        shutil.copytree(ROOT / "samples" / "infra-notes", folder)
        llm_env = {"STRATA_EXTRACTION__MODE": "llm", "STRATA_LLM__BASE_URL": llm.base_url,
                   "STRATA_LLM__MODEL": "test-model", "STRATA_LLM__MAX_RETRIES": "1"}
        settings = StrataSettings(data_dir=tmp_path / "ws", extraction={"mode": "llm"},
                                  llm={"base_url": llm.base_url, "model": "test-model", "max_retries": 1})
        index_folder(folder, settings)

        async def body() -> None:
            async with stdio(settings, **llm_env) as c:
                steps: list[tuple[float, float | None, str]] = []

                async def progress(p: float, total: float | None, message: str | None) -> None:
                    steps.append((p, total, message or ""))

                answer = data(await c.call_tool("ask", {"question": "What are the recurring problems across all "
                                                                    "services?"}, progress_callback=progress))
                assert answer["mode"] == "llm" and answer["route"]["route"] == "global" and answer["citations"]
                pieces = [m for _, _, m in steps[1:-1]]
                assert len(pieces) >= 5 and "".join(pieces) == answer["answer"]  # the reduce step, as written
                assert [p for p, _, _ in steps] == list(range(len(steps))) and steps[-1][1] == steps[-1][0]

        anyio.run(body)
    finally:
        llm.stop()


def test_cli_refuses_an_unsafe_bind_and_http_flags_without_http(workspace: StrataSettings,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from strata.cli import main

    ws = str(workspace.data_dir)
    assert main(["mcp", "--http", "--host", "0.0.0.0", "--data-dir", ws]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "refusing to serve on 0.0.0.0 without an API key" in err and "--insecure" in err
    assert main(["mcp", "--port", "9000", "--data-dir", ws]) == 2
    assert "apply to --http only" in " ".join(capsys.readouterr().err.split())


# -- the same results as the HTTP API -----------------------------------------------------------------------------
def test_search_memory_equals_post_memory_query(workspace: StrataSettings) -> None:
    from fastapi.testclient import TestClient

    from strata.api import create_app

    requests = [
        {"query_id": "e1", "search_text": "postgres-service restarted", "top_k": 5},
        {"query_id": "e2", "search_text": "ERR-1003 deploy", "top_k": 4,
         "hybrid_params": {"dense_weight": 0.3, "sparse_weight": 1.0, "rrf_k_constant": 20}},
        {"query_id": "e3", "search_text": "worker pool max_connections", "top_k": 6,
         "metadata_filter": {"team": {"in": ["payments", "platform"]}}},
    ]
    with TestClient(create_app(workspace)) as api:
        expected = [api.post("/v1/memory/query", json=r) for r in requests]
    assert all(r.status_code == 200 for r in expected)

    async def body() -> list[dict[str, Any]]:
        async with stdio(workspace) as c:
            return [data(await c.call_tool("search_memory", r)) for r in requests]

    got = anyio.run(body)
    for request, mcp_result, api_result in zip(requests, got, expected):
        assert mcp_result == api_result.json(), request
        assert mcp_result["results"], request


# -- the MCP Inspector's CLI ----------------------------------------------------------------------------------------
def node_or_skip() -> str:
    """Node, with the Inspector's CLI installed; a skip saying how to install them otherwise (a failure in CI,
    where STRATA_FORBID_SKIPS=1)."""
    node = shutil.which("node")
    if node is None or not INSPECTOR_CLI.is_file():
        pytest.skip(f"the MCP Inspector CLI is not installed ({INSPECTOR_CLI}, node: {node}); run `make install-test` "
                    "(npm ci --prefix tests/mcp_inspector)")
    return node


def inspector(*args: str, timeout: float = 60) -> dict[str, Any]:
    """Run the Inspector's CLI (``--cli`` mode) and return the JSON it prints."""
    # The CLI finds its own package.json relative to the working directory: run it from its build folder.
    proc = subprocess.run([node_or_skip(), str(INSPECTOR_CLI), "--cli", *args], cwd=INSPECTOR_CLI.parent,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"inspector failed: {proc.stdout[-1500:]} {proc.stderr[-1500:]}"
    return json.loads(proc.stdout[proc.stdout.index("{"):])  # type: ignore[no-any-return]


def test_inspector_cli_over_http_and_over_stdio(workspace: StrataSettings, tmp_path: Path) -> None:
    node_or_skip()
    with http_server(workspace) as url:
        auth = ["--transport", "http", "--header", f"Authorization: Bearer {API_KEY}"]
        listed = inspector(url, *auth, "--method", "tools/list")
        assert {t["name"] for t in listed["tools"]} == READ_TOOLS
        called = inspector(url, *auth, "--method", "tools/call", "--tool-name", "search_memory", "--tool-arg",
                           "query_id=i1", "search_text=zq06x", "top_k=3")
        assert called.get("isError") is not True
        assert called["structuredContent"]["query_id"] == "i1"
        assert called["structuredContent"]["results"][0]["chunk_id"].startswith("note-06.md#")
        refused = inspector(url, *auth, "--method", "tools/call", "--tool-name", "search_memory", "--tool-arg",
                            "query_id=i2", "search_text=zq06x", "top_k=0")
        assert refused["isError"] is True and "top_k" in refused["content"][0]["text"]
    # Over stdio, launched from an agent host's configuration (the README's mcpServers snippet, this checkout's Python).
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"strata": {
        "command": sys.executable, "args": ["-m", "strata.cli", "--data-dir", str(workspace.data_dir), "mcp"],
        "env": {k: v for k, v in server_env(workspace).items() if k.startswith(("STRATA_", "PYTHONPATH"))}}}}))
    listed = inspector("--config", str(config), "--server", "strata", "--method", "tools/list")
    assert {t["name"] for t in listed["tools"]} == READ_TOOLS
    called = inspector("--config", str(config), "--server", "strata", "--method", "tools/call", "--tool-name",
                       "search_memory", "--tool-arg", "query_id=i3", "search_text=zq02x")
    assert called["structuredContent"]["results"][0]["source"] == "note-02.md"
