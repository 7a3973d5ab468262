"""A chunk is indexed with its page's title: a passage from the middle of a page is found by what the page is
about (retrieval.chunk_text.chunk_header), and an index from before headers serves until the next run rebuilds it."""

from __future__ import annotations

import json
from pathlib import Path

from core.settings import StrataSettings
from extraction.chunking import chunk_document
from extraction.loader import load_folder
from retrieval.chunk_text import chunk_header, indexed_text
from retrieval.index import ChunkIndex

PAGE = """---
title: quillon-lockfile
description: A record of the exact tree that was installed
---

### Description

""" + "\n\n".join(f"Paragraph {i} talks about trees, installs and teammates in general terms." for i in range(60)) + """

### Retention

Entries older than ninety days are pruned by the nightly sweeper job.
"""

OTHER = "# Sweeper notes\n\nThe sweeper job prunes stale entries from the warehouse every night.\n"


def write(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "quillon-lockfile.md").write_text(PAGE, encoding="utf-8")
    (folder / "sweeper.md").write_text(OTHER, encoding="utf-8")
    return folder


def test_a_chunk_in_the_middle_of_a_page_is_indexed_under_its_title(tmp_path: Path) -> None:
    settings = StrataSettings(data_dir=tmp_path / "ws", retrieval={"embedder": "none"})
    docs = {d.source: d for d in load_folder(write(tmp_path / "docs")).documents}
    page = chunk_document(docs["quillon-lockfile.md"], settings.chunking)
    assert len(page) >= 3
    last = page[-1]
    assert "quillon" not in last.text and "Retention" in last.text
    assert chunk_header(last) == "quillon-lockfile: A record of the exact tree that was installed"
    assert indexed_text(last).startswith(chunk_header(last) + "\n") and indexed_text(last).endswith(last.text)
    heading = chunk_document(docs["sweeper.md"], settings.chunking)[0]
    assert heading.metadata["title"] == "Sweeper notes" and chunk_header(heading) == ""  # opens with its title
    index = ChunkIndex(settings.retrieval)
    index.add([c for d in docs.values() for c in chunk_document(d, settings.chunking)])
    # The question names the page ("quillon lockfile") and what the passage says; the passage names only the latter.
    hits = index.search("how long does the quillon lockfile keep old entries", 4)
    ranked = [h.chunk_id for h in hits]
    # (the sweeper's page also tells of pruning entries, but only the page's title says "quillon lockfile")
    assert ranked.index(last.id) < ranked.index(heading.id)
    assert hits[ranked.index(last.id)].text == last.text  # results show the passage, not the header


def test_an_index_from_before_headers_serves_and_the_next_run_builds_it_afresh(tmp_path: Path) -> None:
    from strata.engine import Engine
    from strata.generations import open_index
    from strata.pipeline import index_folder
    from strata.workspace import Workspace

    settings = StrataSettings(data_dir=tmp_path / "ws", extraction={"mode": "offline"},
                              retrieval={"embedder": "none"})
    folder = write(tmp_path / "docs")
    index_folder(folder, settings)
    ws = Workspace(settings.data_dir)
    meta_path = ws.current().index_dir / "index.json"
    meta = json.loads(meta_path.read_text())
    assert meta["chunk_text"] == "title+text"
    del meta["chunk_text"]  # as an older version wrote it (integrity is by the manifest: rewrite its hash too)
    meta_path.write_text(json.dumps(meta))
    manifest_path = ws.current().root / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    from strata import integrity

    manifest["files"]["index/index.json"] = integrity.describe_files(ws.current().root)["index/index.json"]
    manifest_path.write_text(json.dumps(manifest))
    engine = Engine(settings)
    try:
        assert engine.index.chunk_text == "text" and engine.index.search("sweeper job", 1)
    finally:
        engine.close()
    fresh = open_index(ws, settings)
    try:
        assert fresh.chunk_text == "title+text" and len(fresh) == 0  # every chunk is indexed again
    finally:
        fresh.close()


LOCK_PAGE = """---
title: quillon.lock
description: A manifestation of the manifest
---

### Description

`quillon.lock` is written whenever the installer changes the tree, and it records the exact version of every
package that was installed, so that teammates install the same tree.

### Format

The file holds one entry per package, sorted by name.
"""

OPTIONS_PAGE = """# quillon audit

#### `quillon-lock`

If set to false, then ignore `quillon.lock` files when installing. This will also prevent writing `quillon.lock`
if `save` is true.

#### `quillon-lock-only`

If set to true, the current operation will only use the `quillon.lock`, ignoring the tree on disk. For `list`
this means the output will be based on the tree described by the `quillon.lock`.
"""


def test_what_a_file_is_for_is_answered_from_the_page_titled_by_it(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """ "What is X for?" asks what X is: the page whose front matter titles it X answers with the sentence whose
    subject is X, though it is no "X is a ..." definition, above a page that names X under every option. Asked as
    a user asks it, with the default embedder: the hashing stand-in links the question to fewer entities by
    meaning, and with it the reader as fitted puts the options page's sentences first (a documentation shape its
    Wikipedia-shaped training data does not hold)."""
    from tests.conftest import ask_offline

    monkeypatch.setenv("STRATA_RETRIEVAL__EMBEDDER", "minilm")

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "quillon-lock.md").write_text(LOCK_PAGE, encoding="utf-8")
    (folder / "quillon-audit.md").write_text(OPTIONS_PAGE, encoding="utf-8")
    answer = ask_offline(folder, tmp_path / "ws", "What is quillon.lock for?")
    first = answer.points[0]  # the first quote
    assert first.text.startswith("`quillon.lock` is written whenever the installer changes the tree"), answer.text
    assert first.chunk_id == "quillon-lock.md#0000"
