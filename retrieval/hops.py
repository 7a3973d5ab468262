"""The second hop by title: passages that the first passage names, moved up after the first hop.

A two-hop question names its first passage ("the film Polish-Russian War", "the soundtrack of Natural Born
Killers"); the passage it needs next is the one that the first *names*: the film's passage says who directed it,
and that director's own page is titled by that name. The graph walk reaches it through the shared entity only
when the extractor found that name whole ("Trent Reznor of Nine Inch Nails" is one entity, not a mention of
"Trent Reznor"), and the walk's mass, spread from every entity the question names, often leaves it just below
the top five. This step reads the link where it is written:

- the **first hop** is the top passage, and every other passage among the top ``FIRST_HOP_DEPTH`` whose
  document's title the question names (a comparison names both of its passages);
- a first-hop passage **names** a document when its text holds that document's title (the title without a
  trailing disambiguator, "Steve Johnson (American football, born 1956)" -> "Steve Johnson"), word for word,
  its capitalized words capitalized. Titles that cannot name one thing are never matched: shorter than four
  characters, without a letter (a year), made only of stop words, shared by more than ``MAX_SHARED`` documents,
  or an entity mentioned in more than the walk's ``max_entity_share`` of the chunks; a one-word title does not
  count where it opens a sentence ("Configuration is read from ..." does not name the page "Configuration");
- the order becomes: the first-hop passages (in the fused order), then for each of them the best-ranked
  ``per_hop`` passages of other documents that it names, among the first ``window`` candidates, then the rest.

Measured with bench.multihop (offline, MiniLM), R@5 / all@8: HotpotQA dev 0.875 / 0.87 -> 0.940 / 0.94, MuSiQue
dev 0.722 / 0.57 -> 0.743 / 0.59. In a first trial (over the top 30 fused passages, without the capitals rule),
counting a candidate that names the first passage (the link backwards) as well gave 0.92 / 0.90 and 0.728 / 0.57
against 0.93 / 0.92 and 0.738 / 0.59 without it.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from core.text.script import CJK_CHAR, CJK_RANGES

FIRST_HOP_DEPTH = 5  # a passage titled by a name in the question counts as a first hop from this deep
MAX_SHARED = 3  # a title shared by more documents than this names none of them
MIN_TITLE_CHARS = 4  # a CJK character counts as two: it writes a syllable (梵文, 歐洲 are titles)

_DISAMBIGUATOR = re.compile(r"\s*\([^()]*\)\s*$")
_WORDS = re.compile(rf"[{CJK_RANGES}]|[^\W{CJK_RANGES}]+")  # a CJK character is a word of its own


def base_title(title: str) -> str:
    """``title`` without a trailing parenthesized disambiguator, spaces collapsed (NFKC)."""
    title = " ".join(unicodedata.normalize("NFKC", title).split())
    return _DISAMBIGUATOR.sub("", title).strip() or title


def title_words(title: str) -> tuple[str, ...]:
    """The words of ``title`` (NFKC) as a text is searched for them."""
    return tuple(_WORDS.findall(unicodedata.normalize("NFKC", title)))


class Words:
    """A text's words (NFKC; anything that is not a letter, digit or underscore separates them), searched for a
    title's words in order, not inside longer words."""

    def __init__(self, text: str) -> None:
        text = unicodedata.normalize("NFKC", text)
        found = list(_WORDS.finditer(text))
        self.words = [m.group(0) for m in found]
        self.lower = " " + " ".join(w.lower() for w in self.words) + " "
        # Words that open a sentence (the text's first, or one after . ! ? : or a line break): capitalized
        # whatever they are.
        ends = [0] + [m.end() for m in found[:-1]]
        self.opening = [i == 0 or any(ch in ".!?:\n" for ch in text[end:m.start()])
                        for i, (end, m) in enumerate(zip(ends, found))]

    def holds(self, title: tuple[str, ...], any_case: bool = False) -> bool:
        """Whether the words of ``title`` occur here in order; unless ``any_case``, a capitalized word of the title
        must be capitalized here ("Charmed" is not "charmed"), while a lowercase one may open a sentence; a title
        of one word does not count where it opens a sentence (any word is capitalized there)."""
        if not title:
            return False
        key = " " + " ".join(w.lower() for w in title) + " "
        at = self.lower.find(key)
        while at >= 0:
            if any_case:
                return True
            i = self.lower.count(" ", 0, at)  # the words before the match: each follows one space
            if (all(not w[:1].isupper() or self.words[i + j][:1].isupper() for j, w in enumerate(title))
                    and not (len(title) == 1 and self.opening[i])):  # "Configuration is ...": any word opens so
                return True
            at = self.lower.find(key, at + 1)
        return False


