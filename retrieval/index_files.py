"""The chunk index's folder: ``chunks.jsonl`` (row order), the BM25 arrays (``bm25.npz`` + ``bm25.json``),
``vectors.npy`` and ``index.json`` (the settings it was built with, its row count and languages). It is written to a
temporary folder renamed over the old one, and no pickle is used, so loading an index never runs code."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable

from core.text.language import detect_language
from retrieval.bm25 import BM25Index
from retrieval.chunk_text import CHUNK_TEXT
from retrieval.hits import DenseEngine, IndexedChunk, SparseEngine
from retrieval.vectors import VectorIndex

FORMAT_VERSION = 1


class IndexMismatchError(ValueError):
    """The stored index was built with settings that differ from the current ones."""


def signature(index: Any) -> dict[str, Any]:
    """The settings a stored index must have been built with to serve under ``index``'s (a ChunkIndex)."""
    s = index.settings
    return {"format": FORMAT_VERSION, "k1": s.bm25_k1, "b": s.bm25_b, "epsilon": s.bm25_epsilon,
            "stopwords": s.stopwords, "stemming": s.stemming, "polish_lemmas": s.polish_lemmas,
            "embedder": index.dense_name, "chunk_text": CHUNK_TEXT}


def save_index(index: Any, folder: Path) -> None:
    """Write ``index`` (a ChunkIndex, compacted first when rows were deleted) to ``folder`` atomically."""
    folder = Path(folder)
    tmp = folder.with_name(folder.name + ".tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    index.compact()
    with open(tmp / "chunks.jsonl", "w", encoding="utf-8") as fh:
        for r in index.rows:
            fh.write(json.dumps({"chunk_id": r.chunk_id, "document_id": r.document_id, "text": r.text,
                                 "source": r.source, "fields": r.fields, "language": r.language},
                                ensure_ascii=False) + "\n")
    index.bm25.save(tmp)
    if index.vectors is not None:
        index.vectors.save(tmp)
    covered = index.embedder_languages
    (tmp / "index.json").write_text(json.dumps({
        **signature(index), "rows": len(index.rows), "languages": dict(index.language_counts().most_common()),
        "embedder_languages": sorted(covered) if covered is not None else None}))
    old = folder.with_name(folder.name + ".old")
    if folder.exists():
        os.replace(folder, old)
    os.replace(tmp, folder)
    if old.exists():
        for p in old.iterdir():
            p.unlink()
        old.rmdir()


def stored_meta(folder: Path) -> dict[str, Any] | None:
    """The ``index.json`` of the index saved in ``folder`` (None when none is there, or it cannot be read)."""
    try:
        meta = json.loads((Path(folder) / "index.json").read_text())
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


def built_with(meta: dict[str, Any] | None) -> str | None:
    """The ``retrieval.embedder`` setting ``auto`` stands for in an index whose ``index.json`` is ``meta``
    (:func:`stored_meta`; the embedder its index run chose for its corpus: :data:`retrieval.embed.AUTO_CHOICES`);
    None without one, or when it was built with an embedder ``auto`` never chooses."""
    from retrieval.embed import AUTO_CHOICES

    return AUTO_CHOICES.get(meta.get("embedder")) if meta else None


def load_index(make: Callable[[], Any], folder: Path) -> Any:
    """The index saved in ``folder``, loaded into a new empty index ``make()`` builds (after the folder is found to
    hold one, so a missing index costs no embedder load). A stored index built with other settings is refused."""
    folder = Path(folder)
    meta_path = folder / "index.json"
    if not meta_path.exists():
        raise FileNotFoundError(f"{folder}: no chunk index here; run `strata index <folder>` first")
    meta = json.loads(meta_path.read_text())
    idx = make()
    expected = signature(idx)
    # An index from before chunk headers read the text alone: it still serves (its rows and vectors agree
    # with each other), and the next index run builds the index afresh (strata.generations.open_index).
    idx.chunk_text = meta.get("chunk_text", "text")
    diff = {k: (meta.get(k), v) for k, v in expected.items()
            if meta.get(k) != v and not (k == "chunk_text" and "chunk_text" not in meta)}
    if diff:
        raise IndexMismatchError(
            f"{folder}: the index was built with different settings {diff} (stored, current); "
            "rebuild it with `strata reindex FOLDER --full`")
    idx.bm25 = BM25Index.load(folder)
    idx.sparse = SparseEngine(idx.tokenizer, idx.bm25, idx.query_language)
    if idx.vectors is not None and idx.embedder is not None:
        idx.vectors = VectorIndex.load(folder, idx.embedder.dim, idx.settings.hnsw_threshold)
        idx.dense = DenseEngine(idx.embedder, idx.vectors)
    with open(folder / "chunks.jsonl", encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            d = json.loads(line)
            idx.rows.append(IndexedChunk(d["chunk_id"], d["document_id"], d["text"], d["source"], d["fields"],
                                         d.get("language") or detect_language(d["text"])))
            idx.by_id[d["chunk_id"]] = i
    return idx
