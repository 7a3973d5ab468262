"""How word-like a token is, learned from the corpus's own prose: a character trigram model of its ordinary words.

Hashes in examples (``CYaIb8sB``), hexadecimal ranges (``D7FF``, ``xE000``), base64, example values (``ccc``) and
runs of numbers are no names, yet no word list can say so for every corpus. :class:`WordModel` learns what the
words of *this* corpus look like: every word of its prose (outside code blocks, code spans, URLs and paths), lower
cased, so acronyms and product names the prose uses ("HTTP", "Caddyfile", "Hatchling") are words of it. A piece
of a token is scored by its mean log-probability per character under an add-k smoothed trigram model with word
boundaries; the threshold is the score below which :data:`THRESHOLD_SHARE` of the corpus's own word occurrences
fall, so it adapts to the corpus (a German corpus has other trigrams than an English one).

A name is word-like (:meth:`WordModel.wordlike`) when each of its whitespace-separated tokens is, a number
standing after a capitalized word excepted ("Python 3", "HTTP 504"). A token is cut into pieces at case changes,
digits and punctuation ("ClientHttp2Session": client, http, session); it is word-like when it holds more letters
than digits, its pieces of two letters or more are not scraps (a hash cut at its case changes leaves pieces
shorter than :data:`MIN_MEAN_PIECE` letters on average), and their letter-weighted score is above the threshold;
an acronym (up to five capitals) and a capitalized word ("Tshwane") are word-like by their shape, and the sides
of "TCP/IP" are judged each alone.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from core.text.markup import prose_view
from core.text.script import has_cjk
from core.text.names import (TERM_MIN_CHARS, capitalized_mid_sentence, chinese_segments, chinese_terms,
                              headings_in_title_case, lower_case_words, title_case_line)
from core.text.sentences import split_sentences
from extraction.markdown_text import heading_line

THRESHOLD_SHARE = 0.005  # the share of the corpus's word occurrences scoring below the threshold
SMOOTHING = 0.05  # add-k smoothing of the trigram counts
MIN_MEAN_PIECE = 2.5  # mean letters per piece below which a token is scraps of an encoded id
MIN_TRAINING_WORDS = 200  # with fewer words of prose, the model judges nothing (every token is word-like)
TERM_DOCUMENT_SHARE = 0.02  # a short candidate term more of the corpus's documents use is a common word (common_term)
COHESION = 0.5  # share of one word's uses beside the other above which two Chinese words are one term (cohesive)
LOWER_MAJORITY = 3  # a clause's first word is capitalized by position when written in lower case this many times as
# often as with a capital mid-sentence (set, not tuned: a clear majority, so that "east" of "East Germany" stays)

_PROSE_WORD = re.compile(r"[^\W\d_]{2,}")
_CODE_SPAN = re.compile(r"(`+)(?!`)[^\n]*?(?<!`)\1(?!`)")
_PIECE = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[^\W\d_A-Za-z]+")
_DIGITS = re.compile(r"\d")
_ACRONYM = re.compile(r"^[A-Z]{1,5}$")  # an acronym in capitals is a word by its shape ("AC", "TCP", "UUID")
_LETTERS = re.compile(r"[^\W\d_]")


def _capitalized_word(token: str) -> bool:
    """A capital and lower-case letters ("Tshwane", "Ahmadinejad", "O'Brien", "Jean-Luc"): a name in prose, in any
    language, by its shape. Trigrams learned from one corpus's words would take a rare foreign name for a scrap,
    and an encoded id is not written so (its digits and case changes are what give it away)."""
    parts = [p for p in re.split(r"['’-]", token) if p]
    return bool(parts) and all(p[:1].isupper() and (len(p) == 1 or p[1:].islower()) and p.isalpha() for p in parts)


def _prose_of(text: str) -> str:
    """``text``'s prose view with its code spans blanked too."""
    return _CODE_SPAN.sub(lambda m: " " * len(m.group(0)), prose_view(text))


