"""Markdown as documentation generators write it, read with a real parser and written back as clean Markdown.

A docs site's page is Markdown plus the extensions of its generator: attribute lists (``## Title { #id }``,
``{: .class }`` lines), admonitions (``!!! note``, ``??? tip``), content tabs (``=== "Tab"``), inline HTML
(``<dfn>``, ``<abbr>``, ``<kbd>``, ``<script>`` blocks, comments), snippets and abbreviation lines, front matter,
footnotes, definition lists and tables. Read as plain text, all of that leaks into chunks, entity names and
titles. :func:`normalize_markdown` parses the page with markdown-it-py (and the mdit-py-plugins for admonitions,
attributes, footnotes, definition lists and task lists) and writes a clean, normalized Markdown text that becomes
the document's text, so that everything downstream (chunks, sentences, citations quoting ``chunk.text[start:
end]``) works on clean text with consistent offsets:

- headings stay ``#`` lines (attribute lists and closing ``#`` dropped), list items ``- `` / ``1. `` lines, fenced
  code stays fenced (its info string cut to the language), tables stay tables, blockquotes ``> `` lines;
- attribute lists, admonition and tab markers, generator directives (mkdocstrings' ``::: module`` with its options),
  template tags (a line of Jinja's or Hugo's alone; Hugo's shortcodes inline, outside code spans:
  ``[text]({{< relref "page" >}})``), images, link targets, footnote references, emphasis marks and HTML tags are
  dropped; ``<dfn>``, ``<abbr>``, ``<kbd>`` (and any other inline tag) leave their text;
  comments, ``<script>`` and ``<style>`` leave nothing; an HTML block leaves its text (``<pre>`` as code);
- a code span stays in backticks, unless it is part of a word ("\\`g\\`reater" is "greater");
- an admonition's or a tab's own title stays as a line of text (a bare ``!!! note`` leaves nothing); the
  generic blocks of pymdownx (``/// note | Title`` ... ``///``) read the same way, their options dropped;
- a reference link whose definition the page does not hold (``[BaseModel][pydantic.BaseModel]``,
  ``[`list`][]``: the generator resolves it from other pages or the API) reads as its text, as a defined one does.
- an HTML element marked ``markdown`` (md_in_html's ``<figure markdown="span">``) holds Markdown: an image or a
  link inside leaves its text; any other HTML block is text as written.

:class:`MarkdownShape` counts the page's structure as the parser saw it (headings, version headings, list
items, paragraphs, code blocks, table rows, definition terms, link words); :mod:`extraction.kinds` reads a
document's kind from it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Sequence

from markdown_it import MarkdownIt
from markdown_it.tree import SyntaxTreeNode
from mdit_py_plugins.admon import admon_plugin
from mdit_py_plugins.attrs import attrs_plugin
from mdit_py_plugins.deflist import deflist_plugin
from mdit_py_plugins.footnote import footnote_plugin
from mdit_py_plugins.front_matter import front_matter_plugin
from mdit_py_plugins.tasklists import tasklists_plugin

from core.text.names import LETTER_WORD

# A line that is only an attribute list: "{ .annotate }", "{: #id .class }".
_ATTR_LINE = re.compile(r"^[ \t]*\{:?[ \t]*(?:[#.][\w:.-]+|[\w-]+=(?:\"[^\"]*\"|'[^']*'|\S+))(?:[ \t]+[^{}]*)?\}[ \t]*$")
# An attribute list right after an inline element ("**`locale`**{ #mkdocs-locale }", "[Save](#){ .md-button }"), where
# the parser's plugin leaves it (after emphasis); not one written inside a code span ("`{ #id }`").
_INLINE_ATTRS = re.compile(r"(?<=[*_`\])])\{:?[ \t]*(?:[#.][\w:.-]+|[\w-]+=(?:\"[^\"]*\"|'[^']*'|[^\s{}`]+))"
                           r"(?:[ \t]+[^{}\n`]*)?\}(?!`)")
# An attribute list at the end of a heading, with the closing sequence before it: "## A ## {: #a }", "# A { #a }".
_HEADING_ATTRS = re.compile(r"(?:[ \t]+#+)?[ \t]*\{:?[ \t]*[#.][^{}\n]*\}[ \t]*$")
_HEADING_LINE = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]")


def heading_line(line: str) -> bool:
    """Whether ``line`` opens with a Markdown ATX heading's marks ("## Options", not "#1234 Fix ...")."""
    return _HEADING_LINE.match(line) is not None
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
_TAB = re.compile(r"^([ \t]*)===[+!]?[ \t]+\"(.*)\"[ \t]*$")
_DIRECTIVE = re.compile(r"^[ \t]*:::[ \t]+[\w.:]+[ \t]*$")
_SNIPPET = re.compile(r"^[ \t]*-{1,2}8<-{1,2}")  # pymdownx.snippets: "--8<-- "file""
_ABBR_DEF = re.compile(r"^[ \t]*\*\[[^\]\n]+\]:")  # abbreviation definitions: "*[HTML]: Hyper Text ..."
_BR = re.compile(r"<br\b", re.I)  # a line break written in HTML, inside a paragraph or a table cell
_TEMPLATE_LINE = re.compile(r"^[ \t]*(?:\{%.*%\}|\{\{<.*>\}\}|\{\{%.*%\}\})[ \t]*$")  # Jinja and Hugo lines alone
# A Hugo shortcode inside a line: "[groups]({{< relref "managing-dependencies#groups" >}})" or "[FAQ]: {{< relref
# "faq" >}}" gives a link its target at build time (a link's target is dropped anyway: "#" stands in for it);
# elsewhere it leaves nothing.
_SHORTCODE = re.compile(r"(\]\([ \t]*|\]:[ \t]*)?(?:\{\{<.*?>\}\}|\{\{%.*?%\}\})")
# pymdownx.blocks: "/// type | title" opens a block (its options, indented, follow), "///" alone closes one.
_BLOCK = re.compile(r"^[ \t]*/{3,}(?:[ \t]+[\w-]+(?:[ \t]*\|[ \t]*(.*?))?)?[ \t]*$")
# A full or collapsed reference link, "[text][label]" or "[text][]", outside code and not right after a Latin
# letter, digit or underscore (array[i][j] indexes; 请参阅[`X`][x] is a link); and a definition, "[label]: url".
_REF_LINK = re.compile(r"(?<![\\!\]A-Za-z0-9_])\[((?:[^\[\]\\\n]|\\.)+)\]\[((?:[^\[\]\\\n]|\\.)*)\]")
_REF_DEF = re.compile(r"^[ \t]{0,3}\[((?:[^\[\]\\\n]|\\.)+)\]:", re.M)
_MD_IN_HTML = re.compile(r"<[A-Za-z][\w-]*[^<>]*\smarkdown\s*=", re.I)  # md_in_html: markdown="1|span|block"
# A code span: a whole run of backticks, text, the same run (each run tried once: no backtracking over runs).
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")
_ICON = re.compile(r"(?<![\w:]):[a-z][a-z0-9_+]*(?:-[a-z0-9_+]+)+:(?![\w:])")  # ":octicons-file-code-16:"
_VERSION_OR_DATE = re.compile(r"(?<![\w.])v?\d+\.\d+(?:\.\d+)*(?:[-.]?[a-z]+\d*)?(?![\w.])|\b\d{4}-\d{2}-\d{2}\b"
                              r"|\b\d{4}/\d{2}/\d{2}\b", re.I)


