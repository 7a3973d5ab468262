"""Words for matching names in text, in every script: how a question's spans are tried against known names.

A word is a run of letters, digits and the joiners names hold (``. ' ’ -``), except in scripts written without
spaces between words (Chinese, Japanese, Korean), where each character is a word: a name of two characters is
then found as two words side by side, wherever it sits in a run (调度器 inside 调度器负责把任务分配给工作节点).
Words are joined back with a space, but CJK characters side by side are joined directly, so a span reads as the
name is written. The graph walk's linking, the entity lexicon, the title hop and the reader share these.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.text.script import CJK_CHAR, CJK_RANGES, NAME_JOINERS

_WORD = re.compile(rf"[{CJK_RANGES}]|[^\W{CJK_RANGES}]+(?:[.'’\-][^\W{CJK_RANGES}]+)*[.'’\-]?", re.UNICODE)
# The marks joining a transliterated name's parts (:data:`core.text.script.NAME_JOINERS`) are written with several
# code points, or left out, for the same name, so they are no word of it, and a name's key drops them
# (:func:`closed`): spans, joined without them, then meet the name however the text marks its parts.
_OPEN = re.compile(rf"(?<=[{CJK_RANGES}])[\s{NAME_JOINERS}]+(?=[{CJK_RANGES}])")


@dataclass(frozen=True, slots=True)
class Word:
    text: str
    start: int
    end: int
    cjk: bool


def words(text: str) -> list[Word]:
    """The words of ``text`` with their offsets (each CJK character is one)."""
    return [Word(m.group(0), m.start(), m.end(), CJK_CHAR.fullmatch(m.group(0)) is not None)
            for m in _WORD.finditer(text) if m.group(0) not in NAME_JOINERS]


def closed(text: str) -> str:
    """``text`` without the spaces and name joiners between two CJK characters: the form :func:`join` gives a
    span, so a key made with it matches 约瑟夫·普利斯特里 written as 约瑟夫•普利斯特里 or 约瑟夫普利斯特里."""
    return _OPEN.sub("", text)


def join(ws: list[Word]) -> str:
    """Words as one span: a space between them, none between two CJK characters."""
    out: list[str] = []
    for i, w in enumerate(ws):
        if i and not (w.cjk and ws[i - 1].cjk):
            out.append(" ")
        out.append(w.text)
    return "".join(out)


def word_count(text: str) -> int:
    """How many words ``text`` is (a name's length in the units spans are tried in)."""
    return len(words(text))
