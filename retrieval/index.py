"""The hybrid chunk index: BM25 and dense vectors over the same rows, fused with weighted RRF.

Both engines rank only rows allowed by the metadata filter and are asked concurrently for
``retrieval.candidate_pool`` candidates each (and a third list, the graph walk's, joins them when the
generation has a graph: :mod:`retrieval.graph_walk`). The index lives in one folder beside the graph store:
``chunks.jsonl`` (row order), BM25 arrays (``bm25.npz`` + ``bm25.json``), ``vectors.npy`` and ``index.json``.
No pickle is used, so loading an index never runs code.
"""

from __future__ import annotations

import inspect
import json
import os
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from retrieval.bm25 import BM25Index
from retrieval.e5 import XLMR_LANGUAGES, E5Embedder
from retrieval.embed import Embedder, embedder_languages, make_embedder
from core.text.language import UNDETERMINED, describe_language, detect_language, dominant, uncovered
from retrieval.vector_cache import VectorCache
from retrieval.filters import ColumnIndex, parse_filter
from retrieval.fusion import adapt_weights, convex_combination, rerank_scores, weighted_rrf
from retrieval.graph_fusion import WalkAhead, fuse_graph, graph_list, walk_ahead
from retrieval.hops import Hop
from retrieval.tokenize import Tokenizer, TokenizerConfig
from retrieval.vectors import VectorIndex
from core.records import Chunk, stable_hash
from core.settings import RetrievalSettings
from core.threads import blas_limit

FORMAT_VERSION = 1
TAIL_DEPTH = 1000  # how deep the lists go for a top_k beyond retrieval.candidate_pool (the contract's largest top_k)


class IndexMismatchError(ValueError):
    """The stored index was built with settings that differ from the current ones."""


@dataclass(frozen=True, slots=True)
class IndexedChunk:
    chunk_id: str
    document_id: str
    text: str
    source: str
    fields: dict[str, Any] = field(compare=False, hash=False)
    language: str = UNDETERMINED  # see core.text.language; an undetermined chunk takes the corpus's main language


@dataclass(frozen=True, slots=True)
class Hit:
    chunk_id: str
    rrf_score: float
    text: str
    source: str
    document_id: str
    sparse_rank: int | None
    dense_rank: int | None
    score: float = 0.0  # the score the ranking ordered by (see SearchOutcome.ranking); rrf_score under fusion "rrf"
    graph_rank: int | None = None  # rank in the graph walk's list (retrieval.graph_walk)


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    """A search's hits, the weights it applied, and warnings for the caller (e.g. an embedder that does not
    read the query's or the matching chunks' language)."""

    hits: list[Hit]
    sparse_weight: float
    dense_weight: float
    query_language: str
    warnings: list[str]
    ranking: str = "rrf"  # what ordered the hits: "rrf", "convex (BM25 share a)" or "lexical rerank (...)"
    graph_weight: float = 0.0  # the graph walk list's weight (0: not used)
    graph_seeds: tuple[str, ...] = ()  # the entities that seeded the walk
    graph_vector_seeds: tuple[str, ...] = ()  # those of them linked by the question's vector
    hops: tuple[tuple[str, str, str], ...] = ()  # (chunk moved up, the first-hop chunk naming it, the title named)


class RankingEngine(Protocol):
    name: str

    def rank(self, text: str, k: int, mask: np.ndarray | None) -> list[tuple[int, float]]: ...


class SparseEngine:
    name = "bm25"

    def __init__(self, tokenizer: Tokenizer, bm25: BM25Index, language: Callable[[str], str] | None = None) -> None:
        self.tokenizer, self.bm25, self.language = tokenizer, bm25, language  # language: the query's, resolved

    def rank(self, text: str, k: int, mask: np.ndarray | None) -> list[tuple[int, float]]:
        return self.bm25.top(self.tokenizer(text, self.language(text) if self.language else None), k, mask)


