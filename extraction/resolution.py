"""Entity resolution: merge the same entity across chunks, keeping every source chunk id.

Names are normalized (Unicode NFKC, case, whitespace, surrounding punctuation, abbreviation dots, possessives,
underscores and hyphens between words, so ``node_exporter``, ``node-exporter`` and "Node Exporter" are one
name, and simple plurals for name-like types); mentions with the same normalized key become one entity whose
id is a stable hash of that key. Identifier-like types (config keys, error codes, versions) keep their plural
forms, since ``max_connections`` and ``max_connection`` are different keys. Within a document, a name and its
longer forms ("Alex", "Alex Mercer", "Agent Alex Mercer") are one entity (:mod:`extraction.aliases`), keyed by
the longest form. A Polish document's names come keyed by their base form (:mod:`extraction.offline`) with the
form the text writes; the entity is named by a written form, and a name written as one of its mentions writes it
(a page title, the same name in a document of another language) is the same entity.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Iterable

from extraction.aliases import ALIAS_TYPES, merges_by_document
from extraction.types import ChunkExtraction
from core.records import Entity, Relation, document_of, stable_hash
from core.text.keys import normalize_name
from core.text.lemma import polish_lemma, words_in_base_form


def key_id(key: str) -> str:
    """The entity id of a normalized name."""
    return "e_" + stable_hash(key, size=10)


def entity_id(name: str, type_: str = "name") -> str:
    return key_id(normalize_name(name, type_))


def relation_id(a: str, b: str) -> str:
    lo, hi = sorted((a, b))
    return "r_" + stable_hash(lo, hi, size=10)


def merge_descriptions(descriptions: Iterable[str], max_chars: int) -> str:
    """Distinct descriptions joined in first-seen order, cut at ``max_chars``."""
    out: list[str] = []
    size = 0
    for d in descriptions:
        d = d.strip()
        if not d or d in out:
            continue
        if size + len(d) > max_chars and out:
            break
        out.append(d)
        size += len(d) + 1
    return "\n".join(out)[:max_chars]


def resolve(extractions: Iterable[ChunkExtraction], description_max_chars: int = 600) -> tuple[list[Entity], list[Relation]]:
    """Merge per-chunk extractions into entities and relations with provenance, in a stable order."""
    names: dict[str, Counter[str]] = defaultdict(Counter)
    shown: dict[str, Counter[str]] = defaultdict(Counter)  # the names as the text writes them
    based: set[str] = set()  # entities named in a base form the text does not always write (Polish)
    types: dict[str, Counter[str]] = defaultdict(Counter)
    descs: dict[str, list[str]] = defaultdict(list)
    chunks: dict[str, dict[str, None]] = defaultdict(dict)
    rel_descs: dict[str, list[str]] = defaultdict(list)
    rel_chunks: dict[str, dict[str, None]] = defaultdict(dict)
    rel_ends: dict[str, tuple[str, str]] = {}
    merged: dict[str, set[str]] = defaultdict(set)  # entity id -> the normalized names merged into it
    extractions = list(extractions)
    key_of: dict[tuple[str, str], str] = {}
    for ex in extractions:
        for m in ex.entities:
            if (m.name, m.type) not in key_of:  # each distinct name normalized once
                key_of[(m.name, m.type)] = normalize_name(m.name, m.type)
    # A name merged by its base form (Polish) is that entity wherever the text writes it so: a page title, read
    # as written, or a mention in a document of another language joins the mentions keyed by the base form.
    spelled: dict[str, str] = {}
    for ex in extractions:
        for m in ex.entities:
            if m.written:
                spelled.setdefault(normalize_name(m.written, m.type), key_of[(m.name, m.type)])
    key_of = {nt: spelled.get(k, k) for nt, k in key_of.items()}
    aliases = merges_by_document(extractions, key_of)
    ids: dict[str, str] = {}  # key -> entity id, each hashed once
    plain: dict[str, str] = {}  # a relation end's name -> its normalized key
    rids: dict[tuple[str, str], str] = {}  # (entity id, entity id) -> relation id

    def end_id(end: str, local: dict[str, str], doc_aliases: dict[str, str]) -> str:
        """The entity a relation's end names: the chunk's mention of that name, else the name's (or its alias's)."""
        if end in local:
            return local[end]
        k = plain.get(end)
        if k is None:
            k = plain[end] = normalize_name(end)
        k = doc_aliases.get(k, k)
        return ids.get(k) or ids.setdefault(k, key_id(k))

    for ex in extractions:
        local: dict[str, str] = {}
        doc_aliases = aliases.get(document_of(ex.chunk_id), {})
        for m in ex.entities:
            key = key_of[(m.name, m.type)]
            if m.type.lower() in ALIAS_TYPES and key in doc_aliases:
                key = doc_aliases[key]
            eid = ids.get(key) or ids.setdefault(key, key_id(key))
            merged[eid].add(key_of[(m.name, m.type)])
            local[m.name] = eid
            names[eid][m.name] += 1
            shown[eid][m.written or m.name] += 1
            if m.written:
                based.add(eid)
            types[eid][m.type] += 1
            descs[eid].append(m.description)
            chunks[eid][ex.chunk_id] = None
        for r in ex.relations:
            a, b = end_id(r.source, local, doc_aliases), end_id(r.target, local, doc_aliases)
            if a == b or a not in names or b not in names:
                continue
            rid = rids.get((a, b)) or rids.setdefault((a, b), relation_id(a, b))
            rel_ends[rid] = tuple(sorted((a, b)))  # type: ignore[assignment]
            rel_descs[rid].append(r.description)
            rel_chunks[rid][ex.chunk_id] = None
    entities = []
    for eid in sorted(names):
        # The most frequent surface form names the entity; ties go to the first seen. An entity merged from a
        # name and its longer forms is named by its most frequent form of more than one word ("Alex Mercer").
        # An entity keyed by base forms is named as the text writes it, by the form with the most words in their
        # base form: a name's words lemmatized one by one are no name ("Zjednoczony Królestwo", the adjective
        # in the masculine), while "Zjednoczone Królestwo" is how the text writes it in the nominative. A
        # one-word base form the dictionary gives a written form is a word ("Kraków"), named so unless the text
        # writes a form as good; one an ending gave ("Macmillan" of "Macmillana") is a guess, shown only where the
        # text writes it.
        forms = list((shown if eid in based else names)[eid].items())
        if eid in based:
            forms += [(n, 0) for n in names[eid] if " " not in n and n not in shown[eid]
                      and any(polish_lemma(w) == n for w in shown[eid])]
        if len(merged[eid]) > 1 and any(len(n.split()) > 1 for n, _ in forms):
            forms = [kv for kv in forms if len(kv[0].split()) > 1]
        rank = (lambda kv: (words_in_base_form(kv[0]), kv[1])) if eid in based else (lambda kv: kv[1])
        name = max(forms, key=rank)[0]
        etype = max(types[eid].items(), key=lambda kv: kv[1])[0]
        entities.append(Entity(eid, name, etype, merge_descriptions(descs[eid], description_max_chars), tuple(chunks[eid])))
    relations = [
        Relation(rid, rel_ends[rid][0], rel_ends[rid][1], merge_descriptions(rel_descs[rid], description_max_chars), tuple(rel_chunks[rid]))
        for rid in sorted(rel_ends)
    ]
    return entities, relations
