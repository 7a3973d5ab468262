from pathlib import Path

import pytest

from extraction.chunking import chunk_document
from extraction.loader import EmptyCorpusError, load_folder
from core.records import Document
from core.settings import ChunkingSettings


def write(p: Path, content: str | bytes) -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(content if isinstance(content, bytes) else content.encode())
    return p


def test_loads_txt_md_jsonl_with_metadata(tmp_path: Path) -> None:
    write(tmp_path / "ops/a.md", "---\nservice: billing\ndate: 2024-03-01\n---\nbilling-service notes\n")
    write(tmp_path / "b.txt", "plain text")
    write(tmp_path / "b.txt.meta.json", '{"team": "core"}')
    write(tmp_path / "c.jsonl", '{"id": "x1", "title": "T", "text": "first", "lang": "en"}\n{"_id": "x2", "text": "second"}\n')
    res = load_folder(tmp_path)
    assert res.problems == ()
    docs = {d.id: d for d in res.documents}
    assert set(docs) == {"ops/a.md", "b.txt", "x1", "x2"}
    assert docs["ops/a.md"].metadata["service"] == "billing"
    assert docs["ops/a.md"].metadata["date"] == "2024-03-01"
    assert docs["ops/a.md"].metadata["dir"] == "ops"
    assert docs["ops/a.md"].text.strip() == "billing-service notes"
    assert docs["b.txt"].metadata["team"] == "core"
    assert docs["x1"].text == "T\nfirst" and docs["x1"].metadata["lang"] == "en"


def test_bad_files_are_named_and_the_rest_loads(tmp_path: Path) -> None:
    write(tmp_path / "good.txt", "fine")
    write(tmp_path / "bin.txt", b"\x00\x01\x02binary")
    write(tmp_path / "latin.txt", "caf\xe9".encode("latin-1"))
    write(tmp_path / "rows.jsonl", '{"id": "good.txt", "text": "dup id"}\nnot json\n{"id": "z"}\n')
    res = load_folder(tmp_path)
    assert [d.id for d in res.documents] == ["good.txt"]
    reasons = {p.path: p.reason for p in res.problems}
    assert "binary" in reasons["bin.txt"]
    assert "UTF-8" in reasons["latin.txt"]
    assert "duplicate document id 'good.txt'" in reasons["rows.jsonl:1"]
    assert "invalid JSON" in reasons["rows.jsonl:2"]
    assert "'text'" in reasons["rows.jsonl:3"]


def test_empty_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(EmptyCorpusError, match=str(tmp_path)):
        load_folder(tmp_path)
    with pytest.raises(FileNotFoundError):
        load_folder(tmp_path / "missing")


def test_chunks_overlap_and_keep_offsets() -> None:
    text = " ".join(f"Word {i} is here." for i in range(60))
    doc = Document("d", "d.txt", text, "h")
    chunks = chunk_document(doc, ChunkingSettings(chunk_tokens=30, overlap_tokens=10))
    assert [c.id for c in chunks][:2] == ["d#0000", "d#0001"]
    for c in chunks:
        assert text[c.start:c.end] == c.text
    assert chunks[1].start < chunks[0].end  # overlap
    assert chunks[-1].end == len(text)
    assert chunk_document(doc, ChunkingSettings(chunk_tokens=30, overlap_tokens=10)) == chunks


def test_overlap_must_be_smaller_than_size() -> None:
    with pytest.raises(ValueError, match="overlap_tokens"):
        ChunkingSettings(chunk_tokens=20, overlap_tokens=20)