class DenseEngine:
    name = "dense"

    def __init__(self, embedder: Embedder, vectors: VectorIndex) -> None:
        self.embedder, self.vectors = embedder, vectors

    def rank(self, text: str, k: int, mask: np.ndarray | None) -> list[tuple[int, float]]:
        return self.rank_with_vector(text, k, mask)[0]

    def query_vector(self, text: str) -> np.ndarray:
        # Models trained with query/passage prefixes (E5) embed queries with their own method.
        embed = getattr(self.embedder, "embed_queries", self.embedder.embed)
        return embed([text])[0]

    def rank_with_vector(self, text: str, k: int, mask: np.ndarray | None,
                         on_vector: Callable[[np.ndarray], Any] | None = None) -> tuple[list[tuple[int, float]],
                                                                                         np.ndarray]:
        """The ranking and the question's vector it was made with (the graph walk links entities by it);
        ``on_vector`` gets the vector as soon as it is embedded, before the ranking."""
        vec = self.query_vector(text)
        if on_vector is not None:
            on_vector(vec)
        return self.vectors.top(vec, k, mask), vec


CHUNK_TEXT = "title+text"  # what BM25 and the embedder read of a chunk (the index's signature says it)
HEADER_MAX_CHARS = 300


def chunk_header(c: Chunk) -> str:
    """The line indexed above a chunk's text: its document's title (front matter, a ``.jsonl`` field, a first-line
    ``# `` heading) and front-matter ``description``, unless the chunk already opens with the title. A passage
    from the middle of a page ("Type: Boolean. If true, ...") says what it is about only through its page:
    "What is package-lock.json for?" found the page titled package-lock.json third, below a page that names the
    file in every option. Empty without a title."""
    title, desc = c.metadata.get("title"), c.metadata.get("description")
    if not isinstance(title, str) or not title.strip():
        return ""
    title = " ".join(title.split())
    if title.casefold() in " ".join(c.text[:len(title) + 12].split()).casefold():
        return ""  # the chunk opens with the title already (a .jsonl row's body, a page's "# " heading)
    header = f"{title}: {' '.join(desc.split())}" if isinstance(desc, str) and desc.strip() else title
    return header[:HEADER_MAX_CHARS]


def indexed_text(c: Chunk) -> str:
    """What BM25 and the embedder read of ``c``: :func:`chunk_header` above its text (results show the text)."""
    header = chunk_header(c)
    return f"{header}\n{c.text}" if header else c.text


def _vector_key(c: Chunk) -> str:
    """The vector cache's key for ``c``: its content hash, with its header when it has one."""
    header = chunk_header(c)
    return stable_hash(c.content_hash, header, size=12) if header else c.content_hash


def _fields(c: Chunk) -> dict[str, Any]:
    return {**c.metadata, "document_id": c.document_id, "source": c.source}


