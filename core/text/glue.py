"""The few joining words a generated title or summary needs, in the corpus's language.

A community's title joins its members' names ("Scrooge with Bob Cratchit and Fred"). Those joining words are
English: a Chinese or Polish corpus gets punctuation instead ("调度器：工作节点、心跳", "Warszawa: Kraków,
Gdańsk"), which reads in any language, rather than English words between its own names (and rather than Polish
prepositions, which would need the names in another case). The language is the one the corpus's text is
written in (:func:`core.text.language.detect_language` over the community's passages).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from core.text.language import detect_language
from core.text.script import has_cjk


@dataclass(frozen=True, slots=True)
class Glue:
    lead: str  # between a leading name and the names that follow it
    last: str  # before the last name of a list
    comma: str  # between the other names of a list

    def join(self, names: Sequence[str]) -> str:
        """``names`` as a list: "A, B and C", "A、B、C"."""
        if len(names) <= 1:
            return "".join(names)
        return self.comma.join(names[:-1]) + self.last + names[-1]

    def led(self, main: str, others: Sequence[str]) -> str:
        """``main`` followed by ``others``: "A with B and C", "A：B、C"."""
        return f"{main}{self.lead}{self.join(others)}" if others else main


ENGLISH = Glue(" with ", " and ", ", ")
UNSPACED = Glue("：", "、", "、")  # Chinese, Japanese and Korean punctuation
OTHER = Glue(": ", ", ", ", ")


def glue_for(texts: Sequence[str]) -> Glue:
    """The glue for a community whose passages (or names) are ``texts``."""
    sample = " ".join(t[:400] for t in texts[:8])
    if has_cjk(sample) and detect_language(sample) in ("zh", "ja", "ko"):
        return UNSPACED
    language = detect_language(sample)
    return ENGLISH if language in ("en", "und") else OTHER
