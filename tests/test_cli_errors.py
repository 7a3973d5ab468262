"""The CLI's failures: one line naming the problem and the fix, the documented exit code, no traceback unless
--debug; --data-dir anywhere on the line; --version; status as JSON and as a table; settings errors naming the
environment variable; unknown STRATA_* variables reported; serve refusing an unsafe bind."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from strata.cli import main

ROOT = Path(__file__).resolve().parents[1]


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("warning:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli")
    shutil.copytree(ROOT / "samples" / "infra-notes", root / "notes")
    assert main(["index", str(root / "notes"), "--data-dir", str(root / "data")]) == 0
    return root


def test_version_and_data_dir_anywhere(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["--version"], capsys)
    assert code == 0 and out.startswith("strata ")
    before = run(["--data-dir", str(ws / "data"), "status", "--json"], capsys)
    after = run(["status", "--json", "--data-dir", str(ws / "data")], capsys)
    assert before[0] == after[0] == 0
    assert json.loads(before[1])["counts"] == json.loads(after[1])["counts"]
    assert json.loads(after[1])["counts"]["documents"] == 6


def test_status_table_is_readable(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["status", "--data-dir", str(ws / "data")], capsys)
    assert code == 0 and "documents" in out and "last run" in out and not out.lstrip().startswith("{")


def test_overflowing_filter_number_is_bad_input(ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    request = '{"query_id": "q", "search_text": "billing", "metadata_filter": {"year": 1' + "0" * 400 + "}}"
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO(request))
    code, _, err = run(["search", "--data-dir", str(ws / "data")], capsys)
    assert code == 2 and "metadata_filter.year" in one_line(err)
    code, _, err = run(["ask", "billing", "--filter", '{"year": 1' + "0" * 400 + "}", "--data-dir", str(ws / "data")], capsys)
    assert code == 2 and "metadata_filter.year" in one_line(err)
    code, _, err = run(["ask", "billing", "--filter", "{not json", "--data-dir", str(ws / "data")], capsys)
    assert code == 2 and "--filter" in one_line(err)


def test_a_filter_with_a_question_routed_global_is_bad_input(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The router itself (no --mode) sends the question to the community reports, which cannot honour a filter:
    refused, saying how to ask it; the same question with --mode local is answered within the filter."""
    question = "What are the main themes across all of these documents?"
    code, out, _ = run(["route", question, "--json", "--data-dir", str(ws / "data")], capsys)
    assert code == 0 and json.loads(out)["route"] == "global"
    args = ["ask", question, "--filter", '{"document_id": {"ne": "none"}}', "--data-dir", str(ws / "data")]
    code, _, err = run(args, capsys)
    assert code == 2 and "drop --filter or add --mode local" in one_line(err)
    code, out, _ = run([*args, "--mode", "local"], capsys)
    assert code == 0 and "route: local" in out


def test_settings_errors_name_the_variable(ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    monkeypatch.setenv("STRATA_RETRIEVAL__EMBEDDER", "nonsense")
    code, _, err = run(["status", "--data-dir", str(ws / "data")], capsys)
    assert code == 2 and "STRATA_RETRIEVAL__EMBEDDER='nonsense'" in one_line(err)


def test_unknown_variable_is_reported(ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    monkeypatch.setenv("STRATA_RETRIEVAL__EMBEDER", "hashing")
    code, _, err = run(["status", "--data-dir", str(ws / "data")], capsys)
    assert code == 0 and "STRATA_RETRIEVAL__EMBEDER is not a Strata setting" in err
    assert "did you mean STRATA_RETRIEVAL__EMBEDDER" in err


def test_a_renamed_variable_is_named_by_its_new_name(ws: Path, capsys: pytest.CaptureFixture[str],
                                                    monkeypatch) -> None:
    monkeypatch.setenv("STRATA_RETRIEVAL__GRAPH_VECTOR_STRONG", "0.8")
    code, _, err = run(["status", "--data-dir", str(ws / "data")], capsys)
    line = " ".join(err.split())
    assert code == 0 and "STRATA_RETRIEVAL__GRAPH_VECTOR_STRONG is not a Strata setting" in line
    assert "renamed STRATA_RETRIEVAL__GRAPH_VECTOR_STRONG_SCORE: a standard score now" in line


def test_embedder_mismatch_offers_reindex_full(ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    monkeypatch.setenv("STRATA_RETRIEVAL__EMBEDDER", "none")
    code, _, err = run(["ask", "Which service uses Redis?", "--data-dir", str(ws / "data")], capsys)
    line = one_line(err)
    assert code == 1 and "strata reindex FOLDER --full" in line


def test_store_down_is_one_line(ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    monkeypatch.setenv("STRATA_STORE__BACKEND", "neo4j")
    monkeypatch.setenv("STRATA_STORE__NEO4J_URI", "bolt://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("STRATA_STORE__CONNECTION_TIMEOUT_S", "2")
    code, _, err = run(["status", "--data-dir", str(ws / "data")], capsys)
    line = one_line(err)
    assert code == 1 and "STRATA_STORE__NEO4J_URI" in line


def test_unexpected_error_has_no_traceback_unless_debug(ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    def boom(*_a, **_k):  # an internal failure the CLI does not know
        raise KeyError("surprise")

    monkeypatch.setattr("strata.engine.Engine.route", boom)
    code, _, err = run(["route", "anything", "--data-dir", str(ws / "data")], capsys)
    assert code == 1 and "--debug" in one_line(err)
    code, _, err = run(["route", "anything", "--debug", "--data-dir", str(ws / "data")], capsys)
    assert code == 1 and "Traceback" in err


def test_serve_refuses_public_bind_without_key(ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    monkeypatch.setattr("uvicorn.run", lambda *a, **k: pytest.fail("must not start"))
    code, _, err = run(["serve", "--host", "0.0.0.0", "--data-dir", str(ws / "data")], capsys)
    assert code == 2 and "--insecure" in one_line(err) and "STRATA_SERVER__API_KEYS" in err
    started = {}
    monkeypatch.setattr("uvicorn.run", lambda app, **k: started.update(k))
    monkeypatch.setenv("STRATA_SERVER__API_KEYS", '["k1"]')
    monkeypatch.setenv("STRATA_SERVER__KEEP_ALIVE_S", "75")
    assert run(["serve", "--host", "0.0.0.0", "--data-dir", str(ws / "data")], capsys)[0] == 0
    assert started["timeout_keep_alive"] == 75 and started["host"] == "0.0.0.0"


def test_reindex_full_rebuilds(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["reindex", str(ws / "notes"), "--full", "--json", "--data-dir", str(ws / "data")], capsys)
    run_ = json.loads(out)
    assert code == 0 and run_["changed"] == 6 and run_["new"] == 0
    code, out, _ = run(["reindex", str(ws / "notes"), "--json", "--data-dir", str(ws / "data")], capsys)
    assert code == 0 and json.loads(out)["unchanged"] == 6
