"""End to end on the embedded defaults: the CLI indexes a folder, answers with citations, speaks the contract."""

from __future__ import annotations

import io
import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from strata.cli import main
from strata.engine import Engine
from strata.pipeline import index_folder
from core.settings import StrataSettings
from core.store import open_store
from tests.conftest import ROOT, shared


@pytest.fixture(scope="module")
def dulce_ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("dulce")
    folder = ws / "corpus"
    folder.mkdir()
    shutil.copy(shared("dulce", "dulce.txt"), folder / "dulce.txt")
    assert main(["--data-dir", str(ws / "data"), "index", str(folder)]) == 0
    return ws


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str], stdin: str | None = None) -> tuple[int, str, str]:
    if stdin is not None:
        sys.stdin = io.StringIO(stdin)
    try:
        code = main(args)
    finally:
        sys.stdin = sys.__stdin__
    out = capsys.readouterr()
    return code, out.out, out.err


def test_named_character_answer_cites_a_chunk_that_mentions_them(dulce_ws: Path, capsys) -> None:
    code, out, _ = run_cli(["--data-dir", str(dulce_ws / "data"), "ask", "What does Sam Rivera do?", "--json"], capsys)
    answer = json.loads(out)
    assert code == 0 and answer["route"]["route"] == "local" and answer["mode"] == "offline"
    settings = StrataSettings(data_dir=dulce_ws / "data")
    store = open_store(settings)
    chunks = store.get_chunks([c["chunk_id"] for c in answer["citations"]])
    store.close()
    assert chunks and any("Sam Rivera" in c.text or "Rivera" in c.text for c in chunks)
    assert re.search(r"\[dulce\.txt#\d{4}\]", answer["answer"])


def test_whole_story_question_takes_the_global_route(dulce_ws: Path, capsys) -> None:
    code, out, _ = run_cli(["--data-dir", str(dulce_ws / "data"), "ask", "What are the main themes of the whole story?", "--json"], capsys)
    answer = json.loads(out)
    assert answer["route"]["route"] == "global"
    assert answer["reports"] and answer["citations"]
    code, out, _ = run_cli(["--data-dir", str(dulce_ws / "data"), "route", "What are the main themes of the whole story?", "--json"], capsys)
    assert json.loads(out)["route"] == "global"


def test_search_speaks_the_memory_query_contract(dulce_ws: Path, capsys, tmp_path: Path) -> None:
    req = {"query_id": "q-1", "search_text": "Operation Dulce briefing", "top_k": 3,
           "hybrid_params": {"dense_weight": 0.4, "sparse_weight": 0.6, "rrf_k_constant": 60}, "metadata_filter": {"ext": "txt"}}
    code, out, _ = run_cli(["--data-dir", str(dulce_ws / "data"), "search", "--json"], capsys, stdin=json.dumps(req))
    resp = json.loads(out)
    # The contract's fields, plus the two it allows: the generation that answered and warnings (e.g. a language
    # the embedder does not read).
    assert code == 0 and set(resp) == {"query_id", "total_retrieved", "results", "index_generation", "warnings"}
    assert resp["index_generation"] == 1
    assert resp["query_id"] == "q-1" and resp["total_retrieved"] == len(resp["results"]) == 3
    assert set(resp["results"][0]) == {"chunk_id", "rrf_score", "text", "source"}
    scores = [r["rrf_score"] for r in resp["results"]]
    assert scores == sorted(scores, reverse=True) and scores[0] <= 0.4 / 61 + 0.6 / 61 + 1e-12
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**req, "top_k": 0}))
    code, out, err = run_cli(["--data-dir", str(dulce_ws / "data"), "search", str(bad)], capsys)
    assert code == 2 and "top_k" in err


def test_api_contract_and_422(dulce_ws: Path) -> None:
    from fastapi.testclient import TestClient

    from strata.api import create_app

    client = TestClient(create_app(StrataSettings(data_dir=dulce_ws / "data")))
    ok = client.post("/v1/memory/query", json={"query_id": "x", "search_text": "Taylor Cruz", "top_k": 2})
    assert ok.status_code == 200 and ok.json()["total_retrieved"] == 2
    for bad in ({"query_id": "x", "search_text": "   ", "top_k": 2},
                {"query_id": "x", "search_text": "a", "top_k": 2, "metadata_filter": {"d": {"after": 1}}},
                {"query_id": "x", "search_text": "a", "top_k": 2, "hybrid_params": {"dense_weight": 0, "sparse_weight": 0, "rrf_k_constant": 60}},
                {"search_text": "a"}):
        r = client.post("/v1/memory/query", json=bad)
        assert r.status_code == 422, bad


def test_reindex_is_idempotent_and_incremental(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    shutil.copytree(ROOT / "samples" / "infra-notes", folder)
    settings = StrataSettings(data_dir=tmp_path / "ws", extraction={"mode": "offline"})
    first = index_folder(folder, settings)
    store = open_store(settings)
    snap1, reports1 = store.read_graph(), store.reports()
    store.close()
    second = index_folder(folder, settings)
    assert second.new == second.changed == second.deleted == 0 and second.chunks_extracted == 0
    assert second.reports_written == 0 and second.reports_kept == first.reports_written
    store = open_store(settings)
    assert store.read_graph() == snap1 and store.reports() == reports1
    store.close()
    target = sorted(folder.glob("*.md"))[0]
    target.write_text(target.read_text() + "\nThe ledger-service now also returns HTTP 429 under load.\n")
    third = index_folder(folder, settings)
    assert third.changed == 1 and third.new == 0 and 0 < third.chunks_extracted
    engine = Engine(settings)
    assert engine.ask("Which service returns HTTP 429?").citations[0].chunk_id.startswith(target.name)


def test_bad_input_exit_codes(tmp_path: Path, capsys) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = run_cli(["--data-dir", str(tmp_path / "ws"), "index", str(empty)], capsys)
    assert code == 2 and "no .txt, .md or .jsonl files" in err
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "ok.md").write_text("The search-api uses Redis.")
    (mixed / "broken.txt").write_bytes(b"\xff\xfe\x00bad")
    code, _, err = run_cli(["--data-dir", str(tmp_path / "ws"), "index", str(mixed)], capsys)
    assert code == 3 and "broken.txt" in err
    code, _, err = run_cli(["--data-dir", str(tmp_path / "nowhere"), "ask", "anything"], capsys)
    assert code == 1 and "strata index" in err


def test_the_demo_question_quotes_no_passage_a_second_hop_found_by_chance(tmp_path: Path) -> None:
    """`make demo`'s first question: the second hop's search (the question plus the bridge sentence) reaches the
    Redis cache notes by incidental words; their best sentence scores a fraction of the answer's best and must not
    be quoted as part of why the billing-service returned HTTP 504."""
    from tests.conftest import ask_offline

    folder = tmp_path / "notes"
    shutil.copytree(ROOT / "samples" / "infra-notes", folder)
    answer = ask_offline(folder, tmp_path / "ws", "Why did the billing-service return HTTP 504?")
    cited = [c.chunk_id for c in answer.citations]
    assert cited and cited[0].startswith("billing-incident"), cited
    assert not any(c.startswith("search-cache") for c in cited), answer.text
