"""Community titles in words: the main entities and what they do, and never two communities with one title.

:func:`extractive_title` names a community offline from its graph: its most connected members whose names are
words (not junk by :mod:`core.text.junk`, and made of word tokens), and what links them, taken from the
description of the strongest relation among its leading members when that description is a short clause naming
both and saying something of them ("billing-service depends on Redis", "Cratchits hustled Tiny Tim"), the most
central pair first. Without such a clause it names the leading members ("Scrooge with Bob Cratchit and Fred").
No keyword lists.

:func:`title_rank` orders a community's members for its title: by weighted degree, where a name that is one plain
lower-case word ("name", "version", "latest": a word of the text more than a name) counts a third, and a member
that titles one of the community's pages (a corpus of several titled documents) counts double: on a docs site
"npm update with npm-outdated and npm access" says what a community is about where "latest with URL and git" does
not.

:func:`topic_title` names a community of a corpus of titled pages (a docs site) by the page most about its members
(the writer weighs pages, :meth:`communities.reports.ExtractiveReportWriter._topics`) and its most representative
members: "Build configuration: wheel and sdist". Its parts are whole, so it is never cut mid-phrase.

:func:`unique_titles` makes titles unique across all reports of a generation, deterministically: a report whose
title another report already holds (one of a deeper level, or one kept unchanged) is qualified by its highest
ranked member that the other communities do not hold ("..., with Fezziwig"), else by any member not yet in the
title, else by a number.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Callable, Collection, Iterable, Mapping, Sequence

from core.records import Entity, Relation, Report
from core.text.glue import ENGLISH, OTHER, Glue, glue_for
from core.text.junk import FUNCTION_WORDS, junk_reason

MAX_TITLE_WORDS = 14
MAX_CLAUSE_WORDS = 10  # a longer span is a sentence read out, not a title
_CONJUNCTIONS = {"and", "or", "nor", "as", "plus", "versus"}
_OPEN_ENDS = {"both", "either", "neither", "between", "from"}  # "... for both npm publish" goes on "and npm install"
_TOKEN = re.compile(r"^[^\W_][\w'’.&+-]*$")
_STRIP = ",.;:!?()\"'“”‘’"
_NOT_PUNCTUATION = re.compile(r"[^\w\s" + re.escape(_STRIP) + r"—–-]")


def made_of_words(text: str) -> bool:
    """Whether ``text`` starts with a letter and each of its tokens is a word (a number only after a word)."""
    text = text.strip()
    if not text[:1].isalpha():
        return False
    after_word = False
    for raw in text.split():
        tok = raw.strip(_STRIP)
        if not tok:
            if _NOT_PUNCTUATION.search(raw):
                return False
            continue
        if tok.replace(".", "").replace(",", "").isdigit():
            if not after_word:
                return False
            continue
        if not _TOKEN.match(tok) or not any(ch.isalpha() for ch in tok):
            return False
        reason = junk_reason(tok)
        if reason is not None and reason != "function words":
            return False
        after_word = True
    return True


@lru_cache(maxsize=65_536)  # (asked of the same members' names by every community that holds them)
def title_worthy(name: str) -> bool:
    """Whether an entity name may stand in a title: not junk, and made of words."""
    return junk_reason(name) is None and made_of_words(name)


PLAIN_WORD_SHARE = 1 / 3  # the weight of a one-word lower-case name in the title ranking
PAGE_TITLE_BOOST = 2.0  # the weight of a member that titles one of the community's pages
_PLAIN_WORD = re.compile(r"^[^\W\d_A-Z]+$")


def plain_word(name: str) -> bool:
    """Whether ``name`` is a single lower-case word of letters (no capital, digit, dot, dash or underscore)."""
    return bool(_PLAIN_WORD.match(name)) and name.islower()


def title_rank(entities: Iterable[Entity], degree: Mapping[str, float],
               page_titles: Collection[str] = ()) -> list[Entity]:
    """``entities`` in title order: weighted degree, a plain word's at :data:`PLAIN_WORD_SHARE`, a page title's
    (``page_titles``, casefolded) at :data:`PAGE_TITLE_BOOST`; then mentions, then name."""
    def weight(e: Entity) -> float:
        w = degree.get(e.id, 0.0)
        if plain_word(e.name):
            w *= PLAIN_WORD_SHARE
        if e.name.casefold() in page_titles:
            w *= PAGE_TITLE_BOOST
        return w
    return sorted(entities, key=lambda e: (-weight(e), -len(e.chunk_ids), e.name))


def _folded(text: str) -> str:
    return " ".join(text.casefold().split())


def _name_words(name: str) -> list[str]:
    return [w for w in re.findall(r"[^\W\d_][\w'’-]*", name) if len(w) >= 3 and w[:1].isupper()]


# Patterns of one name each, compiled once (a corpus has more names than the re module's cache holds, and
# compiling them again for every relation cost more than the rest of the titles); each is searched only where
# a plain substring test says it can match.
@lru_cache(maxsize=16_384)
def _whole_word(word: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)" + re.escape(word) + r"(?!\w)")


@lru_cache(maxsize=16_384)
def _any_case(name: str) -> re.Pattern[str]:
    return re.compile(re.escape(name), re.I)


@lru_cache(maxsize=16_384)
def _whole_name_any_case(name: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])", re.I)


def _case_blind(text: str) -> str:
    """``text`` case-folded for a substring test that holds wherever a case-insensitive match does: ``re.I``
    also matches the dotless and dotted i (ı, İ) with i, which case folding keeps apart."""
    return text.casefold().replace("i\u0307", "i").replace("ı", "i")


def _names_in(name: str, line: str) -> bool:
    """Whether ``line`` names ``name``: whole, or by one of its capitalized words (an entity merged from "Scrooge"
    and "Ebenezer Scrooge" is named by either)."""
    return name.casefold() in line.casefold() or any(
        w in line and _whole_word(w).search(line) for w in _name_words(name))


def _clause(description: str, a: str, b: str, names: Sequence[str] = ()) -> str | None:
    """A relation's description as a short clause naming both ends and saying something between them (a word
    that is neither a function word nor part of one of ``names``), or None."""
    line = " ".join(description.split("\n", 1)[0].split()).rstrip(" .;:,")
    if not line or "…" in line or len(line.split()) > MAX_TITLE_WORDS or re.search(r"[,;:]\s", line):
        return None  # (a clause with a comma is a list, or two clauses)
    if not (_names_in(a, line) and _names_in(b, line)):
        return None
    named = {w for n in names for w in re.findall(r"[^\W\d_]+", n.casefold())}
    middle = line
    for n in (a, b):
        if _case_blind(n) in _case_blind(middle):
            middle = _any_case(n).sub(" ", middle)
        for w in _name_words(n):
            if w in middle:
                middle = _whole_word(w).sub(" ", middle)
    # A span naming two more of the members between its ends is a list of them ("devEngines property are cpu os
    # libc runtime and packageManager"), not a clause about the two.
    blind = _case_blind(middle)
    listed = {n.casefold() for n in names if n not in (a, b) and len(n) > 1 and _case_blind(n) in blind
              and _whole_name_any_case(n).search(middle)}
    if len(listed) >= 2:
        return None
    inner = re.findall(r"[^\W\d_][\w'’-]*", middle)
    low = line.casefold()
    last = max((a, b), key=lambda n: low.rfind(n.casefold()))
    before_last = low[:low.rfind(last.casefold())].split()
    conjunctions = sum(w.casefold() in _CONJUNCTIONS for w in inner)
    if len(line.split()) > MAX_CLAUSE_WORDS or conjunctions >= 2 or "or" in (w.casefold() for w in inner) \
            or (before_last and before_last[-1] in _OPEN_ENDS):
        return None  # a list of names ("name and optionally ... onFail"), alternatives, or a span cut mid-phrase
    if len(inner) >= 2 and not any(w.casefold() in FUNCTION_WORDS for w in inner):
        return None  # a run of keywords ("externalReferences licenses license id MIT"), not a clause
    # What links them is said by a word that is not capitalized (a verb, a noun), not a function word, and
    # not part of a name.
    saying = [w for w in re.findall(r"[^\W\d_]+", middle)
              if not w[:1].isupper() and w.casefold() not in FUNCTION_WORDS and w.casefold() not in named]
    if not saying or not made_of_words(line):
        return None
    return line


def extractive_title(ranked: Sequence[Entity], relations: Iterable[Relation], fallback: str,
                     worthy_name: Callable[[str], bool] = title_worthy, glue: Glue = ENGLISH) -> str:
    """The title of a community whose members are ``ranked`` (most central first) and ``relations`` its
    internal relations; ``fallback`` when no member's name is made of words (``worthy_name``); ``glue``: the
    joining words of the corpus's language (:mod:`core.text.glue`)."""
    worthy = [e for e in ranked if worthy_name(e.name)]
    if not worthy:
        return fallback
    lead = {e.id: i for i, e in enumerate(worthy[:4])}
    best: tuple[tuple[int, int, float, str], str] | None = None
    for r in relations:
        if r.source_id in lead and r.target_id in lead:
            i, j = sorted((lead[r.source_id], lead[r.target_id]))
            clause = _clause(r.description, worthy[i].name, worthy[j].name, [e.name for e in ranked])
            rank = (i, j, -r.weight, r.id)  # the most central pair first, then the best supported relation
            if clause is not None and (best is None or rank < best[0]):
                best = (rank, clause)
    if best is not None:
        clause = best[1]
        top = worthy[0].name
        if not _names_in(top, clause) and len(clause.split()) + len(top.split()) < MAX_TITLE_WORDS:
            return f"{clause}, with {top}" if glue is ENGLISH else f"{clause}{glue.lead}{top}"
        return clause
    main = worthy[0].name
    others = [e.name for e in worthy[1:] if not e.name.casefold().startswith(main.casefold())][:2]
    return glue.led(main, others)


