"""Where a full stop ends no sentence: the one abbreviation model the sentence splitter uses
(:func:`extraction.offline.split_sentences`, under both the relations of the offline extractor and the quotes of
reports and answers).

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
    nxt = after.lstrip("\"'“‘([ ")
    if "\n" not in gap and nxt[:1].islower():
        return True
    tokens = before.split()
    token = tokens[-1].lstrip("\"'“‘([") if tokens else ""
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
