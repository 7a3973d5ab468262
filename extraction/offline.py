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
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Sequence

from core.text.language import detect_language
from core.text.lemma import BASE_FORM_TYPES, polish_name
from core.text.names import (COMMON_WORDS, LETTER_WORD, Found, find_entities, headings_in_title_case, lower_case_words,
                              title_case_line, upper_case_line)
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
    heading: bool = False  # a Markdown heading or a line in title case or in capitals: its capitals may be its style's
    section: bool = False  # a Markdown heading (one that names its section)
    cells: str = ""  # the sentence's prose view with a table's pipes put back (:func:`_cells_apart`)
    shouted: bool = False  # written in capitals (:func:`core.text.names.upper_case_line`)


def _chunk_sentences(chunk: Chunk, boilerplate: Sequence[tuple[int, int]], ordinary: frozenset[str] | None,
                     view: str | None = None) -> list[_Sentence]:
    bp = clip(boilerplate, chunk.start, chunk.end)
    view = prose_view(chunk.text, extra=bp) if view is None else view
    cells = _cells_apart(chunk.text, view)
    spans = split_sentences(chunk.text, bp)
    title = _title_line(chunk)
    under_title = bool(title and spans and spans[0][0] == 0 and spans[0][1] > title)
    out = []
    lower = ordinary or frozenset()
    for i, (s, e) in enumerate(spans):
        section = heading_line(chunk.text[s:e].lstrip("\r\n"))
        shouted = upper_case_line(view[s:e], chunk.text[s:e], lower)
        out.append(_Sentence(view[s:e], chunk.start + s,
                             tuple(_found_under_title(chunk.text, cells, title, e, ordinary) if i == 0 and under_title
                                   else find_entities(cells[s:e], ordinary)),
                             section or shouted or title_case_line(view[s:e], chunk.text[s:e]), section, cells[s:e],
                             shouted))
    return out


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

    def _headings(self, sentences: Sequence[_Sentence], recurring: frozenset[str], lower_case: Callable[[str], bool],
                  lower: Counter[str]) -> tuple[Callable[[str, Found, bool, bool], list[Found]], bool]:
        """How a document's headings are read: what a heading's run names (:meth:`_heading_run`), and whether the
        document writes its headings in title case (``lower``: its uses of words in lower case). A document with
        no heading nor title-case line reads none, and pays for neither."""
        if not any(sent.heading for sent in sentences):
            return (lambda sentence, f, section, shouted: [f]), True
        return (self._heading_run(recurring, lower_case, _prose_phrases(sentences)),
                headings_in_title_case((sent.text for sent in sentences if sent.section), lower))

    def _heading_run(self, recurring: frozenset[str], lower_case: Callable[[str], bool],
                     prose: str) -> Callable[[str, Found, bool, bool], list[Found]]:
        """What a run of capitalized words in a heading names (:func:`_heading_names`). A word's capital there is
        the heading style's, so each word is judged by how the text writes it elsewhere: a name when its shape
        says so (capitals inside a part of it, a digit), or when the corpus's prose writes it capitalized
        mid-sentence at least as often as in lower case (:meth:`WordModel.name_word`), or the document writes it
        in a name mid-sentence (``recurring``) and the corpus does not mostly write it in lower case; else an
        ordinary word when the text writes it in lower case (``lower_case``: "Options" of "Configuration Options",
        though "the TLS Options" capitalizes it once); else unknown. ``prose``: the document's prose
        (:func:`_prose_phrases`). In a sentence written in capitals (:func:`core.text.names.upper_case_line`) a
        word in capitals has no shape of its own either ("HOLDERS", "BSD"): only the corpus's prose tells."""
        words = self.words
        folded = {w.casefold() for w in recurring}

        def kind(w: str, shouted: bool = False) -> str:
            bare = _POSSESSIVE_END.sub("", w.strip(_WORD_EDGES))
            capitals = shouted and bare.isupper()
            # (capitals inside a part: "NGINX", "GitHub", "AI-Assisted"; not "Cross-Namespace", title case twice)
            if not capitals and any(ch.isupper() or ch.isdigit() for part in _WORD_PARTS.split(bare) for ch in part[1:]):
                return "name"
            mid = bare.casefold() in folded if capitals else bare in recurring  # ("DISPATCHER" of "the Dispatcher")
            if words is not None and words.active:
                if words.name_word(bare) or (mid and not words.mostly_lower(bare)):
                    return "name"
            elif mid:
                return "name"
            return "ordinary" if lower_case(bare) else "unknown"

        joined = self._joined()

        return lambda sentence, f, section, shouted: _heading_names(sentence, f, lambda w: kind(w, shouted), joined,
                                                                    prose, section, shouted)

    def _joined(self) -> Callable[[str, str], bool]:
        """Whether the corpus writes two words capitalized one after the other mid-sentence ("in New York")."""
        words = self.words
        if words is None:
            return lambda a, b: False
        return lambda a, b: words.pairs.get((a.strip(_WORD_EDGES).lower(), b.strip(_WORD_EDGES).lower()), 0) >= JOINED_MIN

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
        lower = Counter(lower_case_words(view))
        ordinary = frozenset(lower)
        sentences = _chunk_sentences(chunk, (), ordinary, view)
        lower_case = self._lower_case(ordinary)
        recurring = names_mid_sentence if names_mid_sentence is not None else _mid_sentence_words(sentences, lower_case)
        return self._build(chunk, sentences, recurring, _repeated_possessives(sentences) | _recurring_terms(sentences),
                           _base_form(view) if self.settings.name_base_forms else str,
                           self._by_position(ordinary, recurring), lower_case,
                           *self._headings(sentences, recurring, lower_case, lower))

    def _build(self, chunk: Chunk, sentences: Sequence[_Sentence], recurring: frozenset[str],
               phrases: frozenset[str], base: Callable[[str], str] = str,
               by_position: Callable[[str, str], bool] = lambda w, after: False,
               lower_case: Callable[[str], bool] = lambda w: False,
               heading_run: Callable[[str, Found, bool, bool], list[Found]] = lambda s, f, section, shouted: [f],
               title_case: bool = True) -> ChunkExtraction:
        entities: dict[str, EntityMention] = {}
        relations: list[RelationMention] = []
        limit = self.settings.max_entities_per_sentence
        joined = self._joined()
        for sent in sentences:
            sentence = sent.text
            found = [_opening_words_back(f, sent.cells or sentence, joined) for f in sent.found]
            # A bare version is a number: the same "1.0.0" belongs to unrelated products, so it is no graph entity
            # (find_entities still reports it, for the router's identifier evidence).
            # (a heading of a document that writes its headings in sentence case keeps its capitals: "Historia
            # Uniwersytetu Jagiellońskiego", "Standard library types")
            found = (found if sent.section and not title_case
                     else [g for f in found for g in heading_run(sentence, f, sent.section, sent.shouted)] if sent.heading
                     else [_opening_word_apart(f, sentence, by_position) for f in found])
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
            lower = Counter(w for v in views.values() for w in lower_case_words(v))
            ordinary = frozenset(lower)
            sentences = {c.id: _chunk_sentences(c, boilerplate, ordinary, views[c.id]) for c in cs}
            every = [sent for ss in sentences.values() for sent in ss]
            lower_case = self._lower_case(ordinary)
            recurring = _mid_sentence_words(every, lower_case)
            phrases = _repeated_possessives(every) | _recurring_terms(every)
            base = _base_form(" ".join(views.values())) if self.settings.name_base_forms else str
            by_position = self._by_position(ordinary, recurring)
            heading_run, title_case = self._headings(every, recurring, lower_case, lower)
            for c in cs:
                per_chunk[c.id] = (sentences[c.id], recurring, phrases, base, by_position, lower_case, heading_run,
                                   title_case)
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


