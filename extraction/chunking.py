"""Split documents into chunks of whole blocks, keeping character offsets for citations.

A chunk is about ``chunk_tokens`` tokens of whole units, never cut inside a sentence: the units are a document's
headings, paragraphs, list items, tables and fenced code blocks (blank lines, item markers, heading lines and fences
part them). A unit larger than a chunk is cut where it can be read in pieces: a paragraph or item into its
sentences (:func:`core.text.sentences.split_sentences`), a table into its rows, a code block into its lines only
when it is longer than :data:`CODE_STRETCH` chunks (a code block is otherwise one unit, in one chunk, quoted whole
or not at all); only a sentence longer than a chunk is cut between tokens. Consecutive chunks share whole units up
to ``overlap_tokens`` tokens; a chunk never ends on a heading (the heading goes with what it heads), and a chunk
shorter than :data:`MIN_CHUNK_TOKENS` (less than a sentence) is merged into its neighbour.

Each chunk carries its heading path in its metadata (``headings``: the titles of the sections it stands in, from
the page's ``#`` heading down) beside the document's own metadata. Tokens approximate LLM tokens: words,
numbers, single punctuation marks and single CJK characters. A chunk's id is the document id and its ordinal, so
re-chunking an unchanged document gives the same ids.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass
from typing import Iterable

from core.records import Chunk, Document, chunk_id, stable_hash
from core.settings import ChunkingSettings
from core.text.script import CJK_RANGES
from extraction.titles import document_title

_TOKEN = re.compile(rf"[{CJK_RANGES}]|[^\W_]+(?:[_'’][^\W_]+)*|[^\w\s]|_+", re.UNICODE)
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
_HEADING = re.compile(r"^[ \t]{0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$")
_ITEM = re.compile(r"^[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+\S")
_TABLE = re.compile(r"^[ \t]*\|")

MIN_CHUNK_TOKENS = 8  # fewer tokens than a short sentence: merged into a neighbouring chunk
CODE_STRETCH = 4  # a code block up to this many chunks long stays whole in one chunk


def token_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the approximate tokens of ``text``."""
    return [m.span() for m in _TOKEN.finditer(text)]


@dataclass(frozen=True, slots=True)
class Unit:
    """A span of a document that is never cut: a heading, paragraph, item, table, code block or sentence."""

    start: int
    end: int
    kind: str  # heading | paragraph | item | table | code | piece
    tokens: int = 0
    level: int = 0  # a heading's level
    title: str = ""  # a heading's text


def _blocks(text: str) -> list[Unit]:
    """The blocks of ``text`` in order (token counts not yet set)."""
    out: list[Unit] = []
    pos = 0
    cur_start: int | None = None
    cur_kind = ""
    fence: str | None = None

    def close(end: int) -> None:
        nonlocal cur_start
        if cur_start is not None:
            e = end
            while e > cur_start and text[e - 1] in " \t\n":
                e -= 1
            if e > cur_start:
                out.append(Unit(cur_start, e, cur_kind))
        cur_start = None

    for line in text.splitlines(keepends=True):
        start, end = pos, pos + len(line)
        pos = end
        bare = line.rstrip("\n")
        if fence is not None:
            m = _FENCE.match(bare)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not bare.strip()[len(m.group(1)):].strip():
                fence = None
                close(end)
            continue
        m = _FENCE.match(bare)
        if m:
            if cur_kind != "item" or not bare[:1].isspace():
                close(start)
            if cur_start is None:
                cur_start, cur_kind = start, "code"
            fence = m.group(1)
            continue
        if not bare.strip():
            if cur_kind != "item":
                close(start)
            continue
        h = _HEADING.match(bare)
        if h:
            close(start)
            lead = len(bare) - len(bare.lstrip())
            out.append(Unit(start + lead, start + len(bare.rstrip()), "heading", level=len(h.group(1)),
                            title=h.group(2).replace("`", "").strip()))
            continue
        if _ITEM.match(bare):  # each item a unit of its own, a nested one too
            close(start)
            cur_start, cur_kind = start, "item"
            continue
        if _TABLE.match(bare):
            if cur_kind != "table":
                close(start)
                cur_start, cur_kind = start, "table"
            continue
        if cur_kind == "item" and not bare[:1].isspace() and text[start - 2:start] == "\n\n":
            close(start)  # a paragraph after a blank line, not indented: the list has ended
        if cur_kind == "table":
            close(start)
        if cur_start is None:
            cur_start, cur_kind = start, "paragraph"
    close(len(text))
    return out


