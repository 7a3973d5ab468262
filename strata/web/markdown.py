"""Markdown rendered for the web console: answers, report summaries and findings, and chunks.

CommonMark with tables and strikethrough (markdown-it-py). The text is the corpus's, so nothing in it may act on
the page: raw HTML is never passed through (it is shown as text), link targets are checked by markdown-it's own
rules (no ``javascript:``, ``vbscript:``, ``file:`` or ``data:`` links), and images are shown as their alt text
with the address in a tooltip, so that a chunk cannot make the browser fetch from another host.

Ranges of the raw text can be marked (the sentence an answer quoted): each range becomes ``<mark>`` around every
piece of text it covers in the rendered HTML, so a range that spans paragraphs, list items or a code block stays
valid HTML.
"""

from __future__ import annotations

import re
from functools import lru_cache
from html import escape, unescape
from typing import Any, Sequence

from markdown_it import MarkdownIt

from core.text.shorten import shorten

MARK_OPEN, MARK_CLOSE = "\ue000", "\ue001"  # private-use characters: in no real text (replaced if they are)
_ENCODED = {"%EE%80%80": MARK_OPEN, "%EE%80%81": MARK_CLOSE}  # as they appear inside a link's percent-encoded href
_TAG_OR_TEXT = re.compile(r"(<[^>]*>)")
# What may open a line before its text starts: indentation, list markers, heading hashes, quote marks, table pipes.
_LINE_MARKERS = re.compile(r"(?:[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+|[ \t]*#{1,6}[ \t]+|[ \t]*>[ \t]?|[ \t]*\|[ \t]*|[ \t]+)*")
_FENCE = re.compile(r"[ \t]{0,3}(?:`{3,}|~{3,})[^\n]*$")
_CITED_FENCE = re.compile(r"^([ \t]{0,3}(?:`{3,}|~{3,}))[ \t]+((?:\[[^\[\]\n]+\]|\(report [^()\s]+\))[ \t]*)$", re.M)
_CITED_LINE = re.compile(r"(?:\[[^\[\]\n]+\]|\(report [^()\s]+\))[ \t]*$")
_LIST_ITEM = re.compile(r"[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]")


def _image_as_text(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    alt = self.renderInline(token.children or [], options, env) if token.children else escape(token.content)
    src = escape(str(token.attrGet("src") or ""))
    return f'<span class="md-image" title="image: {src}">[image: {alt}]</span>'


def _link_open(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    token.attrSet("target", "_blank")
    token.attrSet("rel", "noopener noreferrer nofollow")
    return self.renderToken(tokens, idx, options, env)


@lru_cache(maxsize=1)
def _renderer() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.add_render_rule("image", _image_as_text)
    md.add_render_rule("link_open", _link_open)
    return md


def render_markdown(text: str, marks: Sequence[tuple[int, int]] = ()) -> str:
    """``text`` as HTML; each ``(start, end)`` range of ``text`` (character offsets) marked with ``<mark>``.
    Ranges outside the text or empty are ignored; overlapping ones are merged."""
    text = text.replace(MARK_OPEN, "\ufffd").replace(MARK_CLOSE, "\ufffd")
    spans = _spans(text, marks)
    if not spans:
        return _renderer().render(text)
    pieces, last = [], 0
    for start, end in spans:
        pieces += [text[last:start], MARK_OPEN, text[start:end], MARK_CLOSE]
        last = end
    pieces.append(text[last:])
    return _apply_marks(_renderer().render("".join(pieces)))


def _spans(text: str, marks: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The ranges to mark, moved off the Markdown syntax around them (a marker placed before a list bullet or
    after a closing code fence would change what the text renders as), sorted and merged."""
    spans: list[tuple[int, int]] = []
    for start, end in sorted(marks):
        if not (0 <= start < end <= len(text)):
            continue
        line_start = text.rfind("\n", 0, start) + 1
        if not text[line_start:start].strip():  # the range opens its line: start after the line's markers
            start = _LINE_MARKERS.match(text, line_start).end()
            if _FENCE.match(text[start:text.find("\n", start) if "\n" in text[start:] else len(text)]):
                nl = text.find("\n", start)
                start = nl + 1 if nl >= 0 else end  # an opening fence: the mark starts inside the block
        while end > start and text[end - 1] in " \t\n|":
            end -= 1
        last_line = text.rfind("\n", start, end) + 1
        if last_line > start and _FENCE.match(text[last_line:end]):  # a closing fence: the mark ends before it
            end = last_line - 1
            while end > start and text[end - 1] in " \t\n":
                end -= 1
        if start >= end:
            continue
        if spans and start <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(end, spans[-1][1]))
        else:
            spans.append((start, end))
    return spans


def _apply_marks(html: str) -> str:
    """Replace the marker characters by ``<mark>`` around each run of text between them: one ``<mark>`` per text
    piece, so the marks never cross an element's boundary. A marker that ended up inside a tag (a link's
    address) still opens or closes the range there."""
    out: list[str] = []
    inside = False
    for part in _TAG_OR_TEXT.split(html):
        if not part:
            continue
        if part.startswith("<"):
            for encoded, raw in _ENCODED.items():
                part = part.replace(encoded, raw)
            for ch in part:
                if ch == MARK_OPEN:
                    inside = True
                elif ch == MARK_CLOSE:
                    inside = False
            out.append(part.replace(MARK_OPEN, "").replace(MARK_CLOSE, ""))
            continue
        for piece in re.split(f"([{MARK_OPEN}{MARK_CLOSE}])", part):
            if piece == MARK_OPEN:
                inside = True
            elif piece == MARK_CLOSE:
                inside = False
            elif piece:
                out.append(f"<mark>{piece}</mark>" if inside and piece.strip() else piece)
    return "".join(out)


def plain_text(text: str, limit: int = 300) -> str:
    """The text as it reads once rendered, on one line (Markdown syntax gone), cut at ``limit`` characters: a
    preview for a table cell."""
    return shorten(unescape(_TAG_OR_TEXT.sub(" ", _renderer().render(text[: limit * 4]))), limit)


def answer_markdown(text: str) -> str:
    """An answer's text as Markdown: each cited point (a line ending in ``[chunk-id]`` or ``(report id)``) is a
    block of its own, unless a list item follows (the list stays one list), and a citation written after a
    closing code fence goes on the next line (a fence followed by text does not close its block)."""
    text = _CITED_FENCE.sub(r"\1\n\2", text)
    lines = text.split("\n")
    out: list[str] = []
    fence: str | None = None
    for i, line in enumerate(lines):
        out.append(line)
        opener = re.match(r"[ \t]{0,3}(`{3,}|~{3,})", line)
        if opener:
            fence = None if fence and opener.group(1).startswith(fence) else (fence or opener.group(1))
            continue
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if fence is None and _CITED_LINE.search(line) and nxt.strip() and not _LIST_ITEM.match(nxt):
            out.append("")
    return "\n".join(out)


def render_answer(text: str) -> str:
    """An answer's text as HTML (see :func:`answer_markdown`); citations stay as text for the console to link."""
    return render_markdown(answer_markdown(text))
