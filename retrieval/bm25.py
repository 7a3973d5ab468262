"""BM25 with exactly rank_bm25.BM25Okapi's scores, on a sparse term-by-row matrix of term frequencies.

The index is a CSR matrix by term: for each term, the rows that contain it and their term frequencies (6 bytes
a posting). A query term's weights ``idf * (tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)))`` are
computed in float64 from its postings, in rank_bm25's order of operations, so scores match it to rounding; a
query costs the length of its terms' postings, not the corpus size. Storing weights instead would cost 8 more
bytes a posting (1.2 GB at a million chunks) for a saving of a few multiplications.

``top()`` prunes with MaxScore: each term's largest weight is kept at commit, the rarest terms' rows are scored
in full (their other terms found by binary search), and when the remaining terms together cannot lift any other
row to the k-th score, their long postings are never summed. The answer is the same as the exhaustive one.

Adding rows appends postings; deleting marks rows dead. Either changes N, avgdl and idf for every row, as BM25
demands, so ``commit()`` rebuilds the CSR from the stored term frequencies with vectorized numpy: no text is
tokenized again. Parity with rank_bm25 includes its treatment of negative IDF: such terms get
``epsilon * mean(idf)``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from core.threads import blas_limit


def _run_starts(a: np.ndarray) -> np.ndarray:
    """For a sorted array: True where a run of equal values begins."""
    first = np.empty(a.size, bool)
    if a.size:
        first[0] = True
        np.not_equal(a[1:], a[:-1], out=first[1:])
    return first


class BM25Index:
    prune_min_postings = 20_000  # below this many matched postings the exhaustive pass is already fast

    def __init__(self, k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25) -> None:
        self.k1, self.b, self.epsilon = k1, b, epsilon
        self.vocab: dict[str, int] = {}
        self.n_terms = 0  # may exceed len(vocab) when ids are given directly (add_token_ids)
        self.indptr = np.zeros(1, np.int64)
        self.rows = np.zeros(0, np.int32)
        self.tf = np.zeros(0, np.uint16)
        self.idf = np.zeros(0, np.float64)
        self.max_weight = np.zeros(0, np.float64)  # per term: the most it adds to any row's score (MaxScore's bound)
        self.doc_len = np.zeros(0, np.int32)
        self.norm = np.zeros(0, np.float64)  # per row: k1 * (1 - b + b * dl / avgdl)
        self.alive = np.zeros(0, bool)
        self._pending: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._dirty = False

    @property
    def n_rows(self) -> int:
        return int(self.doc_len.shape[0])

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.indptr, self.rows, self.tf, self.idf, self.max_weight, self.doc_len,
                                      self.norm, self.alive))

    def add(self, docs: Iterable[Sequence[str]]) -> range:
        """Append documents given as token lists; returns their row numbers. Call ``commit()`` before querying."""
        vocab = self.vocab
        ids: list[np.ndarray] = []
        for tokens in docs:
            out = np.empty(len(tokens), np.int32)
            for i, tok in enumerate(tokens):
                tid = vocab.get(tok)
                if tid is None:
                    tid = vocab[tok] = len(vocab)
                out[i] = tid
            ids.append(out)
        self.n_terms = max(self.n_terms, len(vocab))
        return self.add_token_ids(ids)

    def add_token_ids(self, docs: Sequence[np.ndarray]) -> range:
        """Append documents given as arrays of term ids (vectorized: one sort for the whole batch)."""
        lens = np.fromiter((len(d) for d in docs), np.int64, count=len(docs))
        flat = np.concatenate(docs) if len(docs) and lens.sum() else np.zeros(0, np.int64)
        return self.add_flat(flat, lens)

    def add_flat(self, flat: np.ndarray, lens: np.ndarray) -> range:
        """Append documents given as one flat array of term ids and the length of each document."""
        first = self.n_rows
        lens = np.asarray(lens, np.int64)
        if lens.size:
            flat = np.asarray(flat, np.int64)
            self.n_terms = max(self.n_terms, int(flat.max()) + 1 if flat.size else 0)
            row = np.repeat(np.arange(first, first + lens.size, dtype=np.int64), lens)
            # Keys ordered by term, then row: the postings come out in CSR order, so commit() need not re-sort
            # a first build.
            span = first + lens.size
            uniq, counts = np.unique(flat * span + row, return_counts=True)
            self._pending.append(((uniq // span).astype(np.int32), (uniq % span).astype(np.int32),
                                  counts.astype(np.uint16 if counts.max(initial=0) < 65535 else np.int32)))
        self.doc_len = np.concatenate([self.doc_len, lens.astype(np.int32)])
        self.alive = np.concatenate([self.alive, np.ones(lens.size, bool)])
        self._dirty = True
        return range(first, first + lens.size)

    def delete(self, rows: Iterable[int]) -> None:
        idx = np.fromiter(rows, np.int64)
        if idx.size:
            self.alive[idx] = False
            self._dirty = True

    def _postings(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """All live postings as (term, row, tf), including pending ones."""
        counts = np.diff(self.indptr)
        term = np.repeat(np.arange(counts.size, dtype=np.int32), counts)
        parts = [(term, self.rows, self.tf)] + self._pending
        term = np.concatenate([p[0] for p in parts])
        row = np.concatenate([p[1] for p in parts])
        tf = np.concatenate([p[2].astype(np.int32) for p in parts])
        live = self.alive[row] if row.size else np.zeros(0, bool)
        return term[live], row[live], tf[live]

    @blas_limit()
    def commit(self) -> None:
        """Rebuild the CSR for the live rows: N, avgdl and idf all depend on the whole collection."""
        term, row, tf = self._postings()
        self._pending = []
        n_terms = max(self.n_terms, len(self.vocab))
        if term.size > 1 and not bool(np.all(term[1:] >= term[:-1])):
            order = np.argsort(term, kind="stable")
            term, row, tf = term[order], row[order], tf[order]
        df = np.bincount(term, minlength=n_terms).astype(np.float64)
        n_docs = int(self.alive.sum())
        present = df > 0
        idf = np.zeros(n_terms, np.float64)
        if n_docs:
            idf[present] = np.log(n_docs - df[present] + 0.5) - np.log(df[present] + 0.5)
            mean_idf = idf[present].mean() if present.any() else 0.0
            # rank_bm25 floors negative idf at epsilon times the mean idf over the vocabulary.
            idf[present & (idf < 0)] = self.epsilon * mean_idf
        avgdl = float(self.doc_len[self.alive].mean()) if n_docs else 1.0
        self.norm = self.k1 * (1 - self.b + self.b * self.doc_len.astype(np.float64) / avgdl)
        self.rows = row.astype(np.int32)
        self.tf = tf.astype(np.uint16 if tf.size == 0 or tf.max() < 65535 else np.int32)
        self.indptr = np.zeros(n_terms + 1, np.int64)
        np.cumsum(np.bincount(term, minlength=n_terms), out=self.indptr[1:])
        self.idf = idf
        self.n_terms = n_terms
        self.max_weight = np.full(n_terms, -np.inf)
        if term.size:
            # The largest weight of a term is at its highest tf-to-norm ratio; computed in chunks to bound memory.
            for s in range(0, term.size, 1 << 22):
                t, r, f = term[s:s + (1 << 22)], self.rows[s:s + (1 << 22)], self.tf[s:s + (1 << 22)]
                w = self._weights(idf[t], f, r)
                starts = np.flatnonzero(_run_starts(t))
                np.maximum.at(self.max_weight, t[starts], np.maximum.reduceat(w, starts))
        # A row without the term gets 0 from it, so the bound on what a term can add is never below 0.
        np.maximum(self.max_weight, 0.0, out=self.max_weight)
        self._dirty = False

    def _weights(self, idf: np.ndarray | float, tf: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """BM25Okapi weights, in rank_bm25's order of operations."""
        f = tf.astype(np.float64)
        return idf * (f * (self.k1 + 1) / (f + self.norm[rows]))

    def _terms(self, query: Sequence[str] | Sequence[int]) -> list[int]:
        """The ids of the query terms that occur in some row, repeats kept (rank_bm25 counts them again)."""
        if self._dirty:
            raise RuntimeError("BM25Index changed since the last commit(); call commit() before querying")
        out = []
        for tok in query:
            tid = self.vocab.get(tok) if isinstance(tok, str) else int(tok)
            if tid is not None and 0 <= tid < self.indptr.size - 1 and self.indptr[tid + 1] > self.indptr[tid]:
                out.append(tid)
        return out

    def _matches(self, terms: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """The postings of the query terms, concatenated in query-term order: (rows, weights)."""
        spans = [(int(self.indptr[t]), int(self.indptr[t + 1])) for t in terms]
        if len(spans) == 1:
            s, e = spans[0]
            rows, tf, idf = self.rows[s:e], self.tf[s:e], self.idf[terms[0]]
        else:
            rows = np.concatenate([self.rows[s:e] for s, e in spans])
            tf = np.concatenate([self.tf[s:e] for s, e in spans])
            idf = np.repeat(self.idf[terms], [e - s for s, e in spans])
        return rows, self._weights(idf, tf, rows)

    def scores(self, query: Sequence[str] | Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """(rows, scores) of every live row matching at least one query term, in row order."""
        terms = self._terms(query)
        if not terms:
            return np.zeros(0, np.int32), np.zeros(0, np.float64)
        rows, weights = self._matches(terms)
        if len(terms) == 1:
            return rows.copy(), weights
        # Sum per row in query-term order: a stable sort keeps each row's postings in that order, and bincount
        # adds its inputs in order, like rank_bm25's loop over the query.
        order = np.argsort(rows, kind="stable")
        rows, weights = rows[order], weights[order]
        first = _run_starts(rows)
        return rows[first], np.bincount(np.cumsum(first) - 1, weights=weights)

    def document_frequency(self, terms: Sequence[str]) -> np.ndarray:
        """How many rows hold each term (0 for a term no row holds; rows deleted since the last compaction count)."""
        ids = [self.vocab.get(t, -1) for t in terms]
        counts = np.diff(self.indptr)
        return np.array([int(counts[i]) if 0 <= i < counts.size else 0 for i in ids], np.float64)

    def rows_holding_all(self, terms: Sequence[str]) -> np.ndarray:
        """The live rows that hold every one of ``terms``, ascending (none when a term is in no row, or no term
        is given). A term's postings are in row order, so each further term is a binary search."""
        if self._dirty:
            raise RuntimeError("BM25Index changed since the last commit(); call commit() before querying")
        ids = [self.vocab.get(t, -1) for t in dict.fromkeys(terms)]
        if not ids or any(not 0 <= i < self.indptr.size - 1 for i in ids):
            return np.zeros(0, np.int32)
        ids.sort(key=lambda i: self.indptr[i + 1] - self.indptr[i])  # the rarest first: the fewest rows to test
        rows = self.rows[self.indptr[ids[0]]:self.indptr[ids[0] + 1]]
        for i in ids[1:]:
            post = self.rows[self.indptr[i]:self.indptr[i + 1]]
            if rows.size == 0 or post.size == 0:
                return np.zeros(0, np.int32)
            at = np.minimum(np.searchsorted(post, rows), post.size - 1)
            rows = rows[post[at] == rows]
        return rows[self.alive[rows]]

    def get_scores(self, query: Sequence[str]) -> np.ndarray:
        """Scores for every row (dead rows 0), like rank_bm25's ``get_scores``."""
        out = np.zeros(self.n_rows, np.float64)
        rows, sc = self.scores(query)
        out[rows] = sc
        return out

    def top(self, query: Sequence[str] | Sequence[int], k: int, mask: np.ndarray | None = None,
            prune: bool = True) -> list[tuple[int, float]]:
        """The k best (row, score) pairs among rows allowed by ``mask``, best first; ties by row.

        ``prune=False`` scores every matching row (the answer is the same; benchmarks and tests compare them).
        """
        terms = self._terms(query)
        if not terms or k <= 0:
            return []
        found = self._top_maxscore(terms, k, mask) if prune else None
        rows, sc = found if found is not None else self._top_exhaustive(terms, mask)
        if rows.size > k:
            # Keep every row tied with the k-th score, so the tie-break by row below decides who is in.
            kth = np.partition(sc, rows.size - k)[rows.size - k]
            keep = sc >= kth
            rows, sc = rows[keep], sc[keep]
        order = np.lexsort((rows, -sc))[:k]
        return [(int(rows[i]), float(sc[i])) for i in order]

    def _top_exhaustive(self, terms: list[int], mask: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Every matching row and its score."""
        total = sum(int(self.indptr[t + 1] - self.indptr[t]) for t in terms)
        if total <= self.n_rows // 16:
            rows, sc = self.scores(terms)
        else:
            # Long postings: sum into a dense score array, which costs less than sorting them.
            rows, weights = self._matches(terms)
            dense = np.bincount(rows, weights=weights, minlength=self.n_rows)
            hit = np.zeros(self.n_rows, bool)  # weights can be 0 in tiny corpora, so track matches apart
            hit[rows] = True
            rows = np.flatnonzero(hit)
            sc = dense[rows]
        if mask is not None and rows.size:
            keep = mask[rows]
            rows, sc = rows[keep], sc[keep]
        return rows, sc

    def _top_maxscore(self, terms: list[int], k: int, mask: np.ndarray | None
                      ) -> tuple[np.ndarray, np.ndarray] | None:
        """Candidates that provably hold the top k, scored in full; None when pruning cannot be shown safe.

        Terms are taken rarest (highest bound) first: the rows of the first j terms are scored in full, and if
        the bounds of the other terms add up to less than the k-th of those scores, no row outside the first j
        terms' postings can reach the top k.
        """
        lengths = [int(self.indptr[t + 1] - self.indptr[t]) for t in terms]
        if len(terms) < 2 or sum(lengths) < self.prune_min_postings:
            return None
        by_bound = sorted(range(len(terms)), key=lambda i: -self.max_weight[terms[i]])
        # The head: as many of the rarest terms as fit in a quarter of the postings (above that the exhaustive
        # pass costs about the same), leaving at least one term out.
        budget, seen, j = sum(lengths) // 4, 0, 0
        while j < len(terms) - 1 and seen + lengths[by_bound[j]] <= budget:
            seen += lengths[by_bound[j]]
            j += 1
        if j == 0 or seen < k:
            return None
        head = [terms[i] for i in by_bound[:j]]
        rest_bound = float(sum(self.max_weight[terms[i]] for i in by_bound[j:]))
        cand = np.sort(np.concatenate([self.rows[self.indptr[t]:self.indptr[t + 1]] for t in head]))
        cand = cand[_run_starts(cand)]
        if mask is not None:
            cand = cand[mask[cand]]
        if cand.size < k:
            return None
        sc = self._score_rows(terms, cand)
        kth = float(np.partition(sc, cand.size - k)[cand.size - k])
        # Margin for rounding: the bound is summed from per-term maxima, the scores in another order.
        return (cand, sc) if rest_bound * (1 + 1e-9) + 1e-12 < kth else None

    def _score_rows(self, terms: list[int], rows: np.ndarray) -> np.ndarray:
        """Full scores of the given rows (sorted), summed in query-term order like the exhaustive pass."""
        total = np.zeros(rows.size, np.float64)
        for t in terms:
            s, e = self.indptr[t], self.indptr[t + 1]
            post = self.rows[s:e]
            pos = np.searchsorted(post, rows)
            pos[pos >= post.size] = 0
            hit = np.flatnonzero(post[pos] == rows)
            total[hit] += self._weights(self.idf[t], self.tf[s + pos[hit]], rows[hit])
        return total

    def compact(self, live: np.ndarray) -> "BM25Index":
        """A new index holding only the rows in ``live``, renumbered in the order given, from stored frequencies."""
        term, row, tf = self._postings()
        remap = np.full(self.n_rows, -1, np.int64)
        remap[live] = np.arange(live.size)
        fresh = BM25Index(self.k1, self.b, self.epsilon)
        fresh.vocab, fresh.n_terms = self.vocab, self.n_terms
        row = remap[row]
        if live.size > 1 and not bool(np.all(live[1:] > live[:-1])):
            # A reordering: postings must stay sorted by row within each term (binary searches rely on it).
            order = np.lexsort((row, term))
            term, row, tf = term[order], row[order], tf[order]
        fresh._pending = [(term, row.astype(np.int32), tf)]
        fresh.doc_len = self.doc_len[live]
        fresh.alive = np.ones(live.size, bool)
        fresh.commit()
        return fresh

    # -- persistence (numpy arrays and JSON; no pickle) --------------------------------------------------
    def save(self, folder: Path) -> None:
        if self._dirty:
            self.commit()
        folder.mkdir(parents=True, exist_ok=True)
        np.savez(folder / "bm25.npz", indptr=self.indptr, rows=self.rows, tf=self.tf, doc_len=self.doc_len,
                 alive=self.alive)
        terms = sorted(self.vocab, key=self.vocab.__getitem__)
        (folder / "bm25.json").write_text(json.dumps({"k1": self.k1, "b": self.b, "epsilon": self.epsilon,
                                                      "n_terms": self.n_terms,
                                                      "terms": terms}, ensure_ascii=False))

    @classmethod
    def load(cls, folder: Path) -> "BM25Index":
        meta = json.loads((folder / "bm25.json").read_text())
        idx = cls(meta["k1"], meta["b"], meta["epsilon"])
        idx.vocab = {t: i for i, t in enumerate(meta["terms"])}
        idx.n_terms = meta.get("n_terms", len(idx.vocab))
        with np.load(folder / "bm25.npz", allow_pickle=False) as z:
            idx.indptr, idx.rows, idx.tf = z["indptr"], z["rows"], z["tf"]
            idx.doc_len, idx.alive = z["doc_len"], z["alive"]
        idx.commit()
        return idx
