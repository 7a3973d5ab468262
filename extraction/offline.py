"""A deterministic offline extractor: typed entities by pattern, relations by co-occurrence in a sentence.

It needs no model and gives the same output for the same text on every machine. Names are found by the one name
finder (:func:`core.text.names.find_entities`: identifiers, capitalized names, Chinese proper names and candidate
terms); this module decides which of them are entities of a document. A Chinese candidate term (a run of nouns,
or a noun the segmenter keeps whole, where no longer term kept holds it) is one when the document uses it in
more than one sentence, or when another document of the corpus does and the term has three characters or more
(:meth:`extraction.wordlike.WordModel.recurring_term`), unless it is a common word of the language
(:meth:`extraction.wordlike.WordModel.common_term`). In a Polish document a name is given in its base form
("w Warszawie", "z Warszawy" are both Warszawa; :mod:`core.text.lemma`), so its cases are one entity. It reads the
prose view of the text (:mod:`core.text.markup`: Markdown, HTML, front matter, code blocks and licence
boilerplate blanked, offsets kept), and keeps no bare version. A single capitalized word opening a sentence or a
quotation („Kiedy wydała, “When) is a name only when it recurs mid-sentence (not in a heading, which may
capitalize every word); one quoted alone („Batory”, “Titanic”) is a name unless the corpus writes it in lower
case; and "<Name>'s <noun>" is an entity of its own only when the document uses the phrase more than once.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Sequence

from core.text.language import detect_language
from core.text.lemma import BASE_FORM_TYPES, polish_name
from core.text.names import Found, find_entities, ordinary_words
from core.text.script import QUOTATION_MARKS, has_cjk
from core.text.sentences import split_sentences, title_line
from core.text.markup import clip, document_boilerplate, prose_view
from extraction.markdown_text import heading_line
from extraction.types import ChunkExtraction, EntityMention, ExtractionResult, RelationMention
from extraction.wordlike import WordModel
from core.records import Chunk
from core.settings import ExtractionSettings

# "<Name>'s <noun>" ("Scrooge's nephew", "Alice's team"): kept when the document uses the phrase more than once.
POSSESSIVE_MIN_USES = 2

_WORDS_PUNCT = re.compile(r"[^\W_]+(?:[_'’.-][^\W_]+)*[,;:]?", re.UNICODE)


def _recurring_terms(sentences: Iterable["_Sentence"]) -> frozenset[str]:
    """The candidate terms used in more than one sentence of the document (counted once per place)."""
    places: dict[str, set[int]] = {}
    for sent in sentences:
        for f in sent.found:
            if f.term:
                places.setdefault(f.name, set()).add(sent.start)
    return frozenset(k for k, v in places.items() if len(v) >= 2)


def _between(sentence: str, a: Found, b: Found, max_words: int) -> str:
    rest = sentence[a.end:b.start]
    owner = re.match(r"['’]s\b", rest)  # "Alex's submission ...": the possessive stays with its name
    first = a.name + owner.group(0) if owner else a.name
    if re.match(r"\s*[,;:]", rest[owner.end():] if owner else rest):
        first += re.match(r"\s*([,;:])", rest[owner.end():] if owner else rest).group(1)  # type: ignore[union-attr]
    # Words, with the commas, semicolons and colons that follow them (a list stays readable as a list).
    words = _WORDS_PUNCT.findall(rest[owner.end():] if owner else rest)
    if len(words) > max_words:
        words = words[: max_words // 2] + ["…"] + words[-(max_words - max_words // 2):]
    middle = " ".join(words)
    return f"{first} {middle} {b.name}".replace("  ", " ").strip()


@dataclass(frozen=True, slots=True)
class _Sentence:
    text: str  # the sentence's prose view
    start: int  # its offset in the document (for counting a phrase once where chunks overlap)
    found: tuple[Found, ...]
    heading: bool = False  # a Markdown heading: the site's style may capitalize every word ("Main Service Options")


def _chunk_sentences(chunk: Chunk, boilerplate: Sequence[tuple[int, int]], ordinary: frozenset[str] | None,
                     view: str | None = None) -> list[_Sentence]:
    bp = clip(boilerplate, chunk.start, chunk.end)
    view = prose_view(chunk.text, extra=bp) if view is None else view
    cells = _cells_apart(chunk.text, view)
    spans = split_sentences(chunk.text, bp)
    title = _title_line(chunk)
    under_title = bool(title and spans and spans[0][0] == 0 and spans[0][1] > title)
    return [_Sentence(view[s:e], chunk.start + s,
                      tuple(_found_under_title(chunk.text, cells, title, e, ordinary) if i == 0 and under_title
                            else find_entities(cells[s:e], ordinary)),
                      heading_line(chunk.text[s:e].lstrip("\r\n")))
            for i, (s, e) in enumerate(spans)]


def _found_under_title(text: str, cells: str, title: int, end: int, ordinary: frozenset[str] | None) -> list[Found]:
    """The names of a first sentence ``text[:end]`` whose first line (``text[:title]``) is the document's title.

    The title (a row's "title" field, as the loader writes it) is read apart from the text under it: no name runs
    across the line ("Heaven" + "Cornell"), and the text's first word opens a clause, so it is no name for
    standing after the title ("Sometimes" under "Civil disobedience"), unless it is a word of the title (the text
    opens with its subject's name: "Midway" under "Midway, Floyd County, Iowa"). The sentence stays whole, title
    and all, for what it says of its names (their descriptions, and so their vectors, keep the page's subject),
    and the title's words stay evidence as a sentence's do ("Malta" of "Economy of Malta")."""
    rest = len(text) - len(text[title:].lstrip())
    titled = {w.casefold() for w in _TITLE_WORDS.findall(text[:title])}

    def subject(f: Found) -> bool:  # the name opens the text (after any quote or mark) with a title word
        first = _TITLE_WORDS.findall(f.name.split()[0]) if f.name.split() else []
        return (not cells[rest:rest + f.start].strip(" (*_" + QUOTATION_MARKS) and bool(first)
                and all(w.casefold() in titled for w in first))

    body = [replace(f, at_start=False, opens=False) if subject(f) else f
            for f in find_entities(cells[rest:end], ordinary)]
    return list(find_entities(cells[:title], ordinary)) + [replace(f, start=f.start + rest, end=f.end + rest)
                                                           for f in body]


_TITLE_WORDS = re.compile(r"[^\W_]+")


def _title_line(chunk: Chunk) -> int:
    """The end of the chunk's first line when the chunk opens its document and that line is the document's
    title (metadata ``title``), else 0."""
    return title_line(chunk.text, chunk.metadata.get("title")) if chunk.start == 0 else 0


def _cells_apart(text: str, view: str) -> str:
    """``view`` with the pipes of ``text`` that it blanked put back, for finding names: a name does not run across
    a table's cells, and a cell's first word opens a clause as a list item's does ("| Main server to forward
    requests to |" names no "Main"). Offsets are unchanged."""
    if "|" not in text:
        return view
    return "".join("|" if t == "|" else v for t, v in zip(text, view))


def _repeated_possessives(sentences: Iterable[_Sentence]) -> frozenset[str]:
    """The "<Name>'s <noun>" phrases used at more than one place of the document (counted once per place)."""
    places: dict[str, set[int]] = {}
    for sent in sentences:
        for f in sent.found:
            if f.possessive:
                places.setdefault(f.name.lower().replace("’", "'"), set()).add(sent.start + f.start)
    return frozenset(k for k, v in places.items() if len(v) >= POSSESSIVE_MIN_USES)


class OfflineExtractor:
    """Pattern entities and sentence co-occurrence relations; deterministic and free."""

    mode = "offline"

    def __init__(self, settings: ExtractionSettings, words: WordModel | None = None) -> None:
        """``words``: what the corpus's words look like (:mod:`extraction.wordlike`); a name none of whose
        tokens is word-like by it (a hash, a hex range, an example value) is no entity. None: every name may be."""
        self.settings = settings
        self.words = words

    def _lower_case(self, ordinary: frozenset[str]) -> Callable[[str], bool]:
        """Whether a word is written in lower case: by the document (``ordinary``), or anywhere in the corpus."""
        words = self.words
        return lambda w: w.lower() in ordinary or (words is not None and words.lower_word(w))

    def _by_position(self, ordinary: frozenset[str], recurring: frozenset[str]) -> Callable[[str, str], bool]:
        """Whether a capital on a word opening a clause (and the capitalized word after it) is its position's: the
        corpus writes the word mostly in lower case and never the two capitalized mid-sentence
        (:meth:`WordModel.capitalized_by_position`; with no word model, the document writes the word in lower
        case), and the document never writes it in a name mid-sentence (``recurring``)."""
        words = self.words
        judge = words.capitalized_by_position if words is not None and words.active else (
            lambda w, after: w.lower() in ordinary)
        return lambda w, after: w not in recurring and judge(w, after)

    def _term(self, name: str, phrases: frozenset[str]) -> bool:
        """Whether a candidate term is an entity here: the document uses it in more than one sentence (in
        ``phrases``), or another document of the corpus does and it has three characters or more
        (:meth:`WordModel.recurring_term`); and it is no common word of the language (:meth:`WordModel.common_term`)."""
        words = self.words
        if words is None:
            return name in phrases
        return (name in phrases or words.recurring_term(name)) and not words.common_term(name)

    def extract_chunk(self, chunk: Chunk, names_mid_sentence: frozenset[str] | None = None) -> ChunkExtraction:
        """Entities and relations of one chunk read alone. A single capitalized word that only ever opens a
        sentence ("Operation", "Connection", "Latency") is kept only when it also occurs as a name mid-sentence
        in ``names_mid_sentence`` (by default the chunk's own names); what a document tells about its words
        (boilerplate, lower-case words, repeated phrases) comes from the chunk alone."""
        view = prose_view(chunk.text)
        ordinary = ordinary_words([view])
        sentences = _chunk_sentences(chunk, (), ordinary, view)
        lower_case = self._lower_case(ordinary)
        recurring = names_mid_sentence if names_mid_sentence is not None else _mid_sentence_words(sentences, lower_case)
        return self._build(chunk, sentences, recurring, _repeated_possessives(sentences) | _recurring_terms(sentences),
                           _base_form(view) if self.settings.name_base_forms else str,
                           self._by_position(ordinary, recurring), lower_case)

    def _build(self, chunk: Chunk, sentences: Sequence[_Sentence], recurring: frozenset[str],
               phrases: frozenset[str], base: Callable[[str], str] = str,
               by_position: Callable[[str, str], bool] = lambda w, after: False,
               lower_case: Callable[[str], bool] = lambda w: False) -> ChunkExtraction:
        entities: dict[str, EntityMention] = {}
        relations: list[RelationMention] = []
        limit = self.settings.max_entities_per_sentence
        for sent in sentences:
            sentence = sent.text
            # A bare version is a number: the same "1.0.0" belongs to unrelated products, so it is no graph entity
            # (find_entities still reports it, for the router's identifier evidence).
            found = [f if sent.heading else _opening_word_apart(f, sentence, by_position) for f in sent.found]
            # (a word quoted alone, "Titanic" or "Save", is a name unless the corpus writes it in lower case)
            found = [f for f in found if (not f.at_start or f.name in recurring) and f.type != "version"
                     and (not f.quoted or f.name in recurring or not lower_case(f.name))
                     and (not f.possessive or f.name.lower().replace("’", "'") in phrases)
                     and (not f.term or self._term(f.name, phrases))
                     and (not f.joins or self.words is not None and self.words.cohesive(f.joins))]
            found = _outermost_terms(_spans_where_nothing_is_kept(found))
            if self.words is not None:
                found = [f for f in found if f.type in _SHAPED_TYPES or has_cjk(f.name)
                         or self.words.wordlike(f.name) and not (_PLAIN_WORD.fullmatch(f.name) and f.type == "identifier"
                                                                 and self.words.prose_word(f.name))]
            written: dict[str, str] = {}  # a name in its base form -> as this sentence writes it
            if base is not str:
                based = []
                for f in found:
                    b = base(f.name) if f.type in BASE_FORM_TYPES else f.name
                    if b != f.name:
                        written.setdefault(b, f.name)
                        f = replace(f, name=b)
                    based.append(f)
                found = based
            snippet = " ".join(sentence.split())[:240]
            for f in found:
                entities.setdefault(f.name, EntityMention(f.name, f.type, snippet, written.get(f.name, "")))
            unique: list[Found] = []
            for f in found:
                if all(u.name != f.name for u in unique):
                    unique.append(f)
            for i, a in enumerate(unique):
                # In crowded sentences only nearby entities are linked, so lists do not become cliques.
                partners = unique[i + 1:] if len(unique) <= limit else unique[i + 1:i + 3]
                for b in partners:
                    if b.start < a.end:
                        continue  # a name inside a phrase that holds it ("Scrooge" in "Scrooge's nephew")
                    relations.append(RelationMention(a.name, b.name, _between(sentence, a, b, self.settings.relation_max_words)))
        return ChunkExtraction(chunk.id, tuple(entities.values()), tuple(relations))

    def extract(self, chunks: Sequence[Chunk]) -> ExtractionResult:
        """Extract every chunk, judging per document (from all of its chunks given): its licence boilerplate,
        the words it uses in lower case, whether a sentence-opening word recurs as a name, and which
        possessive phrases it repeats."""
        by_doc: dict[str, list[Chunk]] = {}
        for c in chunks:
            by_doc.setdefault(c.document_id, []).append(c)
        per_chunk: dict[str, tuple[Any, ...]] = {}
        for cs in by_doc.values():
            boilerplate = document_boilerplate([(c.start, c.text) for c in cs])
            views = {c.id: prose_view(c.text, extra=clip(boilerplate, c.start, c.end)) for c in cs}
            ordinary = ordinary_words(views.values())
            sentences = {c.id: _chunk_sentences(c, boilerplate, ordinary, views[c.id]) for c in cs}
            every = [sent for ss in sentences.values() for sent in ss]
            lower_case = self._lower_case(ordinary)
            recurring = _mid_sentence_words(every, lower_case)
            phrases = _repeated_possessives(every) | _recurring_terms(every)
            base = _base_form(" ".join(views.values())) if self.settings.name_base_forms else str
            by_position = self._by_position(ordinary, recurring)
            for c in cs:
                per_chunk[c.id] = (sentences[c.id], recurring, phrases, base, by_position, lower_case)
        return ExtractionResult(tuple(self._build(c, *per_chunk[c.id]) for c in chunks))


# Entities whose shape makes them what they are (an error code holds a number), not judged by the corpus's word
# model; nor are names in Chinese, Japanese or Korean script (jieba's tagger judges Chinese names and terms).
_SHAPED_TYPES = frozenset({"error_code", "version"})
# A code span holding one plain lower-case word that the corpus's prose uses as a word ("the `main` branch") is that
# word, not a name.
_PLAIN_WORD = re.compile(r"[a-z]+")


def _spans_where_nothing_is_kept(found: list[Found]) -> list[Found]:
    """``found`` without a span of words (a candidate with joins) that holds a candidate kept in its own right (a
    name, a noun or run of nouns the segmenter knows: 超导体 of 超导体具有, 新型超导体具有). A span fills in where the
    dictionary's candidates say nothing; else it would stand for that term at those places
    (:func:`_outermost_terms`) and take its relations, and whether the rest of it belongs to the term is more than
    the counts of two neighbouring words can tell (具有 follows many subjects, and 不 of 公民不服从 many words)."""
    kept = [f for f in found if not f.joins]
    return [g for g in found if not g.joins or not any(g.start <= f.start and f.end <= g.end for f in kept)]


def _outermost_terms(found: list[Found]) -> list[Found]:
    """``found`` without a candidate term that lies inside a longer one kept at the same place (节点 inside
    工作节点): a run of nouns and its nouns are found together, and the longest the document keeps stands for
    them there, so the parts of one term are not related to each other or to the same neighbours twice."""
    terms = [f for f in found if f.term]
    return [f for f in found if not f.term or not any(
        g is not f and g.start <= f.start and f.end <= g.end and g.end - g.start > f.end - f.start for g in terms)]


def _base_form(view: str) -> Callable[[str], str]:
    """How a document's names are given: in their base form in a Polish document (:func:`polish_name`), as
    written in any other."""
    return polish_name if detect_language(view) == "pl" else str


_NEXT_WORD = re.compile(r"[\s,;:]*([^\W\d_]+)")


def _opening_word_apart(f: Found, sentence: str, by_position: Callable[[str, str], bool]) -> Found:
    """A run of capitalized words opening a clause of prose, from its next capitalized word on when the first
    word's capital is its position's (``by_position``): "W Europie panowała" names Europie, "Według Jana Nowaka
    było" Jana Nowaka, "Ships of the Royal Navy met" Royal Navy, where "West Virginia is" stays whole in a corpus
    that writes "in West Virginia" too, and "Royal Navy" in a text that writes "Royal" in names mid-sentence. A
    run that is its whole clause ("| Access Control |", a heading) is written in its style's capitals, which say
    nothing of any one word, and stays whole."""
    if not f.opens or f.type != "name" or f.possessive or f.term:
        return f
    after = _NEXT_WORD.match(sentence, f.end)
    if after is None or not after.group(1)[:1].islower():
        return f
    words = list(re.finditer(r"\S+", f.name))
    rest = next((w for w in words[1:] if w.group(0)[:1].isupper()), None)
    if rest is None or not by_position(words[0].group(0), rest.group(0)):
        return f
    cut = rest.start()
    return replace(f, start=f.start + cut, name=f.name[cut:], opens=False)


def _mid_sentence_words(sentences: Iterable[_Sentence], lower_case: Callable[[str], bool]) -> frozenset[str]:
    """The words of the names found mid-sentence ("Sam" from "... said Sam Rivera"), but none of a heading, which
    may capitalize every word ("Main Service Options"), nor the first word of a name opening its clause when the
    text also writes that word in lower case (``lower_case``): it is capitalized there by position ("Enable" of
    "| Enable Consul Connect support |"), where "Alex" of "Alex Mercer checked the logs" is a name. So "Enable"
    and "Main" opening a table cell elsewhere ("| Main service to forward requests to |") stay words."""
    return frozenset(w for sent in sentences if not sent.heading
                     for f in sent.found if f.type == "name" and not f.at_start and not f.quoted
                     for i, w in enumerate(f.name.split()) if not (i == 0 and f.opens and lower_case(w)))
