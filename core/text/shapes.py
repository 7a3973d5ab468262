"""The shapes of values in text, read the same way in every language: numerals, proper names, paths and code
spans. A reader asks whether a passage holds the kind of value a question wants; these say what a text holds,
never by naming a word of any language.

- A numeral is a run of digits (any script's decimal digits: ``308``, ``1,5``, ``２０``), or, in Chinese text,
  what the segmenter tags as a numeral (四次, 二十).
- A name is a run of capitalized words (Latin, Greek, Cyrillic scripts: case marks names) of two letters or more;
  a word that opens a sentence counts only with a capitalized word after it ("Jan Kowalski kieruje ..."), since
  every sentence opens with a capital. In Chinese text, a name is what the segmenter tags as a proper noun
  (:mod:`core.text.cjk`).
- A path has at least two separators (``{prefix}/lib/node_modules``, ``C:\\Users``), or starts at the home
  folder (``~/.npmrc``); a code span is text between backticks.
"""

from __future__ import annotations

import re
from functools import lru_cache

from core.text import cjk
from core.text.fold import fold
from core.text.script import CJK_RANGES, has_cjk

_DIGITS = re.compile(r"\d+(?:[.,:/]\d+)*")
_WORD = re.compile(rf"[^\W\d_{CJK_RANGES}][^\W_{CJK_RANGES}]*(?:['’.-][^\W_{CJK_RANGES}]+)*")
_SENTENCE_END = re.compile(r"(?:[.!?…:;]|\n)[\"'”’)\]]*\s*$")
_PATH = re.compile(r"(?:[\w{}~$%.-]*[/\\][\w{}$%.-]+){2,}|~[/\\][\w.-]+|\b[A-Z]:\\\w")
_LINK = re.compile(r"\]\([^)\s]*\)|\b(?:https?|ftp)://\S+|\bwww\.\S+")
_CODE = re.compile(r"`([^`\n]+)`")


def numerals(text: str) -> frozenset[str]:
    """The numerals in ``text``, as written."""
    found = {m.group(0) for m in _DIGITS.finditer(text)}
    if has_cjk(text):
        found.update(cjk.numerals(text))
    return frozenset(found)


def _opens_sentence(text: str, start: int) -> bool:
    before = text[:start]
    return not before.strip() or _SENTENCE_END.search(before) is not None


@lru_cache(maxsize=16_384)
def names(text: str) -> tuple[str, ...]:
    """The proper names in ``text``, each once, in order of first occurrence."""
    out: list[str] = []
    if has_cjk(text):
        out.extend(n.text for n in cjk.names(text))
    words = list(_WORD.finditer(text))
    i = 0
    while i < len(words):
        w = words[i]
        if not w.group(0)[:1].isupper():
            i += 1
            continue
        j = i + 1
        while (j < len(words) and words[j].group(0)[:1].isupper()
               and not text[words[j - 1].end():words[j].start()].strip()):
            j += 1
        name = text[w.start():words[j - 1].end()]
        # A lone capital is a letter, not a name ("How do I ...", "plan B"): a name has two letters at least.
        if (j - i > 1 or not _opens_sentence(text, w.start())) and sum(ch.isalpha() for ch in name) >= 2:
            out.append(name)
        i = j
    return tuple(dict.fromkeys(out))


def paths(text: str) -> frozenset[str]:
    """Paths in ``text`` outside link targets (a link's target is where it points, not a place it names)."""
    return frozenset(m.group(0) for m in _PATH.finditer(_LINK.sub(" ", text)))


def code_spans(text: str) -> frozenset[str]:
    return frozenset(m.group(1) for m in _CODE.finditer(text))


def new_values(values: frozenset[str] | tuple[str, ...], question: str) -> list[str]:
    """The values that ``question`` does not already hold (compared folded): what an answer adds."""
    asked = fold(question)
    return [v for v in values if fold(v) not in asked]
