"""Text folding: the one way Strata compares text loosely (lower case, accents and compatibility forms removed),
so that "Aschenbrodel" finds "Aschenbrödel" and a full-width "ＡＢＣ" finds "abc"."""

from __future__ import annotations

import unicodedata
from functools import lru_cache


@lru_cache(maxsize=65_536)
def fold(text: str) -> str:
    """``text`` case-folded, in compatibility form, without combining marks (accents). Characters without a
    decomposition (Chinese, Polish ł) are kept as they are."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))
