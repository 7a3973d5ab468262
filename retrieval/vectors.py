"""Exact dense search: one float32 matrix, a matrix-vector product and argpartition.

Exact search is memory-bandwidth bound and exact (recall 1.0); rows can be masked by a filter before ranking.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


class VectorIndex:
    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.matrix = np.zeros((0, dim), np.float32)

    def add(self, vectors: np.ndarray) -> range:
        if vectors.ndim != 2 or vectors.shape[1] != self.dim:
            raise ValueError(f"expected vectors of dimension {self.dim}, got shape {vectors.shape}")
        first = self.matrix.shape[0]
        self.matrix = np.concatenate([self.matrix, vectors.astype(np.float32)])
        return range(first, first + vectors.shape[0])

    def top(self, query: np.ndarray, k: int, mask: np.ndarray | None = None) -> list[tuple[int, float]]:
        n = self.matrix.shape[0]
        if n == 0 or k <= 0:
            return []
        sims = self.matrix @ query.astype(np.float32)
        if mask is not None:
            rows = np.flatnonzero(mask[:n])
            sims = sims[rows]
        else:
            rows = None
        if sims.size == 0:
            return []
        if sims.size > k:
            part = np.argpartition(-sims, k - 1)[:k]
        else:
            part = np.arange(sims.size)
        part = part[np.lexsort((part, -sims[part]))]
        return [(int(rows[i] if rows is not None else i), float(sims[i])) for i in part]

    def save(self, folder: Path) -> None:
        np.save(folder / "vectors.npy", self.matrix, allow_pickle=False)

    @classmethod
    def load(cls, folder: Path, dim: int) -> "VectorIndex":
        idx = cls(dim)
        idx.matrix = np.load(folder / "vectors.npy", allow_pickle=False)
        return idx
