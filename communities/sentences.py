"""Whole sentences of chunks, and the small text statistics extractive reports and answers are chosen with.

A quoted sentence is always ``chunk.text[start:end]``: the source text between two offsets, never re-joined or
cleaned, so a citation points at the sentence. Chunks are token windows that may cut a sentence at either end;
:func:`whole_sentences` keeps only units that are whole (ending in sentence punctuation, or whole list items) and
joins a dialogue tag to its quotation ("“Spirit!” said Scrooge, ...") by widening the span, not by editing text.

Selection helpers: TF-IDF sentence vectors (IDF from the corpus's chunks), LexRank centrality (PageRank over
the cosine-similarity graph of the sentences), and maximal marginal relevance (MMR) for diversity.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Mapping, Sequence

import numpy as np

from core.records import chunk_id as first_chunk_id, document_of
from core.text.names import COMMON_WORDS
from core.text.script import CJK_CHAR
from core.text.sentences import split_sentences, title_line


@dataclass(frozen=True, slots=True)
class Sentence:
    """A whole sentence of a chunk: ``text == chunk.text[start:end]``."""

    chunk_id: str
    start: int
    end: int
    text: str


_CLOSERS = "\"'”’)]_*"
_BULLET = re.compile(r"(?:[-*+>]|\d{1,3}[.)])[ \t]+")
_TERMINAL = re.compile(r"[.!?…。！？][\"'”’)\]_*]*$")
_OPENING = re.compile(r"^[\"'“‘(\[_—–-]*")
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*", re.UNICODE)
_EXTRA_STOP = set("""
shall upon unto thee thou thy thine ye hath doth said say says went came made make get got thing things way back
like know think going let way yes don't can't won't it's i'm i've you're we're that's there's what's
""".split())
STOP = frozenset(COMMON_WORDS | _EXTRA_STOP)
MIN_WORDS = 4
MAX_CHARS = 700

def whole_sentences(text: str, at_document_start: bool = True, title: str | None = None) -> list[tuple[int, int]]:
    """Spans of the whole sentences of a chunk's ``text``.

    A document's ``title`` (its metadata title), on the line that opens it, is no part of its first sentence
    (:func:`core.text.sentences.title_line`): the splitter would glue the two, a line break being no sentence end,
    and every quote of that sentence would open with the title.
    The unit that opens a chunk is dropped unless the chunk opens its document (a window may start mid-sentence);
    a unit that does not end in sentence punctuation is dropped unless it is a list item followed by more text;
    a unit that starts in lower case after a closing quotation mark is its dialogue tag and is joined to it
    when only spaces or a single line break lie between. (Abbreviations and initials are the splitter's:
    :func:`core.text.sentences.split_sentences`.)"""
    spans: list[tuple[int, int, bool]] = []  # start, end, is a list item
    title_end = title_line(text, title) if at_document_start else 0
    for s, e in split_sentences(text):
        if s < title_end < e:
            s = title_end
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        while e < len(text) and text[e] in _CLOSERS:  # the splitter leaves closing quotes outside the sentence
            e += 1
        if s >= e:
            continue
        m = _BULLET.match(text, s)
        item = m is not None
        if m:
            s = m.end()
        body = _OPENING.sub("", text[s:e])
        if (spans and body[:1].islower() and text[spans[-1][1] - 1] in "\"'”’"
                and not re.search(r"\n\s*\n", text[spans[-1][1]:s])):
            spans[-1] = (spans[-1][0], e, spans[-1][2])
            continue
        spans.append((s, e, item))
    out: list[tuple[int, int]] = []
    for i, (s, e, item) in enumerate(spans):
        if i == 0 and not at_document_start and not text[:s].strip("\n"):
            continue
        unit = text[s:e]
        if unit.startswith(("#", "---", "[")) or len(unit) > MAX_CHARS:
            continue
        last = i == len(spans) - 1
        if not _TERMINAL.search(unit) and (not item or last):
            continue
        if len(_WORD.findall(unit)) < MIN_WORDS and len(CJK_CHAR.findall(unit)) < 2 * MIN_WORDS:
            continue  # (Chinese, Japanese and Korean are written without spaces: counted by characters)
        out.append((s, e))
    return out


def sentences_of(chunk_id: str, text: str, at_document_start: bool, title: str | None = None) -> list[Sentence]:
    return [Sentence(chunk_id, s, e, text[s:e]) for s, e in whole_sentences(text, at_document_start, title)]


def normalized(text: str) -> str:
    """Whitespace-collapsed text, for recognizing the same sentence quoted from two overlapping chunks."""
    return " ".join(text.split())


@lru_cache(maxsize=1)
def _stemmer():  # type: ignore[no-untyped-def]
    import Stemmer

    return Stemmer.Stemmer("english")


@lru_cache(maxsize=262_144)
def word_stems(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The content words of ``text`` and their stems. Cached: a chunk's sentences are read by every community
    (at every level) that cites the chunk."""
    ws = tuple(w for w in (m.group(0).lower().replace("’", "'") for m in _WORD.finditer(text))
               if len(w) > 2 and w not in STOP)
    return ws, tuple(_stemmer().stemWords(list(ws)))


def words(text: str) -> list[str]:
    """Lower-cased content words (stop words and words under three letters dropped)."""
    return list(word_stems(text)[0])


def stems(text: str) -> list[str]:
    return list(word_stems(text)[1])


