"""The graph's ranked list: personalized PageRank from the question's entities over entities and chunks.

A question whose answer spans passages joined by an entity ("the association which published the Journal of
Psychotherapy Integration") names the first hop; the second passage shares an entity with the first, not words
with the question. The walk finds it the way HippoRAG 2 does:

- **nodes**: the generation's entities and its chunk index's rows;
- **edges** (undirected, weighted): *mention* edges between a chunk and each entity it mentions (weaker for
  entities mentioned everywhere), *relation* edges between entities weighted by how many chunks support the
  relation, and *synonym* edges between entities whose names are the same up to case, punctuation,
  underscores and hyphens ("node_exporter" and "Node Exporter");
- **seeds**: the entities the question names (matched by the router's :class:`EntityLexicon` and by the same
  normalized names), weighted by how specific they are (inverse chunk frequency); beside them, the entities
  whose vectors (:mod:`retrieval.entity_vectors`) are closest to the question's, with a similarity that stands
  out from the question's similarities to the entities by a least standard score (read so on each embedder's
  scale: :meth:`GraphWalk.standard_scores`), weighted by specificity and similarity, so a question that names
  an entity in other words still seeds the walk; with no entity to seed from, a walk the caller asks for (an
  explicit ``graph_weight``) starts from the other lists' top passages instead;
- **ranking**: chunks by their PageRank mass, among the rows the metadata filter allows.

The transition matrix is built once when a generation is published (:meth:`GraphWalk.build`) and saved with it
(:func:`save_walk`); a query spreads mass
only from the nodes holding it (:func:`retrieval.pagerank.pagerank_sparse`) and finds its vector-linked entities by one
product, or by an HNSW graph for many entities (:meth:`GraphWalk.nearest`), so it needs no store and
hot-reloads with the generation.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
from scipy import sparse

from core.records import GraphSnapshot
from core.text import cjk, spans
from core.text.language import detect_language
from core.text.script import NAME_JOINERS, has_cjk
from core.text.lemma import forms
from core.text.keys import PROSE_NAME_TYPES, is_term, plain_word, walk_key
from retrieval import entity_vectors
from retrieval.hops import TitleHops, base_title
from retrieval.lexicon import EntityLexicon, KnownEntity, keys_made_with, long_enough, polish_bases, polish_chunks
from retrieval.pagerank import pagerank_sparse

@dataclass(frozen=True, slots=True)
class Seed:
    """An entity that seeds the walk: its id and name, the question's words it matched (for a vector link: the
    entity's name), its share of the reset mass, how it was linked (``name`` or ``vector``) and, for a vector
    link, the cosine similarity of its vector and the question's and that similarity's standard score among the
    question's similarities to the entities (:meth:`GraphWalk.standard_scores`)."""

    entity_id: str
    name: str
    matched: str
    weight: float
    by: str = "name"
    similarity: float | None = None
    score: float | None = None


@dataclass(frozen=True, slots=True)
class WalkParams:
    """How the walk is seeded and how far it spreads (``retrieval.graph_*`` settings)."""

    damping: float = 0.5  # probability of following an edge at each step (1 - damping: back to a seed)
    iterations: int = 30
    tolerance: float = 1e-7  # stop when less mass than this is still walking
    prune: float = 1e-5  # mass below this at a node stops walking (pagerank_sparse). Against the exact walk
    # (prune 0), bench.multihop R@5 / all@8: MuSiQue 0.701 / 0.54 -> 0.712 / 0.56, HotpotQA 0.860 / 0.87 -> 0.860 / 0.88
    # (1e-6: 0.704 / 0.56 and 0.860 / 0.87): crumbs this small only shuffle the list's tail
    passage_seeds: int = 5  # a walk with no entity seed starts from the other lists' top passages (beside
    # entity seeds they ranked worse on both multi-hop dev sets, bench.multihop: the list then repeats the other two)
    relation_weight: float = 0.5  # per supporting chunk, relative to a mention edge
    synonym_weight: float = 1.0
    max_entity_share: float = 0.1  # entities mentioned in more of the chunks than this seed nothing
    walked_only: bool = True  # rank a seeded passage by the mass the walk brings it, not its own reset mass
    vector_score: float = 5.0  # least standard score of an entity's similarity to the question, among the
    # question's similarities to the entities, to seed (retrieval.graph_vector_score)
    vector_seeds: int = 3  # at most this many entities linked by vector
    vector_weight: float = 0.4  # a vector seed's weight, relative to a name seed of the same specificity, at
    # similarity 1 (it weighs its similarity times this; retrieval.graph_vector_weight)
    name_share: float = 0.5  # least share of the chunks holding a name's words that mention the entity, for a
    # question's words to name it without capitals to say so (retrieval.graph_name_share)


@dataclass(frozen=True, slots=True)
class Link:
    """The question's entities (the walk's seeds), best first."""

    seeds: tuple[Seed, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(s.name for s in self.seeds))

    @property
    def by_vector(self) -> tuple[str, ...]:
        """The seeds' names that were linked by vector alone."""
        return tuple(dict.fromkeys(s.name for s in self.seeds if s.by == "vector"))

    @property
    def by_name(self) -> bool:
        """Whether the question names (spells) at least one seed."""
        return any(s.by == "name" for s in self.seeds)


