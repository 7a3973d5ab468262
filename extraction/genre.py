"""Which kind of text a passage is, to choose the entity types an LLM is asked to extract from it.

Technical notes are recognised by the shapes of identifiers, not by a word list: ``snake_case`` and dotted keys,
paths, ``camelCase``, error and status codes, version numbers, code punctuation. A passage with at least
:data:`TECHNICAL_DENSITY` such tokens a word is technical; anything else is prose. Prose gets people, places,
organizations and events; technical notes get services, errors and settings (and the people and organizations
that own them). ``extraction.entity_types`` set in the settings overrides the choice.
"""

from __future__ import annotations

import re
from typing import Literal, Sequence

Genre = Literal["prose", "technical"]
PROSE_TYPES = ("person", "place", "organization", "event")
TECHNICAL_TYPES = ("service", "error", "setting", "person", "organization")
TECHNICAL_DENSITY = 0.025

_SIGNALS = re.compile(
    r"`"                                            # inline code
    r"|\b[A-Za-z][A-Za-z0-9]*(?:[_.][A-Za-z0-9]+)+\b"  # snake_case, dotted.keys, file.names
    r"|\b\w+/\w+"                                   # paths, routes
    r"|\b[a-z]+[A-Z][A-Za-z0-9]+\b"                 # camelCase
    r"|\b[A-Z]{2,}[-_ ]?\d{2,}\b"                   # HTTP 504, ERR-42
    r"|\bv?\d+\.\d+(?:\.\d+)*\b"                    # versions
    r"|[=<>{}]|:\d{2,5}\b"                          # code punctuation, ports
)
_WORD = re.compile(r"\w+")


def genre_of(text: str) -> Genre:
    """``technical`` when identifier-shaped tokens are dense enough, else ``prose``."""
    words = len(_WORD.findall(text))
    if not words:
        return "prose"
    return "technical" if len(_SIGNALS.findall(text)) / words >= TECHNICAL_DENSITY else "prose"


def entity_types_for(text: str, configured: Sequence[str] = ()) -> tuple[Genre, tuple[str, ...]]:
    """The passage's genre and the entity types to ask for: ``configured`` when set, else the genre's."""
    genre = genre_of(text)
    if configured:
        return genre, tuple(configured)
    return genre, TECHNICAL_TYPES if genre == "technical" else PROSE_TYPES
