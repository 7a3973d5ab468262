"""What the index reads of a chunk: its text under a header naming its page, and the fields a filter reads."""

from __future__ import annotations

from typing import Any

from core.records import Chunk, stable_hash

CHUNK_TEXT = "title+text"  # what BM25 and the embedder read of a chunk (the index's signature says it)
HEADER_MAX_CHARS = 300


def chunk_header(c: Chunk) -> str:
    """The line indexed above a chunk's text: its document's title (front matter, a ``.jsonl`` field, a first-line
    ``# `` heading) and front-matter ``description``, unless the chunk already opens with the title. A passage
    from the middle of a page ("Type: Boolean. If true, ...") says what it is about only through its page:
    "What is package-lock.json for?" found the page titled package-lock.json third, below a page that names the
    file in every option. Empty without a title."""
    title, desc = c.metadata.get("title"), c.metadata.get("description")
    if not isinstance(title, str) or not title.strip():
        return ""
    title = " ".join(title.split())
    if title.casefold() in " ".join(c.text[:len(title) + 12].split()).casefold():
        return ""  # the chunk opens with the title already (a .jsonl row's body, a page's "# " heading)
    header = f"{title}: {' '.join(desc.split())}" if isinstance(desc, str) and desc.strip() else title
    return header[:HEADER_MAX_CHARS]


def indexed_text(c: Chunk) -> str:
    """What BM25 and the embedder read of ``c``: :func:`chunk_header` above its text (results show the text)."""
    header = chunk_header(c)
    return f"{header}\n{c.text}" if header else c.text


def vector_key(c: Chunk) -> str:
    """The vector cache's key for ``c``: its content hash, with its header when it has one."""
    header = chunk_header(c)
    return stable_hash(c.content_hash, header, size=12) if header else c.content_hash


def row_fields(c: Chunk) -> dict[str, Any]:
    """The fields a metadata filter reads of ``c``: its metadata, its document id and its source."""
    return {**c.metadata, "document_id": c.document_id, "source": c.source}
