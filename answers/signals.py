"""The reader's signals: what makes a candidate unit the answer to a question, as numbers that name no word of
any language.

Candidates are the units (:mod:`answers.units`: sentences, lists with their lead-in, tables, code blocks) of the
passages a search ranked first. For each candidate the reader measures, against the question:

- meaning: the cosine of its multilingual-e5 vector (read under its nearest heading) with the question's, and
  how far it is from the best one;
- words: the share of the question's IDF mass (terms as the index reads them: stems, Polish lemmas, CJK
  bigrams) that it holds, read under its nearest heading (:func:`read_as`), at its start (the question's subject opening the unit) and in its neighbours (the
  sentence before a match often names what the question names, the one after explains it) and its passage; and
  how rare the rarest question term is that
  the unit, or its passage, lacks (a question that names what its passage does not, "the King of Germany" of a
  paragraph about France, is not answered there);
- entities: the share of the question's names it mentions, whether it mentions two of them (a relation), and
  whether it mentions an entity the graph relates to them that the question does not name (the next hop); a
  name is mentioned when all of its terms are (as the index reads them: "Konga" mentions "Kongo" in Polish);
- place: its passage's rank and ranking score, the graph walk's rank, whether the search moved its passage up as
  a second hop by title or its passage named another's title (the first hop: a multi-hop question's answer
  lies beyond it), its position in the passage, whether its page is one the question names by title;
- shape: its kind (list, table, code), its length, what it adds beyond the question's words, and whether it
  holds a numeral, a name or a path the question does not; these crossed with what the question asks for (the
  probabilities of :mod:`answers.kinds`), and for a long answer, whether the unit follows a match.

:func:`answerability` sums up a question's candidates after ranking, for the probability that the chosen units
hold the answer at all.

Everything here is a pure function of the question, the candidates and the corpus's statistics; the weights that
combine the signals are fitted from labelled data (:mod:`answers.train`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

import numpy as np

from answers.kinds import KINDS
from answers.units import Unit, answer_units
from communities.sentences import chunk_is_first, normalized
from core.text import shapes
from core.text.fold import fold
from core.text.script import has_cjk

PASSAGES = 5  # candidates come from this many of the best passages (and any passage a single engine ranks first)
NAMED_PAGES = 2  # ... and from at most this many pages the question names by their title
SUBJECT_TERMS = 6  # a unit's first terms, where its subject stands

FEATURES = (
    "dense", "dense_gap", "lex", "lex_gap", "subject", "prev_lex", "next_lex", "passage_lex", "unit_missing",
    "passage_missing", "entities", "entity_pair", "entities_passage", "neighbours", "neighbours_passage", "rank",
    "top_passage", "passage_score", "graph", "hop_target", "hop_source", "named_page", "position", "first_unit",
    "list", "table", "code",
    "length", "novelty",
    "numeral_new", "name_new", "path_new", "want_numeral", "want_name", "want_long", "want_short",
    "want_long_after", "want_long_novel",
)
_ANSWERABILITY = (
    "top_logit", "margin", "top_prob", "top_lex", "top_dense", "max_dense", "dense_contrast", "max_passage_lex",
    "top_unit_missing", "top_passage_missing", "least_passage_missing", "question_oov", "entities_found",
    "kind_fit", "top_entities", "question_terms", "dense_over_units", "top_dense_over_units",
)
# Each signal again for a question written without spaces between words (Chinese): its terms are character
# bigrams and its similarities run on another scale, so the model weighs them apart (a property of the script,
# not of any one language).
ANSWERABILITY = _ANSWERABILITY + ("unspaced",) + tuple(f"unspaced_{name}" for name in _ANSWERABILITY)
CROSSED = len(_ANSWERABILITY)  # the first signals, read in any script, are also crossed pairwise (answers.model)


class Corpus(Protocol):
    """What the reader needs from an index: terms and how many passages hold each, languages and known names."""

    n_docs: int

    def terms(self, text: str, language: str) -> list[str]: ...

    def df(self, terms: Sequence[str]) -> np.ndarray: ...

    def language(self, text: str) -> str: ...

    def known_names(self, question: str) -> list[str]: ...

    def neighbours(self, question: str) -> list[str]: ...


@dataclass(frozen=True, slots=True)
class Passage:
    """A passage candidates come from: where the search put it."""

    chunk_id: str
    text: str
    rank: int  # 0-based place in the ranking (a named page the search did not rank is placed after the rest)
    score: float  # its ranking score over the top passage's (0 for a named page the search did not rank)
    graph_rank: int | None = None
    named: bool = False  # a page the question names by its title
    hop_target: bool = False  # moved up by the search as a second hop (a page the first hop names by title)
    hop_source: bool = False  # a first hop: it names another passage's title


@dataclass(frozen=True, slots=True)
class Candidate:
    unit: Unit
    passage: int  # index into Pool.passages
    order: int  # the unit's place among its passage's units
    count: int  # how many units its passage has


@dataclass
class Pool:
    passages: list[Passage] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)

    @property
    def units(self) -> list[Unit]:
        return [c.unit for c in self.candidates]


@dataclass(frozen=True)
class Question:
    """A question as the reader sees it."""

    text: str
    language: str
    terms: tuple[str, ...]  # distinct terms
    weights: np.ndarray  # each term's share of the question's IDF mass (sums to 1; empty without terms)
    vector: np.ndarray | None  # multilingual-e5 query vector
    kinds: np.ndarray  # P(kind) over answers.kinds.KINDS
    entities: tuple[str, ...]  # the names it holds (the index's known names and the shapes of names)
    oov: float  # share of its IDF mass in terms the corpus never uses
    neighbours: tuple[str, ...] = ()  # names of the entities the graph relates to the ones it names


def read_question(text: str, corpus: Corpus, vector: np.ndarray | None, kinds: np.ndarray) -> Question:
    language = corpus.language(text)
    terms = tuple(dict.fromkeys(corpus.terms(text, language)))
    df = corpus.df(terms) if terms else np.zeros(0)
    idf = np.log1p((corpus.n_docs - df + 0.5) / (df + 0.5))
    total = float(idf.sum())
    weights = idf / total if total > 0 else np.full(len(terms), 1.0 / max(1, len(terms)))
    oov = float(weights[df == 0].sum())
    entities = tuple(dict.fromkeys([*corpus.known_names(text), *shapes.names(text)]))
    neighbours = tuple(n for n in corpus.neighbours(text) if len(n) >= 2 and not mentions(text, n))
    return Question(text, language, terms, weights, vector, kinds, tuple(e for e in entities if len(e) >= 2), oov,
                    neighbours)


# -- the pool -----------------------------------------------------------------------------------------------
def build_pool(hits: Sequence[Any], named: Sequence[Any] = (), hops: Sequence[Any] = ()) -> Pool:
    """The candidates: the units of the first :data:`PASSAGES` hits, of any later hit that BM25 or the dense list
    ranks first (both engines' best passage is evidence a fused order must not hide), and of the pages the
    question names by title (``named``: passages with ``chunk_id`` and ``text``), each unit once."""
    top = list(hits[:PASSAGES]) + [h for h in hits[PASSAGES:] if 1 in (getattr(h, "sparse_rank", None),
                                                                         getattr(h, "dense_rank", None))]
    best = float(getattr(hits[0], "score", 0.0) or 0.0) if hits else 0.0
    rank_of = {h.chunk_id: r for r, h in enumerate(hits)}
    named_ids = {p.chunk_id for p in named}
    targets, sources = {h[0] for h in hops}, {h[1] for h in hops}
    passages: list[Passage] = []
    for h in top:
        score = float(getattr(h, "score", 0.0) or 0.0)
        passages.append(Passage(h.chunk_id, h.text, rank_of[h.chunk_id], score / best if best > 0 else 0.0,
                                getattr(h, "graph_rank", None), h.chunk_id in named_ids, h.chunk_id in targets,
                                h.chunk_id in sources))
    have = {p.chunk_id for p in passages}
    for p in named:
        if p.chunk_id not in have:
            passages.append(Passage(p.chunk_id, p.text, len(hits), 0.0, None, True))
            have.add(p.chunk_id)
    pool = Pool(passages)
    seen: set[str] = set()
    for i, p in enumerate(passages):
        units = answer_units(p.chunk_id, p.text, chunk_is_first(p.chunk_id))
        for order, u in enumerate(units):
            key = normalized(u.text)
            if key and key not in seen:
                seen.add(key)
                pool.candidates.append(Candidate(u, i, order, len(units)))
    return pool


# -- the signals --------------------------------------------------------------------------------------------
def share(q: Question, terms: set[str]) -> float:
    """The share of the question's IDF mass among ``terms``."""
    return float(sum(w for t, w in zip(q.terms, q.weights) if t in terms))


def _missing(q: Question, terms: set[str]) -> float:
    """The weight of the rarest question term that ``terms`` lacks, over the rarest term's (0: none lacking)."""
    top = float(q.weights.max()) if len(q.weights) else 0.0
    lacking = [w for t, w in zip(q.terms, q.weights) if t not in terms]
    return max(lacking) / top if lacking and top > 0 else 0.0


def mentions(text: str, name: str) -> bool:
    """Whether ``text`` mentions ``name`` (folded; inside words only in scripts written without spaces)."""
    t, n = fold(text), fold(name)
    at = t.find(n)
    if at < 0 or not n:
        return False
    if has_cjk(n):
        return True
    while at >= 0:
        before = t[at - 1] if at else " "
        after = t[at + len(n)] if at + len(n) < len(t) else " "
        if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
            return True
        at = t.find(n, at + 1)
    return False


def read_as(unit: Unit) -> str:
    """A unit as the reader measures it: under its nearest heading (its section's, or its document's title line),
    which is the implicit subject of what stands under it ("## Supported relabel actions" over a list of
    actions). The quote is the unit alone."""
    return f"{unit.heading}: {unit.text}" if unit.heading else unit.text


def signals(q: Question, pool: Pool, corpus: Corpus, unit_vectors: np.ndarray | None) -> np.ndarray:
    """The signal matrix of the pool's candidates (one row each, columns :data:`FEATURES`)."""
    cands = pool.candidates
    x = np.zeros((len(cands), len(FEATURES)))
    if not cands:
        return x
    unit_terms = [set(corpus.terms(read_as(c.unit), q.language)) for c in cands]
    passage_terms = [set(corpus.terms(p.text, q.language)) for p in pool.passages]
    lex = np.array([share(q, t) for t in unit_terms])
    by_passage: dict[tuple[int, int], int] = {(c.passage, c.order): i for i, c in enumerate(cands)}
    named = _Names(corpus, q.language)
    asked, numerals_q = set(q.terms), {fold(v) for v in shapes.numerals(q.text)}
    for i, c in enumerate(cands):
        row, terms, around = x[i], unit_terms[i], passage_terms[c.passage]
        prev, nxt = by_passage.get((c.passage, c.order - 1)), by_passage.get((c.passage, c.order + 1))
        row[_COL["lex"]] = lex[i]
        row[_COL["subject"]] = share(q, set(corpus.terms(c.unit.text, q.language)[:SUBJECT_TERMS]))
        row[_COL["prev_lex"]] = lex[prev] if prev is not None else 0.0
        row[_COL["next_lex"]] = lex[nxt] if nxt is not None else 0.0
        row[_COL["passage_lex"]] = share(q, around)
        row[_COL["unit_missing"]] = _missing(q, terms)
        row[_COL["passage_missing"]] = _missing(q, around)
        _entity_signals(row, q, named, terms, around)
        _place_signals(row, c, pool.passages[c.passage])
        _shape_signals(row, q, c.unit, terms, asked, numerals_q)
    x[:, _COL["lex_gap"]] = lex - lex.max()
    if unit_vectors is not None and q.vector is not None and len(unit_vectors) == len(cands):
        dense = unit_vectors @ np.asarray(q.vector, np.float32)
        x[:, _COL["dense"]] = dense
        x[:, _COL["dense_gap"]] = dense - dense.max()
    return cross_kinds(x, q.kinds)


_COL = {name: i for i, name in enumerate(FEATURES)}


class _Names:
    """Whether a set of terms holds a name: all of the name's terms (each name's terms found once)."""

    def __init__(self, corpus: Corpus, language: str) -> None:
        self.corpus, self.language = corpus, language
        self.cache: dict[str, set[str]] = {}

    def __call__(self, terms: set[str], name: str) -> bool:
        want = self.cache.get(name)
        if want is None:
            want = self.cache[name] = set(self.corpus.terms(name, self.language))
        return bool(want) and want <= terms


def _entity_signals(row: np.ndarray, q: Question, named: _Names, terms: set[str], around: set[str]) -> None:
    """The question's entities in the unit and in its passage, and their graph neighbours."""
    if q.entities:
        inside = sum(named(terms, e) for e in q.entities)
        row[_COL["entities"]] = inside / len(q.entities)
        row[_COL["entity_pair"]] = float(inside >= 2)
        row[_COL["entities_passage"]] = sum(named(around, e) for e in q.entities) / len(q.entities)
    if q.neighbours:
        row[_COL["neighbours"]] = float(any(named(terms, e) for e in q.neighbours))
        row[_COL["neighbours_passage"]] = float(any(named(around, e) for e in q.neighbours))


def _place_signals(row: np.ndarray, c: Candidate, p: Passage) -> None:
    """Where the search put the unit's passage, and where the unit stands in it."""
    row[_COL["rank"]] = 1.0 / (1.0 + p.rank)
    row[_COL["top_passage"]] = float(p.rank == 0)
    row[_COL["passage_score"]] = p.score
    row[_COL["graph"]] = 1.0 / (1.0 + p.graph_rank) if p.graph_rank else 0.0
    row[_COL["named_page"]] = float(p.named)
    row[_COL["hop_target"]] = float(p.hop_target)
    row[_COL["hop_source"]] = float(p.hop_source)
    row[_COL["position"]] = c.order / max(1, c.count - 1) if c.count > 1 else 0.0
    row[_COL["first_unit"]] = float(c.order == 0)


def _shape_signals(row: np.ndarray, q: Question, u: Unit, terms: set[str], asked: set[str],
                   numerals_q: set[str]) -> None:
    """The unit's kind and length, how much it says beyond the question, and the values it brings that the question
    does not hold (numerals, names, paths and code)."""
    if u.kind != "sentence":
        row[_COL[u.kind]] = 1.0
    row[_COL["length"]] = math.log1p(len(u.text))
    row[_COL["novelty"]] = len(terms - asked) / len(terms) if terms else 0.0
    row[_COL["numeral_new"]] = float(any(fold(v) not in numerals_q for v in shapes.numerals(u.text)))
    row[_COL["name_new"]] = float(bool(shapes.new_values(shapes.names(u.text), q.text)))
    row[_COL["path_new"]] = float(bool(shapes.new_values(shapes.paths(u.text) | shapes.code_spans(u.text), q.text)))


def cross_kinds(x: np.ndarray, kinds: np.ndarray) -> np.ndarray:
    """``x`` with its ``want_*`` columns set: what the question asks for (P(kind)) crossed with the shape each
    candidate has (a new numeral, a new name, its length)."""
    col = {name: i for i, name in enumerate(FEATURES)}
    k = dict(zip(KINDS, kinds))
    x[:, col["want_numeral"]] = k["numeral"] * x[:, col["numeral_new"]]
    x[:, col["want_name"]] = k["name"] * x[:, col["name_new"]]
    x[:, col["want_long"]] = k["long"] * x[:, col["length"]]
    x[:, col["want_short"]] = k["short"] * x[:, col["length"]]
    # A long answer (a reason, a description) often follows the sentence that names what the question names,
    # and says more than the question does.
    x[:, col["want_long_after"]] = k["long"] * x[:, col["prev_lex"]]
    x[:, col["want_long_novel"]] = k["long"] * x[:, col["novelty"]]
    return x


@dataclass(frozen=True, slots=True)
class Asked:
    """What answerability needs of the question itself."""

    kinds: np.ndarray
    oov: float
    has_entities: bool
    n_terms: int
    unspaced: bool = False  # written in a script without spaces between words (its terms are character bigrams)

    @classmethod
    def of(cls, q: Question) -> "Asked":
        return cls(q.kinds, q.oov, bool(q.entities), len(q.terms), has_cjk(q.text))


def units_background(sim: np.ndarray) -> float:
    """How alike the candidates are to one another: the mean similarity of their vectors (``sim``, candidate by
    candidate) over the pairs of different candidates; 0 with fewer than two. An embedder's cosines run on a scale
    of their own per language and per corpus (multilingual-e5 puts two unrelated Chinese sentences closer than
    two unrelated English ones, and a narrow corpus's sentences closer than an encyclopedia's), so a question's
    similarity to its best unit is read against this level: it must stand out from what the corpus's units share
    with one another, not only exceed a fixed cosine."""
    m = len(sim)
    if m < 2:
        return 0.0
    return float((sim.sum() - np.trace(sim)) / (m * m - m))


def answerability(q: Asked, x: np.ndarray, logits: np.ndarray, chosen: Sequence[int], sim: np.ndarray) -> np.ndarray:
    """The question-level signals for whether the ``chosen`` candidates (rows of ``x``, best first) hold the
    answer (columns :data:`ANSWERABILITY`); ``sim``: the candidates' vector similarities to one another (the
    identity without vectors)."""
    col = {name: i for i, name in enumerate(FEATURES)}
    unspaced = float(q.unspaced)
    if not len(logits) or not len(chosen):
        base = np.zeros(len(_ANSWERABILITY))
        base[_ANSWERABILITY.index("question_oov")] = q.oov
        base[_ANSWERABILITY.index("question_terms")] = math.log1p(q.n_terms)
        base[_ANSWERABILITY.index("entities_found")] = 0.0 if q.has_entities else 1.0
        base[_ANSWERABILITY.index("top_entities")] = 0.0 if q.has_entities else 1.0
        base[_ANSWERABILITY.index("top_logit")] = -10.0
        return np.concatenate([base, [unspaced], unspaced * base])
    order = np.argsort(-logits, kind="stable")
    top = int(order[0])
    second = float(logits[order[1]]) if len(order) > 1 else float(logits[top]) - 5.0
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    kinds = dict(zip(KINDS, q.kinds))
    sel = x[list(chosen)]
    fit = (kinds["numeral"] * float(sel[:, col["numeral_new"]].max()) + kinds["name"] * float(sel[:, col["name_new"]].max())
           + kinds["long"] + kinds["short"])
    dense = x[:, col["dense"]]
    background = units_background(sim)
    values = {
        "top_logit": float(logits[top]), "margin": float(logits[top]) - second, "top_prob": float(probs[top]),
        "top_lex": float(x[top, col["lex"]]), "top_dense": float(x[top, col["dense"]]),
        "max_dense": float(dense.max()), "dense_contrast": float(dense.max() - dense.mean()),
        "max_passage_lex": float(x[:, col["passage_lex"]].max()),
        "top_unit_missing": float(x[top, col["unit_missing"]]),
        "top_passage_missing": float(x[top, col["passage_missing"]]),
        "least_passage_missing": float(x[:, col["passage_missing"]].min()),
        "question_oov": q.oov, "entities_found": float(x[:, col["entities_passage"]].max()) if q.has_entities else 1.0,
        "kind_fit": fit, "top_entities": float(sel[:, col["entities"]].max()) if q.has_entities else 1.0,
        "question_terms": math.log1p(q.n_terms),
        "dense_over_units": float(dense.max()) - background if len(x) >= 2 else 0.0,
        "top_dense_over_units": float(x[top, col["dense"]]) - background if len(x) >= 2 else 0.0,
    }
    base = np.array([values[name] for name in _ANSWERABILITY])
    return np.concatenate([base, [unspaced], unspaced * base])

