"""The reader: which units of the ranked passages answer a question, and whether any does.

1. The candidates are the units of the best passages (:func:`answers.signals.build_pool`) and of the pages the
   question names by their title (:func:`named_pages`).
2. Each gets the signals of :mod:`answers.signals`, and the fitted ranker (:mod:`answers.model`) a score; a
   softmax over the candidates says how likely each is to hold the answer.
3. The best unit is quoted, then, by maximal marginal relevance, others whose probability is at least
   ``keep_share`` of the best's (a unit that repeats a quoted one is skipped).
4. The fitted answerability model gives the calibrated probability that the corpus answers the question at
   all; under its threshold the reader declines, naming what came closest and where. Times the ranker's mass on
   the quoted units, it is the probability that they hold the answer.

Nothing here depends on the question's wording or language: the same signals and weights serve English,
Chinese and Polish, and the question's kind comes from a classifier over its multilingual vector.
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from answers.model import ReaderWeights, shipped_weights
from answers.signals import (Asked, Candidate, Passage, Pool, Question, answerability, build_pool, read_as,
                             read_question, share, signals)
from answers.units import Unit
from communities.sentences import chunk_is_first, mmr

MAX_EMBEDDED = 64  # candidates embedded per question at most (the lexically likeliest and best-ranked)
RANKED = 8  # the best candidates a reading keeps, for an LLM to write its answer from
DUPLICATE = 0.95  # a unit this close in meaning to a quoted one says the same again


@dataclass(frozen=True, slots=True)
class Reading:
    """What the reader found for one question."""

    units: tuple[Unit, ...]  # the units it would quote, best first (quoted only when ``answered``)
    probability: float  # calibrated P(the corpus answers the question)
    answered: bool
    closest: Unit | None  # the best candidate, whether or not it is quoted
    read: tuple[str, ...]  # the passages whose units were candidates
    scores: tuple[float, ...] = ()  # each quoted unit's probability among the candidates
    threshold: float = 0.0
    ranked: tuple[Unit, ...] = ()  # the best candidates, best first (what an LLM answer is written from)

    @property
    def quoted_probability(self) -> float:
        """P(the quoted units hold the answer): that the corpus answers it, times the ranker's mass on them."""
        return self.probability * min(1.0, sum(self.scores))


class IndexCorpus:
    """The reader's view of a chunk index (and its entity lexicon): terms as the index reads them, how many
    passages hold each, the question's language and the names the index knows."""

    def __init__(self, index: Any, lexicon: Any = None) -> None:
        self.index, self.lexicon = index, lexicon

    @property
    def n_docs(self) -> int:
        alive = getattr(self.index.bm25, "alive", None)
        return int(alive.sum()) if alive is not None and len(alive) else max(1, len(self.index))

    def terms(self, text: str, language: str) -> list[str]:
        return self.index.tokenizer(text, language)

    def df(self, terms: Sequence[str]) -> np.ndarray:
        return self.index.bm25.document_frequency(terms)

    def language(self, text: str) -> str:
        return self.index.query_language(text)

    def known_names(self, question: str) -> list[str]:
        """The question's words that name entities the index knows: the lexicon's spans, judged as the graph
        walk links them (a word the corpus mostly uses as an ordinary word names no entity that it spells)."""
        if self.lexicon is None or not len(self.lexicon):
            return []
        found = [(span, hit.name) for span, hit in self.lexicon.find_spans(question)]
        walk = getattr(self.index, "graph_walk", None)
        if walk is not None:
            found = walk.names_in(question, found)
        return [span for span, _ in found]

    def neighbours(self, question: str) -> list[str]:
        """The entities the graph relates to those the question names (none without a graph)."""
        walk = getattr(self.index, "graph_walk", None)
        if walk is None:
            return []
        return walk.neighbours([s.entity_id for s in walk.link(question).seeds if s.by == "name"])