def names_version(text: str) -> bool:
    """Whether ``text`` (a heading, a title) names a version or a date."""
    return bool(_VERSION_OR_DATE.search(text))


def names_release(title: str) -> bool:
    """Whether a page's ``title`` names a release: it ends with a version or a date, or both ("Hatch v1.8.0",
    "Version 1.6.1 (2024-08-30)", "What's new in 2.0"); a version followed by more words is that of what the
    page documents ("OAuth 2.0 Client Credentials", "Python 3.12 installation")."""
    last = None
    for last in _VERSION_OR_DATE.finditer(title):
        pass
    return last is not None and not LETTER_WORD.search(title, last.end())


@dataclass
class MarkdownShape:
    """The structure of a page as the parser saw it."""

    version_title: bool = False  # the page's title (its level-1 heading) names a version: release notes
    headings: int = 0  # section headings (level 2 and below; the page title is level 1)
    level_headings: dict[int, int] = field(default_factory=dict)  # section headings at each level
    level_version_headings: dict[int, int] = field(default_factory=dict)  # of which name a version or a date
    code_headings: int = 0  # of which hold a code span ("`build`", an option's name)
    list_items: int = 0
    paragraphs: int = 0
    code_blocks: int = 0
    table_rows: int = 0
    terms: int = 0  # definition-list terms
    words: int = 0  # words of prose (outside code blocks)
    link_words: int = 0  # of which stand in link texts

    @property
    def blocks(self) -> int:
        return self.list_items + self.paragraphs + self.code_blocks + self.table_rows + self.terms


