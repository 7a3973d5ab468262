"""Dense search: exact float32 numpy below a size threshold, HNSW (hnswlib) above it.

Exact search is one matrix-vector product and argpartition: memory-bandwidth bound and exact (recall 1.0).
Above ``hnsw_threshold`` rows an HNSW graph answers unfiltered and filtered queries. A filter is never applied
after truncation. A filter that keeps at most ``EXACT_ROWS`` rows is answered exactly over those rows, which is
both faster and exact there. Otherwise a filtered query searches the graph deep enough for the filter's share
of rows (k * n / allowed, twice over) and keeps the allowed ones; when that depth would be large, or still
leaves fewer than k, the graph is searched with the filter inside (hnswlib calls back for each candidate).

The graph's labels are not row numbers: ``_labels`` maps each row to its label. When rows are dropped or put in
another order (:meth:`VectorIndex.reorder`, as a reindex does), the dropped rows' labels are marked deleted and the
graph is kept, so a small change to a large index costs its new vectors, not a new graph. Once deleted labels make
up more than ``REBUILD_DELETED`` of the graph it is built again from the live rows. The graph therefore depends on
the index's history (which rows came and went); the rows, their order and exact search do not.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np


EXACT_ROWS = 20_000  # a filter keeping at most this many rows is searched exactly (about 3 ms at 384 dims)
MAX_DEPTH = 1000  # deepest unfiltered search made for a filtered query before filtering inside the graph
# The graph with its labels (``hnsw_labels.npy``: each row's label). Code that predates labels reads only
# ``LEGACY_GRAPH_FILE`` (label = row), so a graph whose labels are not its rows is never saved under that name.
GRAPH_FILE, LABELS_FILE, LEGACY_GRAPH_FILE = "hnsw_labeled.bin", "hnsw_labels.npy", "hnsw.bin"
REBUILD_DELETED = 0.25  # share of the graph's labels deleted above which it is built again from the live rows
_BLOCK = 1024  # rows gathered at a time for an exact filtered search (stays in cache, no large temporary)


class VectorIndex:
    def __init__(self, dim: int, hnsw_threshold: int = 50_000, m: int = 16, ef_construction: int = 200,
                 ef_search: int = 64) -> None:
        self.dim = dim
        self.matrix = np.zeros((0, dim), np.float32)
        self.hnsw_threshold, self.m, self.ef_construction, self.ef_search = hnsw_threshold, m, ef_construction, ef_search
        self._hnsw = None  # hnswlib.Index over rows [0, _hnsw_rows)
        self._hnsw_rows = 0
        self._labels = np.zeros(0, np.int64)  # the graph's label of each row in [0, _hnsw_rows)
        self._row_of = np.zeros(0, np.int64)  # the row of each label; -1 for a deleted one
        self._deleted = 0  # labels marked deleted in the graph
        self.exact_fallbacks = 0  # graph searches answered exactly because hnswlib stopped short

    def add(self, vectors: np.ndarray | Sequence[np.ndarray]) -> range:
        """Append rows (one array, or several appended at once: the matrix is copied once, whatever their count).
        The graph covers them once :meth:`build_ann` or :meth:`reorder` runs."""
        parts = [vectors] if isinstance(vectors, np.ndarray) else list(vectors)
        for v in parts:
            if v.ndim != 2 or v.shape[1] != self.dim:
                raise ValueError(f"expected vectors of dimension {self.dim}, got shape {v.shape}")
        first = self.matrix.shape[0]
        self.matrix = np.concatenate([self.matrix, *parts], dtype=np.float32) if parts else self.matrix
        return range(first, self.matrix.shape[0])

    def build_ann(self, threads: int = 2) -> None:
        """Build (or extend) the HNSW graph when the collection is above the threshold."""
        n = self.matrix.shape[0]
        if n < self.hnsw_threshold or (self._hnsw is not None and self._hnsw_rows == n):
            return
        import hnswlib

        if self._hnsw is None:
            self._hnsw = hnswlib.Index(space="ip", dim=self.dim)
            self._hnsw.init_index(max_elements=int(n * 1.25) + 1, ef_construction=self.ef_construction, M=self.m,
                                  random_seed=7)
            self._hnsw_rows, self._labels, self._deleted = 0, np.zeros(0, np.int64), 0
        new = self._insert(self.matrix[self._hnsw_rows:n], threads)
        self._hnsw.set_ef(self.ef_search)
        self._labels = np.concatenate([self._labels, new])
        self._hnsw_rows = n
        self._index_labels()

    def _insert(self, vectors: np.ndarray, threads: int = 2) -> np.ndarray:
        """Add ``vectors`` to the graph under new labels (returned), growing it when full. Labels are never
        reused: deleted ones stay in the graph."""
        first = int(self._hnsw.get_current_count())
        labels = np.arange(first, first + vectors.shape[0], dtype=np.int64)
        if self._hnsw.get_max_elements() < first + labels.size:
            self._hnsw.resize_index(int((first + labels.size) * 1.25) + 1)
        self._hnsw.add_items(vectors, labels, num_threads=threads)
        return labels

    def _index_labels(self) -> None:
        self._row_of = np.full(int(self._hnsw.get_current_count()), -1, np.int64)
        self._row_of[self._labels] = np.arange(self._labels.size)

    def reorder(self, order: np.ndarray) -> None:
        """Keep only rows ``order`` (old row numbers, each at most once), in that order. The graph is kept: the
        rows left out are marked deleted in it and rows it did not hold yet are added, unless that leaves too many
        deleted (``REBUILD_DELETED``) or too few rows for a graph, and then it is built afresh (or dropped)."""
        order = np.asarray(order, dtype=np.int64)
        self.matrix = self.matrix[order]
        if self._hnsw is None:
            self.build_ann()
            return
        held = order < self._hnsw_rows  # rows the graph holds (the others were appended since)
        dead = np.ones(self._hnsw_rows, bool)
        dead[order[held]] = False
        labels_after = int(self._hnsw.get_current_count()) + int((~held).sum())
        deleted_after = self._deleted + int(dead.sum())
        if order.size < self.hnsw_threshold or deleted_after > REBUILD_DELETED * labels_after:
            self._hnsw, self._hnsw_rows, self._labels, self._deleted = None, 0, np.zeros(0, np.int64), 0
            self.build_ann()  # afresh, from the rows kept: nothing is inserted only to be deleted
            return
        for label in self._labels[dead]:
            self._hnsw.mark_deleted(int(label))
        self._deleted = deleted_after
        labels = np.full(order.size, -1, np.int64)
        labels[held] = self._labels[order[held]]
        new_rows = np.flatnonzero(~held)
        if new_rows.size:
            labels[new_rows] = self._insert(self.matrix[new_rows])
        self._labels, self._hnsw_rows = labels, order.size
        self._index_labels()

    def exact_top(self, query: np.ndarray, k: int, mask: np.ndarray | None = None) -> list[tuple[int, float]]:
        n = self.matrix.shape[0]
        if n == 0 or k <= 0:
            return []
        if mask is not None:
            rows = np.flatnonzero(mask[:n])
            if rows.size > 0.15 * n:
                # Gathering many scattered rows costs more than one sequential pass over the whole matrix (measured
                # at 100k x 384: a 10% gather and its product take a third of the full product's time).
                sims = (self.matrix @ query.astype(np.float32))[rows]
            else:
                sims = self._gathered_product(rows, query.astype(np.float32))
        else:
            rows = None
            sims = self.matrix @ query.astype(np.float32)
        if sims.size == 0:
            return []
        part = np.argpartition(-sims, k - 1)[:k] if sims.size > k else np.arange(sims.size)
        part = part[np.lexsort((part, -sims[part]))]
        return [(int(rows[i] if rows is not None else i), float(sims[i])) for i in part]

    def _gathered_product(self, rows: np.ndarray, q: np.ndarray) -> np.ndarray:
        """``matrix[rows] @ q`` a block at a time, through one small buffer."""
        out = np.empty(rows.size, np.float32)
        buf = np.empty((min(rows.size, _BLOCK), self.dim), np.float32)
        for s in range(0, rows.size, _BLOCK):
            part = rows[s:s + _BLOCK]
            block = buf[:part.size]
            np.take(self.matrix, part, axis=0, out=block, mode="clip")  # rows are in range; "clip" skips a copy
            np.dot(block, q, out=out[s:s + part.size])
        return out

    def top(self, query: np.ndarray, k: int, mask: np.ndarray | None = None) -> list[tuple[int, float]]:
        n = self.matrix.shape[0]
        if self._hnsw is None or self._hnsw_rows != n:
            return self.exact_top(query, k, mask)
        allowed = n if mask is None else int(mask[:n].sum())
        if allowed == 0 or k <= 0:
            return []
        if allowed <= max(k, EXACT_ROWS):
            return self.exact_top(query, k, mask)
        q = query.astype(np.float32)
        if mask is None:
            return self._knn(q, min(k, n))
        # Filtered: search deeper without the filter and keep the allowed rows. A filter independent of where
        # the vectors lie keeps about ``allowed / n`` of them, so twice k * n / allowed is ample; a filter that
        # excludes the query's whole neighbourhood leaves too few, and then the graph is searched again with
        # the filter inside (slower per candidate, but complete).
        depth = min(n, max(k, int(2 * k * n / allowed)))
        if depth <= MAX_DEPTH:
            hits = [(r, s) for r, s in self._knn(q, depth) if mask[r]]
            if len(hits) >= k:
                return hits[:k]
        return self._knn(q, min(k, allowed), mask)

    def _knn(self, q: np.ndarray, k: int, mask: np.ndarray | None = None) -> list[tuple[int, float]]:
        """The graph's k nearest rows (among ``mask``'s). When the graph cannot reach k of them (hnswlib stops
        short, as it can with many rows filtered out or deleted) the search is made exactly instead."""
        self._hnsw.set_ef(max(self.ef_search, k))
        row_of = self._row_of
        inside = None if mask is None else (lambda label: bool(mask[row_of[label]]))
        try:
            labels, dists = self._hnsw.knn_query(q, k=k, num_threads=1, filter=inside)
        except RuntimeError:  # "Cannot return the results in a contiguous 2D array": fewer than k reached
            self.exact_fallbacks += 1
            return self.exact_top(q, k, mask)
        return [(int(row_of[l]), float(1.0 - d)) for l, d in zip(labels[0], dists[0])]

    def save(self, folder: Path) -> None:
        np.save(folder / "vectors.npy", self.matrix, allow_pickle=False)
        if self._hnsw is not None and self._hnsw_rows == self.matrix.shape[0]:
            self._hnsw.save_index(str(folder / GRAPH_FILE))
            np.save(folder / LABELS_FILE, self._labels, allow_pickle=False)

    @classmethod
    def load(cls, folder: Path, dim: int, hnsw_threshold: int = 50_000) -> "VectorIndex":
        """The vectors saved in ``folder``. With their HNSW graph (above ``hnsw_threshold`` rows) the matrix is
        memory-mapped: the graph answers, and only a filtered search that keeps few rows reads some of them (an
        append or a compaction makes a new array, so the file is never written through the map). The graph's
        labels come from ``LABELS_FILE``; a graph saved before labels (``LEGACY_GRAPH_FILE``) is numbered by row. A
        graph whose labels do not fit it is not used (search is then exact)."""
        idx = cls(dim, hnsw_threshold)
        matrix = np.load(folder / "vectors.npy", allow_pickle=False, mmap_mode="r")
        n = matrix.shape[0]
        path = folder / GRAPH_FILE
        labels_path, legacy = folder / LABELS_FILE, not path.exists()
        if legacy:
            path = folder / LEGACY_GRAPH_FILE
        if path.exists() and n >= hnsw_threshold and (legacy or labels_path.exists()):
            import hnswlib

            labels = np.arange(n, dtype=np.int64) if legacy else np.load(labels_path, allow_pickle=False).astype(np.int64)
            ann = hnswlib.Index(space="ip", dim=dim)
            ann.load_index(str(path))
            count = int(ann.get_current_count())
            fits = labels.shape == (n,) and (not legacy or count == n) and (
                n == 0 or (labels.min() >= 0 and labels.max() < count and np.unique(labels).size == n))
            if fits:
                ann.set_ef(idx.ef_search)
                idx._hnsw, idx._hnsw_rows, idx._labels, idx._deleted = ann, n, labels, count - n
                idx._index_labels()
        idx.matrix = matrix if idx._hnsw is not None else np.array(matrix)
        return idx