def stem(word: str) -> str:
    return str(_stemmer().stemWord(word.lower()))


class Idf:
    """Inverse document frequencies of stems over a set of texts (the corpus's chunks)."""

    # Facts of the whole corpus a report writer needs beside the frequencies, carried with them to a writer that
    # holds only part of the corpus (a Dask worker's share): whether its pages have several titles, and the words
    # its prose uses (None until the writer that built the frequencies fills them in).
    titled: bool | None = None
    prose: frozenset[str] | None = None

    def __init__(self, texts: Iterable[str]) -> None:
        df: Counter[str] = Counter()
        n = 0
        for t in texts:
            df.update(set(stems(t)))
            n += 1
        self.n = n
        self.df = df

    def __call__(self, term: str) -> float:
        return math.log((self.n + 1) / (self.df.get(term, 0) + 1)) + 1.0


def tfidf(token_lists: Sequence[Sequence[str]], idf: Idf) -> tuple[np.ndarray, list[str]]:
    """L2-normalized TF-IDF rows (sublinear term frequency) and the vocabulary of the columns."""
    vocab: dict[str, int] = {}
    for toks in token_lists:
        for t in toks:
            vocab.setdefault(t, len(vocab))
    m = np.zeros((len(token_lists), max(1, len(vocab))), np.float64)
    for i, toks in enumerate(token_lists):
        for t, c in Counter(toks).items():
            m[i, vocab[t]] = (1.0 + math.log(c)) * idf(t)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return m / np.where(norms > 0, norms, 1.0), list(vocab)


def lexrank(sim: np.ndarray, damping: float = 0.85, iterations: int = 100, tol: float = 1e-9) -> np.ndarray:
    """Continuous LexRank: PageRank over the sentence-similarity graph (self-loops removed), summing to 1."""
    n = sim.shape[0]
    if n == 0:
        return np.zeros(0)
    w = sim.copy()
    np.fill_diagonal(w, 0.0)
    w = np.clip(w, 0.0, None)
    rows = w.sum(axis=1, keepdims=True)
    # A sentence similar to no other spreads its vote evenly.
    trans = np.where(rows > 0, w / np.where(rows > 0, rows, 1.0), 1.0 / n)
    p = np.full(n, 1.0 / n)
    for _ in range(iterations):
        nxt = (1 - damping) / n + damping * (trans.T @ p)
        if float(np.abs(nxt - p).sum()) < tol:
            return nxt
        p = nxt
    return p


def mmr(scores: Sequence[float], sim: np.ndarray, k: int, lam: float = 0.7,
        eligible: Sequence[bool] | None = None, start: Sequence[int] = (),
        max_similarity: float | None = None) -> list[int]:
    """Maximal marginal relevance: repeatedly the item maximizing ``lam * score - (1 - lam) * max similarity to
    the items already chosen``; scores are scaled to [0, 1] first. Ties go to the earlier item.

    ``eligible`` limits what may be added; ``start`` are items chosen beforehand (kept first, in order, whether
    eligible or not; at most ``k``); an item at least ``max_similarity`` similar to a chosen one is never added
    (the same point again, in other words or from an overlapping chunk)."""
    n = len(scores)
    if n == 0 or k <= 0:
        return []
    s = np.asarray(scores, np.float64)
    span = float(s.max() - s.min())
    s = (s - s.min()) / span if span > 0 else np.ones(n)
    ok = np.ones(n, bool) if eligible is None else np.asarray(eligible, bool)
    chosen: list[int] = list(dict.fromkeys(int(i) for i in start))[:k]
    closest = np.max(sim[chosen], axis=0) if chosen else np.zeros(n)
    while len(chosen) < min(k, n):
        value = lam * s - (1 - lam) * closest
        value[~ok] = -np.inf
        if chosen:
            value[chosen] = -np.inf
        if max_similarity is not None:
            value[closest >= max_similarity] = -np.inf
        best = int(np.argmax(value))
        if not np.isfinite(value[best]):
            break
        chosen.append(best)
        closest = np.maximum(closest, sim[best])
    return chosen


def key_terms(texts: Sequence[str], idf: Idf, exclude: Iterable[str] = (), k: int = 3) -> list[str]:
    """The ``k`` most distinctive words of ``texts``: TF-IDF summed over the texts, favouring words that recur
    in several of them; each stem is shown by its most frequent surface form. Words of ``exclude`` are skipped."""
    banned = {stem(w) for x in exclude for w in words(x)}
    weight: Counter[str] = Counter()
    spread: Counter[str] = Counter()
    surface: dict[str, Counter[str]] = {}
    for t in texts:
        ws, sts = word_stems(t)
        seen: set[str] = set()
        for w, st in zip(ws, sts):
            if st in banned:
                continue
            surface.setdefault(st, Counter())[w] += 1
            weight[st] += idf(st)
            seen.add(st)
        spread.update(seen)
    ranked = sorted(weight, key=lambda st: (-(weight[st] * (1.0 if spread[st] > 1 or len(texts) < 3 else 0.3)), st))
    return [surface[st].most_common(1)[0][0] for st in ranked[:k]]


def chunk_is_first(chunk_id: str, starts: Mapping[str, int] | None = None) -> bool:
    """Whether a chunk opens its document: by its start offset when known, else by its ordinal in the id."""
    if starts is not None and chunk_id in starts:
        return starts[chunk_id] == 0
    return chunk_id == first_chunk_id(document_of(chunk_id), 0)
