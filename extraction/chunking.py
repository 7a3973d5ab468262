"""Split documents into overlapping token windows, keeping character offsets for citations.

Tokens here approximate LLM tokens: words, numbers, single punctuation marks, and single CJK characters. A
chunk's id is the document id and its ordinal, so re-chunking an unchanged document gives the same ids.
"""

from __future__ import annotations

import re
from typing import Iterable

from core.records import Chunk, Document, stable_hash
from core.settings import ChunkingSettings
from extraction.titles import document_title

_TOKEN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]|[^\W_]+(?:[_'’][^\W_]+)*|[^\w\s]|_+", re.UNICODE)


def token_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the approximate tokens of ``text``."""
    return [m.span() for m in _TOKEN.finditer(text)]


def chunk_id(document_id: str, ordinal: int) -> str:
    return f"{document_id}#{ordinal:04d}"


def chunk_document(doc: Document, settings: ChunkingSettings) -> list[Chunk]:
    """Windows of ``chunk_tokens`` tokens, each starting ``chunk_tokens - overlap_tokens`` after the last, with
    the document's metadata (and its title, from a first-line ``# `` heading when the metadata has none)."""
    spans = token_spans(doc.text)
    if not spans:
        return []
    size, step = settings.chunk_tokens, settings.chunk_tokens - settings.overlap_tokens
    metadata = doc.metadata
    if "title" not in metadata:  # a first-line "# " heading titles every chunk (retrieval.index.chunk_header)
        title = document_title(doc)
        metadata = {**metadata, "title": title} if title else metadata
    chunks: list[Chunk] = []
    start_tok = 0
    while True:
        end_tok = min(start_tok + size, len(spans))
        start, end = spans[start_tok][0], spans[end_tok - 1][1]
        text = doc.text[start:end]
        ordinal = len(chunks)
        chunks.append(Chunk(
            id=chunk_id(doc.id, ordinal), document_id=doc.id, ordinal=ordinal, text=text, start=start, end=end,
            n_tokens=end_tok - start_tok, source=doc.source, content_hash=stable_hash(doc.id, text, size=12),
            metadata=metadata,
        ))
        if end_tok >= len(spans):
            return chunks
        start_tok += step


def chunk_documents(docs: Iterable[Document], settings: ChunkingSettings) -> list[Chunk]:
    return [c for doc in docs for c in chunk_document(doc, settings)]
