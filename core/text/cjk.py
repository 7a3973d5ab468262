"""Chinese words and the names among them, from jieba's segmenter and part-of-speech tagger (MIT; its dictionary
ships inside the package, so nothing is fetched at run time).

jieba tags proper nouns ``nr`` (people, with ``nrt``/``nrfg`` for transliterated and other forms), ``ns``
(places), ``nt`` (organizations) and ``nz`` (other proper nouns), and Latin-script runs ``eng``. A name here is a
run of such tokens: parts joined by an interpunct (卡万·肖特, transliterated names) or standing side by side
(贾 + 里德) are one name, and a single character is never one.

jieba's dictionary is Simplified Chinese: Traditional text is tagged through its Simplified form (OpenCC's
``t2s``, which keeps the text's length, so every word keeps its offsets and is returned as the original
writes it). Tagged as written, Traditional text goes through the tagger's slow path for unknown words (about
50x slower) and comes out worse (function characters such as 於 tagged as names). The dictionary is loaded once
per process, on first use (about 1-2 s).
"""

from __future__ import annotations

import logging
import re
import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Sequence

from core.text.script import NAME_INITIALS, NAME_JOINERS, han

NAME_TAGS = {"nr": "person", "nrt": "person", "nrfg": "person", "ns": "place", "nt": "organization",
             "nz": "name"}
NUMERAL_TAG = "m"
# Common nouns, verbal and other nouns, and Latin-script runs: the parts a technical term is made of (调度+器).
NOUN_TAGS = frozenset({"n", "vn", "nz", "ng", "an", "eng"})
# Common nouns and abbreviations (中医): a word the segmenter keeps whole with one of these tags is a candidate term
# (黑死病, 蒸汽机), an entity where a document repeats it and few documents of the corpus use it. (Not set phrases,
# tag l: beside 量子力学 and 文艺复兴 they are 事实上 and 也就是说, which a document repeats as often, and which at three
# characters and more the corpus's share of documents does not judge.)
TERM_TAGS = frozenset({"n", "j"})
_JOINERS = frozenset(NAME_JOINERS)
_INITIAL = re.compile(f"[{NAME_INITIALS}]")  # one Latin capital, as a transliterated name writes a middle initial
_lock = threading.Lock()
_state: dict[str, Any] = {}


def _tagger() -> Any:
    """jieba's part-of-speech tagger over its bundled dictionary (loaded once, under a lock)."""
    tagger = _state.get("posseg")
    if tagger is None:
        with _lock:
            tagger = _state.get("posseg")
            if tagger is None:
                import jieba
                import jieba.posseg

                jieba.setLogLevel(logging.WARNING)
                tokenizer = jieba.Tokenizer()
                tokenizer.initialize()
                tagger = jieba.posseg.POSTokenizer(tokenizer)
                _state["posseg"] = tagger
    return tagger


def converter(config: str) -> Callable[[str], str]:
    """OpenCC's conversion ``config`` (``t2s``: Traditional to Simplified; ``s2t``; ``s2tw``: to Taiwan's standard
    characters), made once per process, under a lock."""
    convert = _state.get(config)
    if convert is None:
        with _lock:
            convert = _state.get(config)
            if convert is None:
                import opencc

                convert = _state[config] = opencc.OpenCC(config).convert
    return convert


def _simplified(text: str) -> str:
    """``text`` in Simplified characters, when the conversion keeps its length (else as it is)."""
    out = converter("t2s")(text)
    return out if len(out) == len(text) else text


def traditional(text: str) -> bool:
    """Whether ``text`` is written in Traditional characters: converting it to Simplified changes some of its
    characters, and no fewer than converting it to Traditional does (瀋阳在哪里 is Simplified text with one
    Traditional name; 台北在哪裡, one each way, is Traditional)."""
    to_simplified = sum(a != b for a, b in zip(text, _simplified(text)))
    out = converter("s2tw")(text)
    to_traditional = sum(a != b for a, b in zip(text, out)) if len(out) == len(text) else 0
    return to_simplified > 0 and to_simplified >= to_traditional


@dataclass(frozen=True, slots=True)
class Token:
    word: str
    tag: str
    start: int


@lru_cache(maxsize=8192)
def tagged(text: str) -> tuple[Token, ...]:
    """``text`` cut into words, each with its part-of-speech tag and offset."""
    out, pos = [], 0
    for pair in _tagger().cut(_simplified(text)):
        out.append(Token(text[pos:pos + len(pair.word)], pair.flag, pos))
        pos += len(pair.word)
    return tuple(out)


def words(text: str) -> list[str]:
    """The words of ``text`` (whitespace dropped)."""
    return [t.word for t in tagged(text) if t.word.strip()]


