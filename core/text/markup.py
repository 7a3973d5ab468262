"""The prose of a text: Markdown, HTML, front matter and licence boilerplate blanked out, offsets kept.

:func:`prose_view` returns a string of the same length as its input in which every character that is markup
rather than prose is a space (line breaks stay where they are), so a span of the view is the same span of the
source: sentences are split and entities found on the view, and quotes and citations still point at the
source text. Blanked: YAML/TOML front matter, fenced code blocks, HTML comments, ``<script>``/``<style>``
blocks and tags, link and image syntax (the link's words and an image's alt text stay, the target goes), link
reference definitions, bare URLs, file paths (``/etc/ssh/sshd_config``, ``C:\\Users\\x``, ``a/b/c``; not
"TCP/IP") and e-mail addresses, heading markers, setext and horizontal rules, table
pipes and alignment rows, emphasis marks, blockquote markers, backslash escapes and HTML character references.
Inline code spans are kept whole (an identifier in backticks is what the extractor looks for).

Licence boilerplate: a Project Gutenberg ebook's header (up to its ``*** START OF ... ***`` line) and footer
(from its ``*** END OF ... ***`` line) are licence text, not the book; :func:`boilerplate_spans` finds them and
the view blanks them. A chunk sees the markers only when it holds them, so the offline extractor finds the spans
once per document (:func:`document_view`).
"""

from __future__ import annotations

import re
from typing import Callable, Iterable, Sequence

_GUTENBERG_START = re.compile(r"^[ \t]*\*{3}[ \t]*START OF (?:THE |THIS )?PROJECT GUTENBERG E(?:BOOK|TEXT)\b[^\n]*$",
                              re.M | re.I)
_GUTENBERG_END = re.compile(r"^[ \t]*\*{3}[ \t]*END OF (?:THE |THIS )?PROJECT GUTENBERG E(?:BOOK|TEXT)\b[^\n]*$",
                            re.M | re.I)
