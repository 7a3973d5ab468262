"""A name and its longer forms in one document: "Alex", "Alex Mercer" and "Agent Alex Mercer" are one entity.

Within a document, a name-like mention whose words stand, in the same order, inside longer names of the same
document is an alias of the longest of them, provided that one holds all the others ("Alex" and "Agent
Mercer" in "Agent Alex Mercer"). When no one holds them all ("Cratchit" in "Bob Cratchit" and "Mrs.
Cratchit"), the short name is ambiguous and stays an entity of its own. A possessive phrase or a name joined
by "of" names something else ("Bob Cratchit's wife", "the Spirit of Tiny Tim"), and a short form made of
words the document also writes in lower case is common words capitalized ("Present", "Time").

The merges are a function of the document's stored extractions only, recomputed on every run in chunk-id order
(:mod:`extraction.canonical`): when the evidence goes (the document no longer has the longer form), the next
run no longer merges, and the short name is an entity again. :func:`alias_merges` lists them as
:class:`AliasMerge` records, so what was merged, in which document and into what, can be shown and checked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from core.records import document_of
from core.text.keys import PROSE_NAME_TYPES
from extraction.types import ChunkExtraction

# Types whose mentions are names of people, places, organizations and the like (an identifier is never an
# alias of a longer identifier: max_connections is not max_connections_per_host).
ALIAS_TYPES = PROSE_NAME_TYPES


@dataclass(frozen=True, slots=True)
class AliasMerge:
    """In ``document_id``, mentions normalized to ``alias`` belong to the entity of ``canonical``."""

    document_id: str
    alias: str
    canonical: str


def _inside(short: tuple[str, ...], long: tuple[str, ...]) -> bool:
    """Whether the words of ``short`` stand in ``long`` in the same order ("Agent Mercer" in "Agent Alex
    Mercer"), ``long`` being longer."""
    if len(short) >= len(long):
        return False
    it = iter(long)
    return all(w in it for w in short)


def _stem(word: str) -> str:
    """A word without a plural ``s`` ("Agents Alex Mercer" is a form of "Agent Alex Mercer")."""
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def aliases_in(keys: Iterable[str]) -> dict[str, str]:
    """``alias key -> canonical key`` among the normalized name keys of one document. Keys whose words differ
    only by plural endings are one form (the first of them in sorted order stands for the others)."""
    forms: dict[tuple[str, ...], list[str]] = {}
    for k in sorted(set(keys)):
        if k:
            forms.setdefault(tuple(_stem(w) for w in k.split()), []).append(k)
    out: dict[str, str] = {}
    for group in forms.values():
        for k in group[1:]:
            out[k] = group[0]
    words = {group[0]: ws for ws, group in forms.items()}
    having: dict[str, set[str]] = {}  # word -> the keys holding it (a container holds the short form's first word)
    for key, ws in words.items():
        for w in ws:
            having.setdefault(w, set()).add(key)
    for key, ws in words.items():
        if not any(any(ch.isalpha() for ch in w) for w in ws):
            continue
        containers = sorted((k for k in having[ws[0]] if _inside(ws, words[k])), key=lambda k: (len(words[k]), k))
        # "Bob Cratchit's wife" and "the Spirit of Tiny Tim" are someone else than Bob Cratchit and Tiny Tim.
        containers = [k for k in containers if "'s " not in k and not (set(words[k]) - set(ws)) & _CONNECTORS]
        if not containers:
            continue
        top = containers[-1]
        if all(_inside(words[k], words[top]) for k in containers[:-1]):
            out[key] = top
    # A form merged into a form that is itself merged goes to the end of the chain.
    return {k: out.get(v, v) for k, v in out.items() if out.get(v, v) != k}


MIN_ALIAS_CHUNKS = 2  # chunks of a document a short form must occur in to be an alias of a longer form there
_CONNECTORS = frozenset({"of", "de", "von", "van", "der", "la", "le", "du", "di", "del", "da"})
_LOWER = re.compile(r"(?<![\w'’.-])[a-z]+(?![\w'’-])")


def merges_by_document(extractions: Sequence[ChunkExtraction],
                       key_of: Mapping[tuple[str, str], str]) -> dict[str, dict[str, str]]:
    """Per document: ``alias key -> canonical key``. ``key_of`` maps (name, type) to the normalized key.

    A short form made of words that the document also writes in lower case ("Present", "Time", "City") is
    common words capitalized, not a name, and is no alias; the lower-case words are read from the mentions'
    descriptions (the sentences they were found in). A short form is an alias only when it recurs, in at least
    :data:`MIN_ALIAS_CHUNKS` chunks of the document: a story calls Agent Alex Mercer "Alex" page after page, but a
    name met once beside a longer one is as often something else ("Mohawk River" in a passage about the East
    Branch Mohawk River, "Kuwait" beside "Kuwait Airways"), and merging it would cut the passage off from every
    other passage that names it (bench.multihop, MuSiQue dev: recall@5 0.61 with such merges, 0.70 without)."""
    chunks_of: dict[str, dict[str, set[str]]] = {}  # document -> name key -> the chunks that mention it
    lower: dict[str, set[str]] = {}
    read: set[tuple[str, str]] = set()  # (document, description) pairs read (mentions of a sentence share it)
    for ex in extractions:
        doc = document_of(ex.chunk_id)
        for m in ex.entities:
            if (doc, m.description) not in read:
                read.add((doc, m.description))
                lower.setdefault(doc, set()).update(_LOWER.findall(m.description))
            if m.type.lower() in ALIAS_TYPES:
                chunks_of.setdefault(doc, {}).setdefault(key_of[(m.name, m.type)], set()).add(ex.chunk_id)
    out: dict[str, dict[str, str]] = {}
    for doc, ks in chunks_of.items():
        common = lower.get(doc, set())
        merges = aliases_in(ks)
        out[doc] = {k: v for k, v in merges.items()
                    if _same_form(k, v) or (len(ks[k]) >= MIN_ALIAS_CHUNKS and not all(w in common for w in k.split()))}
    return out


def _same_form(a: str, b: str) -> bool:
    return tuple(_stem(w) for w in a.split()) == tuple(_stem(w) for w in b.split())


def alias_merges(extractions: Sequence[ChunkExtraction]) -> list[AliasMerge]:
    """Every merge the extractions support, by document then alias."""
    from core.text.keys import normalize_name

    key_of = {(m.name, m.type): normalize_name(m.name, m.type) for ex in extractions for m in ex.entities}
    return [AliasMerge(doc, alias, canonical)
            for doc, merges in sorted(merges_by_document(extractions, key_of).items())
            for alias, canonical in sorted(merges.items())]
