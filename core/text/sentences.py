"""The one sentence splitter (:func:`split_sentences`, under both the relations of the offline extractor and the
quotes of reports and answers), and where a full stop ends no sentence: its abbreviation model.

A splitter cuts after ``.`` followed by a space; this module says when such a cut falls inside a sentence:

- a lower-case word follows on the same line ("from 7 a.m. to 3 a.m.", "approx. five", "w 1611 r. król");
- an abbreviation that never ends a sentence precedes it ("e.g. Redis", "np. Kraków", "m.in. Gdańsk");
- a title precedes a capitalized word ("Dr. Watson", "ul. Marszałkowska", "św. Jan");
- a numbering word precedes a number ("No. 5", "Vol. II", "s. 12", "art. 3");
- an initial precedes another initial or a capitalized word that is not a common one ("Iain M. Banks",
  "J. R. R. Tolkien"; not "vitamin C. The"), or a dotted abbreviation precedes such a word ("U.S. Route 52";
  not "in the U.S. The").

The abbreviations are per language (English, Polish) and compared in lower case; the tables are data, not rules
about any one text.
"""

from __future__ import annotations

import re
from typing import Sequence

from core.text.markup import prose_view
from core.text.names import COMMON_WORDS
from core.text.script import QUOTATION_MARKS

# (never ends a sentence, title before a name, numbering before a number), per language
_TABLES: dict[str, tuple[frozenset[str], frozenset[str], frozenset[str]]] = {
    "en": (frozenset({"e.g.", "i.e.", "cf.", "viz.", "vs.", "approx.", "ca.", "c.", "fl.", "resp.", "incl."}),
           frozenset({"mr.", "mrs.", "ms.", "dr.", "st.", "prof.", "gen.", "sen.", "rep.", "gov.", "capt.", "lt.",
                      "col.", "sgt.", "rev.", "hon.", "mt.", "fr.", "messrs.", "mme.", "mlle."}),
           frozenset({"no.", "nos.", "fig.", "figs.", "vol.", "vols.", "p.", "pp.", "ch.", "chap.", "sec.", "eq.",
                      "art.", "op.", "tab."})),
    "pl": (frozenset({"np.", "m.in.", "tzw.", "tj.", "ok.", "wg.", "pt.", "ur.", "zm.", "ang.", "łac.", "niem.",
                      "franc.", "gr.", "ros.", "wł.", "właśc.", "zob.", "por.", "tzn."}),
           frozenset({"ul.", "al.", "pl.", "os.", "św.", "ks.", "bp.", "abp.", "kard.", "płk.", "ppłk.", "gen.",
                      "mjr.", "kpt.", "por.", "prof.", "dr.", "doc.", "inż.", "mgr.", "hab.", "woj.", "pow.",
                      "gm.", "im."}),
           frozenset({"nr.", "s.", "t.", "poz.", "ust.", "pkt.", "art.", "rozdz.", "rys.", "tab.", "zał."})),
}
NEVER_ENDS = frozenset().union(*(t[0] for t in _TABLES.values()))
TITLES = frozenset().union(*(t[1] for t in _TABLES.values()))
NUMBERINGS = frozenset().union(*(t[2] for t in _TABLES.values()))

_INITIAL = re.compile(r"[A-Z]\.")
_DOTTED = re.compile(r"(?:[A-Z]\.){2,}")  # "U.S.", "D.C.", "U.K."
_NUMBER_NEXT = re.compile(r"\d|[IVXLC]+\b")
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*", re.UNICODE)