@dataclass(frozen=True)
class NormalizedMarkdown:
    text: str
    shape: MarkdownShape = field(default_factory=MarkdownShape)


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    for plugin in (front_matter_plugin, admon_plugin, attrs_plugin, footnote_plugin, deflist_plugin, tasklists_plugin):
        md.use(plugin)
    return md


_MD = _parser()


def _prepare(text: str) -> str:
    """The page's lines with what the parser has no plugin for made plain: attribute-list lines, snippet and
    abbreviation lines and template tags dropped, heading attribute lists cut, content tabs turned into their
    label and their body dedented. Code fences are left alone."""
    out: list[str] = []
    fence: str | None = None
    directive: int | None = None  # the indent of a generator directive whose indented options are being dropped
    tabs: list[int] = []  # the indents of the content-tab markers whose bodies are being dedented
    prose: list[str] = []  # the lines written outside fenced code, where reference links are looked for
    for line in text.split("\n"):
        indent = len(line) - len(line.lstrip(" \t"))
        if line.strip() and fence is None:
            while tabs and indent <= tabs[-1]:
                tabs.pop()
        tab = _TAB.match(line) if fence is None else None
        cut = min(4 * len(tabs), indent)
        line = line[cut:]
        m = _FENCE.match(line)
        if fence is not None:
            out.append(line)
            if _closes(m, line, fence):
                fence = None
            continue
        if m:
            fence = m.group(1)
            out.append(line)
            continue
        if directive is not None:
            if not line.strip() or len(line) - len(line.lstrip(" \t")) > directive:
                continue
            directive = None
        if _DIRECTIVE.match(line):  # mkdocstrings' "::: package.module" and the options indented under it
            directive = len(line) - len(line.lstrip(" \t"))
            continue
        block = _BLOCK.match(line)
        if block:  # a generic block's marker: its title stays as a line of text, its options go
            title = (block.group(1) or "").strip()
            out += ["", " " * (indent - cut) + title, ""] if title else [""]  # in its container (a list item)
            prose.append(title)
            if line.strip().strip("/"):
                directive = len(line) - len(line.lstrip(" \t"))  # its options are indented under it
            continue
        if _ATTR_LINE.match(line) or _SNIPPET.match(line) or _ABBR_DEF.match(line) or _TEMPLATE_LINE.match(line):
            continue
        if "{{" in line:
            line = _without_shortcodes(line)
        if tab:
            tabs.append(indent)
            label = _ICON.sub("", tab.group(2)).strip()
            out.append(" " * (indent - cut) + label if label else "")
            out.append("")
            prose.append(label)
            continue
        if _HEADING_LINE.match(line):
            line = _HEADING_ATTRS.sub("", line)
        if "{" in line:
            line = _INLINE_ATTRS.sub("", line)
        out.append(line)
        prose.append(line)  # indented lines too: list items and admonition bodies are indented prose
    return "\n".join(out) + _missing_definitions(prose, fence)


def _without_shortcodes(line: str) -> str:
    """``line`` without its Hugo shortcodes (:data:`_SHORTCODE`), outside its code spans."""
    def drop(prose: str) -> str:
        return _SHORTCODE.sub(lambda m: f"{m.group(1)}#" if m.group(1) else "", prose)

    out, at = [], 0
    for m in _CODE_SPAN.finditer(line):
        out += [drop(line[at:m.start()]), m.group(0)]
        at = m.end()
    out.append(drop(line[at:]))
    return "".join(out)