JOINED_MIN = 2  # uses of two words capitalized together mid-sentence that make the first part of a name (set, not tuned)
# a capitalized word right before a name (a space or a tab between), whole
_WORD_BEFORE = re.compile(r"(?<![\w'’.\-/@$`])([^\W\d_]+)[ \t]+$")


def _opening_words_back(f: Found, sentence: str, joined: Callable[[str, str], bool]) -> Found:
    """A name with the common words the name finder cut where its clause opens given back, when the corpus writes
    each capitalized before the next mid-sentence (``joined``, at least :data:`JOINED_MIN` times: a date once
    before a name, "on Monday Google said", is no name): "New York City opened" and "## New York City" name New
    York City in a corpus that writes "in New York", as "The Hague" does where the prose writes "in The Hague".
    The finder cuts such a word because a clause's opening word is capitalized by position and the word is
    common; the corpus's prose tells when it is the name's own. ``sentence`` keeps a table's pipes (a cell
    opens a clause: "| New | York City |" joins nothing)."""
    if f.type != "name" or f.possessive or f.quoted or f.term:
        return f
    start, name = f.start, f.name
    while (m := _WORD_BEFORE.search(sentence, max(0, start - 64), start)) is not None:
        word = m.group(1)
        if not word[:1].isupper() or word.lower() not in COMMON_WORDS or not joined(word, name.split()[0]):
            break
        start, name = m.start(1), f"{word} {name}"
    if start == f.start:
        return f
    return replace(f, start=start, name=name, at_start=False, opens=True)


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


