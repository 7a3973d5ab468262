"""A document's kind, read from its structure: changelog, reference, glossary, index page, or guide.

Docs sites mix pages that tell (tutorials, guides), pages to look things up in (references), lists of changes
(changelogs, release notes), glossaries and index pages that mostly link elsewhere. They weigh differently in an
answer about the whole site: a changelog names every feature once per release and, read as prose, would make the
largest communities of the graph. The kind is read from the page's shape as the Markdown parser counted it
(:class:`extraction.markdown_text.MarkdownShape`), never from its words:

- ``changelog``: the page's title ends with a version or a date (release notes: "Hatch v1.8.0"; "OAuth 2.0
  Client Credentials" documents a protocol's version) and the page has no reference's shape (a page titled
  "Python 3.12" over tables of options documents it), or most of its section headings, or of one level's, name
  a version or a date (a release's own "Fixed" and "Added" sit a level below) and list items outnumber
  paragraphs;
- ``glossary``: definition-list terms make up a large part of the page;
- ``index``: most of its words are link texts, or it is short and mostly links;
- ``reference``: many section headings are code (an option, a command), or tables and code blocks outnumber
  paragraphs and list items together;
- ``guide``: anything else (tutorials, how-tos, explanations).

The kind is recorded in each document's metadata (``kind``), so ``metadata_filter`` can select it
(``{"kind": "guide"}``); a ``kind`` given in the front matter or a sidecar wins. :data:`DEFAULT_WEIGHTS` is how
much each kind counts when communities and answers about the whole corpus are ranked (settable as
``communities.kind_weights``; :func:`core.settings.kind_weight` reads it, so the question path needs no
module of extraction/).
"""

from __future__ import annotations

from typing import Literal

from core.settings import DEFAULT_KIND_WEIGHTS
from extraction.markdown_text import MarkdownShape, names_release

Kind = Literal["changelog", "reference", "glossary", "index", "guide"]
KINDS: tuple[Kind, ...] = ("guide", "reference", "changelog", "glossary", "index")
DEFAULT_WEIGHTS = DEFAULT_KIND_WEIGHTS  # how much a passage of each kind counts (settable: communities.kind_weights)

CHANGELOG_HEADING_SHARE = 0.5  # of section headings (of the page, or of one level) naming a version or a date
MIN_RELEASES_AT_LEVEL = 4  # headings of one level naming a version or a date, for that level to make a changelog
MIN_CHANGELOG_HEADINGS = 2
GLOSSARY_TERM_SHARE = 0.4  # of blocks that are definition-list terms
MIN_GLOSSARY_TERMS = 5
INDEX_LINK_SHARE = 0.5  # of words in link texts
REFERENCE_CODE_HEADING_SHARE = 0.4
MIN_REFERENCE_HEADINGS = 3


def kind_of(shape: MarkdownShape, title: str | None = None) -> Kind:
    """The kind of a page of this shape (see the module docstring); ``title``: its title from its metadata, when
    it has one (a page titled by its front matter has no level-1 heading)."""
    reference = (shape.headings >= MIN_REFERENCE_HEADINGS
                 and shape.code_headings >= REFERENCE_CODE_HEADING_SHARE * shape.headings
                 or shape.table_rows + shape.code_blocks > shape.paragraphs + shape.list_items)
    # (a title ending with a version over a reference's tables documents that version: "Python 3.12", its options)
    if ((title and names_release(title)) or shape.version_title) and not reference:
        return "changelog"
    if _release_sections(shape) and shape.list_items > shape.paragraphs:
        return "changelog"
    if shape.terms >= MIN_GLOSSARY_TERMS and shape.terms >= GLOSSARY_TERM_SHARE * shape.blocks:
        return "glossary"
    if shape.words and shape.link_words >= INDEX_LINK_SHARE * shape.words:
        return "index"
    return "reference" if reference else "guide"


def _release_sections(shape: MarkdownShape) -> bool:
    """Whether the page's sections are releases: at least :data:`MIN_CHANGELOG_HEADINGS` of its section headings
    and :data:`CHANGELOG_HEADING_SHARE` of them name a version or a date, or, at some heading level, at least
    :data:`MIN_RELEASES_AT_LEVEL` and that share of the level's headings do. Read per level too because a
    release's own sections ("Fixed", "Added", a feature it describes) sit a level below its heading and outnumber
    the releases on a page of long release notes; a level needs more releases than an upgrade guide's few target
    versions ("Upgrading to 2.0", "Upgrading to 3.0", each with its sections)."""
    versions = shape.level_version_headings
    total = sum(versions.values())
    if total >= MIN_CHANGELOG_HEADINGS and total >= CHANGELOG_HEADING_SHARE * shape.headings:
        return True
    return any(n >= MIN_RELEASES_AT_LEVEL and n >= CHANGELOG_HEADING_SHARE * shape.level_headings[level]
               for level, n in versions.items())


