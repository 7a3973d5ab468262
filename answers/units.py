"""The units a local answer may quote from a chunk: whole sentences, whole Markdown lists and tables, whole code
blocks, each with the heading it sits under.

A unit is always ``chunk.text[start:end]``, so a citation points at it. Sentences come from
:func:`communities.sentences.whole_sentences`. On top of them:

- a fenced code block (```` ``` ```` or ``~~~``) is one unit when both of its fences are in the chunk, with the
  sentence that introduces it when one ending in a colon stands right above it, and no part of it is ever quoted
  when the chunk cuts it (a window that opens or ends inside the fence);
- a Markdown list or table that the chunk holds whole (text follows it, and it does not open a chunk that
  starts mid-document) is one unit, so that the items under a heading are quoted together, not one by one,
  with the sentence that introduces it when one ending in a colon stands right above it ("The main differences
  between using npm install and npm ci are:"); of a list too long for that, or cut by the window, each whole
  item is a unit (an option and what it does), and of such a table each whole row (a setting and its value);
- a sentence that says nothing outside its links ("Implements [X](x.md#x).") is no unit: it points elsewhere;
- every unit knows the nearest heading above it (a ``#`` line, or the title line that opens a document) and
  whether it is the first unit under that heading.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from communities.sentences import whole_sentences

Kind = Literal["sentence", "list", "table", "code"]
MAX_BLOCK_CHARS = 1500  # a list, table or code block longer than this is not quoted as one unit
MAX_ITEM_CHARS = 700  # ... and an item of such a list longer than this is not quoted either

_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})[ \t]*([^\s`]*)[^\n]*$", re.MULTILINE)
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_ITEM = re.compile(r"^[ \t]*(?:[-*+]|\d{1,3}[.)])[ \t]+\S")
_ROW = re.compile(r"^[ \t]*\|")
_LINK = re.compile(r"!?\[(?:[^\[\]\n]|\[[^\[\]\n]*\])*\]\((?:[^()\n]|\([^()\n]*\))*\)|<https?://[^>\s]+>|https?://\S+")
_PROSE_WORD = re.compile(r"[^\W\d_]{2,}", re.UNICODE)
MIN_PROSE_WORDS = 3  # a sentence with fewer words outside its links is a pointer, not an answer
MAX_LEAD_IN_CHARS = 300  # a list's introducing sentence is at most this long


def _lead_in(text: str, start: int, skip: list[tuple[int, int]]) -> int:
    """Where the sentence introducing the block at ``start`` begins: the last sentence of the paragraph right
    above it, when that paragraph ends with a colon and is prose (no heading, list item, table row or code);
    else ``start``."""
    above = text[:start].rstrip()
    if not above.endswith(":") or any(s <= len(above) - 1 < e for s, e in skip):
        return start
    para_start = max(above.rfind("\n\n") + 2 if "\n\n" in above else 0, 0)
    para = above[para_start:]
    if (not para.strip() or len(para) > 4 * MAX_LEAD_IN_CHARS or _HEADING.search(para) or _FENCE.search(para)
            or any(_ITEM.match(ln) or _ROW.match(ln) for ln in para.splitlines())):
        return start
    # the last sentence of the paragraph: after its last full stop that a space or a line break follows
    cut = max((m.end() for m in re.finditer(r"[.!?][\"')\]]*\s+", para)), default=0)
    lead = para_start + cut
    lead += len(text[lead:start]) - len(text[lead:start].lstrip())
    return lead if 0 < start - lead <= MAX_LEAD_IN_CHARS + 2 else start


def link_only(text: str) -> bool:
    """Whether a sentence says nothing outside its links ("Implements [`Dispatcher.close()`](Dispatcher.md#...).",
    "See [the API docs](api.md)."): what it points at is elsewhere."""
    bare = _LINK.sub(" ", text)
    return bare != text and len(_PROSE_WORD.findall(bare)) < MIN_PROSE_WORDS


@dataclass(frozen=True, slots=True)
class Unit:
    """A quotable piece of a chunk: ``text == chunk.text[start:end]``."""

    chunk_id: str
    start: int
    end: int
    text: str
    kind: Kind
    heading: str = ""  # the heading the unit sits under ("" when none is in the chunk)
    first_under_heading: bool = False
    title: bool = False  # the heading is the document's title line (it covers the whole document, not a section)


def _code_regions(text: str, at_document_start: bool) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(whole code blocks, cut code regions) as spans of ``text``. Fences pair up in order; an unpaired fence
    means the chunk cuts a block: at the end (the usual case) or, in a chunk that opens mid-document and whose
    first fence carries no language tag (a closing fence), at the start; a chunk may cut blocks at both ends."""
    fences = list(_FENCE.finditer(text))
    whole: list[tuple[int, int]] = []
    cut: list[tuple[int, int]] = []
    # A closing fence carries no language tag: in a chunk that opens mid-document, an untagged first fence
    # followed by a tagged one (or left over) closes a block the window cut at the start.
    if (fences and not at_document_start and not fences[0].group(2)
            and (len(fences) % 2 == 1 or fences[1].group(2))):
        cut.append((0, fences[0].end()))
        fences = fences[1:]
    if len(fences) % 2 == 1:
        cut.append((fences[-1].start(), len(text)))
        fences = fences[:-1]
    for open_, close in zip(fences[::2], fences[1::2]):
        whole.append((open_.start(), close.end()))
    return whole, cut