def _missing_definitions(prose: list[str], fence: str | None) -> str:
    """Definitions for the reference links the page's ``prose`` lines (those outside fenced code) use but do not
    define, so that the parser reads them as links (their text) and not as bracketed markup. Only labels holding
    a letter count ("x[0][1]" is an index), and code spans are not read (a definition changes nothing inside
    code). ``fence``: the fence the page leaves open, closed before the definitions."""
    body = "\n".join(prose)
    # code spans masked where links are looked for (positions kept: a label is read from the text itself)
    masked = _CODE_SPAN.sub(lambda m: "\0" * len(m.group(0)), body)
    defined = {_label(m.group(1)) for m in _REF_DEF.finditer(masked)}
    missing: dict[str, str] = {}
    for m in _REF_LINK.finditer(masked):
        label = body[m.start(2):m.end(2)] if m.group(2) else body[m.start(1):m.end(1)]
        key = _label(label)
        # a one-character label is a task-list box ("[x]") or an index more often than a reference
        if len(key) > 1 and key not in defined and any(ch.isalpha() for ch in label):
            missing.setdefault(key, label)
    if not missing:
        return ""
    closing = f"\n{fence}" if fence is not None else ""  # a fence left open ends here, not after the definitions
    return closing + "".join(f"\n\n[{label}]: #" for label in missing.values())


def _quoted(text: str) -> str:
    """``text`` as a blockquote's lines ("> "), but for its fenced code, which leaves the quote: a fence is code only
    where a line opens with it, for the chunker and the prose view as for any reader of the text."""
    out: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        m = _FENCE.match(line)
        if fence is not None or m:
            out.append(line)
            fence = (None if _closes(m, line, fence) else fence) if fence is not None else m.group(1)  # type: ignore[union-attr]
            continue
        out.append("> " + line if line else ">")
    return "\n".join(out)


def _closes(m: re.Match[str] | None, line: str, fence: str) -> bool:
    """Whether ``line`` (``m``: its fence match) closes a code block opened by ``fence``: the same character, at
    least as many, and nothing after them."""
    return bool(m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence)
                and not line.strip()[len(m.group(1)):].strip())


def _label(label: str) -> str:
    return " ".join(label.split()).casefold()


