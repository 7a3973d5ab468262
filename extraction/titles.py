"""A document's title as an entity that every one of its passages mentions.

A title names what a document is about, so a passage elsewhere that names it ("... son of Lothair II") should
reach the document titled "Lothair II" through the entity graph. The title comes from the document's
metadata (a ``.jsonl`` row's ``title`` field, as in BEIR corpora, or the YAML front matter's ``title``), else from
a Markdown ``# `` heading on the document's first non-blank line. It is added to the extraction of each of the
document's chunks as a ``name`` entity, so it resolves to the same entity as the same name found in other
passages (entity ids are keyed by the normalized name).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import replace
from pathlib import PurePosixPath
from typing import Sequence

from core.records import Chunk, Document
from core.text.junk import junk_reason
from core.text.keys import normalize_name
from extraction.types import ChunkExtraction, EntityMention, ExtractionResult

MAX_TITLE_CHARS = 200  # longer "titles" are sentences, not names
_HEADING = re.compile(r"\A\s*#[ \t]+(.+?)[ \t#]*$", re.MULTILINE)


def _clean(title: str) -> str | None:
    title = " ".join(title.split()).strip()
    title = re.sub(r"[*_`]+", "", title).strip()  # Markdown emphasis and code marks around a heading's words
    if not title or len(title) > MAX_TITLE_CHARS or not any(ch.isalnum() for ch in title):
        return None
    return title


def document_title(doc: Document) -> str | None:
    """The document's title: metadata ``title`` (front matter, a ``.jsonl`` field), else a first-line ``# `` heading."""
    meta = doc.metadata.get("title")
    if isinstance(meta, str) and _clean(meta):
        return _clean(meta)
    return heading_title(doc.text)


def file_title(rel: str) -> str | None:
    """The title a documentation generator gives a page with none of its own, from its file's name (MkDocs, and
    a GitHub wiki, title such a page this way): ``-`` and ``_`` read as spaces, an all-lowercase name
    capitalized (``json_schema.md``: "Json schema"), an ``index`` or ``README`` page named after its folder
    (none at the top, where it would only say "Home"). None for a name that says nothing a reader could call a
    title: no letter, an id or hash (:func:`core.text.junk.junk_reason`), or a name a generator keeps out of the
    pages (``_index.md``, ``_Sidebar.md``)."""
    path = PurePosixPath(unicodedata.normalize("NFC", rel))
    name = path.stem
    if name.lower() in ("index", "readme"):
        name = path.parent.name
    if name.startswith(("_", ".")):
        return None
    title = " ".join(name.replace("-", " ").replace("_", " ").split())
    title = title.capitalize() if title.lower() == title else title
    if not any(ch.isalpha() for ch in title) or junk_reason(title) is not None:
        return None
    return _clean(title)


def heading_title(text: str) -> str | None:
    """The title a ``# `` heading on ``text``'s first non-blank line gives it."""
    m = _HEADING.match(text)
    return _clean(m.group(1)) if m else None


def title_mention(title: str, doc: Document) -> EntityMention:
    return EntityMention(title, "name", f"{title}: the title of {doc.source}")


def with_titles(batch: Sequence[tuple[Document, Sequence[Chunk]]], result: ExtractionResult) -> ExtractionResult:
    """``result`` with each document's title added as an entity to the extraction of each of its chunks (a chunk
    that already names the title, by normalized name, is left as it is; failed chunks stay failed)."""
    titles: dict[str, tuple[str, Document]] = {}
    for doc, chunks in batch:
        title = document_title(doc)
        if title:
            for c in chunks:
                titles[c.id] = (title, doc)
    if not titles:
        return result
    out: list[ChunkExtraction] = []
    for ex in result.extractions:
        found = titles.get(ex.chunk_id)
        if found is not None:
            title, doc = found
            key = normalize_name(title, "name")
            if all(normalize_name(m.name, m.type) != key for m in ex.entities):
                ex = replace(ex, entities=(title_mention(title, doc), *ex.entities))
        out.append(ex)
    return replace(result, extractions=tuple(out))
