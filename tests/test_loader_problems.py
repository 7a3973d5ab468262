"""Loader problems: a bad .jsonl row is named with its line and the rest of the file loads; a file or row that
fails to load keeps its stored document on reindex; every skipped path is named with its reason."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.settings import StrataSettings
from core.store import open_store
from extraction.loader import load_folder
from strata.pipeline import index_folder


def write(path: Path, data: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))


def test_lone_surrogate_row_is_named_and_later_rows_load(tmp_path: Path) -> None:
    write(tmp_path / "rows.jsonl", '{"id": "a", "text": "alpha"}\n{"id": "b", "text": "bad \\ud800 row"}\n'
                                   '{"id": "c", "text": "gamma"}\n{"id": "d", "text": "delta"}\n')
    res = load_folder(tmp_path)
    assert [d.id for d in res.documents] == ["a", "c", "d"]
    assert [(p.path, "surrogate" in p.reason) for p in res.problems] == [("rows.jsonl:2", True)]
    assert res.failed_ids == {"b"}


def test_bad_bytes_fail_one_row_only(tmp_path: Path) -> None:
    write(tmp_path / "rows.jsonl", b'{"id": "a", "text": "alpha"}\n{"id": "b", "text": "caf\xe9"}\n{"id": "c", "text": "gamma"}\n')
    res = load_folder(tmp_path)
    assert [d.id for d in res.documents] == ["a", "c"]
    assert [p.path for p in res.problems] == ["rows.jsonl:2"] and "UTF-8" in res.problems[0].reason
    assert res.failed_ids == {"b"}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_every_skipped_path_is_named(tmp_path: Path) -> None:
    write(tmp_path / "ok.txt", "a note")
    write(tmp_path / "x.txt" / "inner.txt", "inside a folder named like a file")
    os.mkfifo(tmp_path / "pipe.txt")
    (tmp_path / "loop1.md").symlink_to("loop2.md")
    (tmp_path / "loop2.md").symlink_to("loop1.md")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "up").symlink_to("..")
    res = load_folder(tmp_path)  # returns (a FIFO is never opened, a loop never followed)
    assert [d.id for d in res.documents] == ["ok.txt"]
    reasons = {p.path: p.reason for p in res.problems}
    assert "FIFO" in reasons["pipe.txt"]
    assert "symlink loop" in reasons["loop1.md"] and "symlink loop" in reasons["loop2.md"]
    assert "loop" in reasons["sub/up"]
    assert "folder named like a document" in reasons["x.txt"]


def test_reindex_keeps_documents_that_now_fail_to_load(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    write(folder / "notes:v2.txt", "The ledger-service writes to PostgreSQL every night.")
    write(folder / "plain.md", "The search-api caches results in Redis.")
    write(folder / "rows.jsonl", '{"id": "r1", "text": "The billing-service returns HTTP 504."}\n'
                                 '{"id": "r2", "text": "The api-gateway retries twice."}\n')
    settings = StrataSettings(data_dir=tmp_path / "ws", extraction={"mode": "offline"})
    first = index_folder(folder, settings)
    assert first.new == 4
    write(folder / "notes:v2.txt", b"\xff\xfe not utf-8 any more")
    write(folder / "rows.jsonl", '{"id": "r1", "text": "The billing-service returns HTTP 504."}\n'
                                 '{"id": "r2", "text": "corrupted \\ud800"}\n')
    second = index_folder(folder, settings)
    assert second.deleted == 0
    assert {p["path"] for p in second.problems} == {"notes:v2.txt", "rows.jsonl:2"}
    store = open_store(settings)
    try:
        assert set(store.document_hashes()) == {"notes:v2.txt", "plain.md", "r1", "r2"}
    finally:
        store.close()
    (folder / "notes:v2.txt").unlink()
    third = index_folder(folder, settings)  # a file that is really gone is deleted
    assert third.deleted == 1
