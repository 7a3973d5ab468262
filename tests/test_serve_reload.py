"""A server under concurrent load while an index run changes, deletes and adds documents: no errors (a transport
error or timeout in a client counts as one), no result whose chunk is not in the generation that answered or whose
text is not that generation's text of the chunk, and the new generation serving within 2 s of the run's end,
without a restart."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
import uvicorn

from core.settings import StrataSettings
from strata.api import create_app
from strata.pipeline import index_folder
from strata.workspace import Workspace
from tests.conftest import ROOT

TOPICS = ["billing", "ledger", "search", "gateway", "kafka", "postgres", "redis", "cdn", "auth", "payments"]


def write_corpus(folder: Path, n: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        topic = TOPICS[i % len(TOPICS)]
        (folder / f"note-{i:03d}.md").write_text(
            f"# Note {i}\n\nThe {topic}-service on node-{i} logged ERR-{1000 + i} after deploy v{i}.2. "
            f"Operator Kim Ortega restarted the {topic}-worker pool and raised {topic}.max_connections.\n\n"
            f"Marker token zq{i:03d}x appears only in note {i}.\n")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def chunk_texts_of(ws: Workspace, generation: int) -> dict[str, str]:
    path = ws.generation(generation).index_dir / "chunks.jsonl"
    return {row["chunk_id"]: row["text"] for row in map(json.loads, path.read_text().splitlines())}


def edited_text(i: int) -> str:
    """An edited note: the same chunk ids as before (one chunk, same document), every chunk text different."""
    return (f"# Note {i}\n\nRewritten: the auth-service on node-{i} is retired; marker token zq{i:03d}x moved here.\n")


@pytest.mark.slow
def test_server_serves_the_new_generation_without_restart_and_never_a_stale_chunk(tmp_path: Path) -> None:
    folder = tmp_path / "corpus"
    write_corpus(folder, 60)
    settings = StrataSettings(data_dir=tmp_path / "ws", extraction={"mode": "offline"},
                              index={"keep_generations": 50, "reload_poll_s": 0.2})
    index_folder(folder, settings)
    ws = Workspace(settings.data_dir)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            if httpx.get(f"{base}/v1/health").json().get("index_generation") == 1:
                break
        except httpx.HTTPError:
            time.sleep(0.1)
    records: list[tuple[float, int, int | None, list[tuple[str, str]], str]] = []
    failures: list[str] = []  # every exception in a client thread: transport errors, timeouts, bad bodies
    lock = threading.Lock()
    stop = threading.Event()

    def client(k: int) -> None:
        i = 0
        try:
            with httpx.Client(base_url=base, timeout=30) as http:
                while not stop.is_set():
                    text = f"zq{(k * 7 + i) % 70:03d}x" if i % 2 else f"{TOPICS[(k + i) % len(TOPICS)]}-service restart"
                    body = {"query_id": f"c{k}-{i}", "search_text": text, "top_k": 5}
                    if i % 3 == 0:
                        body["hybrid_params"] = {"dense_weight": 0.5, "sparse_weight": 1.0, "rrf_k_constant": 60}
                    r = http.post("/v1/memory/query", json=body)
                    data = r.json() if r.headers.get("content-type", "").startswith("application/json") else {}
                    with lock:
                        records.append((time.time(), r.status_code, data.get("index_generation"),
                                        [(x["chunk_id"], x["text"]) for x in data.get("results", [])], text))
                    i += 1
        except Exception as exc:  # noqa: BLE001 - every failure of a client is a test failure, recorded
            with lock:
                failures.append(f"client {k}, request {i}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=client, args=(k,), daemon=True) for k in range(6)]
    try:
        for t in threads:
            t.start()
        time.sleep(1.0)
        # The reindex: 5 documents deleted, 5 changed, 10 added, in another process as `strata index` would be.
        for i in range(5):
            (folder / f"note-{i:03d}.md").unlink()
        for i in range(5, 10):
            (folder / f"note-{i:03d}.md").write_text(edited_text(i))
        write_corpus_extra = [(folder / f"note-{i:03d}.md", i) for i in range(60, 70)]
        for path, i in write_corpus_extra:
            path.write_text(f"# Note {i}\n\nNew: the cdn-service on node-{i} serves marker token zq{i:03d}x.\n")
        env = {**os.environ, "PYTHONPATH": str(ROOT), "STRATA_DATA_DIR": str(settings.data_dir),
               "STRATA_EXTRACTION__MODE": "offline", "STRATA_INDEX__KEEP_GENERATIONS": "50"}
        proc = subprocess.run([sys.executable, "-m", "strata.cli", "index", str(folder)], env=env,
                              capture_output=True, text=True, timeout=300)
        finished = time.time()
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert ws.current_number() == 2
        while time.time() < finished + 10:
            with lock:
                if any(t > finished and g == 2 for t, _, g, _, _ in records):
                    break
            time.sleep(0.05)
        time.sleep(1.0)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=30)
        server.should_exit = True
        thread.join(timeout=10)
    hung = [k for k, t in enumerate(threads) if t.is_alive()]
    assert not failures and not hung, f"client failures: {failures[:5]}; clients still running: {hung}"
    errors = [r for r in records if r[1] != 200]
    assert not errors, f"{len(errors)} errors, e.g. {errors[:3]}"
    texts = {g: chunk_texts_of(ws, g) for g in (1, 2)}
    edited = [f"note-{i:03d}.md#0000" for i in range(5, 10)]
    assert all(c in texts[1] and c in texts[2] and texts[1][c] != texts[2][c] for c in edited), \
        "an edited note must keep its chunk id and change its text, so that a stale text is caught"
    stale = [r for r in records if r[2] not in texts or any(texts[r[2]].get(c) != t for c, t in r[3])]
    assert not stale, f"{len(stale)} results whose chunk or text is not the answering generation's, e.g. {stale[:2]}"
    answered_edited = {g for _, _, g, hits, _ in records for c, _ in hits if c in edited}
    assert answered_edited == {1, 2}, f"edited notes answered only by generation(s) {answered_edited}"
    first_new = min(t for t, _, g, _, _ in records if g == 2)
    assert first_new - finished <= 2.0, f"the new generation served {first_new - finished:.2f} s after the run"
    after = [r for r in records if r[2] == 2]
    assert after and all(not any(c.startswith(f"note-{i:03d}.md#") for i in range(5) for c, _ in r[3]) for r in after)
    found_new = [r for r in after if r[4] in {f"zq{i:03d}x" for i in range(60, 70)}]
    assert found_new and all(r[3] and r[3][0][0].startswith(f"note-{r[4][2:5]}.md#") for r in found_new)
    assert len(records) > 50