class _HtmlText(HTMLParser):
    """The text of an HTML block: scripts, styles and comments leave nothing, ``<pre>`` leaves code."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[tuple[str, str]] = []  # ("text" | "code", content)
        self._skip = 0
        self._pre = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style", "svg", "template"):
            self._skip += 1
        elif tag == "pre":
            self._pre += 1
            self.parts.append(("code", ""))
        elif tag in ("br", "p", "div", "li", "tr", "aside", "section", "h1", "h2", "h3", "h4", "h5", "h6"):
            self.parts.append(("text", "\n"))

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "svg", "template"):
            self._skip = max(0, self._skip - 1)
        elif tag == "pre":
            self._pre = max(0, self._pre - 1)
            self.parts.append(("text", "\n"))

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        kind = "code" if self._pre else "text"
        if self.parts and self.parts[-1][0] == kind:
            self.parts[-1] = (kind, self.parts[-1][1] + data)
        else:
            self.parts.append((kind, data))


def _html_blocks(html: str) -> list[str]:
    parser = _HtmlText()
    try:
        parser.feed(html)
        parser.close()
    except Exception:  # noqa: BLE001 - malformed HTML: its text as far as it was read
        pass
    blocks: list[str] = []
    for kind, content in parser.parts:
        if kind == "code":
            body = content.strip("\n")
            if body.strip():
                blocks.append(f"```\n{body}\n```")
        else:
            for para in re.split(r"\n\s*\n|\n", content):
                para = " ".join(para.split())
                if para:
                    blocks.append(para)
    return blocks


_NAME_JOINS = "._"  # what joins the parts of a dotted name (a path or URL list may break after a slash)


def _wrapped_name(out: list[str], kids: Sequence[SyntaxTreeNode], i: int) -> bool:
    """Whether the code span at ``kids[i]`` goes on a name that a ``<br>`` just before it wrapped: the span
    before that break ends with a joining character (a table's narrow column writes the option
    ``providers.kubernetes.endpoint`` as `providers.`<br>`kubernetes.`<br>`endpoint`)."""
    if not (0 < i < len(kids) and kids[i].type == "code_inline" and kids[i - 1].type == "html_inline"
            and _BR.match(kids[i - 1].content)):
        return False
    last = out[-1] if out else ""
    return (len(last) > 2 and last.startswith("`") and last.endswith("`") and not last.startswith("``")
            and last[-2] in _NAME_JOINS and kids[i].content[:1].isalnum() and "`" not in kids[i].content
            and " " not in kids[i].content)


class _Writer:
    def __init__(self) -> None:
        self.shape = MarkdownShape()
        self._in_link = 0

    # -- inline ----------------------------------------------------------------------------------------------
    def inline(self, node: SyntaxTreeNode) -> str:
        out: list[str] = []
        kids = node.children
        for i, child in enumerate(kids):
            t = child.type
            if t == "text":
                out.append(child.content)
                if self._in_link:
                    self.shape.link_words += len(LETTER_WORD.findall(child.content))
            elif t == "code_inline" and _wrapped_name(out, kids, i):
                out[-1] = out[-1][:-1] + child.content + "`"  # the rest of a name a line break wrapped
            elif t == "code_inline":
                before = "".join(out)[-1:]
                after = kids[i + 1].content[:1] if i + 1 < len(kids) and kids[i + 1].type == "text" else ""
                if (before.isalnum() or after.isalnum()) and " " not in child.content:
                    out.append(child.content)  # part of the word around it: "`g`reater" is "greater"
                else:
                    ticks = "``" if "`" in child.content else "`"
                    pad = " " if ticks == "``" else ""
                    out.append(f"{ticks}{pad}{child.content}{pad}{ticks}")
            elif t == "softbreak":
                out.append(" ")  # a paragraph is one line: a quote never holds a line break mid-sentence
            elif t == "hardbreak":
                out.append("\n")
            elif t == "html_inline":
                if _BR.match(child.content) and not _wrapped_name(out, kids, i + 1):
                    out.append(" ")
            elif t == "link":
                self._in_link += 1
                out.append(self.inline(child))
                self._in_link -= 1
            elif t in ("image", "footnote_ref", "math_inline"):
                continue
            elif child.children:
                out.append(self.inline(child))
            elif child.content:
                out.append(child.content)
        text = "".join(out)
        text = _ICON.sub("", text)
        return re.sub(r"[ \t]{2,}", " ", text).strip(" \t")

    def _inline_markdown(self, text: str) -> str:
        return self._inline_of(SyntaxTreeNode(_MD.parseInline(text)))

    def _inline_of(self, node: SyntaxTreeNode) -> str:
        return " ".join(self.inline(c) for c in node.children if c.type == "inline").strip()

    # -- blocks ----------------------------------------------------------------------------------------------
    def blocks(self, node: SyntaxTreeNode) -> list[str]:
        out: list[str] = []
        for child in node.children:
            out.extend(self.block(child))
        return out

    def block(self, node: SyntaxTreeNode) -> list[str]:
        t = node.type
        if t == "heading":
            level = int(node.tag[1])
            text = self._inline_of(node)
            if not text:
                return []
            if level == 1 and names_release(text):
                self.shape.version_title = True
            if level >= 2:
                self.shape.headings += 1
                self.shape.level_headings[level] = self.shape.level_headings.get(level, 0) + 1
                if names_version(text):
                    self.shape.level_version_headings[level] = self.shape.level_version_headings.get(level, 0) + 1
                self.shape.code_headings += any(c.type == "code_inline" for i in node.children for c in i.children)
            self.shape.words += len(LETTER_WORD.findall(text))
            return ["#" * level + " " + text]
        if t == "paragraph":
            text = self._inline_of(node)
            if not text.strip():
                return []
            self.shape.paragraphs += 1
            self.shape.words += len(LETTER_WORD.findall(text))
            return [text]
        if t in ("bullet_list", "ordered_list"):
            items: list[str] = []
            number = int(node.attrs.get("start", 1) or 1) if t == "ordered_list" else 0
            for item in node.children:
                self.shape.list_items += 1
                marker = f"{number}. " if t == "ordered_list" else "- "
                number += 1
                body = self.blocks(item)
                self.shape.paragraphs -= sum(1 for c in item.children if c.type == "paragraph")
                if not body:
                    continue
                lines = "\n\n".join(body).split("\n")
                pad = " " * len(marker)
                items.append("\n".join([marker + lines[0]] + [pad + ln if ln else ln for ln in lines[1:]]))
            return ["\n".join(items)] if items else []
        if t in ("fence", "code_block"):
            self.shape.code_blocks += 1
            lang = (node.info or "").strip().split()[0] if t == "fence" and (node.info or "").strip() else ""
            lang = re.sub(r"[^\w+#.-]", "", lang.lstrip("{.").split("}")[0])
            body = node.content.rstrip("\n")
            if not body.strip():
                return []
            ticks = "````" if "```" in body else "```"
            return [f"{ticks}{lang}\n{body}\n{ticks}"]
        if t == "blockquote":
            inner = "\n\n".join(self.blocks(node))
            return [_quoted(inner)] if inner.strip() else []
        if t == "table":
            return self._table(node)
        if t == "html_block":
            blocks = _html_blocks(node.content)
            if _MD_IN_HTML.search(node.content):
                # an element marked markdown="1|span|block" (md_in_html) holds Markdown: an image or a link
                # inside leaves its text, not its syntax; any other HTML block is text as written
                blocks = [b if b.startswith("```") else self._inline_markdown(b) for b in blocks]
                blocks = [b for b in blocks if b]
            for b in blocks:
                if b.startswith("```"):
                    self.shape.code_blocks += 1
                else:
                    self.shape.paragraphs += 1
                    self.shape.words += len(LETTER_WORD.findall(b))
            return blocks
        if t == "admonition":
            out: list[str] = []
            kind = str(node.meta.get("tag", "")).strip().lower()
            for child in node.children:
                if child.type == "admonition_title":
                    title = self._inline_of(child)
                    # A bare "!!! note" shows its type as the title: not the writer's words.
                    if title and title.strip().lower() != kind:
                        self.shape.paragraphs += 1
                        out.append(title)
                else:
                    out.extend(self.block(child))
            return out
        if t == "dl":
            out = []
            for child in node.children:
                if child.type == "dt":
                    self.shape.terms += 1
                    term = self._inline_of(child)
                    if term:
                        out.append(term)
                else:
                    out.extend(self.blocks(child))
            return out
        if t in ("footnote_block",):
            return [b for fn in node.children for b in self.blocks(fn)]
        if t in ("front_matter", "hr", "footnote_anchor"):
            return []
        if node.children:
            return self.blocks(node)
        return []

    def _table(self, node: SyntaxTreeNode) -> list[str]:
        rows: list[list[str]] = []
        head = 0
        for section in node.children:
            for tr in section.children:
                cells = [self._inline_of(td).replace("|", "\\|") for td in tr.children]
                rows.append(cells)
                if section.type == "thead":
                    head += 1
        if not rows:
            return []
        self.shape.table_rows += len(rows) - head
        for r in rows:
            self.shape.words += sum(len(LETTER_WORD.findall(c)) for c in r)
        width = max(len(r) for r in rows)
        lines = []
        for i, r in enumerate(rows):
            r = r + [""] * (width - len(r))
            lines.append("| " + " | ".join(r) + " |")
            if i == 0:
                lines.append("|" + "|".join([" --- "] * width) + "|")
        return ["\n".join(lines)]


def normalize_markdown(text: str) -> NormalizedMarkdown:
    """The page as clean normalized Markdown, and its structure (see the module docstring)."""
    writer = _Writer()
    tree = SyntaxTreeNode(_MD.parse(_prepare(text)))
    blocks = [b.strip("\n") for b in writer.blocks(tree)]
    body = "\n\n".join(b for b in blocks if b.strip())
    return NormalizedMarkdown(body + "\n" if body else "", writer.shape)