@dataclass(frozen=True, slots=True)
class Name:
    text: str
    kind: str  # person, place, organization or name
    start: int


MAX_PART_TOKENS = 3  # segmenter tokens one part of an interpunct-joined name spans at most
# Tags of function words (prepositions, conjunctions, particles, adverbs, numerals, measure words, pronouns,
# non-words, modal particles, interjections, onomatopoeia, directions, times), by their first letter: never a
# piece of a name, whatever stands around them.
FUNCTION_TAGS = frozenset("pcudmqrxyeoft")


# Tags that end a span of words the corpus may use as one term (see :func:`segments`): the function tags less
# adverbs and measure words, which the tagger also gives to characters of a term its dictionary lacks (不 of 不平等,
# 碗 of 超级碗, 枝 of 进化枝); whether such a word belongs to its neighbour is the corpus's to say (how often the two
# stand together: extraction.wordlike.WordModel.cohesive), not its tag's.
SPAN_BREAK_TAGS = FUNCTION_TAGS - {"d", "q"}


def segments(text: str) -> list[tuple[Token, ...]]:
    """The runs of words in ``text`` that may hold a term: Han words side by side, none tagged with one of
    :data:`SPAN_BREAK_TAGS` (a particle, a preposition, a numeral, punctuation or a space ends a run)."""
    out: list[tuple[Token, ...]] = []
    run: list[Token] = []
    for tok in tagged(text):
        if tok.tag[:1] in SPAN_BREAK_TAGS or not han(tok.word):
            if run:
                out.append(tuple(run))
            run = []
        else:
            run.append(tok)
    if run:
        out.append(tuple(run))
    return out


def _piece(tok: Token) -> bool:
    """Whether a token can be a piece of a transliterated name: a name the tagger found, or a single character it
    took for a content word (拉 read as a verb in 米格尔·德·拉·马德里, 坦 cut from 托尔斯坦)."""
    return tok.tag in NAME_TAGS or (len(tok.word) == 1 and han(tok.word) and tok.tag[:1] not in FUNCTION_TAGS)


def _part(toks: Sequence[Token], k: int) -> int | None:
    """The end of the name part that starts at token ``k``, after an interpunct, or None when none starts there.
    The interpunct is how Chinese writes a transliterated name: a part between two of them belongs to the name
    when its pieces (:func:`_piece`) could be a name's (拉 of 米格尔·德·拉·马德里); a last part runs through its
    first token tagged as a name (德•蒙+科姆). An initial in Latin capitals is a whole part when an interpunct
    follows it too (F of 约翰·F·肯尼迪; not of 约翰·F肯尼迪, which :mod:`core.text.names`' runs do not join
    either). An interpunct that separates fields ("导演·张艺谋·主演·巩俐") is followed by words that are no pieces of
    a name, and joins nothing."""
    if k < len(toks) and _INITIAL.fullmatch(toks[k].word):
        return k + 1 if k + 1 < len(toks) and toks[k + 1].word in _JOINERS else None
    m = k
    while m < len(toks) and m - k < MAX_PART_TOKENS and _piece(toks[m]):
        named = toks[m].tag in NAME_TAGS
        m += 1
        if m < len(toks) and toks[m].word in _JOINERS:
            return m
        if named:
            return m
    return None


def names(text: str) -> list[Name]:
    """The proper names in ``text``, in order (a name may occur more than once)."""
    toks = tagged(text)
    out: list[Name] = []
    i = 0
    while i < len(toks):
        if toks[i].tag not in NAME_TAGS:
            i += 1
            continue
        j, kind = i + 1, NAME_TAGS[toks[i].tag]
        while j < len(toks):
            if toks[j].tag in NAME_TAGS:
                j += 1
            elif toks[j].word in _JOINERS and (end := _part(toks, j + 1)) is not None:
                j = end
            elif (_piece(toks[j]) and toks[j].tag[:1] == "n" and j + 1 < len(toks) and toks[j + 1].word in _JOINERS
                  and (end := _part(toks, j + 2)) is not None):
                j = end  # the rest of a part the segmenter cut before the interpunct (托尔斯+坦·凡勃伦)
            else:
                break
        while j > i + 1 and toks[j - 1].tag not in NAME_TAGS:  # a name ends on a part the tagger took for one
            j -= 1
        name = "".join(t.word for t in toks[i:j])
        if len(name) >= 2:
            out.append(Name(name, kind, toks[i].start))
        i = j
    return out


def numerals(text: str) -> list[str]:
    """The numerals jieba tags in ``text`` (四次, 二十, 308)."""
    return [t.word for t in tagged(text) if t.tag == NUMERAL_TAG and t.word.strip()]