def _blocks(text: str, skip: list[tuple[int, int]]) -> list[tuple[int, int, Kind]]:
    """Runs of list-item lines (with their indented continuation lines) and of table rows, outside code."""
    out: list[tuple[int, int, Kind]] = []
    pos = 0
    run: tuple[int, int, Kind] | None = None
    for line in text.splitlines(keepends=True):
        start, end = pos, pos + len(line.rstrip("\n"))
        pos += len(line)
        if any(s <= start < e for s, e in skip):
            kind = None
        elif _ROW.match(line):
            kind = "table"
        elif _ITEM.match(line):
            kind = "list"
        elif run is not None and run[2] == "list" and line.strip() and line[:1] in " \t":
            kind = "list"  # an item's continuation line
        else:
            kind = None
        if kind is not None and run is not None and run[2] == kind:
            run = (run[0], end, kind)
            continue
        if run is not None:
            out.append(run)
            run = None
        if kind is not None:
            run = (start, end, kind)  # type: ignore[assignment]
    if run is not None:
        out.append(run)
    return out


def _items(text: str, s: int, e: int, opens_cut: bool, ends_cut: bool) -> list[tuple[int, int, Kind]]:
    """The whole top-level items of the list ``text[s:e]`` (each with its continuation lines and sub-items), the
    bullet left out: the first when the chunk opens inside the list, the last when it ends in it are left out, and
    so is an item too short to say anything, too long to quote, or that only points at a link."""
    lines: list[tuple[int, str]] = []
    pos = s
    for line in text[s:e].splitlines(keepends=True):
        lines.append((pos, line))
        pos += len(line)
    indent = len(lines[0][1]) - len(lines[0][1].lstrip(" \t"))
    starts = [p for p, ln in lines if _ITEM.match(ln) and len(ln) - len(ln.lstrip(" \t")) == indent]
    bounds = list(zip(starts, starts[1:] + [e]))
    if opens_cut and bounds:
        bounds = bounds[1:]
    if ends_cut and bounds:
        bounds = bounds[:-1]
    out: list[tuple[int, int, Kind]] = []
    for a, b in bounds:
        body = text[a:b].rstrip()
        m = re.match(r"[ \t]*(?:[-*+]|\d{1,3}[.)])[ \t]+", body)
        start = a + (m.end() if m else 0)
        end = a + len(body)
        unit = text[start:end]
        if len(unit) > MAX_ITEM_CHARS or len(re.findall(r"[^\W\d_]+", unit)) < 4 or link_only(unit):
            continue
        nested = any(_ITEM.match(ln) for ln in unit.splitlines()[1:])
        out.append((start, end, "list" if nested else "sentence"))
    return out


_SEPARATOR_ROW = re.compile(r"^[ \t]*\|?[ \t:|-]+\|?[ \t]*$")


