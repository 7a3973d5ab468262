"""A text cut to a length for display (a label, a bar's caption, a table cell's preview): on one line, ended at a
word's end when one falls in the second half of the cut (else at a character: a long identifier, Chinese), with
an ellipsis."""

from __future__ import annotations

ELLIPSIS = "\u2026"


def shorten(text: str, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters (the ellipsis counted)."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[: max(0, limit - 1)]
    space = cut.rfind(" ")
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip() + ELLIPSIS