NO_LINK = Link(())

BACKGROUND_ROWS = 2048  # entity vectors (evenly spaced) a question's similarities are read against
MIN_BACKGROUND = 30  # fewer entities than this beside the nearest tell no spread: no entity is linked by vector
# (a question near none of them: P(score >= 5) by chance is 9% with 8, 0.5% with 30, about none with thousands)
SHARE_CACHE = 50_000  # shares kept per walk (a generation's life) before the cache starts again


_NAME_PARTS = re.compile(rf"[\s{NAME_JOINERS}]+")  # what separates a name's parts: spaces, interpuncts


def last_parts(names: Sequence[str], types: Sequence[str], bases: Mapping[str, str],
               keys: Mapping[str, list[int]]) -> dict[str, list[int]]:
    """Walk key of a name's last part -> the one entity whose name ends so: "Stiglitz" names "Joseph Stiglitz",
    埃尔维 names 约翰·埃尔维, as a text names a person by the family name after it has given the whole. Only names
    found in prose (:data:`PROSE_NAME_TYPES`) of two parts or more, in their base form too (``bases``), every part
    capitalized in a script with case (a name joined by a lower-case word, "Bank of America", "Gulf of Mexico", is
    named by its head, not its last word; nor is "Twins (group)" named "group"); not a part that is a whole name's
    key (``keys``: "Chicago" names the city), not one too short to tell (:func:`retrieval.lexicon.long_enough`), and
    not one that ends two names ("Cratchit" of "Bob Cratchit" and "Mrs. Cratchit": which one is meant is not said)."""
    owners: dict[str, set[int]] = {}
    for j, (name, type_) in enumerate(zip(names, types)):
        if type_ not in PROSE_NAME_TYPES:
            continue
        for written in (name, bases[name]) if name in bases else (name,):
            parts = [p for p in _NAME_PARTS.split(written.strip()) if p]
            if len(parts) >= 2 and all(p[:1].isupper() or p[:1].lower() == p[:1].upper() and p[:1].isalpha()
                                       for p in parts):
                key = walk_key(parts[-1])
                if key and key not in keys and long_enough(key) and not key.isdigit():
                    owners.setdefault(key, set()).add(j)
    return {k: sorted(js) for k, js in owners.items() if len(js) == 1}


