"""The hybrid chunk index: BM25 and dense vectors over the same rows, fused with weighted RRF.

Both engines rank only rows allowed by the metadata filter and are asked concurrently for
``retrieval.candidate_pool`` candidates each (and a third list, the graph walk's, joins them when the
generation has a graph: :mod:`retrieval.graph_walk`). The index lives in one folder beside the graph store:
``chunks.jsonl`` (row order), BM25 arrays (``bm25.npz`` + ``bm25.json``), ``vectors.npy`` and ``index.json``.
No pickle is used, so loading an index never runs code (:mod:`retrieval.index_files`). A search runs the steps
of :mod:`retrieval.ordering` over the rows the filter allows.
"""

from __future__ import annotations

from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from core.records import Chunk
from core.settings import RetrievalSettings
from core.text.language import UNDETERMINED, describe_language, detect_language, dominant, uncovered
from core.threads import blas_limit
from retrieval.bm25 import BM25Index
from retrieval.chunk_text import CHUNK_TEXT, indexed_text, row_fields
from retrieval.e5 import XLMR_LANGUAGES, E5Embedder
from retrieval.embed import Embedder, embedder_languages, make_embedder
from retrieval.filters import ColumnIndex, parse_filter
from retrieval.graph_fusion import NO_GRAPH, graph_list, walk_ahead
from retrieval.hits import DenseEngine, Hit, IndexedChunk, RankingEngine, SearchOutcome, SparseEngine
from retrieval.hops import Hop
from retrieval.index_files import built_with, load_index, save_index, stored_meta
from retrieval.ordering import Lists, first_kept, hops_promoted, outcome, reranked, two_lists, with_walk
from retrieval.tokenize import Tokenizer, TokenizerConfig
from retrieval.vector_cache import VectorCache, chunk_vectors
from retrieval.vectors import VectorIndex

TAIL_DEPTH = 1000  # how deep the lists go for a top_k beyond retrieval.candidate_pool (the contract's largest top_k)