def topic_title(topics: Sequence[tuple[str, float]], ranked: Sequence[str], max_members: int = 2,
                glue: Glue = ENGLISH) -> str | None:
    """The title of a community of a corpus of titled pages (a docs site): the page most about its members
    (``topics``: page titles with their weights, heaviest first) and its most
    representative members that the page title does not already name (``ranked``: names that may stand in a title,
    most central first), as "Build configuration: wheel and sdist". Whole names and a whole page title only, so
    the title is never cut mid-phrase; None without a topic."""
    if not topics:
        return None
    lead = " ".join(topics[0][0].split())
    low = lead.casefold()
    extra: list[str] = []
    for name in ranked:
        folded = name.casefold()
        if folded in low or any(folded in x.casefold() or x.casefold() in folded for x in extra):
            continue
        if len(lead.split()) + sum(len(x.split()) for x in extra) + len(name.split()) > MAX_TITLE_WORDS:
            continue
        extra.append(name)
        if len(extra) >= max_members:
            break
    return f"{lead}{OTHER.lead if glue is ENGLISH else glue.lead}{glue.join(extra)}" if extra else lead


def _candidates(title: str, names: Sequence[str], others: set[str], level: int) -> Iterable[str]:
    low = title.casefold()
    fresh = [n for n in names if n.casefold() not in low]
    glue = glue_for([title])
    for n in [n for n in fresh if n.casefold() not in others] + [n for n in fresh if n.casefold() in others]:
        yield f"{title}, with {n}" if glue is ENGLISH else f"{title}{glue.comma}{n}"
    for k in range(2, 1000):  # (numbered: words a corpus may never use, "at level zero", would not be its words)
        yield f"{title} ({k})"