_FRONT = re.compile(r"\A(?:---|\+\+\+)[ \t]*\n(?=[ \t]*[\w\"'-][^\n]*:)(?:[^\n]*\n)*?(?:---|\.\.\.|\+\+\+)[ \t]*(?:\n|\Z)")
_FENCE_LINE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})([^\n`]*)$", re.M)
_INLINE_CODE = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)")
_BLOCKS = re.compile(r"<!--.*?(?:-->|\Z)|<(script|style)\b[^>]*>.*?(?:</\1\s*>|\Z)", re.S | re.I)
_IMAGE = re.compile(r"!\[([^\]\n]*)\]\((?:[^()\n]|\([^()\n]*\))*\)")
_LINK = re.compile(r"\[([^\]\n]+)\]\((?:[^()\n]|\([^()\n]*\))*\)")
_REF_LINK = re.compile(r"\[([^\]\n]+)\]\[[^\]\n]*\]")
_LINK_DEF = re.compile(r"^[ \t]{0,3}\[[^\]\n]+\]:[ \t]*\S+[^\n]*$", re.M)
_AUTOLINK = re.compile(r"<(?:[a-z][a-z0-9+.-]{1,31}:[^<>\s]*|[^<>\s@]+@[^<>\s]+)>", re.I)
_TAG = re.compile(r"</?[A-Za-z][\w:-]*(?:\s+[^<>]*?)?/?>")
_URL = re.compile(r"\b(?:[a-z][a-z0-9+.-]{1,15}://|www\.)[^\s<>()\[\]{}\"'`]+", re.I)
_PATH = re.compile(r"(?<![\w/\\.-])(?:[A-Za-z]:\\|~?/|\.{1,2}/)[^\s`'\"<>()\[\]]*|(?<![\w/])[\w.-]+(?:/[\w.-]+){2,}/?")
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_HEADING = re.compile(r"^([ \t]{0,3}#{1,6})(?=[ \t]|$)|[ \t]+#+[ \t]*$", re.M)
_RULE = re.compile(r"^[ \t]{0,3}(?:=+|-{2,}|(?:[-*_][ \t]*){3,})[ \t]*$", re.M)
_TABLE_ALIGN = re.compile(r"^[ \t]*\|?(?:[ \t]*:?-{3,}:?[ \t]*\|)+(?:[ \t]*:?-{3,}:?[ \t]*)?\|?[ \t]*$", re.M)
_PIPE = re.compile(r"\|")
_EMPHASIS = re.compile(r"\*\*+|__+|(?<![\w*\\])[*_](?=[^\s*_])|(?<=[^\s*_\\])[*_](?![\w*])")
_QUOTE = re.compile(r"^[ \t]{0,3}(?:>[ \t]?)+", re.M)
_ESCAPE = re.compile(r"\\(?=[\\`*_{}\[\]()#+\-.!|<>])")
_ENTITY = re.compile(r"&(?:#\d{1,7}|#x[0-9a-f]{1,6}|[a-z][a-z0-9]{1,31});", re.I)


def _blank(s: str) -> str:
    return re.sub(r"[^\n]", " ", s)


def boilerplate_spans(text: str) -> list[tuple[int, int]]:
    """Spans of ``text`` that are Project Gutenberg licence text: up to the end of its START line, and from the
    start of its END line to the end. Empty when the markers are absent."""
    spans: list[tuple[int, int]] = []
    start = _GUTENBERG_START.search(text)
    end = _GUTENBERG_END.search(text, start.end() if start else 0)
    if start:
        spans.append((0, start.end()))
    if end:
        spans.append((end.start(), len(text)))
    return spans


def _code_fences(text: str) -> list[tuple[int, int]]:
    """Spans of fenced code blocks, fences included. A text cut out of a document may open inside a block: when
    the fence lines are odd in number and the first is bare (no info string) while a later one is not, the
    text up to the first fence is taken as the tail of a block."""
    fences = list(_FENCE_LINE.finditer(text))
    spans: list[tuple[int, int]] = []
    if len(fences) % 2 == 1 and not fences[0].group(2).strip() and any(f.group(2).strip() for f in fences[1:]):
        spans.append((0, fences[0].end()))
        fences = fences[1:]
    i = 0
    while i < len(fences):
        opening = fences[i]
        mark = opening.group(1)
        j = i + 1
        while j < len(fences) and not (fences[j].group(1)[0] == mark[0] and len(fences[j].group(1)) >= len(mark)
                                       and not fences[j].group(2).strip()):
            j += 1
        if j < len(fences):
            spans.append((opening.start(), fences[j].end()))
            i = j + 1
        else:
            spans.append((opening.start(), len(text)))
            break
    return spans


def _apply(chars: list[str], spans: Iterable[tuple[int, int]]) -> None:
    for s, e in spans:
        for i in range(s, e):
            if chars[i] != "\n":
                chars[i] = " "


def _inside(protected: Sequence[tuple[int, int]], s: int, e: int) -> bool:
    return any(ps < e and s < pe for ps, pe in protected)


def prose_view(text: str, keep_structure: bool = False, extra: Iterable[tuple[int, int]] = ()) -> str:
    """``text`` with its markup blanked (same length, line breaks kept); see the module docstring.

    ``keep_structure`` keeps heading markers and table pipes (a sentence splitter uses them as boundaries);
    ``extra`` are further spans to blank (a document's licence boilerplate found elsewhere)."""
    chars = list(text)
    _apply(chars, boilerplate_spans(text))
    _apply(chars, extra)
    front = _FRONT.match(text)
    if front:
        _apply(chars, [front.span()])
    fences = _code_fences(text)
    _apply(chars, fences)
    _apply(chars, (m.span() for m in _BLOCKS.finditer(text)))
    current = "".join(chars)
    code = [m.span() for m in _INLINE_CODE.finditer(current)]

    def sub(pattern: re.Pattern[str], keep: Callable[[re.Match[str]], tuple[int, int] | None] = lambda m: None) -> None:
        nonlocal current
        for m in pattern.finditer(current):
            s, e = m.span()
            if s == e or _inside(code, s, e) and not (pattern is _LINK or pattern is _IMAGE or pattern is _REF_LINK):
                continue
            kept = keep(m)
            if kept is None:
                _apply(chars, [(s, e)])
            else:
                _apply(chars, [(s, kept[0]), (kept[1], e)])
        current = "".join(chars)

    sub(_IMAGE, lambda m: m.span(1))
    sub(_LINK, lambda m: m.span(1))
    sub(_REF_LINK, lambda m: m.span(1))
    sub(_LINK_DEF)
    sub(_AUTOLINK)
    sub(_TAG)
    sub(_URL)
    sub(_PATH)
    sub(_EMAIL)
    sub(_TABLE_ALIGN)
    sub(_RULE)
    if not keep_structure:
        sub(_HEADING)
        sub(_PIPE)
    sub(_EMPHASIS)
    sub(_QUOTE)
    sub(_ESCAPE)
    sub(_ENTITY)
    return current


def document_boilerplate(pieces: Sequence[tuple[int, str]]) -> list[tuple[int, int]]:
    """Licence spans of a document given as pieces ``(offset in the document, text)`` that together cover it
    (a document's chunks), in document offsets."""
    if not pieces:
        return []
    size = max(off + len(t) for off, t in pieces)
    chars = [" "] * size
    for off, t in pieces:
        chars[off:off + len(t)] = t
    return boilerplate_spans("".join(chars))


def clip(spans: Iterable[tuple[int, int]], start: int, end: int) -> list[tuple[int, int]]:
    """``spans`` (document offsets) cut to the window ``[start, end)`` and shifted to the window's offsets."""
    return [(max(s, start) - start, min(e, end) - start) for s, e in spans if s < end and e > start]