def _pieces(text: str, unit: Unit, size: int, starts: list[int], ends: list[int]) -> list[Unit]:
    """``unit`` as units of at most ``size`` tokens where it can be cut (see the module docstring)."""
    def count(s: int, e: int) -> int:
        return bisect_left(starts, e) - bisect_left(starts, s)

    n = count(unit.start, unit.end)
    if unit.kind == "heading" or n <= size or unit.kind == "code" and n <= CODE_STRETCH * size:
        return [Unit(unit.start, unit.end, unit.kind, n, unit.level, unit.title)]
    if unit.kind in ("code", "table"):
        spans, pos = [], unit.start
        for line in text[unit.start:unit.end].splitlines(keepends=True):
            spans.append((pos, pos + len(line.rstrip("\n"))))
            pos += len(line)
    else:
        from core.text.sentences import split_sentences  # (it reads the prose view; imported here, not at load)

        spans = [(unit.start + s, unit.start + e) for s, e in split_sentences(text[unit.start:unit.end])]
    out: list[Unit] = []
    for s, e in spans:
        k = count(s, e)
        if k == 0:
            continue
        if k <= size:
            out.append(Unit(s, e, "piece", k))
            continue
        first = bisect_left(starts, s)  # a sentence longer than a chunk: cut between tokens
        last = bisect_left(starts, e)
        for i in range(first, last, size):
            j = min(i + size, last)
            out.append(Unit(starts[i], ends[j - 1], "piece", j - i))
    return out


def units_of(text: str, size: int) -> list[Unit]:
    """The units of ``text`` that chunks are made of, each at most ``size`` tokens (a code block up to
    :data:`CODE_STRETCH` times that)."""
    spans = token_spans(text)
    starts, ends = [s for s, _ in spans], [e for _, e in spans]
    return [p for b in _blocks(text) for p in _pieces(text, b, size, starts, ends)]


def _pack(units: list[Unit], size: int, overlap: int) -> list[tuple[int, int]]:
    """Runs of units ``[i, j)``: about ``size`` tokens each, consecutive runs sharing whole units up to ``overlap``
    tokens, none ending on a heading, none shorter than :data:`MIN_CHUNK_TOKENS` (merged into a neighbour)."""
    runs: list[tuple[int, int]] = []
    i, n = 0, len(units)
    while i < n:
        j, total = i, 0
        while j < n and (j == i or total + units[j].tokens <= size):
            total += units[j].tokens
            j += 1
        while j - 1 > i and units[j - 1].kind == "heading":
            j -= 1
        runs.append((i, j))
        if j >= n:
            break
        k, shared = j, 0
        while k - 1 > i and units[k - 1].kind != "heading" and shared + units[k - 1].tokens <= overlap:
            shared += units[k - 1].tokens
            k -= 1
        i = k if k < j else j
    merged: list[tuple[int, int]] = []
    for run in runs:
        tokens = sum(u.tokens for u in units[run[0]:run[1]])
        if merged and tokens < MIN_CHUNK_TOKENS:
            merged[-1] = (merged[-1][0], run[1])
        elif merged and sum(u.tokens for u in units[merged[-1][0]:merged[-1][1]]) < MIN_CHUNK_TOKENS:
            merged[-1] = (merged[-1][0], run[1])
        else:
            merged.append(run)
    return merged


def _heading_paths(units: list[Unit]) -> list[tuple[str, ...]]:
    """Per unit, the titles of the sections it stands in (its own, for a heading)."""
    stack: list[tuple[int, str]] = []
    out = []
    for u in units:
        if u.kind == "heading":
            while stack and stack[-1][0] >= u.level:
                stack.pop()
            stack.append((u.level, u.title))
        out.append(tuple(t for _, t in stack))
    return out


def chunk_document(doc: Document, settings: ChunkingSettings) -> list[Chunk]:
    """Chunks of whole units of about ``chunk_tokens`` tokens (see the module docstring), each with the
    document's metadata (and its title, from a first-line ``# `` heading when the metadata has none) and, when
    the document has headings, the chunk's heading path."""
    units = units_of(doc.text, settings.chunk_tokens)
    if not units:
        return []
    metadata = doc.metadata
    if "title" not in metadata:  # a first-line "# " heading titles every chunk (retrieval.chunk_text.chunk_header)
        title = document_title(doc)
        metadata = {**metadata, "title": title} if title else metadata
    paths = _heading_paths(units)
    chunks: list[Chunk] = []
    for i, j in _pack(units, settings.chunk_tokens, settings.overlap_tokens):
        start, end = units[i].start, units[j - 1].end
        text = doc.text[start:end]
        first = next((k for k in range(i, j) if units[k].kind != "heading"), j - 1)
        path = paths[first]
        meta = {**metadata, "headings": list(path)} if path else metadata
        ordinal = len(chunks)
        chunks.append(Chunk(
            id=chunk_id(doc.id, ordinal), document_id=doc.id, ordinal=ordinal, text=text, start=start, end=end,
            n_tokens=sum(u.tokens for u in units[i:j]), source=doc.source,
            content_hash=stable_hash(doc.id, text, size=12), metadata=meta,
        ))
    return chunks


def chunk_documents(docs: Iterable[Document], settings: ChunkingSettings) -> list[Chunk]:
    return [c for doc in docs for c in chunk_document(doc, settings)]