def names(text: str, title: str, any_case: bool = False) -> bool:
    """Whether ``text`` names ``title`` word for word (see :meth:`Words.holds`)."""
    return Words(text).holds(title_words(title), any_case)


@dataclass(frozen=True, slots=True)
class Hop:
    """A passage moved up (``row``) because the first-hop passage ``named_by`` names its document's title."""

    row: int
    named_by: int
    title: str


class TitleHops:
    """The titles of an index's rows, and which of them can name one document (see the module docstring)."""

    def __init__(self, titles: Sequence[str | None], documents: Sequence[str], texts: Sequence[str],
                 is_stop: Callable[[str], bool], mentions: Mapping[str, int], n_chunks: int,
                 max_entity_share: float) -> None:
        """``titles``, ``documents``, ``texts``: per row, its document's title (None: untitled), document id and
        text; ``mentions``: how many chunks mention each title (by its base title, when known)."""
        self.texts = texts
        self.titles: list[str | None] = []
        docs_of: dict[str, set[str]] = {}
        bases: dict[str, str] = {}  # raw title -> base title: a document's chunks share one
        for title, doc in zip(titles, documents):
            base = None
            if title:
                base = bases.get(title)
                if base is None:
                    base = bases[title] = base_title(title)
            self.titles.append(base)
            if base:
                docs_of.setdefault(base.casefold(), set()).add(doc)
        self.documents = list(documents)
        limit = max(MAX_SHARED, max_entity_share * n_chunks)
        self.linkable: dict[str, bool] = {}
        for base_cf, docs in docs_of.items():
            plain = "".join(_WORDS.findall(base_cf))
            weight = len(plain) + sum(1 for ch in plain if CJK_CHAR.match(ch))
            self.linkable[base_cf] = (weight >= MIN_TITLE_CHARS and len(docs) <= MAX_SHARED
                                      and any(ch.isalpha() for ch in plain)  # not a year or a number
                                      and not is_stop(base_cf) and mentions.get(base_cf, 0) <= limit)
        self._words: dict[str, tuple[str, ...]] = {}  # base title -> its words, for the titles looked up

    def title_of(self, row: int) -> str | None:
        """The row's base title when it can name one document, else None."""
        t = self.titles[row] if 0 <= row < len(self.titles) else None
        return t if t and self.linkable.get(t.casefold(), False) else None

    def _title_words(self, title: str) -> tuple[str, ...]:
        words = self._words.get(title)
        if words is None:
            words = self._words[title] = title_words(title)
        return words

    def first_hop(self, question: str, order: Sequence[int]) -> list[int]:
        """The top row, and the rows among the first ``FIRST_HOP_DEPTH`` whose title the question names (one a
        document), in ``order``'s order."""
        if not order:
            return []
        asked = Words(question)
        hop, docs = [order[0]], {self.documents[order[0]]}
        for row in order[1:FIRST_HOP_DEPTH]:
            title = self.title_of(row)
            # In any case: people type questions lowercase.
            if title and self.documents[row] not in docs and asked.holds(self._title_words(title), any_case=True):
                hop.append(row)
                docs.add(self.documents[row])
        return hop

    def promote(self, question: str, order: Sequence[int], per_hop: int, window: int
                ) -> tuple[list[int], list[Hop]]:
        """``order`` with the first hop first, then the passages it names, then the rest (see the module
        docstring), and the named passages that moved up."""
        order = list(order)
        if per_hop <= 0 or not order:
            return order, []
        first = self.first_hop(question, order)
        taken_docs = {self.documents[r] for r in first}
        picked: list[Hop] = []
        for anchor in first:
            text = Words(self.texts[anchor])
            n = 0
            for row in order[:window]:
                if n >= per_hop:
                    break
                doc = self.documents[row]
                if doc in taken_docs:
                    continue
                title = self.title_of(row)
                if title and text.holds(self._title_words(title)):
                    picked.append(Hop(row, anchor, title))
                    taken_docs.add(doc)
                    n += 1
        head = first + [h.row for h in picked]
        placed = set(head)
        new = head + [r for r in order if r not in placed]
        moved = [h for h in picked if new.index(h.row) < order.index(h.row)]
        return new, moved