class UnitVectors:
    """Multilingual-e5 passage vectors of unit texts, kept in memory (least recently used out) and in the
    index's vector cache on disk, so that a unit embedded for one question is not embedded for the next."""

    def __init__(self, embedder: Any, size: int = 20_000) -> None:
        self.embedder, self.size = embedder, size
        self._lock, self._items = threading.Lock(), OrderedDict()  # type: ignore[var-annotated]

    def __call__(self, texts: Sequence[str], disk: Any = None) -> np.ndarray:
        name = "unit:" + getattr(self.embedder, "name", type(self.embedder).__name__)
        keys = [hashlib.blake2b(t.encode("utf-8"), digest_size=12).hexdigest() for t in texts]
        out: dict[str, np.ndarray] = {}
        with self._lock:
            for k in keys:
                if k in self._items:
                    self._items.move_to_end(k)
                    out[k] = self._items[k]
        todo = [k for k in dict.fromkeys(keys) if k not in out]
        if todo and disk is not None:
            out.update(disk.get_many(name, todo, self.embedder.dim))
            todo = [k for k in todo if k not in out]
        if todo:
            by_key = dict(zip(keys, texts))
            fresh = {k: np.asarray(v, np.float32) for k, v in zip(todo, self.embedder.embed([by_key[k] for k in todo]))}
            if disk is not None:
                disk.put_many(name, fresh)
            out.update(fresh)
        with self._lock:
            for k in keys:
                self._items[k] = out[k]
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return np.stack([out[k] for k in keys]) if keys else np.zeros((0, self.embedder.dim), np.float32)


@dataclass(frozen=True, slots=True)
class _Page:
    chunk_id: str
    text: str


_TITLES: "weakref.WeakKeyDictionary[Any, tuple[int, dict[str, list[tuple[frozenset[str], int]]]]]" = \
    weakref.WeakKeyDictionary()


def _titles(index: Any) -> dict[str, list[tuple[frozenset[str], int]]]:
    """Per term, the (title terms, row) of the documents whose title holds it: a document's title is its front
    matter's ``title``, or its first line. Read once per index size and kept beside the index."""
    rows = index.rows
    cached = _TITLES.get(index)
    if cached is None or cached[0] != len(rows):
        by_term: dict[str, list[tuple[frozenset[str], int]]] = {}
        for i, row in enumerate(rows):
            if not chunk_is_first(row.chunk_id):
                continue
            meta = row.fields.get("title")
            line = row.text.lstrip().split("\n", 1)[0].strip().lstrip("#").strip()
            for title in {meta.strip() if isinstance(meta, str) else "", line}:
                if 0 < len(title) <= 120:
                    terms = frozenset(index.tokenizer(title, row.language if row.language != "und" else None))
                    for t in terms:
                        by_term.setdefault(t, []).append((terms, i))
        cached = (len(rows), by_term)
        _TITLES[index] = cached
    return cached[1]


def named_pages(index: Any, question_terms: Sequence[str], limit: int = 2,
                metadata_filter: dict[str, Any] | None = None) -> list[_Page]:
    """The opening passages of the documents whose whole title the question names (every term of the title is
    one of the question's), most specific title first (the most terms): "What is package-lock.json for?" names
    the page titled package-lock.json; a comparison names both sides' pages. Only live pages the metadata
    filter allows are named, as only those are searched."""
    if not getattr(index, "rows", None):
        return []
    by_term = _titles(index)
    asked = set(question_terms)
    allowed = index.allowed(metadata_filter)
    found: dict[int, int] = {}
    for t in asked:
        for terms, row in by_term.get(t, ()):
            if terms <= asked and row < len(allowed) and allowed[row]:
                found[row] = max(found.get(row, 0), len(terms))
    rows = sorted(found, key=lambda r: (-found[r], r))[:limit]
    return [_Page(index.rows[r].chunk_id, index.rows[r].text) for r in rows]