_WORD_EDGES = ",.;:!?()[]\"'“”‘’"
_WORD_PARTS = re.compile(r"[-'’/]")
_POSSESSIVE_END = re.compile(r"['’]s$")
_PHRASE_WORDS = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")
_PHRASE_TOKENS = re.compile(r"[^\W_]+(?:['’][^\W_]+)?|[^\w\s]")


def _prose_phrases(sentences: Iterable[_Sentence]) -> str:
    """The words and marks of a document's sentences but its headings, as written and spaced, a sentence apart
    from the next: ``" Set the Access Control rules | Connection pooling is on . "``, for finding a phrase
    among them (a table's pipes stay: a cell opens a clause)."""
    return " | ".join(" ".join(_PHRASE_TOKENS.findall(sent.cells or sent.text))
                      for sent in sentences if not sent.heading).join("  ")


def _heading_names(sentence: str, f: Found, kind: Callable[[str], str], joined: Callable[[str, str], bool],
                   prose: str, section: bool = True, shouted: bool = False) -> list[Found]:
    """The names a heading's run of capitalized words holds, read as the text's prose would write its words. A
    heading (or a line in title case: :func:`core.text.names.title_case_line`) may capitalize every word ("Install
    Traefik Alongside NGINX", "Are Better When You Know How"), so a capital there says nothing by itself; each
    capitalized word is a name, an ordinary word or unknown by how the text writes it elsewhere (``kind``), and an
    ordinary word the corpus writes capitalized before the next one mid-sentence is part of a name with it
    (``joined``: "New" of "New York City" where the prose says "in New York"):
    - a run with no ordinary word ("Traefik Proxy", or a name the text gives no other evidence of), or one the
      document's prose writes as it stands mid-sentence ("the Power of Two Choices", ``prose``:
      :func:`_prose_phrases`), stays whole;
    - else it gives its stretches of other words (a lower-case connector, "of", joins two), from the first name
      of a stretch that holds one, or whole when the stretch has two words or more, as the same words in prose
      would: "Install Traefik Alongside NGINX" gives Traefik and NGINX, "Using Helm" Helm, "Kubernetes Provider"
      Kubernetes, "Prepare Helm" (a verb no page writes in lower case twice) Helm, "Jan Kowalski Founded The
      Company" Jan Kowalski;
    - with no such stretch, the run is the name of its section when it is the whole heading ("## Access Control",
      "## Connection Pooling"); a clause in title case within a line ("Spread the Love & Tell Us About It") is none.
    A possessive and anything but a name (an identifier, a Chinese term) are judged as elsewhere."""
    # (in capitals, a short word's shape, which makes it an acronym elsewhere, says nothing either: "DATA")
    if f.type not in (("name", "concept") if shouted else ("name",)) or f.possessive or f.quoted or f.term:
        return [f]
    spans = _word_spans(sentence, f)
    if spans is None:
        return [f]
    words = [sentence[a:b] for a, b in spans]
    kinds = ["connector" if w.islower() else kind(w) for w in words]
    if shouted and "name" not in kinds:  # (in capitals, words the prose never writes are no evidence of a name)
        return []
    for i in range(len(words) - 2, -1, -1):
        if kinds[i] == "ordinary" and kinds[i + 1] in ("name", "unknown") and joined(words[i], words[i + 1]):
            kinds[i] = "name"
    if "ordinary" not in kinds or _mid_sentence_phrase(prose, " ".join(_PHRASE_WORDS.findall(f.name))):
        return [f]
    out: list[Found] = []
    i = 0
    while i < len(words):
        if kinds[i] in ("ordinary", "connector"):
            i += 1
            continue
        j = i
        # (a lower-case connector joins the stretch to a word after it that is no ordinary one; a possessive ends
        # it: "Traefik’s" of "Using Traefik’s Helm Chart")
        while j + 1 < len(words) and not _POSSESSIVE_END.search(words[j].rstrip(_WORD_EDGES)) and (
                kinds[j + 1] in ("name", "unknown") or (
                    kinds[j + 1] == "connector" and j + 2 < len(words) and kinds[j + 2] in ("name", "unknown"))):
            j += 1
        if i == 0 and "name" in kinds[i:j + 1]:  # (unknown words opening the run before a name: "Prepare Helm")
            i = kinds.index("name", i)
        if kinds[i] == "name" or j > i:
            last = _POSSESSIVE_END.sub("", words[j].rstrip(_WORD_EDGES))  # ("Traefik’s Dashboard": Traefik)
            out.append(replace(f, start=spans[i][0], end=spans[j][0] + len(last), opens=False,
                               name=" ".join(words[i:j] + [last])))
        i = j + 1
    if out:
        return out
    whole = section and not LETTER_WORD.search(sentence[:spans[0][0]] + " " + sentence[spans[-1][1]:])
    return [f] if len(words) > 1 and whole else []


