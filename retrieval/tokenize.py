"""A Unicode-aware tokenizer for BM25 that keeps technical identifiers findable.

- Identifiers are kept whole and as parts: ``max_connections`` gives ``max_connections``, ``max``,
  ``connections``; ``billing-service`` and ``db.pool.size`` likewise. ``HTTP 504`` gives ``http`` and ``504``.
- CJK text becomes overlapping character bigrams (a lone character stays a unigram).
- English stop words and Snowball stemming (PyStemmer) are options; compounds are never stemmed or dropped,
  so an exact identifier always matches itself.
- Polish text (see :mod:`core.text.language`) gets lemmas instead (simplemma's Polish dictionary: ``tabeli``,
  ``tabelę`` -> ``tabela``; words it does not know, such as English terms, get the English stem) and Polish
  function words as stop words: Snowball has no Polish stemmer, and an
  inflected language loses most matches without one. The caller passes the text's language (the index
  resolves undetermined queries to its corpus's main language), so a chunk and a query meet on the same terms.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

from core.text.language import POLISH_FUNCTION_WORDS, detect_language
from core.text.lemma import polish_lemma
from core.text.script import CJK_RANGES

_CJK = CJK_RANGES
_TOKEN = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}](?:[\w.\-]*[^\W_{_CJK}])?|_[\w]+", re.UNICODE)
_SPLIT = re.compile(r"[_.\-]+")

STOPWORDS = frozenset("""
a about above after again against all am an and any are aren't as at be because been before being below between
both but by can cannot could did do does doing down during each few for from further had has have having he her
here hers herself him himself his how i if in into is it its itself just me more most my myself no nor not now of
off on once only or other ought our ours ourselves out over own same she should so some such than that the their
theirs them themselves then there these they this those through to too under until up very was we were what when
where which while who whom why will with would you your yours yourself yourselves also may might must shall us
""".split())


@dataclass(frozen=True, slots=True)
class TokenizerConfig:
    stopwords: bool = True
    stemming: bool = True
    polish_lemmas: bool = True  # with stemming: lemmas for Polish text instead of English stems


@lru_cache(maxsize=4)
def _stemmer():  # type: ignore[no-untyped-def]
    import Stemmer

    return Stemmer.Stemmer("english")


def _polish_lemma(word: str) -> str | None:
    """The word's lemma, or None for a word the Polish dictionary does not know (an English term in Polish
    text, an identifier), which then gets the English stem, as it would in an English text."""
    lemma = polish_lemma(word)
    return lemma.casefold() if lemma is not None else None


class Tokenizer:
    """Turns text into BM25 terms; the same instance must index and query."""

    def __init__(self, config: TokenizerConfig = TokenizerConfig()) -> None:
        self.config = config
        self._stem = _stemmer().stemWord if config.stemming else None
        self._cache: dict[str, str] = {}
        self._lemma = _polish_lemma if config.stemming and config.polish_lemmas else None
        self._pl_cache: dict[str, str] = {}

    def _word(self, word: str) -> str | None:
        if self.config.stopwords and word in STOPWORDS:
            return None
        if self._stem is None or not word.isalpha():
            return word
        stem = self._cache.get(word)
        if stem is None:
            stem = self._stem(word)
            if len(self._cache) < 200_000:
                self._cache[word] = stem
        return stem

    def _polish_word(self, word: str) -> str | None:
        if self.config.stopwords and (word in POLISH_FUNCTION_WORDS or word in STOPWORDS):
            return None
        if self._lemma is None or not word.isalpha():
            return word
        lemma = self._pl_cache.get(word)
        if lemma is None:
            lemma = self._lemma(word) or self._word(word) or word
            if len(self._pl_cache) < 200_000:
                self._pl_cache[word] = lemma
        return lemma

    def __call__(self, text: str, language: str | None = None) -> list[str]:
        """BM25 terms of ``text``; ``language`` (from :func:`core.text.language.detect_language`, detected here
        when not given) selects Polish lemmas or English stems."""
        out: list[str] = []
        if language is None and self._lemma is not None:
            language = detect_language(text)
        word: Callable[[str], str | None] = self._polish_word if language == "pl" and self._lemma else self._word
        text = unicodedata.normalize("NFKC", text).casefold()
        for m in _TOKEN.finditer(text):
            tok = m.group(0)
            if tok[0] >= "\u3040" and re.match(rf"[{_CJK}]", tok[0]):
                if len(tok) == 1:
                    out.append(tok)
                else:
                    out.extend(tok[i:i + 2] for i in range(len(tok) - 1))
                continue
            tok = tok.strip("_")
            if not tok:
                continue
            parts = [p for p in _SPLIT.split(tok) if p]
            if len(parts) > 1:
                out.append(tok)
                for p in parts:
                    w = word(p)
                    if w:
                        out.append(w)
            else:
                w = word(tok)
                if w:
                    out.append(w)
        return out
