"""Empty documents are not failures: a file holding only front matter (a docs site's index.md) is skipped with
a note and the run exits 0, also on a reindex that changes nothing; a document that became empty leaves the
index like a deleted one. Files of unsupported types are named once per extension, without changing the exit
code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from extraction.loader import EmptyCorpusError, describe_unsupported, load_folder
from strata.cli import main

FRONT_MATTER_ONLY = "---\ntitle: Guides\nsort_rank: 2\nnav_icon: book\n---\n"


def write(path: Path, text: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))


@pytest.fixture
def site(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    write(root / "index.md", FRONT_MATTER_ONLY)
    write(root / "guides" / "index.md", FRONT_MATTER_ONLY)
    write(root / "blank.txt", "\n  \n")
    write(root / "guides" / "alerting.md", "---\ntitle: Alerting\n---\nThe alertmanager groups alerts by label.\n")
    write(root / "intro.md", "Prometheus scrapes targets over HTTP every 15 seconds.\n")
    for name in ("a.pdf", "b.pdf", "guides/c.PDF"):
        write(root / name, b"%PDF-1.4 binary")
    write(root / "logo.png", b"\x89PNG")
    write(root / "LICENSE", "Apache License")
    write(root / "intro.md.meta.json", '{"team": "docs"}')  # a sidecar is read, not an unsupported file
    return root


def test_loader_lists_empty_files_apart_from_problems(site: Path) -> None:
    res = load_folder(site)
    assert sorted(d.id for d in res.documents) == ["guides/alerting.md", "intro.md"]
    assert res.problems == () and res.failed_ids == frozenset()
    assert sorted(res.empty) == ["blank.txt", "guides/index.md", "index.md"]
    assert dict(res.unsupported) == {".pdf": 3, ".png": 1, "": 1}
    assert describe_unsupported(".pdf", 3) == "3 .pdf files skipped: unsupported type"
    assert describe_unsupported("", 1) == "1 file without an extension skipped: unsupported type"


def test_index_exits_0_with_one_note_each(site: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "ws"
    for attempt in ("first", "no change"):
        code = main(["index", str(site), "--json", "--data-dir", str(data)])
        captured = capsys.readouterr()
        run = json.loads(captured.out)
        assert code == 0, (attempt, captured.err)
        assert run["problems"] == [] and sorted(run["empty"]) == ["blank.txt", "guides/index.md", "index.md"]
        notes = [ln for ln in captured.err.splitlines() if ln.startswith("note:")]
        assert notes == ["note: 3 empty document(s) skipped (no text, or front matter only): "
                         + ", ".join(run["empty"]),
                         "note: 3 .pdf files skipped: unsupported type",
                         "note: 1 file without an extension skipped: unsupported type",
                         "note: 1 .png file skipped: unsupported type"], captured.err
        assert "could not be indexed" not in captured.err
    assert run["unchanged"] == 2 and run["published"] is False


def test_a_document_that_became_empty_leaves_the_index(site: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "ws"
    assert main(["index", str(site), "--data-dir", str(data)]) == 0
    capsys.readouterr()
    write(site / "intro.md", FRONT_MATTER_ONLY)
    code = main(["reindex", str(site), "--json", "--data-dir", str(data)])
    run = json.loads(capsys.readouterr().out)
    assert code == 0 and run["deleted"] == 1 and run["documents"] == 1 and "intro.md" in run["empty"]


def test_a_folder_of_only_empty_files_is_bad_input(tmp_path: Path) -> None:
    write(tmp_path / "index.md", FRONT_MATTER_ONLY)
    with pytest.raises(EmptyCorpusError, match=r"no documents with text to index \(1 file\(s\) hold no text"):
        load_folder(tmp_path)
    other = tmp_path / "pdfs"
    write(other / "a.pdf", b"%PDF")
    with pytest.raises(EmptyCorpusError, match=r"no \.txt, \.md or \.jsonl files to index \(1 \.pdf file skipped"):
        load_folder(other)
