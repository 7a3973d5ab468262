"""BM25 with exactly rank_bm25.BM25Okapi's scores, on a sparse term-by-row matrix of precomputed weights.

The index is a CSR matrix by term: for each term, the rows that contain it, their term frequencies, and the
full BM25Okapi weight ``idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))``. A query adds one weight
slice per query term, so its cost is the length of its terms' postings, not the corpus size.

Adding rows appends postings; deleting marks rows dead. Either changes N, avgdl and idf for every row, as BM25
demands, so ``commit()`` rebuilds the CSR from the stored term frequencies with vectorized numpy: no text is
tokenized again. Parity with rank_bm25 includes its treatment of negative IDF: such terms get
``epsilon * mean(idf)``. Weights are float64 by default (parity to 1e-12); float32 halves their memory.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np


class BM25Index:
    def __init__(self, k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25, dtype: str = "float64") -> None:
        self.k1, self.b, self.epsilon = k1, b, epsilon
        self.dtype = np.dtype(dtype)
        self.vocab: dict[str, int] = {}
        self.n_terms = 0  # may exceed len(vocab) when ids are given directly (add_token_ids)
        self.indptr = np.zeros(1, np.int64)
        self.rows = np.zeros(0, np.int32)
        self.tf = np.zeros(0, np.uint16)
        self.weights = np.zeros(0, self.dtype)
        self.idf = np.zeros(0, np.float64)
        self.doc_len = np.zeros(0, np.int32)
        self.alive = np.zeros(0, bool)
        self._pending: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._dirty = False

    @property
    def n_rows(self) -> int:
        return int(self.doc_len.shape[0])

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.indptr, self.rows, self.tf, self.weights, self.idf, self.doc_len, self.alive))

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
        tf64 = tf.astype(np.float64)
        norm = self.k1 * (1 - self.b + self.b * self.doc_len[row].astype(np.float64) / avgdl)
        self.weights = (idf[term] * tf64 * (self.k1 + 1) / (tf64 + norm)).astype(self.dtype)
        self.rows = row.astype(np.int32)
        self.tf = tf.astype(np.uint16 if tf.size == 0 or tf.max() < 65535 else np.int32)
        self.indptr = np.zeros(n_terms + 1, np.int64)
        np.cumsum(np.bincount(term, minlength=n_terms), out=self.indptr[1:])
        self.idf = idf
        self.n_terms = n_terms
        self._dirty = False

    def _slices(self, query: Sequence[str] | Sequence[int]) -> list[tuple[np.ndarray, np.ndarray]]:
        if self._dirty:
            raise RuntimeError("BM25Index changed since the last commit(); call commit() before querying")
        out = []
        for tok in query:  # repeated query terms count again, as in rank_bm25
            tid = self.vocab.get(tok) if isinstance(tok, str) else int(tok)
            if tid is not None and 0 <= tid < self.indptr.size - 1:
                s, e = self.indptr[tid], self.indptr[tid + 1]
                if e > s:
                    out.append((self.rows[s:e], self.weights[s:e]))
        return out

    def scores(self, query: Sequence[str] | Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """(rows, scores) of every live row matching at least one query term, in row order."""
        return self._combine(self._slices(query))

    @staticmethod
    def _combine(slices: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
        """Sum the weight slices per row (sparse path: one sort over the matched postings)."""
        if not slices:
            return np.zeros(0, np.int32), np.zeros(0, np.float64)
        if len(slices) == 1:
            return slices[0][0].copy(), slices[0][1].astype(np.float64)
        rows = np.concatenate([s[0] for s in slices])
        weights = np.concatenate([s[1] for s in slices]).astype(np.float64)
        uniq, inverse = np.unique(rows, return_inverse=True)
        return uniq, np.bincount(inverse, weights=weights, minlength=uniq.size)

    def get_scores(self, query: Sequence[str]) -> np.ndarray:
        """Scores for every row (dead rows 0), like rank_bm25's ``get_scores``."""
        out = np.zeros(self.n_rows, np.float64)
        rows, sc = self.scores(query)
        out[rows] = sc
        return out

    def top(self, query: Sequence[str] | Sequence[int], k: int, mask: np.ndarray | None = None) -> list[tuple[int, float]]:
        """The k best (row, score) pairs among rows allowed by ``mask``, best first; ties by row."""
        slices = self._slices(query)
        if not slices or k <= 0:
            return []
        total = sum(s[0].size for s in slices)
        if total > self.n_rows // 16:
            # Long postings: accumulate into a dense score array (each term's rows are distinct, so += is exact).
            dense = np.zeros(self.n_rows, np.float64)
            hit = np.zeros(self.n_rows, bool)  # weights can be 0 in tiny corpora, so track matches apart
            for r, w in slices:
                dense[r] += w
                hit[r] = True
            if mask is not None:
                hit &= mask[: self.n_rows]
                mask = None
            rows = np.flatnonzero(hit)
            sc = dense[rows]
        else:
            rows, sc = self._combine(slices)
        if mask is not None and rows.size:
            keep = mask[rows]
            rows, sc = rows[keep], sc[keep]
        if rows.size == 0:
            return []
        if rows.size > k:
            part = np.argpartition(-sc, k - 1)[:k]
            rows, sc = rows[part], sc[part]
        order = np.lexsort((rows, -sc))
        return [(int(rows[i]), float(sc[i])) for i in order]

    def compact(self, live: np.ndarray) -> "BM25Index":
        """A new index holding only the rows in ``live`` (renumbered in order), from stored frequencies."""
        term, row, tf = self._postings()
        remap = np.full(self.n_rows, -1, np.int64)
        remap[live] = np.arange(live.size)
        fresh = BM25Index(self.k1, self.b, self.epsilon, self.dtype.name)
        fresh.vocab, fresh.n_terms = self.vocab, self.n_terms
        fresh._pending = [(term, remap[row].astype(np.int32), tf)]
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
                                                      "dtype": self.dtype.name, "n_terms": self.n_terms,
                                                      "terms": terms}, ensure_ascii=False))

    @classmethod
    def load(cls, folder: Path) -> "BM25Index":
        meta = json.loads((folder / "bm25.json").read_text())
        idx = cls(meta["k1"], meta["b"], meta["epsilon"], meta["dtype"])
        idx.vocab = {t: i for i, t in enumerate(meta["terms"])}
        idx.n_terms = meta.get("n_terms", len(idx.vocab))
        with np.load(folder / "bm25.npz", allow_pickle=False) as z:
            idx.indptr, idx.rows, idx.tf = z["indptr"], z["rows"], z["tf"]
            idx.doc_len, idx.alive = z["doc_len"], z["alive"]
        idx.commit()
        return idx