def unique_titles(reports: Sequence[Report], members: Callable[[str], Sequence[str]],
                  fixed: Iterable[str] = ()) -> dict[str, str]:
    """New titles (community id -> title) for the reports of ``reports`` whose title is not unique.

    ``members``: a community's member names that may stand in a title, most central first. ``fixed``: ids of
    reports whose title stays
    as it is when it collides with the others' (already published or of a deeper level); among the rest, every
    report of a colliding group is qualified, in community-id order, so the outcome does not depend on which
    was written first."""
    fixed_ids = set(fixed)
    taken: dict[str, str] = {}
    for r in sorted((r for r in reports if r.community_id in fixed_ids), key=lambda r: r.community_id):
        taken.setdefault(_folded(r.title), r.community_id)
    groups: dict[str, list[Report]] = {}
    for r in reports:
        if r.community_id not in fixed_ids:
            groups.setdefault(_folded(r.title), []).append(r)
    out: dict[str, str] = {}
    fixed_dupes = [r for r in sorted(reports, key=lambda r: r.community_id)
                   if r.community_id in fixed_ids and taken[_folded(r.title)] != r.community_id]
    used = set(taken)
    for key, group in groups.items():
        if len(group) == 1 and key not in taken:
            used.add(key)
    pending = [r for key, group in sorted(groups.items()) for r in group if len(group) > 1 or key in taken]
    for r in sorted(pending + fixed_dupes, key=lambda r: r.community_id):
        rivals = [g for g in groups.get(_folded(r.title), []) if g.community_id != r.community_id]
        if _folded(r.title) in taken and taken[_folded(r.title)] != r.community_id:
            rivals.append(next(x for x in reports if x.community_id == taken[_folded(r.title)]))
        others = {n.casefold() for g in rivals for n in members(g.community_id)}
        for candidate in _candidates(r.title, members(r.community_id), others, r.level):
            if _folded(candidate) not in used:
                used.add(_folded(candidate))
                out[r.community_id] = candidate
                break
    return out
