"""Scripts: which characters are CJK (written without spaces between words), and whether a text is mostly so."""

from __future__ import annotations

import re

CJK_RANGES = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
CJK_CHAR = re.compile(f"[{CJK_RANGES}]")
CJK_RUN = re.compile(f"[{CJK_RANGES}]+")


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds a CJK character (its words are then not delimited by spaces)."""
    return CJK_CHAR.search(text) is not None


def cjk_share(text: str) -> float:
    """The share of ``text``'s letters that are CJK characters (0 for a text without letters)."""
    letters = sum(1 for ch in text if ch.isalpha())
    return len(CJK_CHAR.findall(text)) / letters if letters else 0.0