def _word_spans(sentence: str, f: Found) -> list[tuple[int, int]] | None:
    """Where each word of ``f.name`` stands in ``sentence``, from ``f.start`` on (a name's words are joined by
    single spaces, where the sentence may have more, or marks a view blanked); None when they cannot be found."""
    spans, at = [], f.start
    for w in f.name.split():
        k = sentence.find(w, at)
        if k < 0:
            return None
        spans.append((k, k + len(w)))
        at = k + len(w)
    return spans or None


def _mid_sentence_phrase(prose: str, phrase: str) -> bool:
    """Whether ``prose`` (:func:`_prose_phrases`) holds ``phrase`` as written right after a word in lower case,
    where its capitals are its own ("uses the Power of Two Choices"; not "Install Traefik with the chart", nor
    after a colon or in a table cell)."""
    needle, at = f" {phrase} ", 0
    while phrase and (k := prose.find(needle, at)) >= 0:
        if prose[prose.rfind(" ", 0, k) + 1:k].islower():  # the token before it
            return True
        at = k + 1
    return False



def _mid_sentence_words(sentences: Iterable[_Sentence], lower_case: Callable[[str], bool]) -> frozenset[str]:
    """The words of the names found mid-sentence ("Sam" from "... said Sam Rivera"), but none of a heading, which
    may capitalize every word ("Main Service Options"), nor the first word of a name opening its clause when the
    text also writes that word in lower case (``lower_case``): it is capitalized there by position ("Enable" of
    "| Enable Consul Connect support |"), where "Alex" of "Alex Mercer checked the logs" is a name. So "Enable"
    and "Main" opening a table cell elsewhere ("| Main service to forward requests to |") stay words."""
    return frozenset(w for sent in sentences if not sent.heading
                     for f in sent.found if f.type == "name" and not f.at_start and not f.quoted
                     for i, w in enumerate(f.name.split()) if not (i == 0 and f.opens and lower_case(w)))