def _rows(text: str, s: int, e: int, opens_cut: bool, ends_cut: bool) -> list[tuple[int, int]]:
    """The whole rows of the table ``text[s:e]`` that say something (at least four words), its header and
    separator rows left out, and the first or last row when the chunk cuts the table there."""
    lines: list[tuple[int, int]] = []
    pos = s
    for line in text[s:e].splitlines(keepends=True):
        lines.append((pos, pos + len(line.rstrip("\n"))))
        pos += len(line)
    has_header = len(lines) > 1 and _SEPARATOR_ROW.match(text[lines[1][0]:lines[1][1]]) is not None
    body = lines[2:] if has_header and not opens_cut else lines
    if opens_cut and body:
        body = body[1:]
    if ends_cut and body:
        body = body[:-1]
    return [(a, b) for a, b in body if not _SEPARATOR_ROW.match(text[a:b]) and b - a <= MAX_ITEM_CHARS
            and len(re.findall(r"[^\W\d_]+", text[a:b])) >= 4]


def _headings(text: str, at_document_start: bool, skip: list[tuple[int, int]]) -> list[tuple[int, int, str]]:
    """(line start, line end, heading text) of the ``#`` headings outside code, and the title line that opens a
    document (a short first line without sentence punctuation, followed by more text)."""
    out = [(m.start(), m.end(), m.group(1).strip()) for m in _HEADING.finditer(text)
           if not any(s <= m.start() < e for s, e in skip)]
    if at_document_start:
        first = text.split("\n", 1)
        line = first[0].strip()
        if (len(first) == 2 and first[1].strip() and 0 < len(line) <= 120 and not line.startswith(("#", "-", "*", "|", "`"))
                and not re.search(r"[.!?:;。！？]$", line)):
            out.insert(0, (0, len(first[0]), line))
    return out


def answer_units(chunk_id: str, text: str, at_document_start: bool) -> list[Unit]:
    """The quotable units of a chunk, in text order."""
    whole_code, cut_code = _code_regions(text, at_document_start)
    code_like = whole_code + cut_code
    spans: list[tuple[int, int, Kind]] = []
    kept_blocks: list[tuple[int, int]] = []
    for s, e in whole_code:
        if e - s <= MAX_BLOCK_CHARS:
            s = _lead_in(text, s, code_like)
            spans.append((s, e, "code"))
            kept_blocks.append((s, e))
    for s, e, kind in _blocks(text, code_like):
        opens_cut = s == 0 and not at_document_start
        ends_cut = not text[e:].strip()  # nothing after it in the chunk: the window may cut it
        if kind == "list" and (opens_cut or ends_cut or e - s > MAX_BLOCK_CHARS):
            # Too long to quote whole, or cut by the window: each of its whole items is a unit ("**allowH2**:
            # `boolean` - Default: `false`. Enables support for H2 ..." is one answer, not two sentences).
            for ts, te, ik in _items(text, s, e, opens_cut, ends_cut):
                spans.append((ts, te, ik))
                kept_blocks.append((ts, te))
            continue
        if opens_cut or ends_cut or e - s > MAX_BLOCK_CHARS:
            for rs, re_ in _rows(text, s, e, opens_cut, ends_cut):
                spans.append((rs, re_, "table"))
                kept_blocks.append((rs, re_))
            continue
        if kind == "list" and sum(1 for ln in text[s:e].splitlines() if _ITEM.match(ln)) < 2:
            continue  # a single item reads as a sentence
        s = _lead_in(text, s, code_like)
        spans.append((s, e, kind))
        kept_blocks.append((s, e))
    taken = code_like + kept_blocks
    heads = _headings(text, at_document_start, code_like)
    title_end = heads[0][1] if heads and heads[0][0] == 0 and not text.startswith("#") else 0
    for s, e in whole_sentences(text, at_document_start):
        if s < title_end < e:  # the sentence splitter glued the title line to the first sentence
            s = title_end + len(text[title_end:e]) - len(text[title_end:e].lstrip())
        if any(s < te and ts < e for ts, te in taken):
            continue
        if _FENCE.search(text[s:e]) or link_only(text[s:e]):
            continue
        spans.append((s, e, "sentence"))
    spans.sort()
    units: list[Unit] = []
    last_heading = -1
    for s, e, kind in spans:
        above = [h for h in heads if h[1] <= s]
        heading = above[-1][2] if above else ""
        hpos = above[-1][0] if above else -1
        first = bool(above) and hpos != last_heading
        if above:
            last_heading = hpos
        titled = bool(above) and hpos == 0 and title_end > 0
        units.append(Unit(chunk_id, s, e, text[s:e], kind, heading, first, titled))
    return units