def prose_words(text: str) -> list[str]:
    """The lower-cased words of ``text``'s prose: not in code blocks or code spans, URLs, paths or markup."""
    return [w.lower() for w in _PROSE_WORD.findall(_prose_of(text))]


_PROSE_TOKEN = re.compile(r"[^\W\d_](?:[\w'’.+/-]*\w)?")


def prose_tokens(text: str) -> list[str]:
    """The whole tokens of ``text``'s prose, casefolded, as written between spaces and punctuation
    ("hatch-check-types", "TCP/IP", "PLUGIN_NAME" only when the prose spells it outside code)."""
    view = prose_view(text)
    view = _CODE_SPAN.sub(lambda m: " " * len(m.group(0)), view)
    return [t.casefold() for t in _PROSE_TOKEN.findall(view)]


def _style_lines_blanked(view: str, text: str, lower: Counter[str]) -> str:
    """``view`` with its lines in title case blanked, and its headings when it writes them in title case
    (:func:`core.text.names.headings_in_title_case`), offsets kept: their capitals are the style's ("Restart the
    Workers"), so they are no evidence of how the corpus writes a word mid-sentence. ``lower``: the view's uses of
    words in lower case (:func:`core.text.names.lower_case_words`)."""
    if len(text) != len(view):
        text = view
    lines: list[tuple[str, str, bool]] = []  # each line of the view, of the text, and whether it is a heading
    at = 0
    for line in view.splitlines(keepends=True):
        raw = text[at:at + len(line)]
        lines.append((line, raw, heading_line(raw.lstrip())))
        at += len(line)
    headings = [line for line, _, heading in lines if heading]
    styled = bool(headings) and headings_in_title_case(headings, lower)
    out = []
    for line, raw, heading in lines:
        body = len(line.rstrip("\r\n"))
        out.append(" " * body + line[body:] if (heading and styled) or title_case_line(line, raw) else line)
    return "".join(out)