class GraphWalk:
    """Personalized PageRank over one generation's entity+chunk graph (see the module docstring)."""

    def __init__(self, entity_ids: Sequence[str], names: Sequence[str], df: np.ndarray, keys: Mapping[str, list[int]],
                 out_edges: sparse.csr_matrix, n_rows: int, lexicon: EntityLexicon, params: WalkParams,
                 counts: Mapping[str, int], is_stop: Callable[[str], bool], max_words: int | None = None) -> None:
        self.entity_ids, self.names, self.df = list(entity_ids), list(names), df
        self.keys = keys  # walk key -> entity positions
        self.parts: Mapping[str, list[int]] = {}  # walk key of a name's last part -> its one entity (last_parts)
        self.out_edges = out_edges  # row-stochastic over (entities, then rows): row j, where a walker at node j steps
        self.n_entities, self.n_rows = len(self.entity_ids), n_rows
        self.lexicon, self.params, self.counts, self.is_stop = lexicon, params, dict(counts), is_stop
        # one word more than the longest name: a span may open with an article that walk_key drops ("The X Y Z")
        if max_words is None:
            max_words = max((spans.word_count(k) for k in keys), default=1) + 1
        self.max_words = max_words
        self.position = {eid: i for i, eid in enumerate(self.entity_ids)}
        self.entity_vectors: np.ndarray | None = None  # unit rows of the entities that have one; None: names only
        self.vector_positions: np.ndarray = np.zeros(0, np.int64)  # the walk's position of each of those rows
        self.vector_embedder: str | None = None
        self._ann: tuple[Any, np.ndarray] | None = None  # (the vectors' HNSW graph, vector row -> position)
        self.background: np.ndarray | None = None  # rows the question's similarities are read against
        self.titles: TitleHops | None = None  # the rows' titles, for the second hop by title (retrieval.hops)
        # How the index reads a text's words (BM25 terms, in a language) and which rows hold all of some terms,
        # for :meth:`share`; None: not known, names link as spelled (walk_for_index sets them from the index).
        self.terms: Callable[[str, str], list[str]] | None = None
        self.holding: Callable[[Sequence[str]], np.ndarray] | None = None
        self.query_language: Callable[[str], str] = detect_language  # the index's reading, once it is known
        self.types: list[str] = []  # per entity position (empty: every entity is a name found in prose)
        self.document_of_row: np.ndarray | None = None  # per row, its document's number
        # (walk key, the name's terms, the matched words' terms) -> share; bounded
        self._shares: dict[tuple[str, tuple[str, ...], tuple[str, ...]], float] = {}

    def attach_vectors(self, vectors: Any) -> int:
        """Use ``vectors`` (:class:`retrieval.entity_vectors.EntityVectors`) for linking by vector; entities they
        do not hold are linked by name only. With an HNSW graph (``vectors.ann``) the nearest entities are
        looked up in it rather than compared with all. Returns how many of the walk's entities have a vector."""
        position_of_row = np.fromiter((self.position.get(eid, -1) for eid in vectors.ids), np.int64, len(vectors.ids))
        held = np.flatnonzero(position_of_row >= 0)  # a vector's row -> the walk's position (-1: not in the walk)
        if vectors.ann is not None:  # only the HNSW graph is searched: the rows stay on disk when memory-mapped
            self.entity_vectors = vectors.matrix
        else:
            self.entity_vectors = np.array(vectors.matrix[held] if len(held) < len(vectors.ids) else vectors.matrix,
                                           dtype=np.float32)
        self.vector_positions, self.vector_embedder = position_of_row[held], vectors.embedder
        self._ann = (vectors.ann, position_of_row) if vectors.ann is not None else None
        rows = held
        if len(held) > BACKGROUND_ROWS:  # evenly spaced: the same rows every time the generation loads
            rows = held[np.linspace(0, len(held) - 1, BACKGROUND_ROWS).astype(int)]
        self.background = np.array(vectors.matrix[rows], dtype=np.float32)
        return len(held)

    # -- building ---------------------------------------------------------------------------------------------
    @classmethod
    def build(cls, graph: GraphSnapshot, row_of: Mapping[str, int], n_rows: int, params: WalkParams | None = None,
              is_stop: Callable[[str], bool] = lambda _: False, bases: Mapping[str, str] | None = None) -> "GraphWalk":
        """The walk over ``graph`` whose chunk ids map to index rows by ``row_of`` (chunks the index does not
        hold are left out). ``is_stop``: True for question words too common to name an entity. ``bases``: name ->
        base form of the names a question may also give in their base form (:func:`retrieval.lexicon.polish_bases`)."""
        bases = bases or {}
        params = params or WalkParams()
        entities = [e for e in graph.entities if any(c in row_of for c in e.chunk_ids)]
        pos = {e.id: i for i, e in enumerate(entities)}
        n_e = len(entities)
        src: list[np.ndarray] = []
        dst: list[np.ndarray] = []
        wts: list[np.ndarray] = []
        df = np.zeros(n_e, dtype=np.float64)
        m_e, m_r = [], []
        for i, e in enumerate(entities):
            rows = sorted({row_of[c] for c in e.chunk_ids if c in row_of})
            df[i] = len(rows)
            m_e.extend([i] * len(rows))
            m_r.extend(rows)
        m_e_a, m_r_a = np.asarray(m_e, dtype=np.int64), np.asarray(m_r, dtype=np.int64) + n_e
        # A mention edge weighs less for an entity that many chunks mention: walking through a hub says little.
        m_w = 1.0 / (1.0 + np.log(np.maximum(df[m_e_a], 1.0))) if m_e_a.size else np.zeros(0)
        src += [m_e_a, m_r_a]
        dst += [m_r_a, m_e_a]
        wts += [m_w, m_w]
        r_a, r_b, r_w = [], [], []
        for r in graph.relations:
            a, b = pos.get(r.source_id), pos.get(r.target_id)
            if a is None or b is None or a == b:
                continue
            r_a.append(a)
            r_b.append(b)
            r_w.append(params.relation_weight * max(1, len(r.chunk_ids)))
        keys: dict[str, list[int]] = {}
        for i, e in enumerate(entities):
            for k in dict.fromkeys(walk_key(n) for n in ((e.name, bases[e.name]) if e.name in bases else (e.name,))):
                if k:
                    keys.setdefault(k, []).append(i)
        s_a, s_b = [], []
        for group in keys.values():  # a star over each group of same-key entities
            for j in group[1:]:
                s_a.append(group[0])
                s_b.append(j)
        for a_list, b_list, w in ((r_a, r_b, r_w), (s_a, s_b, [params.synonym_weight] * len(s_a))):
            a_arr, b_arr, w_arr = (np.asarray(a_list, dtype=np.int64), np.asarray(b_list, dtype=np.int64),
                                   np.asarray(w, dtype=np.float64))
            src += [a_arr, b_arr]
            dst += [b_arr, a_arr]
            wts += [w_arr, w_arr]
        n = n_e + n_rows
        w_all = np.concatenate(wts) if wts else np.zeros(0)
        adj = sparse.csr_matrix((w_all, (np.concatenate(src), np.concatenate(dst))), shape=(n, n))
        out = np.asarray(adj.sum(axis=1)).ravel()
        inv = np.divide(1.0, out, out=np.zeros_like(out), where=out > 0)
        out_edges = (sparse.diags(inv) @ adj).tocsr()  # row j: where a walker at node j steps
        lexicon = EntityLexicon([KnownEntity(e.name, e.type, int(df[i]), bases.get(e.name, ""))
                                 for i, e in enumerate(entities)], n_rows)
        counts = {"entities": n_e, "mention_edges": int(m_e_a.size), "relation_edges": len(r_a),
                  "synonym_edges": len(s_a), "chunks": n_rows,
                  "chunks_with_entities": int(len(set(m_r)))}
        walk = cls([e.id for e in entities], [e.name for e in entities], df, keys, out_edges, n_rows, lexicon,
                   params, counts, is_stop)
        walk.types = [e.type for e in entities]
        walk.parts = last_parts(walk.names, walk.types, bases, keys)
        return walk

    def stats(self) -> dict[str, int]:
        """Entity and edge counts (printed by ``bench.multihop``)."""
        return dict(self.counts)

    # -- linking ----------------------------------------------------------------------------------------------
    def link(self, question: str, query_vector: np.ndarray | None = None) -> Link:
        """The entities the question names: the longest spans of its words whose normalized name (case,
        punctuation, underscores, hyphens, accents: :func:`walk_key`) is an entity's (in a question that
        capitalizes names amid lower-case words, one it names by the judgement below: a longer span that names none
        leaves its words to the shorter spans in it), and the lexicon's matches that are not part of a longer one;
        where no whole name is spelled, a span that is the last part of one
        name alone (:func:`last_parts`: "Stiglitz" of "Joseph Stiglitz"). In a question that capitalizes names, a
        lowercase span does not name a capitalized entity. Entities mentioned in more than ``max_entity_share`` of
        the chunks seed nothing; each seed weighs by its inverse chunk frequency. A name found in prose seeds only
        when the question capitalizes the span amid lower-case words, or when at least ``name_share`` of the chunks
        holding its words lie in documents that mention it (:meth:`share`): "type" does not name "Types", met
        once where a heading opened a line, in a corpus where "type" is an ordinary word; identifiers and other
        shaped entities link as spelled. With the question's vector ``query_vector`` (the dense list's) and entity
        vectors attached, the ``vector_seeds`` entities closest to it above
        ``vector_score`` join them (:meth:`link_vectors`)."""
        words = spans.words(question)
        language = detect_language(question)
        reading = self.query_language(question)
        # A question that writes names capitalized writes its lowercase words as common nouns: "the association"
        # does not name the entity "Association" (a word that opened sentences in the corpus).
        cased = any(w.text[:1].isupper() for w in words[1:])
        capitalized = _capitalized(words)

        def names(span: str, name: str) -> bool:
            return not cased or span != span.lower() or name == name.lower()

        total = max(1, self.n_rows)
        limit = max(2.0, self.params.max_entity_share * total)

        def named(j: int, judged: str, matched: str) -> bool:  # whether the question's words name entity j
            return not self.is_stop(judged) and self._names(j, matched, reading, capitalized)

        # entity position -> (the text its stop-word check reads, the question's words that matched it)
        found: dict[int, tuple[str, str]] = {}
        linked: list[str] = []  # the walk keys of the spans linked above, padded with spaces
        i = 0
        while i < len(words):
            for n in range(min(self.max_words, len(words) - i), 0, -1):
                span = spans.join(words[i:i + n])
                hits = [j for form in forms(span, language) for j in self.keys.get(walk_key(form), ())
                        if names(span, self.names[j])]
                if not hits:  # a name's last part, when no whole name is spelled here
                    hits = [j for form in forms(span, language) for j in self.parts.get(walk_key(form), ())
                            if self._names_by_part(question, words, i, n, self.names[j])]
                # A longer span that names no entity by the judgement below leaves its words to the shorter spans
                # in it, in a question that capitalizes names amid lower-case words: "prezydentem Stanów
                # Zjednoczonych" spells a heading's "Prezydenta Stanów Zjednoczonych", mostly an ordinary word's
                # uses, and holds "Stanów Zjednoczonych", a name the question capitalizes. (A question in lower
                # case, Title Case or capitals says nothing of where its names end: "the university of chicago"
                # does not fall back to Chicago; nor does a span naming an entity too common to seed.)
                if hits and (not capitalized or any(named(j, span, span) for j in hits)):
                    for j in hits:
                        found.setdefault(j, (span, span))
                    linked.append(f" {walk_key(span)} ")
                    i += n - 1
                    break
            i += 1
        for span, hit in self.lexicon.find_spans(question):
            key = walk_key(hit.name)
            if cased and hit.name != hit.name.lower() and hit.name not in question:
                continue  # matched only in lowercase: the spans above judge case
            if any(f" {key} " in sp and sp != f" {key} " for sp in linked):
                continue  # part of a longer name the question names ("Bad Day" in "... Very Bad Day")
            for j in self.keys.get(key, ()):
                found.setdefault(j, (hit.name, span))
        out = [Seed(self.entity_ids[j], self.names[j], matched, math.log(1.0 + total / self.df[j]))
               for j, (judged, matched) in found.items() if self.df[j] <= limit and named(j, judged, matched)]
        if query_vector is not None:
            out += self.link_vectors(query_vector, {s.entity_id for s in out}, limit)
        out.sort(key=lambda s: (-s.weight, s.name))
        return Link(tuple(out))

    @staticmethod
    def _names_by_part(question: str, words: Sequence[spans.Word], i: int, n: int, name: str) -> bool:
        """Whether the question's words ``i`` to ``i + n`` name ``name`` by its last part, standing as a name of
        their own. In a script with case: written capitalized, not as the question's first word (whose capital is
        its place's: "Goals of the protests?"), and not inside a longer name the question writes: a capitalized
        word beside it is one of the name's own ("Joseph Stiglitz" for "Economist Joseph Stiglitz"; "Grammy Award"
        is not "Academy Award", nor "Ice Age" "Middle Ages"). In Chinese: whole words of the question as the
        segmenter cuts it (肖特 is no word of 肖特基二极管, nor 华盛顿 of 华盛顿州), with no interpunct beside them
        (塞缪尔·华盛顿 is another name than 乔治·华盛顿)."""
        start, end = words[i].start, words[i + n - 1].end
        text = words[i].text
        if text.lower() == text.upper():
            if ((start > 0 and question[start - 1] in NAME_JOINERS)
                    or (end < len(question) and question[end] in NAME_JOINERS)):
                return False
            cuts = {0, len(question)} | {t.start for t in cjk.tagged(question)}
            return start in cuts and end in cuts
        if not text[:1].isupper() or (i == 0 and not has_cjk(question)):
            return False  # (in a Chinese question a Latin name's capital is never its place's)
        own = {walk_key(w) for w in _NAME_PARTS.split(name)}
        # (the question's first word is capitalized by its place, so it says nothing of a name beside it)
        beside = ([words[i - 1]] if i > 1 else []) + ([words[i + n]] if i + n < len(words) else [])
        return all(not w.text[:1].isupper() or walk_key(w.text) in own for w in beside)

    def _names(self, j: int, matched: str, language: str, capitalized: set[str], plain: bool = False) -> bool:
        """Whether the question's words ``matched`` name entity ``j``: an entity of a shape (an identifier, a
        service, an error code: not read off capitals) always; a name or a Chinese term found in prose when the
        question capitalizes the words amid its words (``capitalized``), or when the entity is most of their uses
        in the corpus (:meth:`share`). With ``plain``, an entity that is one plain word (`main`, `Main`,
        `pytest`: :func:`core.text.keys.plain_word`) is judged so too, whatever its type: what a question
        about the whole corpus asks (:func:`routing.router.named_only`) reads; a search or the reader still
        takes `pytest` for the tool."""
        if self.params.name_share <= 0 or (self.types and self.types[j] not in PROSE_NAME_TYPES
                                           and not is_term(self.names[j], self.types[j])
                                           and not (plain and plain_word(self.names[j]))):
            return True  # (a Chinese term has no shape: the tagger found it in prose, as a name)
        content = [w.text for w in spans.words(matched) if not self.is_stop(w.text)]  # "the" of "the X"
        if content and all(w in capitalized for w in content):
            return True
        return self.share(j, matched, language) >= self.params.name_share

    def names_in(self, question: str, matches: Sequence[tuple[str, str]],
                 plain: bool = False) -> list[tuple[str, str]]:
        """Those of ``matches`` ((the question's words, the entity name they spell), as the lexicon finds them)
        that name their entity by :meth:`link`'s judgement (a name the walk does not hold is kept); the
        reader's question names are these. ``plain``: see :meth:`_names`."""
        language, capitalized = self.query_language(question), _capitalized(spans.words(question))
        out = []
        for span, name in matches:
            held = self.keys.get(walk_key(name), ())
            if not held or any(self._names(j, span, language, capitalized, plain) for j in held):
                out.append((span, name))
        return out

    def share(self, j: int, matched: str, language: str) -> float:
        """Of the chunks holding the words that named entity ``j`` (its name's, or the question's ``matched``,
        whichever more chunks hold: all their BM25 terms, read in ``language``), the share in documents that
        mention it (under any spelling of its key): near 1 for a name, low for an ordinary word that the
        extractor took for one where it was capitalized. A document counts whole, since a page's title and
        description are indexed above each of its chunks. 1 when not known. Learned from the corpus itself; no
        word list."""
        if self.terms is None or self.holding is None:
            return 1.0
        key = walk_key(self.names[j])
        cache_key = (key, tuple(self.terms(self.names[j], language)), tuple(self.terms(matched, language)))
        got = self._shares.get(cache_key)
        if got is None:
            rows = max((self._holding(terms) for terms in cache_key[1:]), key=len)  # ties: the name's
            if rows.size == 0:
                got = 1.0
            else:
                group = self.keys.get(key, [j])
                mentioned = self.out_edges[group].indices
                mentioned = mentioned[mentioned >= self.n_entities] - self.n_entities
                if self.document_of_row is not None:
                    docs = np.unique(self.document_of_row[mentioned])
                    inside = np.isin(self.document_of_row[rows], docs)
                else:
                    inside = np.isin(rows, mentioned)
                got = float(inside.mean())
            if len(self._shares) >= SHARE_CACHE:
                self._shares.clear()
            self._shares[cache_key] = got
        return got

    def _holding(self, terms: tuple[str, ...]) -> np.ndarray:
        return self.holding(terms) if terms and self.holding is not None else np.zeros(0, np.int64)

    def neighbours(self, entity_ids: Sequence[str], limit: int = 50) -> list[str]:
        """The names of the entities related to ``entity_ids`` (relation edges, strongest first), themselves
        left out: where a question's second hop may lead."""
        start = [self.position[e] for e in entity_ids if e in self.position]
        if not start:
            return []
        rows = self.out_edges[start, :self.n_entities]
        weight = np.asarray(rows.sum(axis=0)).ravel()
        weight[start] = 0.0
        found = np.flatnonzero(weight > 0)
        order = found[np.argsort(-weight[found], kind="stable")][:limit]
        return [self.names[int(j)] for j in order]

    def nearest(self, query_vector: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """The entities (positions) nearest ``query_vector`` and their cosine similarities: all of them by one
        product, or the nearest :data:`~retrieval.entity_vectors.ANN_CANDIDATES` by the HNSW graph when the
        vectors have one; None without entity vectors or for a vector of another size or of length 0."""
        m = self.entity_vectors
        if m is None or not len(self.vector_positions):
            return None
        q = np.asarray(query_vector, np.float32).ravel()
        norm = float(np.linalg.norm(q))
        if q.shape[0] != m.shape[1] or norm == 0:
            return None
        if self._ann is not None:
            ann, position_of_row = self._ann
            rows, sims = entity_vectors.nearest(ann, q / norm)
            pos = position_of_row[rows]
            return pos[pos >= 0], sims[pos >= 0]
        return self.vector_positions, m @ (q / norm)

    def standard_scores(self, query_vector: np.ndarray, sims: np.ndarray) -> np.ndarray:
        """``sims`` (cosine similarities to ``query_vector``) as standard scores: how many standard deviations each
        stands above the question's mean similarity to the entities (to :data:`BACKGROUND_ROWS` of them, evenly
        spaced, leaving out the ``vector_seeds`` most similar, whose place is in question). Each embedder has its
        own scale (MiniLM's unrelated texts sit near 0, multilingual-e5's at 0.73-0.81, in a band a quarter to a
        fifth as wide); a standard score reads a similarity on it. All -inf (nothing is linked) when too few
        entities are left to tell a spread (:data:`MIN_BACKGROUND`)."""
        none = np.full(np.shape(sims), -np.inf)
        bg = self.background
        if bg is None:
            return none
        q = np.asarray(query_vector, np.float32).ravel()
        ref = np.sort(bg @ (q / float(np.linalg.norm(q))))[: max(0, len(bg) - max(0, self.params.vector_seeds))]
        spread = float(ref.std()) if len(ref) >= MIN_BACKGROUND else 0.0
        if spread <= 1e-6:
            return none
        return (sims - float(ref.mean())) / spread

    def link_vectors(self, query_vector: np.ndarray, taken: set[str], limit: float) -> list[Seed]:
        """The entities whose vectors are closest to ``query_vector`` (standard score at least ``vector_score``,
        :meth:`standard_scores`; at most ``vector_seeds`` of them, none in ``taken`` nor mentioned in more than
        ``limit`` chunks), each weighing its inverse chunk frequency times its similarity times ``vector_weight``."""
        p = self.params
        if p.vector_seeds <= 0:
            return []
        near = self.nearest(query_vector)
        if near is None:
            return []
        pos, sims = near
        scores = self.standard_scores(query_vector, sims)
        keep = (scores >= p.vector_score) & (self.df[pos] <= limit)
        pos, sims, scores = pos[keep], sims[keep], scores[keep]
        order = np.lexsort((pos, -sims))  # most similar first, then by position: the same order every time
        total = max(1, self.n_rows)
        out: list[Seed] = []
        for j, sim, score in zip(pos[order], sims[order], scores[order]):
            eid, name = self.entity_ids[j], self.names[j]
            if eid in taken or self.is_stop(name):
                continue
            out.append(Seed(eid, name, name, p.vector_weight * float(sim) * math.log(1.0 + total / self.df[j]),
                            "vector", round(float(sim), 4), round(float(score), 2)))
            if len(out) >= p.vector_seeds:
                break
        return out

    # -- walking ----------------------------------------------------------------------------------------------
    def pagerank_sparse(self, reset_idx: np.ndarray, reset_val: np.ndarray, back_idx: np.ndarray,
                        back_val: np.ndarray) -> np.ndarray:
        """Personalized PageRank over this graph (:func:`retrieval.pagerank.pagerank_sparse`), with its params."""
        p = self.params
        return pagerank_sparse(self.out_edges, self.n_entities + self.n_rows, reset_idx, reset_val, back_idx,
                               back_val, p.damping, p.iterations, p.tolerance, p.prune)

    def rank(self, link: Link, depth: int, mask: np.ndarray | None,
             passages: Sequence[int] = ()) -> list[tuple[int, float]]:
        """The rows best reached from the seeds, (row, PageRank mass) best first, at most ``depth``, only rows
        ``mask`` allows; ``passages``: rows to seed instead when no entity seeds it (the other lists' top, best
        first)."""
        n_e = self.n_entities
        ent = sum(s.weight for s in link.seeds)
        seed_mass: dict[int, float] = {}
        for s in link.seeds:
            j = self.position[s.entity_id]
            seed_mass[j] = seed_mass.get(j, 0.0) + s.weight / ent
        pas = [] if ent else [r for r in passages[: self.params.passage_seeds] if 0 <= r < self.n_rows]
        for rank, r in enumerate(pas, start=1):  # rank-discounted: the top passage is the surest
            seed_mass[n_e + r] = seed_mass.get(n_e + r, 0.0) + (1.0 / rank) / sum(1.0 / k for k in range(1, len(pas) + 1))
        seed_mass = {j: m for j, m in seed_mass.items() if m > 0}
        if not seed_mass:
            return []
        r_idx = np.fromiter(seed_mass, dtype=np.int64, count=len(seed_mass))
        r_val = np.fromiter(seed_mass.values(), dtype=np.float64, count=len(seed_mass))
        # A walker stuck at a passage without entities goes back to the entity seeds, so that such a passage
        # does not seem reached by the graph.
        b_idx, b_val = r_idx, r_val
        if ent:
            on_entity = r_idx < n_e
            b_idx, b_val = r_idx[on_entity], r_val[on_entity] / r_val[on_entity].sum()
        mass = self.pagerank_sparse(r_idx, r_val, b_idx, b_val)[n_e:]  # a view: the walk's own array
        on_row = r_idx >= n_e
        if self.params.walked_only:
            # A seeded passage keeps (1 - damping) of its seed mass whatever the graph says; without it the list
            # would repeat the other lists' top instead of saying what the entities lead to.
            mass[r_idx[on_row] - n_e] -= (1.0 - self.params.damping) * r_val[on_row]
        live = np.flatnonzero(mass > 0)
        if mask is not None:
            live = live[mask[live]]
        if live.size == 0:
            return []
        k = min(depth, live.size)
        top = live[np.argpartition(-mass[live], k - 1)[:k]] if k < live.size else live
        top = top[np.lexsort((top, -mass[top]))]  # mass, then row: the same order every time
        return [(int(r), float(mass[r])) for r in top]

    def places(self, link: Link, rows: Sequence[int]) -> tuple[float, ...]:
        """Each of ``rows``' place in the walk's list (from 1) for fusion: the rows the same seeds mention (and no
        other seed) share the mean of their places. The walk knows of them only that those entities are in them;
        how their masses differ comes from the other entities each holds, not from what the question asks, so a
        question naming one entity of many passages does not push some of them ahead of the rest (of those the
        list holds: a seed with more passages than the list is deep still has its masses choose which enter)."""
        out = np.arange(1, len(rows) + 1, dtype=np.float64)
        seeds = list(dict.fromkeys(self.position[s.entity_id] for s in link.seeds))
        if not seeds or not len(rows):
            return tuple(out.tolist())
        at = np.asarray(rows, dtype=np.int64) + self.n_entities
        edges = self.out_edges
        mentions = np.stack([np.isin(at, edges.indices[edges.indptr[j]:edges.indptr[j + 1]]) for j in seeds], axis=1)
        groups, group_of = np.unique(mentions, axis=0, return_inverse=True)
        group_of = np.asarray(group_of).ravel()
        for g in np.flatnonzero(groups.any(axis=1)):  # (the rows no seed mentions keep their places)
            members = group_of == g
            out[members] = out[members].mean()
        return tuple(out.tolist())


def _capitalized(words: Sequence[spans.Word]) -> set[str]:
    """The words a question capitalizes amid its words (its first is capitalized whatever it is); none when it
    writes no word in lower case (Title Case or capitals say nothing of names)."""
    rest = [w.text for w in words[1:] if w.text[:1].isalpha() and not w.cjk]
    if not any(w[:1].islower() for w in rest):
        return set()
    return {w for w in rest if w[:1].isupper()}


def walk_for_index(graph: GraphSnapshot, index: Any, params: WalkParams | None = None,
                   bases: Mapping[str, str] | None = None) -> GraphWalk:
    """The walk over ``graph`` and a loaded chunk index (its rows, and its tokenizer to tell stop words).
    ``bases``: the names' base forms (a published generation's lexicon holds them); by default found here."""
    if bases is None:
        bases = polish_bases(graph.entities, polish_chunks(index))
    return fit_to_index(GraphWalk.build(graph, index.by_id, len(index.rows), params, bases=bases), index)


def fit_to_index(walk: GraphWalk, index: Any) -> GraphWalk:
    """``walk`` (over ``index``'s rows) made to read questions as the index does: its tokenizer tells stop words
    and terms, its BM25 which rows hold them; and the rows' documents and titles for the second hop."""
    tokenizer = index.tokenizer
    walk.is_stop = lambda text: not tokenizer(text)
    walk.terms = tokenizer
    walk.holding = lambda terms: index.bm25.rows_holding_all(terms)  # the index's current BM25, whatever it is
    walk.query_language = index.query_language
    numbers: dict[str, int] = {}
    walk.document_of_row = np.fromiter((numbers.setdefault(r.document_id, len(numbers)) for r in index.rows),
                                       np.int64, len(index.rows))
    titles = [r.fields.get("title") if isinstance(r.fields.get("title"), str) else None for r in index.rows]
    if any(titles):
        mentions: dict[str, int] = {}
        for t in {t for t in titles if t}:
            base = base_title(t)
            df = [walk.df[j] for j in walk.keys.get(walk_key(base), ())]
            key = base.casefold()  # titles alike but for case share one count: the largest, in any order
            mentions[key] = max(mentions.get(key, 0), int(max(df, default=0)))
        walk.titles = TitleHops(titles, [r.document_id for r in index.rows], [r.text for r in index.rows],
                                walk.is_stop, mentions, len(index.rows), walk.params.max_entity_share)
    return walk


# -- the walk's files ----------------------------------------------------------------------------------------
# A generation holds its walk built (``index/walk.npz``: the transition matrix and the entities' chunk counts;
# ``index/walk.json``: the entities and their keys), so loading it parses no graph and normalizes no name
# (bench.pipeline: the load's time and resident memory).
WALK_ARRAYS, WALK_META, WALK_FORMAT = "walk.npz", "walk.json", 3  # (3: with the names' last parts)


def save_walk(walk: GraphWalk, folder: Path, lexicon: EntityLexicon) -> None:
    """Write ``walk`` (as :meth:`GraphWalk.build` made it) into ``folder``, a generation's index folder.
    ``lexicon``: the generation's (saved beside it), which the loaded walk links names with; the walk's own is
    saved too only where it differs (an entity the graph cites in a chunk the index does not hold)."""
    m = walk.out_edges
    np.savez(folder / WALK_ARRAYS, indptr=m.indptr, indices=m.indices, data=m.data, df=walk.df)
    meta = {"format": WALK_FORMAT, "keys_made_with": keys_made_with(), "relation_weight": walk.params.relation_weight,
            "synonym_weight": walk.params.synonym_weight, "rows": walk.n_rows, "max_words": walk.max_words,
            "ids": walk.entity_ids, "names": walk.names, "types": walk.types, "keys": walk.keys, "parts": walk.parts,
            "counts": walk.counts}
    if walk.lexicon.by_key != lexicon.by_key or walk.lexicon.max_words != lexicon.max_words:
        meta["lexicon"] = walk.lexicon.to_json()
    (folder / WALK_META).write_text(json.dumps(meta, ensure_ascii=False), encoding="utf-8")


def walk_meta(folder: Path, n_rows: int, params: WalkParams) -> dict[str, Any] | None:
    """The walk's ``walk.json`` in ``folder`` (see :func:`load_walk`), or None when there is none (an older
    generation's), or the walk was built with other edge weights than ``params``' or its name keys were made
    otherwise (:func:`retrieval.lexicon.keys_made_with`): it is then built from the graph. Raises ValueError when
    it does not list its entities evenly or is for another number of rows than the index's ``n_rows``."""
    meta_path = folder / WALK_META
    if not meta_path.exists() or not (folder / WALK_ARRAYS).exists():
        return None
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    if (meta.get("format") != WALK_FORMAT or meta.get("keys_made_with") != keys_made_with()
            or meta.get("relation_weight") != params.relation_weight
            or meta.get("synonym_weight") != params.synonym_weight):
        return None
    n_e = len(meta["ids"])
    if meta["rows"] != n_rows:
        raise ValueError(f"{WALK_META} is for {meta['rows']} chunk rows, the index holds {n_rows}")
    parts = meta.get("parts")
    if (len(meta["names"]) != n_e or len(meta["types"]) != n_e or not isinstance(parts, dict)
            or any(p < 0 or p >= n_e for ps in meta["keys"].values() for p in ps)):
        raise ValueError(f"{WALK_META} lists its entities' names, types and keys unevenly")
    if not all(isinstance(ps, list) and all(type(p) is int and 0 <= p < n_e for p in ps) for ps in parts.values()):
        raise ValueError(f"{WALK_META}: the names' last parts (\"parts\") name no entity of the {n_e}")
    return meta


def load_walk(folder: Path, meta: dict[str, Any], params: WalkParams, lexicon: EntityLexicon) -> GraphWalk:
    """The walk :func:`save_walk` wrote in ``folder``, described by ``meta`` (:func:`walk_meta`). ``lexicon``:
    the generation's, which it links names with unless it saved its own. Raises ValueError when ``walk.npz``
    does not describe the entities and rows ``meta`` lists."""
    ids, names, types, n_rows = meta["ids"], meta["names"], meta["types"], meta["rows"]
    n_e = len(ids)
    with np.load(folder / WALK_ARRAYS, allow_pickle=False) as z:
        indptr, indices, data, df = z["indptr"], z["indices"], z["data"], z["df"]
    n = n_e + n_rows
    if (len(df) != n_e or len(indptr) != n + 1 or len(indices) != len(data) or indptr[-1] != len(indices)
            or (len(indices) and (indices.min() < 0 or indices.max() >= n))):
        raise ValueError(f"{WALK_ARRAYS} does not describe the {n_e} entities and {n_rows} rows of {WALK_META}")
    out_edges = sparse.csr_matrix((data, indices, indptr), shape=(n, n))
    if "lexicon" in meta:
        lexicon = EntityLexicon.from_json(meta["lexicon"])
    walk = GraphWalk(ids, names, df, meta["keys"], out_edges, n_rows, lexicon, params, meta["counts"],
                     lambda _: False, max_words=int(meta["max_words"]))
    walk.types = list(types)
    walk.parts = meta["parts"]
    return walk


def walk_params(settings: Any) -> WalkParams:
    """The walk's parameters from ``retrieval`` settings (core.settings.RetrievalSettings)."""
    return WalkParams(damping=settings.graph_damping, vector_score=settings.graph_vector_score,
                      vector_seeds=settings.graph_vector_seeds, vector_weight=settings.graph_vector_weight,
                      name_share=settings.graph_name_share)