class ChunkIndex:
    def __init__(self, settings: RetrievalSettings, embedder: Embedder | None | str = "settings",
                 vector_cache: VectorCache | None = None, llm: Any = None) -> None:
        self.settings = settings
        self.chunk_text = CHUNK_TEXT  # what BM25 and the embedder read of its chunks (an older index: "text")
        self.tokenizer = Tokenizer(TokenizerConfig(settings.stopwords, settings.stemming, settings.polish_lemmas))
        self.bm25 = BM25Index(settings.bm25_k1, settings.bm25_b, settings.bm25_epsilon)
        self.embedder = (make_embedder(settings.embedder, settings.hashing_dim, llm, settings.embedding_model,
                                       settings.embedding_dim, settings.model_cache)
                         if embedder == "settings" else embedder)  # type: ignore[assignment]
        self.vector_cache = vector_cache
        self.vectors = VectorIndex(self.embedder.dim, settings.hnsw_threshold) if self.embedder else None
        self.rows: list[IndexedChunk] = []
        self.by_id: dict[str, int] = {}
        self.sparse: RankingEngine = SparseEngine(self.tokenizer, self.bm25, self.query_language)
        self.dense: RankingEngine | None = DenseEngine(self.embedder, self.vectors) if self.embedder and self.vectors else None
        self._pool: ThreadPoolExecutor | None = None
        self._columns: ColumnIndex | None = None
        self._languages: tuple[tuple[int, int], Counter[str]] | None = None  # ((rows, live rows), counts)
        self.graph_walk: Any = None  # a retrieval.graph_walk.GraphWalk over these rows, set when a generation loads

    @property
    def dense_name(self) -> str:
        return self.embedder.name if self.embedder else "none"

    @property
    def default_dense_weight(self) -> float:
        """The configured dense weight, or 1.0 with a semantic embedder and 0 (BM25 alone) without one."""
        if self.settings.dense_weight is not None:
            return self.settings.dense_weight
        return 1.0 if self.embedder is not None and getattr(self.embedder, "semantic", False) else 0.0

    @property
    def embedder_languages(self) -> frozenset[str] | None:
        """The languages the embedder reads (``None``: no limit claimed, or no embedder)."""
        return embedder_languages(self.embedder) if self.embedder is not None else None

    def language_counts(self) -> Counter[str]:
        """How many live chunks are in each language (cached until rows are added or deleted)."""
        key = (len(self.rows), int(self.bm25.alive.sum()) if len(self.rows) else 0)
        if self._languages is None or self._languages[0] != key:
            alive = self.bm25.alive
            self._languages = (key, Counter(r.language for i, r in enumerate(self.rows) if i < len(alive) and alive[i]))
        return self._languages[1]

    @property
    def main_language(self) -> str:
        """The corpus's most common determined language (``und`` for an empty or undetermined corpus)."""
        return dominant(self.language_counts()) if self.rows else UNDETERMINED

    def query_language(self, text: str) -> str:
        """The query's language; a short query with no signal takes the corpus's main language."""
        lang = detect_language(text)
        return self.main_language if lang == UNDETERMINED else lang

    def describe_languages(self) -> str:
        """The corpus's languages and whether the embedder reads them, in words (``strata index``/``status``)."""
        counts = self.language_counts()
        if not counts:
            return "languages: none (empty index)"
        text = "languages: " + ", ".join(f"{lang} {n}" for lang, n in counts.most_common())
        if self.embedder is None or self.default_dense_weight == 0:
            return text
        gaps = uncovered(counts, self.embedder_languages)
        if not gaps:
            return text + f" (all read by {self.embedder.name})"
        names = ", ".join(describe_language(g) for g in gaps)
        hint = " (embedder e5 reads them)" if set(gaps) <= XLMR_LANGUAGES and self.embedder.name != E5Embedder.name else ""
        return text + f"; {self.embedder.name} does not read {names}: BM25 alone ranks those by default" + hint

    def describe(self) -> str:
        """Which engines a default search uses, in words (printed by the CLI), with the corpus's languages."""
        langs = f"; {self.describe_languages()}" if self.rows else ""
        if self.embedder is None:
            return "BM25 alone (no embedder configured)" + langs
        if self.default_dense_weight == 0:
            return f"BM25 alone ({self.embedder.name} is not a semantic embedder; its fusion would lower quality)" + langs
        return f"BM25 + {self.embedder.name}, {self.settings.fusion} fusion" + langs

    def _embed_texts(self, texts: list[str], on_progress: Callable[[int], None] | None) -> np.ndarray:
        """The embedder's vectors of ``texts``, reporting progress as each of its batches finishes (an embedder
        that takes no callback is given 16 texts at a time), so a long embedding shows its rate and an ETA."""
        assert self.embedder is not None
        if on_progress is None:
            return self.embedder.embed(texts)
        if "on_progress" in inspect.signature(self.embedder.embed).parameters:
            return self.embedder.embed(texts, on_progress=on_progress)  # type: ignore[call-arg]
        parts = []
        for start in range(0, len(texts), 16):
            parts.append(self.embedder.embed(texts[start:start + 16]))
            on_progress(len(parts[-1]))
        return np.concatenate(parts) if parts else self.embedder.embed(texts)

    def _embed(self, chunks: Sequence[Chunk], on_progress: Callable[[int], None] | None = None) -> np.ndarray:
        """Vectors of ``chunks``, from the cache when it has them; ``on_progress`` is told of every chunk."""
        assert self.embedder is not None
        if self.vector_cache is None:
            return self._embed_texts([indexed_text(c) for c in chunks], on_progress)
        keys = [_vector_key(c) for c in chunks]
        cached = self.vector_cache.get_many(self.embedder.name, keys, self.embedder.dim)
        missing = [(c, k) for c, k in zip(chunks, keys) if k not in cached]
        if on_progress and len(chunks) > len(missing):
            on_progress(len(chunks) - len(missing))
        if missing:
            fresh = self._embed_texts([indexed_text(c) for c, _ in missing], on_progress)
            new = {k: v for (_, k), v in zip(missing, fresh)}
            self.vector_cache.put_many(self.embedder.name, new)
            cached.update(new)
        return np.stack([cached[k] for k in keys]) if chunks else np.zeros((0, self.embedder.dim), np.float32)

    def __len__(self) -> int:
        return int(self.bm25.alive.sum())

    # -- building -------------------------------------------------------------------------------------------
    # Building runs with the process's BLAS thread limit (core.threads): embedding and the BM25 commit are
    # CPU-bound and must not stall on BLAS threads that another process keeps descheduled.
    @blas_limit()
    def add(self, chunks: Sequence[Chunk], on_progress: Callable[[int], None] | None = None, batch: int = 256) -> None:
        """Add (or replace) chunks; replaced chunks' old rows are deleted first."""
        self._columns = None
        replaced = [self.by_id[c.id] for c in chunks if c.id in self.by_id]
        self.bm25.delete(replaced)
        counts = self.language_counts().copy()
        for start in range(0, len(chunks), batch):
            part = chunks[start:start + batch]
            langs = [detect_language(c.text) for c in part]
            counts.update(langs)
            main = dominant(counts)
            langs = [main if lang == UNDETERMINED else lang for lang in langs]  # a table or a list of names
            rows = self.bm25.add(self.tokenizer(indexed_text(c), lang) for c, lang in zip(part, langs))
            embedding = self.vectors is not None and self.embedder is not None
            if embedding:  # progress chunk by chunk as the embedder goes (it is most of a build's time)
                self.vectors.add(self._embed(part, on_progress))  # type: ignore[union-attr]
            for row, c, lang in zip(rows, part, langs):
                self.rows.append(IndexedChunk(c.id, c.document_id, c.text, c.source, _fields(c), lang))
                self.by_id[c.id] = row
            if on_progress and not embedding:
                on_progress(len(part))
        self.bm25.commit()
        if self.vectors is not None:
            self.vectors.build_ann()

    def _sync_plan(self, chunks: Sequence[Chunk]) -> tuple[list[int], list[Chunk]]:
        """What :meth:`sync` does: the live rows to delete (chunk gone or different) and the chunks to add."""
        want = {c.id: c for c in chunks}
        have = {self.rows[i].chunk_id: int(i) for i in np.flatnonzero(self.bm25.alive)}
        stale = []
        for cid, i in have.items():
            c, r = want.get(cid), self.rows[i]
            if c is None or (c.text, c.source, _fields(c)) != (r.text, r.source, r.fields):
                stale.append(i)
        kept = set(have).difference(self.rows[i].chunk_id for i in stale)
        return stale, sorted((c for cid, c in want.items() if cid not in kept), key=lambda c: c.id)

    def to_add(self, chunks: Sequence[Chunk]) -> int:
        """How many chunks :meth:`sync` with ``chunks`` adds (each embedded, or its vector taken from the cache):
        the total its progress counts to."""
        return len(self._sync_plan(chunks)[1])

    @blas_limit()
    def sync(self, chunks: Sequence[Chunk], on_progress: Callable[[int], None] | None = None) -> tuple[int, int]:
        """Make the rows exactly ``chunks`` (the store's), in chunk-id order: rows whose chunk is gone or differs
        (text, source, metadata) are deleted, missing chunks are added (vectors from the cache when it has
        them). Whatever runs came before, the result is the same rows in the same order. Returns (added,
        removed)."""
        stale, missing = self._sync_plan(chunks)
        for i in stale:
            self.by_id.pop(self.rows[i].chunk_id, None)
        self.bm25.delete(stale)
        if missing:
            self.add(missing, on_progress)
        elif stale:
            self.bm25.commit()
        self._canonical_order()
        return len(missing), len(stale)

    def _canonical_order(self) -> None:
        """Renumber live rows in chunk-id order, so ties broken by row fall the same way in every generation."""
        live = np.flatnonzero(self.bm25.alive)
        ids = np.array([self.rows[i].chunk_id for i in live], dtype=object)
        order = live[np.argsort(ids, kind="stable")] if live.size else live
        if order.size != len(self.rows) or not np.array_equal(order, np.arange(len(self.rows))):
            self._compact(order)

    # -- searching ------------------------------------------------------------------------------------------
    def search(self, text: str, top_k: int, dense_weight: float | None = None, sparse_weight: float | None = None,
               rrf_k: float | None = None, metadata_filter: dict[str, Any] | None = None,
               fusion: str | None = None, graph_weight: float | None = None) -> list[Hit]:
        """Fused search: the hits of :meth:`search_detailed`."""
        return self.search_detailed(text, top_k, dense_weight, sparse_weight, rrf_k, metadata_filter, fusion,
                                    graph_weight).hits

    def search_detailed(self, text: str, top_k: int, dense_weight: float | None = None,
                        sparse_weight: float | None = None, rrf_k: float | None = None,
                        metadata_filter: dict[str, Any] | None = None, fusion: str | None = None,
                        graph_weight: float | None = None) -> SearchOutcome:
        """Fused search. Weights given by the caller are used exactly (the memory-query contract); without
        them the defaults apply, adapted to the query when ``retrieval.fusion`` is ``adaptive``.

        Each list offers ``retrieval.candidate_pool`` candidates whatever ``top_k`` is, so the first k hits are
        the first k for any larger ``top_k``; past the pool, the rest come from lists ``TAIL_DEPTH`` deep.

        The graph walk's list (when the generation has one, :mod:`retrieval.graph_walk`) is fused as a third
        list: ``graph_weight`` None lets the default decide (``retrieval.graph_weight`` when the question names
        entities the index knows, else 0); 0 leaves it out.

        Language: when the query, or most of BM25's top chunks, are in a language the embedder does not read,
        the default gives the dense ranking no weight; given weights are still used exactly. Either way the
        outcome's ``warnings`` name the language."""
        args = (dense_weight, sparse_weight, rrf_k, metadata_filter, fusion, graph_weight)
        pool = self.settings.candidate_pool
        outcome, candidates = self._ranked(text, pool, min(top_k, pool), *args)
        if top_k > pool and candidates > pool:
            deeper, _ = self._ranked(text, max(top_k, TAIL_DEPTH), top_k, *args)
            have = {h.chunk_id for h in outcome.hits}
            rest = [h for h in deeper.hits if h.chunk_id not in have][: top_k - pool]
            outcome = replace(outcome, hits=outcome.hits + rest)
        return outcome

    def _ranked(self, text: str, depth: int, keep: int, dense_weight: float | None, sparse_weight: float | None,
                rrf_k: float | None, metadata_filter: dict[str, Any] | None, fusion: str | None,
                graph_weight: float | None) -> tuple[SearchOutcome, int]:
        """The first ``keep`` fused hits of lists ``depth`` deep, and how many candidates were fused."""
        s = self.settings
        fusion = fusion or s.fusion
        explicit = dense_weight is not None or sparse_weight is not None
        dense_weight = self.default_dense_weight if dense_weight is None else dense_weight
        sparse_weight = s.sparse_weight if sparse_weight is None else sparse_weight
        rrf_k = s.rrf_k if rrf_k is None else rrf_k
        conds = parse_filter(metadata_filter)
        if conds:
            if self._columns is None or self._columns.n != len(self.rows):
                self._columns = ColumnIndex([r.fields for r in self.rows])
            mask = self._columns.mask(conds, self.bm25.alive)
        else:
            mask = self.bm25.alive
        q_lang = self.query_language(text)
        covered = self.embedder_languages
        warnings: list[str] = []
        use_dense = self.dense is not None and dense_weight > 0
        use_sparse = sparse_weight > 0
        gaps = uncovered([q_lang], covered) if use_dense else []
        if gaps and not explicit:
            use_dense, dense_weight = False, 0.0  # no need to run an engine that cannot read the query
            warnings.append(self._language_warning(gaps[0], "query", explicit))
        qv: np.ndarray | None = None  # the question's vector, when the dense list computed it
        ahead: WalkAhead | None = None  # the graph walk made while the dense list ranked
        if use_dense and use_sparse:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="strata-search")
            # The dense engine runs beside this thread, which ranks BM25 meanwhile. The graph walk needs the
            # question's vector, not the dense ranking: this thread then links and walks while the dense list
            # ranks (the entity similarities run here, beside the chunks' product).
            vector: Future[np.ndarray | None] = Future()
            f_dense = self._pool.submit(self._dense_rank, text, depth, mask, vector)
            sparse = self.sparse.rank(text, depth, mask)
            if self.graph_walk is not None and graph_weight != 0:
                by_vector = self._links_by_vector() and not uncovered([q_lang], covered)
                ahead = walk_ahead(self.graph_walk, text, vector.result() if by_vector else None, depth, mask)
            dense, qv = f_dense.result()
        else:
            sparse = self.sparse.rank(text, depth, mask) if use_sparse else []
            dense, qv = self._dense_rank(text, depth, mask) if use_dense else ([], None)
        if gaps and explicit:
            warnings.append(self._language_warning(gaps[0], "query", explicit))
        elif use_dense and covered is not None:
            # The matching chunks: BM25's top ten (the dense list's when BM25 matched nothing).
            top = [self.rows[row].language for row, _ in (sparse or dense)[:10]]
            chunk_gaps = uncovered([dominant(top)], covered)
            if chunk_gaps:
                warnings.append(self._language_warning(chunk_gaps[0], "matching chunks", explicit))
                qv = None  # nor would its vector link entities reliably
                if not explicit:
                    dense, dense_weight = [], 0.0
        alpha = s.convex_alpha
        if not explicit and fusion == "adaptive" and sparse and dense:
            # Adaptive: weights adapted to the query, applied as the share of a convex combination.
            a_sparse, a_dense = adapt_weights(text, sparse, dense, sparse_weight, dense_weight)
            alpha = a_sparse / (a_sparse + a_dense) if a_sparse + a_dense > 0 else alpha
        s_rank = {row: i for i, (row, _) in enumerate(sparse, start=1)}
        d_rank = {row: i for i, (row, _) in enumerate(dense, start=1)}
        two = [(sparse_weight, [r for r, _ in sparse]), (dense_weight, [r for r, _ in dense])]
        fused: list[tuple[int, float]] | None = None  # the weighted RRF of the lists (rrf_score), made once
        if fusion in ("convex", "adaptive") and sparse and dense:
            ranked, ranking = convex_combination(sparse, dense, alpha), f"convex (BM25 share {alpha:.2f})"
        else:
            fused = weighted_rrf(two, k=rrf_k)
            ranked, ranking = fused, "rrf"
        # Entities are linked by the question's vector too when the walk has entity vectors of this embedder
        # and the embedder reads the question; the dense list's vector is reused (embedded here only when
        # the dense list did not run).
        link_vector = (qv if not uncovered([q_lang], covered) and self._links_by_vector() and graph_weight != 0
                       else None)
        if link_vector is None and not use_dense and graph_weight != 0 and self._links_by_vector() \
                and not uncovered([q_lang], covered):
            link_vector = self.dense.query_vector(text)  # type: ignore[union-attr]
        walk = graph_list(self.graph_walk, text, graph_weight, s.graph_weight, depth, mask, ranked, link_vector,
                          s.graph_vector_strong, ahead)
        if walk.rows:  # the third list: in rrf_score, and fused with the order of the other two
            fused = weighted_rrf([*two, (walk.weight, list(walk.rows))], k=rrf_k)
            ranked, ranking = fuse_graph(ranked, fused, walk, ranking, rrf_k)
        elif fused is None:
            fused = weighted_rrf(two, k=rrf_k)
        rrf = dict(fused)
        order = [row for row, _ in ranked]
        score = dict(ranked)
        if s.rerank:
            terms = lambda t: self.tokenizer(t, self.query_language(t))  # noqa: E731  (und: the corpus's language)
            window = s.candidate_pool  # not top_k: the first k hits must not depend on it
            reranked = rerank_scores(text, order[:window], self.rows, terms, rrf, s)
            order = sorted(order[:window], key=lambda row: -reranked[row]) + order[window:]  # stable
            score.update(reranked)
            ranking = "lexical rerank (rrf_score x term-match bonus)"
        hops: list[Hop] = []
        titles = getattr(self.graph_walk, "titles", None)
        if walk.weight > 0 and walk.rows and titles is not None and s.hop_links > 0:
            before = order
            order, hops = titles.promote(text, order, s.hop_links, s.hop_window)
            if order != before:
                # A passage moved up takes the score of the place it takes, so the scores still descend.
                place = [score.get(row, 0.0) for row in order]
                for i in range(len(order) - 2, -1, -1):
                    place[i] = max(place[i], place[i + 1])
                score.update(zip(order, place))
                ranking += (f"; the first hop, then {len(hops)} passage(s) it names by title" if hops
                            else "; the passages titled by the question's names first")
        g_rank = {row: i for i, row in enumerate(walk.rows, start=1)}
        hits = []
        for row in order[:keep]:
            r = self.rows[row]
            hits.append(Hit(r.chunk_id, rrf.get(row, 0.0), r.text, r.source, r.document_id, s_rank.get(row),
                            d_rank.get(row), score.get(row, 0.0), g_rank.get(row)))
        moved = tuple((self.rows[h.row].chunk_id, self.rows[h.named_by].chunk_id, h.title) for h in hops)
        return (SearchOutcome(hits, sparse_weight, dense_weight, q_lang, warnings, ranking, walk.weight, walk.seeds,
                              walk.vector_seeds, moved),
                len(order))

    def _dense_rank(self, text: str, depth: int, mask: np.ndarray | None,
                    vector: Future[np.ndarray | None] | None = None) -> tuple[list[tuple[int, float]],
                                                                              np.ndarray | None]:
        """The dense ranking and the question's vector (None from an engine that does not tell it). ``vector``
        gets the question's vector as soon as it is embedded, before the ranking (None on any failure)."""
        try:
            if isinstance(self.dense, DenseEngine):
                return self.dense.rank_with_vector(text, depth, mask, vector.set_result if vector else None)
            with_vector = getattr(self.dense, "rank_with_vector", None)
            if with_vector is not None:
                return with_vector(text, depth, mask)
            return self.dense.rank(text, depth, mask), None  # type: ignore[union-attr]
        finally:
            if vector is not None and not vector.done():
                vector.set_result(None)

    @property
    def embeds_entities(self) -> bool:
        """Whether a generation of this index holds entity vectors (its embedder reads meaning)."""
        return self.embedder is not None and bool(getattr(self.embedder, "semantic", True))

    def graph_link(self, text: str) -> Any:
        """The graph walk's link of ``text`` as a default search makes it (by names, and by the question's vector
        when the walk has entity vectors and the embedder reads the question); None without a walk."""
        if self.graph_walk is None:
            return None
        qv = None
        if self._links_by_vector() and not uncovered([self.query_language(text)], self.embedder_languages):
            qv = self.dense.query_vector(text)  # type: ignore[union-attr]
        return self.graph_walk.link(text, qv)

    def _links_by_vector(self) -> bool:
        """Whether the graph walk links questions to entities by vector (it has this embedder's entity vectors)."""
        walk = self.graph_walk
        return (walk is not None and getattr(walk, "entity_vectors", None) is not None and self.embedder is not None
                and isinstance(self.dense, DenseEngine) and walk.vector_embedder == self.embedder.name)

    def _language_warning(self, language: str, where: str, explicit: bool) -> str:
        name = self.embedder.name if self.embedder is not None else "the embedder"
        if explicit:
            return (f"{name} does not read {describe_language(language)} (the {where}); the given dense_weight was "
                    "applied as asked, but its ranking is unreliable here")
        return f"dense ranking given no weight: {name} does not read {describe_language(language)} (the {where})"

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None

    # -- persistence ----------------------------------------------------------------------------------------
    def _signature(self) -> dict[str, Any]:
        s = self.settings
        return {"format": FORMAT_VERSION, "k1": s.bm25_k1, "b": s.bm25_b, "epsilon": s.bm25_epsilon,
                "stopwords": s.stopwords, "stemming": s.stemming, "polish_lemmas": s.polish_lemmas,
                "embedder": self.dense_name, "chunk_text": CHUNK_TEXT}

    def save(self, folder: Path) -> None:
        """Write the index to ``folder`` atomically (a temporary folder renamed over the old one)."""
        folder = Path(folder)
        tmp = folder.with_name(folder.name + ".tmp")
        tmp.mkdir(parents=True, exist_ok=True)
        live = np.flatnonzero(self.bm25.alive)
        if live.size != len(self.rows):
            self._compact(live)
        with open(tmp / "chunks.jsonl", "w", encoding="utf-8") as fh:
            for r in self.rows:
                fh.write(json.dumps({"chunk_id": r.chunk_id, "document_id": r.document_id, "text": r.text,
                                     "source": r.source, "fields": r.fields, "language": r.language},
                                    ensure_ascii=False) + "\n")
        self.bm25.save(tmp)
        if self.vectors is not None:
            self.vectors.save(tmp)
        covered = self.embedder_languages
        (tmp / "index.json").write_text(json.dumps({
            **self._signature(), "rows": len(self.rows), "languages": dict(self.language_counts().most_common()),
            "embedder_languages": sorted(covered) if covered is not None else None}))
        old = folder.with_name(folder.name + ".old")
        if folder.exists():
            os.replace(folder, old)
        os.replace(tmp, folder)
        if old.exists():
            for p in old.iterdir():
                p.unlink()
            old.rmdir()

    def _compact(self, live: np.ndarray) -> None:
        """Rebuild without dead rows (keeps stored term frequencies; re-embeds nothing)."""
        self.bm25 = self.bm25.compact(live)
        self.sparse = SparseEngine(self.tokenizer, self.bm25, self.query_language)
        if self.vectors is not None:
            self.vectors.matrix = self.vectors.matrix[live]
            self.vectors._hnsw, self.vectors._hnsw_rows = None, 0  # row numbers changed: rebuild the graph
            self.vectors.build_ann()
        self.rows = [self.rows[i] for i in live]
        self.by_id = {r.chunk_id: i for i, r in enumerate(self.rows)}
        self._columns = None

    @classmethod
    def load(cls, folder: Path, settings: RetrievalSettings, embedder: Embedder | None | str = "settings",
             vector_cache: VectorCache | None = None, llm: Any = None) -> "ChunkIndex":
        folder = Path(folder)
        meta_path = folder / "index.json"
        if not meta_path.exists():
            raise FileNotFoundError(f"{folder}: no chunk index here; run `strata index <folder>` first")
        meta = json.loads(meta_path.read_text())
        idx = cls(settings, embedder, vector_cache, llm)
        expected = idx._signature()
        # An index from before chunk headers read the text alone: it still serves (its rows and vectors agree
        # with each other), and the next index run builds the index afresh (strata.generations.open_index).
        idx.chunk_text = meta.get("chunk_text", "text")
        diff = {k: (meta.get(k), v) for k, v in expected.items()
                if meta.get(k) != v and not (k == "chunk_text" and "chunk_text" not in meta)}
        if diff:
            raise IndexMismatchError(
                f"{folder}: the index was built with different settings {diff} (stored, current); "
                "rebuild it with `strata reindex FOLDER --full`")
        idx.bm25 = BM25Index.load(folder)
        idx.sparse = SparseEngine(idx.tokenizer, idx.bm25, idx.query_language)
        if idx.vectors is not None and idx.embedder is not None:
            idx.vectors = VectorIndex.load(folder, idx.embedder.dim, settings.hnsw_threshold)
            idx.dense = DenseEngine(idx.embedder, idx.vectors)
        with open(folder / "chunks.jsonl", encoding="utf-8") as fh:
            for i, line in enumerate(fh):
                d = json.loads(line)
                idx.rows.append(IndexedChunk(d["chunk_id"], d["document_id"], d["text"], d["source"], d["fields"],
                                             d.get("language") or detect_language(d["text"])))
                idx.by_id[d["chunk_id"]] = i
        return idx