class Reader:
    """Reads the ranked passages of a question with fitted weights (the shipped ones by default)."""

    def __init__(self, weights: ReaderWeights | None = None, embedder: Any = "shared") -> None:
        self.weights = weights or shipped_weights()
        if embedder == "shared":
            from retrieval.e5 import shared_e5

            embedder = shared_e5()
        self.embedder = embedder
        self.vectors = UnitVectors(embedder) if embedder is not None else None

    def question_vector(self, question: str) -> np.ndarray | None:
        return None if self.embedder is None else self.embedder.embed_queries([question])[0]

    def question(self, text: str, corpus: Any, vector: np.ndarray | None = None) -> Question:
        vector = vector if vector is not None else self.question_vector(text)
        return read_question(text, corpus, vector, self.weights.kinds.probabilities(vector))

    def candidates(self, q: Question, hits: Sequence[Any], index: Any, hops: Sequence[Any] = (),
                   metadata_filter: dict[str, Any] | None = None) -> Pool:
        """The candidate units of ``hits`` (``hops``: the search's second hops by title, (moved, named by,
        title) triples, :attr:`retrieval.hits.SearchOutcome.hops`; ``metadata_filter``: the search's, which
        the pages named by title obey too)."""
        pool = build_pool(hits, named_pages(index, q.terms, metadata_filter=metadata_filter), hops)
        if len(pool.candidates) > MAX_EMBEDDED:
            pool = _bounded(pool, q, IndexCorpus(index))
        return pool

    def score(self, q: Question, pool: Pool, corpus: Any, disk: Any = None) -> tuple[np.ndarray, np.ndarray | None,
                                                                                     np.ndarray]:
        """(signals, unit vectors, ranker logits) of the pool's candidates."""
        vecs = self.vectors([read_as(c.unit) for c in pool.candidates], disk) if self.vectors is not None else None
        x = signals(q, pool, corpus, vecs)
        return x, vecs, self.weights.ranker.score(x)


    def read(self, question: str, hits: Sequence[Any], index: Any, n: int, lexicon: Any = None,
             vector: np.ndarray | None = None, hops: Sequence[Any] = (),
             metadata_filter: dict[str, Any] | None = None) -> Reading:
        corpus = IndexCorpus(index, lexicon)
        q = self.question(question, corpus, vector)
        pool = self.candidates(q, hits, index, hops, metadata_filter)
        read = tuple(p.chunk_id for p in pool.passages)
        if not pool.candidates:
            return Reading((), 0.0, False, None, read, threshold=self.weights.threshold)
        x, vecs, logits = self.score(q, pool, corpus, getattr(index, "vector_cache", None))
        sim = vecs @ vecs.T if vecs is not None else np.eye(len(logits))
        chosen = choose(logits, sim, self.weights.keep_share, n)
        p = float(self.weights.p_answerable(answerability(Asked.of(q), x, logits, chosen, sim)[None, :])[0])
        probs = np.exp(logits - logits.max())
        probs /= probs.sum()
        best = pool.candidates[int(np.argmax(logits))].unit
        answered = p >= self.weights.threshold
        units = tuple(pool.candidates[i].unit for i in chosen)
        scores = tuple(float(probs[i]) for i in chosen)
        ranked = tuple(pool.candidates[int(i)].unit for i in np.argsort(-logits, kind="stable")[:RANKED])
        return Reading(units, p, answered, best, read, scores, self.weights.threshold, ranked)


def choose(logits: np.ndarray, sim: np.ndarray, keep_share: float, n: int) -> list[int]:
    """The candidates to quote, best first: the best, then by maximal marginal relevance those whose probability
    is at least ``keep_share`` of the best's (``sim``: the candidates' similarities; one this close to a quoted
    one, :data:`DUPLICATE`, says the same again)."""
    if not len(logits):
        return []
    p = np.exp(logits - logits.max())
    p /= p.sum()
    return mmr(p, np.asarray(sim, np.float64), n, lam=0.75, eligible=p >= keep_share * float(p.max()),
               max_similarity=DUPLICATE)


def _bounded(pool: Pool, q: Question, corpus: Any) -> Pool:
    """The pool cut to :data:`MAX_EMBEDDED` candidates: those holding most of the question's IDF mass (or whose
    neighbour does), ties to the better-ranked passage."""
    lex = [share(q, set(corpus.terms(c.unit.text, q.language))) for c in pool.candidates]
    rank = [1.0 / (1.0 + pool.passages[c.passage].rank) for c in pool.candidates]
    order = sorted(range(len(pool.candidates)), key=lambda i: (-(lex[i] + 0.5 * rank[i]), i))[:MAX_EMBEDDED]
    keep = sorted(order)
    return Pool(pool.passages, [pool.candidates[i] for i in keep])


__all__ = ["Reader", "Reading", "IndexCorpus", "UnitVectors", "named_pages", "Candidate", "Passage"]
