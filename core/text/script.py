"""Scripts: which characters are CJK (written without spaces between words), and whether a text is mostly so."""

from __future__ import annotations

import re
import unicodedata

CJK_RANGES = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
CJK_CHAR = re.compile(f"[{CJK_RANGES}]")
CJK_RUN = re.compile(f"[{CJK_RANGES}]+")
HAN_RANGES = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # Chinese characters (of CJK_RANGES, not kana or hangul)
HAN_WORD = re.compile(f"[{HAN_RANGES}]{{2,}}")  # a word of two Chinese characters or more
_HAN = re.compile(f"[{HAN_RANGES}]+")
# The marks that join the parts of a name transliterated into CJK text (约瑟夫·普利斯特里, 卡万・肖特): middle dot,
# bullet, hyphenation point, dot operator, katakana middle dot and its half-width form. Texts write the same
# name with any of them, or with none.
NAME_JOINERS = "\u00b7\u2022\u2027\u22c5\u30fb\uff65"
# A Latin capital, ASCII or full-width, that stands for a part of such a name between two joiners (约翰·F·肯尼迪).
NAME_INITIALS = "A-ZＡ-Ｚ"


def han(word: str) -> bool:
    """Whether ``word`` is Chinese characters only."""
    return _HAN.fullmatch(word) is not None


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds a CJK character (its words are then not delimited by spaces)."""
    return CJK_CHAR.search(text) is not None


def cjk_share(text: str) -> float:
    """The share of ``text``'s letters that are CJK characters (0 for a text without letters)."""
    letters = sum(1 for ch in text if ch.isalpha())
    return len(CJK_CHAR.findall(text)) / letters if letters else 0.0


def _quotation_marks() -> str:
    """The quotation marks of the Unicode data where scripts keep them (Latin-1, general punctuation, CJK
    punctuation, vertical and width forms: " “ ” „ ‘ ’ ‚ « » ‹ › 〝 ＂, and the corner brackets 「」『』 that CJK text
    quotes with), and the apostrophe typed for one. Whether a mark opens or closes a quotation differs by language
    (» opens a Polish or German quotation and closes a French one; “ opens an English one and closes a German one),
    so it is read from where it stands: :func:`core.text.names.opening_quote`."""
    marks = [chr(cp) for cp in (*range(0x20, 0x3040), *range(0xFE30, 0xFFF0))
             if "QUOTATION MARK" in unicodedata.name(chr(cp), "") or "CORNER BRACKET" in unicodedata.name(chr(cp), "")]
    return "'" + "".join(marks)


QUOTATION_MARKS = _quotation_marks()