def cut_inside(before: str, gap: str, after: str, common: frozenset[str] = frozenset()) -> bool:
    """Whether a cut between ``before`` (ending in a full stop) and ``after``, with ``gap`` between them (spaces
    and at most one line break), falls inside a sentence (see the module docstring). ``common``: lower-case words
    that are never names (an initial before one of them ends its sentence: "vitamin C. The ...")."""
    if not before.endswith(".") or gap.strip() or gap.count("\n") > 1:
        return False
    nxt = after.lstrip("([ " + QUOTATION_MARKS)
    if "\n" not in gap and nxt[:1].islower():
        return True
    tokens = before.split()
    token = tokens[-1].lstrip("([" + QUOTATION_MARKS) if tokens else ""
    low = token.lower()
    initial = _INITIAL.fullmatch(token) is not None  # "C." is an initial, not the abbreviation "c." (circa)
    if low in NEVER_ENDS and not initial:
        return True
    if low in NUMBERINGS and not initial:
        return _NUMBER_NEXT.match(nxt) is not None
    word = _WORD.match(nxt)
    if word is None or not nxt[:1].isupper():
        return False
    if low in TITLES and not initial:
        return True
    if _DOTTED.fullmatch(token) is not None:
        return word.group(0).lower() not in common
    if not initial:
        return False
    return _INITIAL.match(nxt) is not None or word.group(0).lower() not in common


# A sentence ends at . ! ? (:func:`cut_inside` judges abbreviations), at CJK full stops, blank lines and list items.
_SENT_SPLIT = re.compile(
    r"(?<=[.!?。！？])[\"'”’)\]]*\s+|\n\s*\n|\n(?=[#*\-] )|\n(?=[ \t]*\|)|(?<=[。！？；])")


def _trim(text: str, view: str, s: int, e: int) -> tuple[int, int] | None:
    """A span without the whole lines the view blanks (code, front matter) at either end, nor outer spaces."""
    while s < e:
        nl = view.find("\n", s, e)
        if nl < 0 or view[s:nl].strip():
            break
        s = nl + 1
    while s < e:
        nl = view.rfind("\n", s, e)
        if nl < 0 or view[nl:e].strip():
            break
        e = nl
    while s < e and text[s].isspace():
        s += 1
    while e > s and text[e - 1].isspace():
        e -= 1
    return (s, e) if view[s:e].strip() else None


def title_line(text: str, title: object) -> int:
    """The end of ``text``'s first line when that line is the document's ``title`` (its metadata title: a row
    loaded with a ``title`` field opens with it on a line of its own), else 0. Call it on a document's opening
    text only."""
    if not isinstance(title, str) or not title.strip():
        return 0
    end = text.find("\n")
    return end if end > 0 and text[:end].strip() == title.strip() else 0


def split_sentences(text: str, boilerplate: Sequence[tuple[int, int]] = ()) -> list[tuple[int, int]]:
    """Sentence spans of ``text`` (ends of ., !, ?, CJK full stops and semicolons, blank lines, list items,
    heading lines and table rows), found on its prose view: code blocks, front matter and licence boilerplate
    (``boilerplate``: spans found in the whole document) hold no sentence. A full stop after an abbreviation or an
    initial ends none (:func:`core.text.sentences.cut_inside`). Spans are of ``text`` itself, trimmed."""
    view = prose_view(text, keep_structure=True, extra=boilerplate)
    spans, pos = [], 0
    for m in _SENT_SPLIT.finditer(view):
        if m.start() > pos:
            spans.append((pos, m.start()))
        pos = m.end()
    if pos < len(view):
        spans.append((pos, len(view)))
    out: list[tuple[int, int]] = []
    for s, e in spans:
        lead = len(view[s:e]) - len(view[s:e].lstrip())
        nl = view.find("\n", s + lead, e)
        parts = [(s, nl), (nl + 1, e)] if view[s + lead:s + lead + 1] == "#" and nl >= 0 else [(s, e)]
        for ps, pe in parts:  # a heading line is a unit of its own
            t = _trim(text, view, ps, pe)
            if not t:
                continue
            if out and cut_inside(text[out[-1][0]:out[-1][1]], text[out[-1][1]:t[0]], text[t[0]:t[1]], COMMON_WORDS):
                out[-1] = (out[-1][0], t[1])  # an abbreviation or an initial, not a sentence end: one sentence
            else:
                out.append(t)
    return out