class ChunkIndex:
    """BM25 and dense vectors over the same rows: built and synced from the store's chunks, searched by fusion."""

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
        self.graph_walk: Any = None  # a retrieval.graph_walk.GraphWalk over these rows, set when a generation is loaded

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

    def __len__(self) -> int:
        return int(self.bm25.alive.sum())

    # -- building -------------------------------------------------------------------------------------------
    # Building runs with the process's BLAS thread limit (core.threads): embedding and the BM25 commit are
    # CPU-bound and must not stall on BLAS threads that another process keeps descheduled.
    @blas_limit()
    def add(self, chunks: Sequence[Chunk], on_progress: Callable[[int], None] | None = None, batch: int = 256,
            graph: bool = True) -> None:
        """Add (or replace) chunks; replaced chunks' old rows are deleted first. ``graph`` False leaves the new
        vectors out of the HNSW graph until the rows are put in order (:meth:`sync`)."""
        self._columns = None
        replaced = [self.by_id[c.id] for c in chunks if c.id in self.by_id]
        self.bm25.delete(replaced)
        counts = self.language_counts().copy()
        embedded: list[np.ndarray] = []  # appended to the matrix once: each append copies the whole matrix
        for start in range(0, len(chunks), batch):
            part = chunks[start:start + batch]
            langs = [detect_language(c.text) for c in part]
            counts.update(langs)
            main = dominant(counts)
            langs = [main if lang == UNDETERMINED else lang for lang in langs]  # a table or a list of names
            rows = self.bm25.add(self.tokenizer(indexed_text(c), lang) for c, lang in zip(part, langs))
            embedding = self.vectors is not None and self.embedder is not None
            if embedding:  # progress chunk by chunk as the embedder goes (it is most of a build's time)
                embedded.append(chunk_vectors(self.embedder, self.vector_cache, part, on_progress))  # type: ignore[union-attr]
            for row, c, lang in zip(rows, part, langs):
                self.rows.append(IndexedChunk(c.id, c.document_id, c.text, c.source, row_fields(c), lang))
                self.by_id[c.id] = row
            if on_progress and not embedding:
                on_progress(len(part))
        self.bm25.commit()
        if self.vectors is not None:
            self.vectors.add(embedded)
            del embedded
            if graph:
                self.vectors.build_ann()

    def _sync_plan(self, chunks: Sequence[Chunk]) -> tuple[list[int], list[Chunk]]:
        """What :meth:`sync` does: the live rows to delete (chunk gone or different) and the chunks to add."""
        want = {c.id: c for c in chunks}
        have = {self.rows[i].chunk_id: int(i) for i in np.flatnonzero(self.bm25.alive)}
        stale = []
        for cid, i in have.items():
            c, r = want.get(cid), self.rows[i]
            if c is None or (c.text, c.source, row_fields(c)) != (r.text, r.source, r.fields):
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
            self.add(missing, on_progress, graph=False)  # the graph takes the new rows in their final order
        elif stale:
            self.bm25.commit()
        self._canonical_order()
        if self.vectors is not None:
            self.vectors.build_ann()  # rows still outside the graph (none when the order changed)
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
        if top_k > pool and candidates >= pool:  # a list was cut at the pool: the rest lie deeper
            deeper, _ = self._ranked(text, max(top_k, TAIL_DEPTH), top_k, *args)
            have = {h.chunk_id for h in outcome.hits}
            rest = [h for h in deeper.hits if h.chunk_id not in have][: top_k - pool]
            outcome = replace(outcome, hits=outcome.hits + rest)
        return outcome

    def _ranked(self, text: str, depth: int, keep: int, dense_weight: float | None, sparse_weight: float | None,
                rrf_k: float | None, metadata_filter: dict[str, Any] | None, fusion: str | None,
                graph_weight: float | None) -> tuple[SearchOutcome, int]:
        """The first ``keep`` fused hits of lists ``depth`` deep, and how many candidates were fused: the rows the
        filter allows, BM25 and dense ranked, fused, the graph walk's list joined, reranked, the head of the order
        without the walk's list put back first, and the first hop's named passages moved up
        (:mod:`retrieval.ordering`)."""
        s = self.settings
        explicit = dense_weight is not None or sparse_weight is not None
        mask = self.allowed(metadata_filter)
        q_lang = self.query_language(text)
        lists = self._lists(text, depth, mask, q_lang, explicit, graph_weight,
                            Lists([], [], s.sparse_weight if sparse_weight is None else sparse_weight,
                                  self.default_dense_weight if dense_weight is None else dense_weight))
        rrf_k = s.rrf_k if rrf_k is None else rrf_k
        ranked, fused, ranking = two_lists(text, lists, fusion or s.fusion, explicit, rrf_k, s.convex_alpha)
        walk = graph_list(self.graph_walk, text, graph_weight, s.graph_weight, depth, mask, ranked,
                          self._link_vector(text, lists, q_lang, graph_weight), s.graph_vector_strong_score,
                          lists.ahead)
        order = with_walk(lists, ranked, fused, ranking, walk, rrf_k)
        # The head of the order without the walk's list, put back first under the default (a caller's weights
        # are fused as given).
        first = s.graph_keeps_first if not explicit and graph_weight is None else 0
        head = [row for row, _ in ranked[:first]]
        if s.rerank:  # a query in an undetermined language is tokenized in the corpus's
            terms = lambda t: self.tokenizer(t, self.query_language(t))  # noqa: E731
            order = reranked(text, order, self.rows, terms, s)
            if head and walk.rows:
                head = reranked(text, with_walk(lists, ranked, fused, ranking, NO_GRAPH, rrf_k), self.rows, terms,
                                s).rows[:first]
        order = first_kept(order, head, walk, lists)
        hops: list[Hop] = []
        titles = getattr(self.graph_walk, "titles", None)
        if walk.weight > 0 and walk.rows and titles is not None and s.hop_links > 0:
            order, hops = hops_promoted(text, order, titles, s)
        return outcome(order, keep, lists, walk, hops, self.rows, q_lang), len(order.rows)

    def allowed(self, metadata_filter: dict[str, Any] | None) -> np.ndarray:
        """The live rows the metadata filter allows (every live row without one), as a mask over the rows."""
        conds = parse_filter(metadata_filter)
        if not conds:
            return self.bm25.alive
        if self._columns is None or self._columns.n != len(self.rows):
            self._columns = ColumnIndex([r.fields for r in self.rows])
        return self._columns.mask(conds, self.bm25.alive)

    def _lists(self, text: str, depth: int, mask: np.ndarray, q_lang: str, explicit: bool,
               graph_weight: float | None, lists: Lists) -> Lists:
        """BM25 and dense ranked ``depth`` deep into ``lists`` (which holds the weights to apply). By default an
        engine that cannot read the query's language, or the matching chunks', gets no weight; weights the caller
        gave are kept. Either way a warning names the language."""
        covered = self.embedder_languages
        use_dense = self.dense is not None and lists.dense_weight > 0
        use_sparse = lists.sparse_weight > 0
        gaps = uncovered([q_lang], covered) if use_dense else []
        if gaps and not explicit:
            use_dense, lists.dense_weight = False, 0.0  # no need to run an engine that cannot read the query
            lists.warnings.append(self._language_warning(gaps[0], "query", explicit))
        if use_dense and use_sparse:
            self._rank_both(text, depth, mask, q_lang, graph_weight, lists)
        else:
            lists.sparse = self.sparse.rank(text, depth, mask) if use_sparse else []
            lists.dense, lists.vector = self._dense_rank(text, depth, mask) if use_dense else ([], None)
        lists.dense_ran = use_dense
        if gaps and explicit:
            lists.warnings.append(self._language_warning(gaps[0], "query", explicit))
        elif use_dense and covered is not None:
            # The matching chunks: BM25's top ten (the dense list's when BM25 matched nothing).
            top = [self.rows[row].language for row, _ in (lists.sparse or lists.dense)[:10]]
            chunk_gaps = uncovered([dominant(top)], covered)
            if chunk_gaps:
                lists.warnings.append(self._language_warning(chunk_gaps[0], "matching chunks", explicit))
                lists.vector = None  # nor would its vector link entities reliably
                if not explicit:
                    lists.dense, lists.dense_weight = [], 0.0
        return lists

    def _rank_both(self, text: str, depth: int, mask: np.ndarray, q_lang: str, graph_weight: float | None,
                   lists: Lists) -> None:
        """BM25 and dense at once: the dense engine runs beside this thread, which ranks BM25 meanwhile. The graph
        walk needs the question's vector, not the dense ranking: this thread then links and walks while the dense
        list ranks (the entity similarities run here, beside the chunks' product)."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="strata-search")
        vector: Future[np.ndarray | None] = Future()
        f_dense = self._pool.submit(self._dense_rank, text, depth, mask, vector)
        lists.sparse = self.sparse.rank(text, depth, mask)
        if self.graph_walk is not None and graph_weight != 0:
            by_vector = self._links_by_vector(q_lang)
            lists.ahead = walk_ahead(self.graph_walk, text, vector.result() if by_vector else None, depth, mask)
        lists.dense, lists.vector = f_dense.result()

    def _link_vector(self, text: str, lists: Lists, q_lang: str, graph_weight: float | None) -> np.ndarray | None:
        """The vector the graph walk links entities by: when the walk has entity vectors of this embedder and the
        embedder reads the question, the dense list's vector (embedded here only when the dense list did not run)."""
        if graph_weight == 0 or not self._links_by_vector(q_lang):
            return None
        if lists.vector is not None or lists.dense_ran:
            return lists.vector
        return self.dense.query_vector(text)  # type: ignore[union-attr]

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
        if self._links_by_vector(self.query_language(text)):
            qv = self.dense.query_vector(text)  # type: ignore[union-attr]
        return self.graph_walk.link(text, qv)

    def _links_by_vector(self, q_lang: str) -> bool:
        """Whether the walk links a question in ``q_lang`` by vector: it has this embedder's entity vectors, which read it."""
        walk = self.graph_walk
        return (walk is not None and getattr(walk, "entity_vectors", None) is not None and self.embedder is not None
                and isinstance(self.dense, DenseEngine) and walk.vector_embedder == self.embedder.name
                and not uncovered([q_lang], self.embedder_languages))

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
    def compact(self) -> None:
        """Drop the deleted rows (BM25 keeps them, masked, until the index is saved)."""
        live = np.flatnonzero(self.bm25.alive)
        if live.size != len(self.rows):
            self._compact(live)

    def _compact(self, live: np.ndarray) -> None:
        """Rebuild without dead rows (keeps stored term frequencies; re-embeds nothing)."""
        self.bm25 = self.bm25.compact(live)
        self.sparse = SparseEngine(self.tokenizer, self.bm25, self.query_language)
        if self.vectors is not None:
            self.vectors.reorder(live)  # the graph keeps its labels; rows left out are marked deleted in it
        self.rows = [self.rows[i] for i in live]
        self.by_id = {r.chunk_id: i for i, r in enumerate(self.rows)}
        self._columns = None

    # -- persistence (retrieval.index_files) ----------------------------------------------------------------
    def save(self, folder: Path) -> None:
        """Write the index to ``folder`` atomically (:func:`retrieval.index_files.save_index`)."""
        save_index(self, folder)

    @classmethod
    def load(cls, folder: Path, settings: RetrievalSettings, embedder: Embedder | None | str = "settings",
             vector_cache: VectorCache | None = None, llm: Any = None) -> "ChunkIndex":
        """The index saved in ``folder`` (:func:`retrieval.index_files.load_index`). Under ``auto`` it serves with
        the embedder it was built with (:func:`retrieval.index_files.built_with`), which its index run chose for
        its corpus."""
        if settings.embedder == "auto":
            settings = settings.model_copy(update={"embedder": built_with(stored_meta(folder)) or "auto"})
        return load_index(lambda: cls(settings, embedder, vector_cache, llm), folder)