@dataclass
class TextCounts:
    """What one text adds to its corpus's :class:`WordModel`: counts of that text alone, so a corpus's model is the
    sum over its texts and an index run reads an unchanged text's counts from a cache (:mod:`extraction.word_cache`)
    instead of reading the text again (the Chinese tagger is the costly part)."""

    words: Counter[str] = field(default_factory=Counter)  # prose words, lower cased: occurrences
    lower: Counter[str] = field(default_factory=Counter)
    capital: Counter[str] = field(default_factory=Counter)
    pairs: Counter[tuple[str, str]] = field(default_factory=Counter)
    cjk: bool = False  # written in a CJK script (only such a text can use a Chinese term)
    terms: tuple[str, ...] = ()  # the Chinese candidate terms it uses
    recurring: tuple[str, ...] = ()  # ... those it uses in two sentences or more
    han_words: Counter[str] = field(default_factory=Counter)
    joined: Counter[tuple[str, str]] = field(default_factory=Counter)

    @classmethod
    def of(cls, text: str) -> "TextCounts":
        view = _prose_of(text)
        words = Counter(low for w in _PROSE_WORD.findall(view) if len(low := w.lower()) >= 2)
        out = cls(words=words, lower=Counter(lower_case_words(view)))
        if has_cjk(view):
            out.cjk = True
            # (the sentences the extractor counts: split on the text, for its table rows and headings)
            uses = Counter(term for s, e in split_sentences(text) for term in chinese_terms(view[s:e]))
            out.terms = tuple(sorted(uses))
            out.recurring = tuple(sorted(term for term, n in uses.items() if n >= 2))
            for seg in chinese_segments(view):
                out.han_words.update(seg)
                out.joined.update(zip(seg, seg[1:]))
        styled = _style_lines_blanked(view, text, out.lower)
        for word, after in capitalized_mid_sentence(styled, text if len(text) == len(view) else None):
            out.capital[word] += 1
            if after:
                out.pairs[word, after] += 1
        return out

    def to_json(self) -> dict[str, Any]:
        return {"w": self.words, "l": self.lower, "c": self.capital, "p": [[a, b, n] for (a, b), n in self.pairs.items()],
                "k": self.cjk, "t": self.terms, "r": self.recurring, "h": self.han_words,
                "j": [[a, b, n] for (a, b), n in self.joined.items()]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "TextCounts":
        """What :meth:`to_json` wrote; KeyError, TypeError, ValueError or AttributeError for anything else."""
        def counts(d: dict[str, Any]) -> Counter[str]:
            if not all(isinstance(k, str) and type(n) is int for k, n in d.items()):
                raise TypeError("counts of words must be whole numbers")
            return Counter(d)

        def pair_counts(rows: list[Any]) -> Counter[tuple[str, str]]:
            out: Counter[tuple[str, str]] = Counter()
            for a, b, n in rows:
                if not (isinstance(a, str) and isinstance(b, str) and type(n) is int):
                    raise TypeError("counts of word pairs must be two words and a whole number")
                out[a, b] = n
            return out

        def words(items: list[Any]) -> tuple[str, ...]:
            if not isinstance(items, list) or not all(isinstance(w, str) for w in items):
                raise TypeError("terms must be a list of words")
            return tuple(items)

        if not isinstance(data["k"], bool):
            raise TypeError("the script flag must be true or false")
        return cls(counts(data["w"]), counts(data["l"]), counts(data["c"]), pair_counts(data["p"]), data["k"],
                   words(data["t"]), words(data["r"]), counts(data["h"]), pair_counts(data["j"]))


@dataclass
class WordModel:
    """A character trigram model of a corpus's words and the corpus's own threshold of word-likeness."""

    trigrams: Counter[str] = field(default_factory=Counter)
    bigrams: Counter[str] = field(default_factory=Counter)
    alphabet: int = 1
    threshold: float = -math.inf
    trained_on: int = 0
    vocabulary: Counter[str] = field(default_factory=Counter)  # the corpus's prose words, lower cased
    lower: Counter[str] = field(default_factory=Counter)  # uses of ordinary words in lower case (of_texts)
    capital: Counter[str] = field(default_factory=Counter)  # uses with a capital after a lower-case word (of_texts)
    pairs: Counter[tuple[str, str]] = field(default_factory=Counter)  # such a word and a capitalized next one
    documents: int = 0  # the texts read (of_texts) that are written in a CJK script
    term_documents: Counter[str] = field(default_factory=Counter)  # Chinese candidate terms: the texts using each
    recurring_terms: Counter[str] = field(default_factory=Counter)  # ... the texts using each in two sentences or more
    han_words: Counter[str] = field(default_factory=Counter)  # Chinese words in runs that may hold a term: uses
    joined: Counter[tuple[str, str]] = field(default_factory=Counter)  # two such words side by side: uses

    @classmethod
    def fit(cls, counts: Counter[str]) -> "WordModel":
        """The trigram model of words by their occurrences (:attr:`TextCounts.words`: prose words of two letters or
        more, lower cased)."""
        model = cls()
        letters: set[str] = set()
        for w, n in counts.items():
            padded = f"^^{w}$"
            letters.update(w)
            for i in range(len(padded) - 2):
                model.trigrams[padded[i:i + 3]] += n
                model.bigrams[padded[i:i + 2]] += n
        model.alphabet = len(letters) + 1
        model.trained_on = sum(counts.values())
        model.vocabulary = counts
        if model.trained_on < MIN_TRAINING_WORDS:
            return model
        scored = sorted((model.score(w), n) for w, n in counts.items())
        cut, seen = THRESHOLD_SHARE * model.trained_on, 0
        for s, n in scored:
            seen += n
            if seen >= cut:
                model.threshold = s
                break
        return model

    @classmethod
    def of_texts(cls, texts: Iterable[str]) -> "WordModel":
        """The model of the texts' prose words, and the words their prose writes in lower case (each text read
        once)."""
        return cls.of_counts(TextCounts.of(t) for t in texts)

    @classmethod
    def of_counts(cls, counts: Iterable["TextCounts"]) -> "WordModel":
        """The model of texts by what each adds (:class:`TextCounts`, computed or read from a cache): the same
        model as :meth:`of_texts` of the texts."""
        lower: Counter[str] = Counter()
        capital: Counter[str] = Counter()
        pairs: Counter[tuple[str, str]] = Counter()
        terms: Counter[str] = Counter()
        recurring: Counter[str] = Counter()
        han_words: Counter[str] = Counter()
        joined: Counter[tuple[str, str]] = Counter()
        vocabulary: Counter[str] = Counter()
        documents = 0
        for c in counts:
            if c.cjk:
                documents += 1
                terms.update(c.terms)
                recurring.update(c.recurring)
                han_words.update(c.han_words)
                joined.update(c.joined)
            vocabulary.update(c.words)
            lower.update(c.lower)
            capital.update(c.capital)
            pairs.update(c.pairs)
        model = cls.fit(vocabulary)
        model.lower, model.capital, model.pairs = lower, capital, pairs
        model.documents, model.term_documents, model.recurring_terms = documents, terms, recurring
        model.han_words, model.joined = han_words, joined
        return model

    def score(self, piece: str) -> float:
        """Mean log2-probability per transition of ``piece`` (lower cased) under the trigram model."""
        padded = f"^^{piece.lower()}$"
        total = 0.0
        for i in range(len(padded) - 2):
            tri, bi = padded[i:i + 3], padded[i:i + 2]
            total += math.log2((self.trigrams.get(tri, 0) + SMOOTHING) / (self.bigrams.get(bi, 0) + SMOOTHING * self.alphabet))
        return total / (len(padded) - 2)

    def prose_word(self, word: str) -> bool:
        """Whether the corpus's prose uses ``word`` as a word of its own (outside code), more than once."""
        return self.vocabulary.get(word.lower(), 0) >= 2

    def lower_word(self, word: str) -> bool:
        """Whether the corpus's prose writes ``word`` in lower case, more than once ("enables", not "Alex")."""
        return self.lower.get(word.lower(), 0) >= 2

    def name_word(self, word: str) -> bool:
        """Whether the corpus's prose writes ``word`` capitalized mid-sentence more than once, and at least as often
        as in lower case ("Traefik", "Helm"; not "install", however many headings capitalize it)."""
        key = word.lower()
        return self.capital.get(key, 0) >= max(2, self.lower.get(key, 0))

    def mostly_lower(self, word: str) -> bool:
        """Whether the corpus's prose writes ``word`` in lower case (:meth:`lower_word`) at least
        :data:`LOWER_MAJORITY` times as often as capitalized mid-sentence ("options", though "the TLS Options" is
        written too)."""
        key = word.lower()
        return self.lower_word(word) and self.lower[key] >= LOWER_MAJORITY * max(1, self.capital.get(key, 0))

    def capitalized_by_position(self, word: str, after: str = "") -> bool:
        """Whether a capital on ``word`` opening a clause (``after``: the capitalized word after it) is its
        position's: the corpus's prose writes the word in lower case (:meth:`lower_word`), at least
        :data:`LOWER_MAJORITY` times as often as with a capital mid-sentence ("w" of "W Europie", "według"; not
        "west", which a corpus writes about as often in "West Virginia" and "West Bank" as in "the west"), and never
        writes the two words capitalized mid-sentence ("in West Virginia", "at General Motors": a name)."""
        if after and self.pairs.get((word.lower(), after.lower()), 0):
            return False
        return self.mostly_lower(word)

    def common_term(self, term: str) -> bool:
        """Whether a candidate term (a Chinese noun or run of nouns: :func:`core.text.names.chinese_terms`) is a
        common word of the language rather than a term of the corpus: a two-character noun used by more than
        :data:`TERM_DOCUMENT_SHARE` of the corpus's documents in a CJK script (and by more than two: the graph
        walk's floor too, whose seeds may be shared by two passages). The share and the length were set by
        reading the nouns of 600 DRCD paragraphs (Traditional Chinese Wikipedia) by the share of paragraphs using
        them: above 5% nearly all are common words (方式, 大量, 產生), between 2% and 5% half are (時間, 結果 beside
        條約, 鐵路), below 2% few are; and of the 222 candidates more than 2% of them use, 218 are two characters
        long, the other four the paragraphs' subjects (委員會, 社會主義, 殖民地, 領導人), as a run of nouns is. So a
        corpus about one system keeps its hub term (调度器) however many of its documents use it."""
        if len(term) >= TERM_MIN_CHARS:
            return False
        return self.term_documents.get(term, 0) > max(2.0, TERM_DOCUMENT_SHARE * self.documents)

    def recurring_term(self, term: str) -> bool:
        """Whether a document of the corpus uses the candidate term (:meth:`common_term`'s) in more than one
        sentence, and the term is at least :data:`TERM_MIN_CHARS` characters long: an entity then wherever the
        corpus names it, once or more (:mod:`extraction.offline`). A paragraph that names 神秘博士 once names the
        entity its neighbours establish, as an extractor reading the whole corpus would; a term no document
        repeats stays none. A two-character noun is where the common words are (:meth:`common_term`): one that a
        few documents repeat (城市, 海洋, 法院) names, where another uses it once, the word more often than the
        term, and is an entity only where it is repeated."""
        return len(term) >= TERM_MIN_CHARS and self.recurring_terms.get(term, 0) > 0

    def cohesive(self, joins: Sequence[tuple[str, str]]) -> bool:
        """Whether a span of Chinese words is one term by how the corpus writes its words (``joins``: each pair of
        neighbours in it, in order), each pair more than once: at every join, the two stand together in at least
        :data:`COHESION` of the uses of one of them (免疫 + 缺陷: most uses of 缺陷; 公民 + 不 + 服从); and a word of
        one character at either end stands there in that share of its own uses (碗 of 超级碗 in a corpus about
        the Super Bowl). A single character that stands beside many words (是 of 是对流层, 说 of 博士说, 已 of
        上帝已) is a word of the sentence, not of the term, however few uses the term's other word has."""
        last = len(joins) - 1
        for k, (a, b) in enumerate(joins):
            n = self.joined.get((a, b), 0)
            uses_a, uses_b = self.han_words.get(a, 0), self.han_words.get(b, 0)
            if n < 2 or n < COHESION * min(uses_a, uses_b):
                return False
            if ((k == 0 and len(a) == 1 and n < COHESION * uses_a)
                    or (k == last and len(b) == 1 and n < COHESION * uses_b)):
                return False
        return True

    @property
    def active(self) -> bool:
        return self.trained_on >= MIN_TRAINING_WORDS

    def token_wordlike(self, token: str) -> bool:
        """Whether one token (no spaces) looks like a word of the corpus (see the module docstring)."""
        if not self.active:
            return True
        if "/" in token.strip("/"):  # "TCP/IP", "I/O": each side on its own
            return all(self.token_wordlike(t) for t in token.split("/") if t)
        if _ACRONYM.match(token) or _capitalized_word(token):
            return True
        letters, digits = len(_LETTERS.findall(token)), len(_DIGITS.findall(token))
        if letters == 0 or digits > letters:
            return False
        pieces = [p for p in _PIECE.findall(token) if len(p) >= 2]
        if not pieces:
            return letters <= 3 and digits == 0  # "I/O", "C": letters alone
        every = _PIECE.findall(token)
        if len(every) >= 3 and sum(map(len, every)) / len(every) < MIN_MEAN_PIECE:
            return False
        weight = sum(len(p) for p in pieces)
        return sum(self.score(p) * len(p) for p in pieces) / weight >= self.threshold

    def wordlike(self, name: str) -> bool:
        """Whether every token of ``name`` is word-like (a number after a capitalized word excepted)."""
        if not self.active:
            return True
        prev: str | None = None
        for tok in name.split():
            bare = tok.strip(",.;:!?()[]\"'“”‘’")
            if not bare:
                continue
            if not _LETTERS.search(bare) and prev is not None and prev[:1].isupper():
                prev = bare
                continue
            if not self.token_wordlike(bare):
                return False
            prev = bare
        return prev is not None
