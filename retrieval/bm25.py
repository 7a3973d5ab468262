"""BM25 with exactly rank_bm25.BM25Okapi's scores, on a sparse term-by-row matrix of precomputed weights.

Postings (term, row, tf) are kept as flat arrays; ``commit()`` turns the live postings into CSR rows per term
holding the full BM25Okapi weight ``idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))``. A query then
adds one weight slice per query term, so its cost is the length of its terms' postings, not the corpus size.

Adding rows appends postings; deleting marks rows dead. Either changes N, avgdl and idf for every row, as BM25
demands, and ``commit()`` recomputes all weights from the stored term frequencies with vectorized numpy: no
text is tokenized again. Parity with rank_bm25 includes its treatment of negative IDF: such terms get
``epsilon * mean(idf)``.
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
        self._term = np.zeros(0, np.int32)
        self._row = np.zeros(0, np.int32)
        self._tf = np.zeros(0, np.int32)
        self.doc_len = np.zeros(0, np.int32)
        self.alive = np.zeros(0, bool)
        self._pending: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.indptr = np.zeros(1, np.int64)
        self.rows = np.zeros(0, np.int32)
        self.weights = np.zeros(0, self.dtype)
        self.idf = np.zeros(0, np.float64)
        self._dirty = False

    @property
    def n_rows(self) -> int:
        return int(self.doc_len.shape[0])

    def add(self, docs: Iterable[Sequence[str]]) -> range:
        """Append documents (token lists); returns their row numbers. Call ``commit()`` before querying."""
        first = self.n_rows
        terms: list[int] = []
        rows: list[int] = []
        tfs: list[int] = []
        lens: list[int] = []
        vocab = self.vocab
        for i, tokens in enumerate(docs):
            counts: dict[int, int] = {}
            for tok in tokens:
                tid = vocab.get(tok)
                if tid is None:
                    tid = vocab[tok] = len(vocab)
                counts[tid] = counts.get(tid, 0) + 1
            lens.append(len(tokens))
            for tid, tf in counts.items():
                terms.append(tid)
                rows.append(first + i)
                tfs.append(tf)
        self._pending.append((np.asarray(terms, np.int32), np.asarray(rows, np.int32), np.asarray(tfs, np.int32)))
        self.doc_len = np.concatenate([self.doc_len, np.asarray(lens, np.int32)])
        self.alive = np.concatenate([self.alive, np.ones(len(lens), bool)])
        self._dirty = True
        return range(first, first + len(lens))

    def delete(self, rows: Iterable[int]) -> None:
        idx = np.fromiter(rows, np.int64)
        if idx.size:
            self.alive[idx] = False
            self._dirty = True

    def commit(self) -> None:
        """Recompute every weight for the live rows (N, avgdl and idf all depend on the whole collection)."""
        if self._pending:
            self._term = np.concatenate([self._term] + [p[0] for p in self._pending])
            self._row = np.concatenate([self._row] + [p[1] for p in self._pending])
            self._tf = np.concatenate([self._tf] + [p[2] for p in self._pending])
            self._pending = []
        live = self.alive[self._row] if self._row.size else np.zeros(0, bool)
        term, row, tf = self._term[live], self._row[live], self._tf[live].astype(np.float64)
        n_terms = len(self.vocab)
        n_docs = int(self.alive.sum())
        df = np.bincount(term, minlength=n_terms).astype(np.float64)
        present = df > 0
        idf = np.zeros(n_terms, np.float64)
        if n_docs:
            idf[present] = np.log(n_docs - df[present] + 0.5) - np.log(df[present] + 0.5)
            mean_idf = idf[present].mean() if present.any() else 0.0
            # rank_bm25 floors negative idf at epsilon times the mean idf over the vocabulary.
            idf[present & (idf < 0)] = self.epsilon * mean_idf
        self.idf = idf
        avgdl = float(self.doc_len[self.alive].mean()) if n_docs else 1.0
        dl = self.doc_len[row].astype(np.float64)
        w = idf[term] * tf * (self.k1 + 1) / (tf + self.k1 * (1 - self.b + self.b * dl / avgdl))
        order = np.argsort(term, kind="stable")
        self.rows = row[order]
        self.weights = w[order].astype(self.dtype)
        self.indptr = np.zeros(n_terms + 1, np.int64)
        np.cumsum(np.bincount(term, minlength=n_terms), out=self.indptr[1:])
        self._dirty = False

    def scores(self, query: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(rows, scores) of every live row matching at least one query term, in row order."""
        if self._dirty:
            raise RuntimeError("BM25Index changed since the last commit(); call commit() before querying")
        slices = []
        for tok in query:  # repeated query terms count again, as in rank_bm25
            tid = self.vocab.get(tok)
            if tid is not None and tid < len(self.indptr) - 1:
                s, e = self.indptr[tid], self.indptr[tid + 1]
                if e > s:
                    slices.append((self.rows[s:e], self.weights[s:e]))
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

    def top(self, query: Sequence[str], k: int, mask: np.ndarray | None = None) -> list[tuple[int, float]]:
        """The k best (row, score) pairs among rows allowed by ``mask``, best first; ties by row."""
        rows, sc = self.scores(query)
        if mask is not None and rows.size:
            keep = mask[rows]
            rows, sc = rows[keep], sc[keep]
        if rows.size == 0 or k <= 0:
            return []
        if rows.size > k:
            part = np.argpartition(-sc, k - 1)[:k]
            rows, sc = rows[part], sc[part]
        order = np.lexsort((rows, -sc))
        return [(int(rows[i]), float(sc[i])) for i in order]

    # -- persistence (numpy arrays and JSON; no pickle) --------------------------------------------------
    def save(self, folder: Path) -> None:
        if self._dirty:
            self.commit()
        folder.mkdir(parents=True, exist_ok=True)
        np.savez(folder / "bm25.npz", term=self._term, row=self._row, tf=self._tf, doc_len=self.doc_len, alive=self.alive)
        terms = sorted(self.vocab, key=self.vocab.__getitem__)
        (folder / "bm25.json").write_text(json.dumps({"k1": self.k1, "b": self.b, "epsilon": self.epsilon,
                                                      "dtype": self.dtype.name, "terms": terms}, ensure_ascii=False))

    @classmethod
    def load(cls, folder: Path) -> "BM25Index":
        meta = json.loads((folder / "bm25.json").read_text())
        idx = cls(meta["k1"], meta["b"], meta["epsilon"], meta["dtype"])
        idx.vocab = {t: i for i, t in enumerate(meta["terms"])}
        with np.load(folder / "bm25.npz", allow_pickle=False) as z:
            idx._term, idx._row, idx._tf = z["term"], z["row"], z["tf"]
            idx.doc_len, idx.alive = z["doc_len"], z["alive"]
        idx.commit()
        return idx
